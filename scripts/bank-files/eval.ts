/**
 * Reads every real bank file listed in scripts/bank-files/sources.json (copied from public
 * repositories' test data into corpus/bank-files/, which is not committed) with the project's
 * readBankFile, and prints a markdown table: expected rows/total/date against what was read.
 *
 *   npx tsx scripts/bank-files/eval.ts
 *   npm run eval:bank-files -- --sources scripts/bank-files/holdout.json --corpus corpus/bank-files-holdout
 *
 * --sources names another list of the same shape (default scripts/bank-files/sources.json) and
 * --corpus the folder its files live in (default corpus/bank-files). Both are relative to the
 * repository root (or absolute). An entry's `file` is relative to the repository root when it starts
 * with the corpus folder's path (as in sources.json), else relative to the corpus folder (as in holdout.json).
 *
 * Verdicts: right (rows, signed total, date and currency as expected), refused (BankFileError:
 * the reader said why), WRONG (read, but rows, total, date or currency differ), crashed (any other
 * error). Totals are summed as exact decimals (scaled BigInt), never floating point.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, isAbsolute, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

interface Source {
  file: string;
  format: string;
  repo: string;
  path: string;
  commit: string;
  license?: string;
  expected: { rows: number; total: string; date: string; currency?: string };
  flags?: string[];
  notes?: string;
}

type Verdict = "right" | "refused" | "WRONG" | "crashed";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "..", "..");

/** --sources <file> and --corpus <folder> (also --name=value); anything else is refused. */
function cliArgs(argv: string[]): { sourcesPath: string; corpus: string } {
  const args: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const [name, inline] = argv[i].split("=", 2) as [string, string | undefined];
    if (name !== "--sources" && name !== "--corpus") {
      console.error(`eval.ts: unknown argument "${argv[i]}" (it takes --sources <file.json> and --corpus <folder>)`);
      process.exit(2);
    }
    const value = inline ?? argv[++i];
    if (value === undefined || value === "") {
      console.error(`eval.ts: ${name} needs a value`);
      process.exit(2);
    }
    args[name] = value;
  }
  const fromRoot = (p: string) => (isAbsolute(p) ? p : resolve(root, p));
  return {
    sourcesPath: args["--sources"] ? fromRoot(args["--sources"]) : join(here, "sources.json"),
    corpus: args["--corpus"] ? fromRoot(args["--corpus"]) : join(root, "corpus", "bank-files"),
  };
}

const { sourcesPath, corpus } = cliArgs(process.argv.slice(2));
const sources: Source[] = JSON.parse(readFileSync(sourcesPath, "utf8"));
const corpusRel = relative(root, corpus).split("\\").join("/");

/** An entry's file: relative to the root when it starts with the corpus folder's path, else to the corpus. */
function filePath(file: string): string {
  if (isAbsolute(file)) return file;
  return file.startsWith(corpusRel + "/") ? join(root, file) : join(corpus, file);
}

/** A decimal string as a scaled integer: "-1,234.5" is not accepted, "-1234.5" is. */
function parseDecimal(value: string): { units: bigint; scale: number } {
  const m = /^([+-])?(\d*)(?:\.(\d*))?$/.exec(value.trim());
  if (!m || (m[2] === "" && (m[3] ?? "") === "")) throw new Error(`not a decimal: "${value}"`);
  const frac = m[3] ?? "";
  const units = BigInt((m[2] || "0") + frac) * (m[1] === "-" ? -1n : 1n);
  return { units, scale: frac.length };
}

function rescale(d: { units: bigint; scale: number }, scale: number): bigint {
  return d.units * 10n ** BigInt(scale - d.scale);
}

function sumDecimals(values: string[]): { units: bigint; scale: number } {
  const parsed = values.map(parseDecimal);
  const scale = Math.max(0, ...parsed.map((p) => p.scale));
  return { units: parsed.reduce((acc, p) => acc + rescale(p, scale), 0n), scale };
}

function formatDecimal(d: { units: bigint; scale: number }, minScale = 2): string {
  const scale = Math.max(d.scale, minScale);
  const units = rescale(d, scale);
  const neg = units < 0n;
  const digits = (neg ? -units : units).toString().padStart(scale + 1, "0");
  const int = digits.slice(0, digits.length - scale);
  const frac = digits.slice(digits.length - scale).replace(/0+$/, "").padEnd(minScale, "0");
  return `${neg ? "-" : ""}${int}${frac ? "." + frac : ""}`;
}

function sameDecimal(a: { units: bigint; scale: number }, b: { units: bigint; scale: number }): boolean {
  const scale = Math.max(a.scale, b.scale);
  return rescale(a, scale) === rescale(b, scale);
}

const KNOWN_FLAGS: Record<string, string> = { "--date-format": "dateFormat", "--map": "map", "--preset": "preset" };

/** The CLI flags as readBankFile options; a flag it does not know yet goes through in camelCase. */
function optionsFrom(flags: string[] = []): { options: Record<string, string | boolean>; unknown: string[] } {
  const options: Record<string, string | boolean> = {};
  const unknown: string[] = [];
  for (let i = 0; i < flags.length; i++) {
    const flag = flags[i];
    if (!flag.startsWith("--")) continue;
    const [name, inline] = flag.split("=", 2) as [string, string | undefined];
    const key = KNOWN_FLAGS[name] ?? name.slice(2).replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
    if (!KNOWN_FLAGS[name]) unknown.push(name);
    if (inline !== undefined) options[key] = inline;
    else if (i + 1 < flags.length && !flags[i + 1].startsWith("--")) options[key] = flags[++i];
    else options[key] = true;
  }
  return { options, unknown };
}

