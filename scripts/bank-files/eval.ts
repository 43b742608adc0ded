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
import { relative } from "node:path";
import { root, sourceList, type Source } from "./sources.js";

type Verdict = "right" | "refused" | "WRONG" | "crashed";

const { sourcesPath, corpusRel, corpus, sources, filePath } = sourceList("eval.ts", process.argv.slice(2));

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

const KNOWN_FLAGS: Record<string, string> = {
  "--date-format": "dateFormat", "--map": "map", "--preset": "preset", "--delimiter": "delimiter", "--decimal": "decimal",
  "--money-out": "moneyOut", "--skip-balance-check": "skipBalanceCheck", "--account": "account",
};

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

/** Flags that take no value. */
const SWITCHES = new Set(["--skip-balance-check"]);

/**
 * The one flag a refusal names, as a user reading it gives it: a switch as it is, a flag with the
 * one value the message offers, or, when it offers several (--decimal point or --decimal comma),
 * the value the entry's `answers` says a person reading the file picks. Undefined when the message
 * names no flag, or several (a --map to write by hand is no one flag).
 */
function namedFlag(message: string, answers: Record<string, string>): string[] | undefined {
  const named = [...message.matchAll(/(--[a-z][a-z-]*)(?:\s+([a-z]+)\b)?/g)];
  const names = new Set(named.map((m) => m[1]));
  if (names.size !== 1) return undefined;
  const [flag] = names;
  if (SWITCHES.has(flag)) return [flag];
  if (answers[flag]) return [flag, answers[flag]];
  const values = new Set(named.map((m) => m[2]).filter(Boolean));
  return values.size === 1 ? [flag, [...values][0]] : undefined;
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
  /** Files right only after the flags their refusals named, by how many flags it took. */
  const followed = new Map<number, number>();
  const perFormat = new Map<string, Record<Verdict | "first", number>>();
  let missing = 0;
  const passedThrough = new Set<string>();

  /** One reading of a file with these flags: its verdict and what it read (or the refusal). */
  const attempt = (src: Source, bytes: Uint8Array, flags: string[]): { verdict: Verdict; got: string; message?: string } => {
    try {
      const { options, unknown } = optionsFrom(flags);
      unknown.forEach((u) => passedThrough.add(u));
      const file = readBankFile(bytes, { ...options, ...(src.accountType ? { accountType: src.accountType } : {}) });
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
      const got = `${file.rows.length} / ${formatDecimal(total)}${problems.length ? ` (${problems.join("; ")})` : ""}`;
      return { verdict: problems.length ? "WRONG" : "right", got };
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      if (err instanceof BankFileError) return { verdict: "refused", got: `refused: ${short(message)}`, message };
      return { verdict: "crashed", got: `${err instanceof Error ? err.name : "error"}: ${short(message)}` };
    }
  };

  sources.forEach((src, i) => {
    const path = filePath(src.file);
    const name = src.file.startsWith(corpusRel + "/") ? src.file.slice(corpusRel.length + 1) : src.file;
    const expected = `${src.expected.rows} / ${src.expected.total}`;
    if (!existsSync(path)) {
      missing++;
      lines.push(`| ${i + 1} | ${cell(name)} | ${src.format} | ${expected} | (file not in corpus) | — |`);
      return;
    }
    const bytes = new Uint8Array(readFileSync(path));
    // As a user would: read, and while refused, give the one flag the refusal names (at most 3 times).
    const flags = [...(src.flags ?? [])];
    const added: string[] = [];
    let result = attempt(src, bytes, flags);
    while (result.verdict === "refused" && added.length < 3) {
      const next = namedFlag(result.message!, src.answers ?? {});
      if (!next || flags.includes(next[0])) break;
      flags.push(...next);
      added.push(next.join(" "));
      result = attempt(src, bytes, flags);
    }
    const { verdict, got } = result;
    counts[verdict]++;
    if (verdict === "right" && added.length) followed.set(added.length, (followed.get(added.length) ?? 0) + 1);
    const f = perFormat.get(src.format) ?? { first: 0, right: 0, refused: 0, WRONG: 0, crashed: 0 };
    f[verdict]++;
    if (verdict === "right" && !added.length) f.first++;
    perFormat.set(src.format, f);
    const after = added.length ? ` after the refusal's ${added.map((a) => `\`${a}\``).join(", then ")}` : "";
    lines.push(`| ${i + 1} | ${cell(name)} | ${src.format} | ${expected} | ${cell(got)} | ${verdict}${after} |`);
  });

  const read = sources.length - missing;
  const pct = (n: number) => (read ? ((100 * n) / read).toFixed(1) : "0.0");
  const firstRun = counts.right - [...followed.values()].reduce((a, b) => a + b, 0);
  const oneFlag = firstRun + (followed.get(1) ?? 0);
  console.log(`# Bank files as banks write them: ${read} files read from ${corpusRel}/ (${relative(root, sourcesPath)})\n`);
  console.log(lines.join("\n"));
  console.log("\n| format | files | right on the first run | right in the end | refused | WRONG | crashed |\n| --- | --- | --- | --- | --- | --- | --- |");
  for (const [format, c] of [...perFormat.entries()].sort()) {
    console.log(`| ${format} | ${c.right + c.refused + c.WRONG + c.crashed} | ${c.first} | ${c.right} | ${c.refused} | ${c.WRONG} | ${c.crashed} |`);
  }
  console.log(`\n**${firstRun} of ${read} right on the first run (${pct(firstRun)}%); ${oneFlag} (${pct(oneFlag)}%) on the first run ` +
    `or with the one flag the refusal names**` +
    ([...followed.keys()].some((k) => k > 1) ? `; ${counts.right} (${pct(counts.right)}%) following each refusal's flag in turn` : "") +
    `. Finally refused ${counts.refused}, WRONG ${counts.WRONG}, crashed ${counts.crashed}` +
    (missing ? `; ${missing} listed file(s) missing from the corpus` : "") + ".");
  if (passedThrough.size) {
    console.log(`\nFlags readBankFile does not name yet, passed through as camelCase options: ${[...passedThrough].join(", ")}.`);
  }
}

await main();
