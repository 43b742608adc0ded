/**
 * Builds an unseen real-scan sample for eval-sroie.ts from a copy of the SROIE training split, so
 * that extraction is judged on scans the project was never tuned on (the 30 beside the project are
 * a development set, looked at while the rules were written).
 *
 *   npx tsx scripts/receipts/sroie-sample.ts --from DIR --out DIR [--count 100] [--offset 0] [--seed 1]
 *                                            [--exclude DIR | --exclude none]
 *
 * `--from` is the split in its usual public layout: `img/<n>.jpg`, `key/<n>.json` ({company, date,
 * address, total}) and `box/<n>.csv` (the dataset's OCR, `x1,y1,…,x4,y4,text` per line). The
 * receipts are shuffled with the seed and `--count` taken from `--offset`: offset 0 is the half to
 * look at while changing the rules, a later offset the half to report and never look at. Scans
 * byte-identical to the development set (`--exclude`, by default ../shared/data/receipts_sroie
 * beside the project; `none` when there is none) are left out of the shuffled list, so slices built
 * with the same exclusions never overlap; a development set that is named but absent is an error.
 * Nothing here is committed: the scans are the dataset's, and `--out` (a new or empty folder)
 * belongs outside the repository or under the ignored `.data/`.
 *
 * Labels are normalised as the development set's are: dates day-first (month-first only when the
 * day-first reading is impossible), two-digit years as 20yy, month names as written; totals without
 * `RM`, `$`, spaces and commas. A receipt whose label does not normalise is left out and counted.
 */
import { createHash } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Rng } from "./corpus/rng.ts";
import { type Label, MONTHS } from "./eval-sroie.ts";

function iso(year: number, month: number, day: number): string | null {
  const date = new Date(Date.UTC(year, month - 1, day));
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return null;
  return date.toISOString().slice(0, 10);
}

const fullYear = (y: string) => (y.length === 2 ? 2000 + Number(y) : Number(y));

/** The label's date as ISO, read day-first; null when it reads as no date. */
export function labelDate(written: string): string | null {
  const s = written.toUpperCase().replace(/^[\s(]+|[\s)]+$/g, "");
  let m = /^((?:19|20)\d{2})[-/.]?(\d{1,2})[-/.]?(\d{1,2})$/.exec(s);
  const yearFirst = m && iso(Number(m[1]), Number(m[2]), Number(m[3]));
  if (yearFirst) return yearFirst;
  m = /^(\d{1,2})[-/.](\d{1,2})[-/.](\d{2}|\d{4})$/.exec(s);
  if (m) return iso(fullYear(m[3]), Number(m[2]), Number(m[1])) ?? iso(fullYear(m[3]), Number(m[1]), Number(m[2]));
  m = /^(\d{2})(\d{2})(\d{4})$/.exec(s);
  if (m) return iso(Number(m[3]), Number(m[2]), Number(m[1]));
  m = /^(\d{1,2})[\s\-/.]*([A-Z]{3})[A-Z]*[\s\-/.,]*(\d{2}|\d{4})$/.exec(s);
  if (m && MONTHS.includes(m[2])) return iso(fullYear(m[3]), MONTHS.indexOf(m[2]) + 1, Number(m[1]));
  m = /^([A-Z]{3})[A-Z]*\s*(\d{1,2}),?\s*(\d{4})$/.exec(s);
  if (m && MONTHS.includes(m[1])) return iso(Number(m[3]), MONTHS.indexOf(m[1]) + 1, Number(m[2]));
  return null;
}

/** The label's total in cents; null when it is not an amount. */
export function labelCents(written: string): number | null {
  const bare = written.toUpperCase().replace(/RM|\$|\s/g, "");
  // "9,50": a decimal comma; "1,057.40": a thousands separator.
  const s = /^-?\d+,\d{1,2}$/.test(bare) ? bare.replace(",", ".") : bare.replace(/,/g, "");
  if (!/^-?\d+(\.\d{1,2})?$/.test(s)) return null;
  const [whole, fraction = ""] = s.replace("-", "").split(".");
  const cents = Number(whole) * 100 + Number(fraction.padEnd(2, "0"));
  return s.startsWith("-") ? -cents : cents;
}