const cell = (s: string) => s.replace(/\|/g, "\\|").replace(/\s+/g, " ").trim();
const short = (s: string, n = 140) => (s.length > n ? s.slice(0, n - 1) + "…" : s);

async function main() {
  if (!existsSync(corpus)) {
    console.log(`The bank-file corpus is absent (${corpusRel}/ is not committed: it is fetched data).`);
    console.log(`${relative(root, sourcesPath)} lists where each of its ${sources.length} files came from ` +
      `(repository, path, commit); scripts/bank-files/README.md says how to gather them into ${corpusRel}/.`);
    return;
  }

  let readBankFile: (bytes: Uint8Array, options?: Record<string, unknown>) => {
    rows: { transactionDate: string; amount: string }[]; currency: string | null;
  };
  let BankFileError: new (...a: unknown[]) => Error;
  try {
    const mod = await import("../../src/imports/bank-files/index.js");
    readBankFile = mod.readBankFile as typeof readBankFile;
    BankFileError = mod.BankFileError as typeof BankFileError;
  } catch (err) {
    console.log(`The reader could not be loaded: ${(err as Error).message}`);
    return;
  }

  const lines: string[] = [];
  lines.push("| # | file | format | expected rows / total | got rows / total (or the refusal) | verdict |");
  lines.push("| --- | --- | --- | --- | --- | --- |");
  const counts: Record<Verdict, number> = { right: 0, refused: 0, WRONG: 0, crashed: 0 };
  const perFormat = new Map<string, Record<Verdict, number>>();
  let missing = 0;
  const passedThrough = new Set<string>();

  sources.forEach((src, i) => {
    const path = filePath(src.file);
    const name = src.file.startsWith(corpusRel + "/") ? src.file.slice(corpusRel.length + 1) : src.file;
    const expected = `${src.expected.rows} / ${src.expected.total}`;
    if (!existsSync(path)) {
      missing++;
      lines.push(`| ${i + 1} | ${cell(name)} | ${src.format} | ${expected} | (file not in corpus) | — |`);
      return;
    }
    let verdict: Verdict;
    let got: string;
    try {
      const { options, unknown } = optionsFrom(src.flags);
      unknown.forEach((u) => passedThrough.add(u));
      const file = readBankFile(new Uint8Array(readFileSync(path)), options);
      const total = sumDecimals(file.rows.map((r) => r.amount));
      const problems: string[] = [];
      if (file.rows.length !== src.expected.rows) problems.push("rows");
      if (!sameDecimal(total, parseDecimal(src.expected.total))) problems.push("total");
      if (!file.rows.some((r) => r.transactionDate === src.expected.date)) {
        problems.push(`date ${src.expected.date} not read (first row ${file.rows[0]?.transactionDate ?? "none"})`);
      }
      if (src.expected.currency && file.currency && file.currency !== src.expected.currency) {
        problems.push(`currency ${file.currency}`);
      }
      got = `${file.rows.length} / ${formatDecimal(total)}${problems.length ? ` (${problems.join("; ")})` : ""}`;
      verdict = problems.length ? "WRONG" : "right";
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      if (err instanceof BankFileError) {
        verdict = "refused";
        got = `refused: ${short(message)}`;
      } else {
        verdict = "crashed";
        got = `${err instanceof Error ? err.name : "error"}: ${short(message)}`;
      }
    }
    counts[verdict]++;
    const f = perFormat.get(src.format) ?? { right: 0, refused: 0, WRONG: 0, crashed: 0 };
    f[verdict]++;
    perFormat.set(src.format, f);
    lines.push(`| ${i + 1} | ${cell(name)} | ${src.format} | ${expected} | ${cell(got)} | ${verdict} |`);
  });

  const read = sources.length - missing;
  const pct = (n: number) => (read ? ((100 * n) / read).toFixed(1) : "0.0");
  console.log(`# Bank files as banks write them: ${read} files read from ${corpusRel}/ (${relative(root, sourcesPath)})\n`);
  console.log(lines.join("\n"));
  console.log("\n| format | files | right | refused | WRONG | crashed |\n| --- | --- | --- | --- | --- | --- |");
  for (const [format, c] of [...perFormat.entries()].sort()) {
    console.log(`| ${format} | ${c.right + c.refused + c.WRONG + c.crashed} | ${c.right} | ${c.refused} | ${c.WRONG} | ${c.crashed} |`);
  }
  console.log(`\n**${counts.right} of ${read} right on first run (${pct(counts.right)}%)**; ` +
    `refused ${counts.refused}, WRONG ${counts.WRONG}, crashed ${counts.crashed}` +
    (missing ? `; ${missing} listed file(s) missing from the corpus` : "") + ".");
  if (passedThrough.size) {
    console.log(`\nFlags readBankFile does not name yet, passed through as camelCase options: ${[...passedThrough].join(", ")}.`);
  }
}

await main();
