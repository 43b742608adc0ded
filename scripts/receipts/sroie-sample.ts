/**
 * Builds an unseen real-scan sample for eval-sroie.ts from a copy of the SROIE training split, so
 * that extraction is judged on scans the project was never tuned on (the 30 beside the project are
 * a development set, looked at while the rules were written).
 *
 *   npx tsx scripts/receipts/sroie-sample.ts --from DIR --out DIR [--count 100] [--offset 0] [--seed 1]
 *                                            [--exclude ../shared/data/receipts_sroie]
 *
 * `--from` is the split in its usual public layout: `img/<n>.jpg`, `key/<n>.json` ({company, date,
 * address, total}) and `box/<n>.csv` (the dataset's OCR, `x1,y1,…,x4,y4,text` per line). The
 * receipts are shuffled with the seed and `--count` taken from `--offset`: offset 0 is the half to
 * look at while changing the rules, a later offset the half to report and never look at. Scans
 * byte-identical to the development set are left out. Nothing here is committed: the scans are the
 * dataset's, and `--out` belongs outside the repository (or under the ignored `.data/`).
 *
 * Labels are normalised as the development set's are: dates day-first (month-first only when the
 * day-first reading is impossible), two-digit years as 20yy, month names as written; totals without
 * `RM`, `$`, spaces and commas. A receipt whose label does not normalise is left out and counted.
 */
import { createHash } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { Rng } from "./corpus/rng.ts";
import type { Label } from "./eval-sroie.ts";

const MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"];

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
  const s = written.toUpperCase().replace(/RM|\$|\s|,/g, "");
  if (!/^-?\d+(\.\d{1,2})?$/.test(s)) return null;
  const [whole, fraction = ""] = s.replace("-", "").split(".");
  const cents = Number(whole) * 100 + Number(fraction.padEnd(2, "0"));
  return s.startsWith("-") ? -cents : cents;
}

const sha256 = (file: string) => createHash("sha256").update(readFileSync(file)).digest("hex");

export function buildSample(from: string, out: string, count: number, offset: number, seed: number, exclude: string | null) {
  const known = new Set(
    exclude && existsSync(path.join(exclude, "images")) ? readdirSync(path.join(exclude, "images")).map((f) => sha256(path.join(exclude, "images", f))) : [],
  );
  const names = readdirSync(path.join(from, "img")).filter((f) => f.endsWith(".jpg")).map((f) => f.slice(0, -4)).sort();
  const rng = new Rng(seed);
  for (let i = names.length - 1; i > 0; i--) {
    const j = rng.int(0, i);
    [names[i], names[j]] = [names[j], names[i]];
  }
  const left = { development: 0, label: [] as string[] };
  const usable = names.filter((name) => {
    if (known.has(sha256(path.join(from, "img", `${name}.jpg`)))) return void left.development++, false;
    return true;
  });
  const chosen = usable.slice(offset, offset + count);
  mkdirSync(path.join(out, "images"), { recursive: true });
  mkdirSync(path.join(out, "ocr"), { recursive: true });
  const labels: Label[] = [];
  for (const name of chosen) {
    const key = JSON.parse(readFileSync(path.join(from, "key", `${name}.json`), "utf8")) as Record<string, string>;
    const dateIso = labelDate(key.date ?? "");
    const totalCents = labelCents(key.total ?? "");
    if (dateIso === null || totalCents === null || !key.company) {
      left.label.push(`${name} (date ${JSON.stringify(key.date)}, total ${JSON.stringify(key.total)})`);
      continue;
    }
    const id = `train-${name}`;
    copyFileSync(path.join(from, "img", `${name}.jpg`), path.join(out, "images", `${id}.jpg`));
    copyFileSync(path.join(from, "box", `${name}.csv`), path.join(out, "ocr", `${id}.txt`));
    labels.push({ id, file: `images/${id}.jpg`, company: key.company, date: key.date, total: key.total, dateIso, totalCents });
  }
  writeFileSync(path.join(out, "labels.json"), `${JSON.stringify(labels, null, 1)}\n`);
  return { labels: labels.length, of: names.length, development: left.development, unreadable: left.label };
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
    console.log("usage: sroie-sample.ts --from DIR (with img/, key/, box/) --out DIR [--count 100] [--offset 0] [--seed 1] [--exclude DIR]");
    process.exit(from && !existsSync(path.join(from, "img")) ? 1 : 0);
  }
  const result = buildSample(from, out, Number(get("count") ?? 100), Number(get("offset") ?? 0), Number(get("seed") ?? 1), get("exclude") ?? "../shared/data/receipts_sroie");
  console.log(`${result.labels} receipts written to ${out} (of ${result.of}; ${result.development} identical to the development set left out)`);
  for (const left of result.unreadable) console.log(`left out, label does not normalise: ${left}`);
}