const sha256 = (file: string) => createHash("sha256").update(readFileSync(file)).digest("hex");

/** The development set beside the project, whose scans a sample leaves out. */
export const DEVELOPMENT_SET = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../shared/data/receipts_sroie");

export function buildSample(from: string, out: string, count: number, offset: number, seed: number, exclude: string | null) {
  if (exclude !== null && !existsSync(path.join(exclude, "images"))) {
    throw new Error(`the development set to leave out is absent (${exclude}): name it with --exclude DIR, or pass --exclude none`);
  }
  if (existsSync(out) && readdirSync(out).length > 0) throw new Error(`${out} is not empty: a sample is written to a new or empty folder`);
  const known = new Set(exclude === null ? [] : readdirSync(path.join(exclude, "images")).map((f) => sha256(path.join(exclude, "images", f))));
  const all = readdirSync(path.join(from, "img")).filter((f) => f.endsWith(".jpg")).map((f) => f.slice(0, -4)).sort();
  const rng = new Rng(seed);
  for (let i = all.length - 1; i > 0; i--) {
    const j = rng.int(0, i);
    [all[i], all[j]] = [all[j], all[i]];
  }
  const left = { development: 0, label: [] as string[] };
  const names = all.filter((name) => {
    if (known.has(sha256(path.join(from, "img", `${name}.jpg`)))) return void left.development++, false;
    return true;
  });
  const chosen = names.slice(offset, offset + count);
  mkdirSync(path.join(out, "images"), { recursive: true });
  mkdirSync(path.join(out, "ocr"), { recursive: true });
  const labels: Label[] = [];
  for (const name of chosen) {
    const [keyFile, boxFile] = [path.join(from, "key", `${name}.json`), path.join(from, "box", `${name}.csv`)];
    if (!existsSync(keyFile) || !existsSync(boxFile)) {
      left.label.push(`${name} (no key/${name}.json or box/${name}.csv)`);
      continue;
    }
    const key = JSON.parse(readFileSync(keyFile, "utf8")) as Record<string, string>;
    const dateIso = labelDate(key.date ?? "");
    const totalCents = labelCents(key.total ?? "");
    if (dateIso === null || totalCents === null || !key.company) {
      left.label.push(`${name} (date ${JSON.stringify(key.date)}, total ${JSON.stringify(key.total)})`);
      continue;
    }
    const id = `train-${name}`;
    copyFileSync(path.join(from, "img", `${name}.jpg`), path.join(out, "images", `${id}.jpg`));
    copyFileSync(boxFile, path.join(out, "ocr", `${id}.txt`));
    labels.push({ id, file: `images/${id}.jpg`, company: key.company, date: key.date, total: key.total, dateIso, totalCents });
  }
  writeFileSync(path.join(out, "labels.json"), `${JSON.stringify(labels, null, 1)}\n`);
  return { labels: labels.length, of: all.length, development: left.development, unreadable: left.label };
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const argv = process.argv.slice(2);
  const get = (name: string) => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const from = get("from");
  const out = get("out");
  if (!from || !out || !existsSync(path.join(from, "img"))) {
    console.log("usage: sroie-sample.ts --from DIR (with img/, key/, box/) --out DIR [--count 100] [--offset 0] [--seed 1] [--exclude DIR | none]");
    process.exit(from && !existsSync(path.join(from, "img")) ? 1 : 0);
  }
  const whole = (name: string, fallback: number) => {
    const value = Number(get(name) ?? fallback);
    if (Number.isInteger(value) && value >= 0) return value;
    console.error(`--${name} takes a whole number, not ${get(name)}`);
    process.exit(1);
  };
  const exclude = get("exclude") === "none" ? null : path.resolve(get("exclude") ?? DEVELOPMENT_SET);
  let result: ReturnType<typeof buildSample>;
  try {
    result = buildSample(from, out, whole("count", 100), whole("offset", 0), whole("seed", 1), exclude);
  } catch (error) {
    console.error((error as Error).message);
    process.exit(1);
  }
  console.log(`${result.labels} receipts written to ${out} (of ${result.of}; ${result.development} identical to the development set left out)`);
  for (const left of result.unreadable) console.log(`left out: ${left}`);
}
