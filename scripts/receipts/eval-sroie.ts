/**
 * Measures receipt extraction on the 30 real SROIE scans kept beside the project
 * (/work/shared/data/receipts_sroie, never committed): how often OCR finds the true total,
 * date and company at all (with and without the image clean-up), and how often extraction
 * picks them, from the images and from the dataset's own OCR text.
 *
 *   npx tsx scripts/receipts/eval-sroie.ts [dir] [--verbose]
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { closeOcr, parseReceiptText, type ParsedReceipt } from "../../src/receipts/extraction/index.js";
import { AS_SCANNED, ENLARGED_CONTRAST } from "../../src/receipts/extraction/images.js";
import { ocrImage } from "../../src/receipts/extraction/read.js";

export const DEFAULT_DIR = "/work/shared/data/receipts_sroie";

/** The dataset's dates are read day-first (Malaysia). */
const DATE_ORDER = "DMY";

export interface Label {
  id: string;
  file: string;
  company: string;
  date: string;
  total: string;
  dateIso: string;
  totalCents: number;
}

/** In how many receipts a field was right (or, for a ceiling, present in the text). */
export interface Tally {
  amount: number;
  date: number;
  vendor: number;
  /** The vendor name contains the company's first two words. */
  vendorPartial: number;
}

export interface Report {
  receipts: number;
  /** One reading of the image as scanned. */
  ceilingWithoutCleanup: Tally;
  /** One reading of the enlarged, contrast-stretched image. */
  ceilingCleanupOnly: Tally;
  /** Both readings together: what extraction reads. */
  ceilingWithCleanup: Tally;
  fromImages: Tally;
  fromDatasetOcr: Tally;
  /**
   * Extraction from the images by half of the sample (halfOf: a fixed split by the id's hash): a
   * change is made looking at the "tuning" half only; the "held-out" half is the figure to quote.
   */
  fromImagesByHalf: Record<Half, Tally & { receipts: number }>;
  /** From the images: how often the amount was right for each confidence the extractor gave it. */
  amountByConfidence: Record<string, { right: number; wrong: number }>;
  /** Seconds of OCR per image, both readings and clean-up included. */
  ocrSecondsPerImage: number;
  misses: { id: string; source: "image" | "dataset-ocr"; field: keyof Tally; expected: string; got: string }[];
}

const squeeze = (s: string) => s.toUpperCase().replace(/\s+/g, "");

function amountText(cents: number): string {
  const abs = Math.abs(cents);
  return `${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, "0")}`;
}

const MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"];
const FULL_MONTHS = ["JANUARY", "FEBRUARY", "MARCH", "APRIL", "MAY", "JUNE", "JULY", "AUGUST", "SEPTEMBER", "OCTOBER", "NOVEMBER", "DECEMBER"];

/** The ways a receipt may print a date, spaces left out. */
export function writtenDates(iso: string): string[] {
  const [y, m, d] = iso.split("-");
  const years = [y, y.slice(2)];
  const days = [d, String(Number(d))];
  const months = [m, String(Number(m))];
  const names = [MONTHS[Number(m) - 1], FULL_MONTHS[Number(m) - 1]];
  const forms = [`${y}-${m}-${d}`, `${y}/${m}/${d}`, `${y}.${m}.${d}`];
  for (const year of years) {
    for (const day of days) {
      for (const sep of ["/", "-", "."]) {
        for (const month of months) forms.push(`${day}${sep}${month}${sep}${year}`, `${month}${sep}${day}${sep}${year}`);
      }
      for (const name of names) {
        for (const sep of ["", "-", "/", "."]) forms.push(`${day}${sep}${name}${sep}${year}`);
        forms.push(`${name}${day},${year}`, `${name}${day}${year}`);
      }
    }
  }
  return forms;
}

/** Which fields appear anywhere in an OCR text: the most any parser could get from it. */
export function ceiling(text: string, label: Label): Tally {
  const flat = squeeze(text);
  const noCommas = flat.replace(/,/g, "");
  return {
    amount: Number(noCommas.includes(amountText(label.totalCents))),
    date: Number(writtenDates(label.dateIso).some((form) => flat.includes(form))),
    vendor: Number(flat.includes(squeeze(label.company))),
    vendorPartial: Number(flat.includes(squeeze(label.company.split(/\s+/).slice(0, 2).join(" ")))),
  };
}

/** SROIE Task 3 scoring: equal after trimming, ignoring case and whitespace. */
export function score(parsed: ParsedReceipt, label: Label): Tally {
  const vendor = squeeze(parsed.vendorName ?? "");
  const firstTwo = squeeze(label.company.split(/\s+/).slice(0, 2).join(" "));
  return {
    amount: Number(parsed.amount === (label.totalCents < 0 ? "-" : "") + amountText(label.totalCents)),
    date: Number(parsed.dateReadings[0] === label.dateIso),
    vendor: Number(vendor === squeeze(label.company)),
    vendorPartial: Number(vendor.length > 0 && vendor.includes(firstTwo)),
  };
}

/** The dataset's OCR file (`x1,y1,…,x4,y4,text` per line) as plain text, lines in order. */
export function datasetOcrText(file: string): string {
  return readFileSync(file, "utf8")
    .split(/\r?\n/)
    .filter((line) => line.trim())
    .map((line) => line.split(",").slice(8).join(","))
    .join("\n");
}

const empty = (): Tally => ({ amount: 0, date: 0, vendor: 0, vendorPartial: 0 });

export type Half = "tuning" | "held-out";
/** A fixed half of the sample, by the id's SHA-256 (not by file order, which follows the shops' names). */
export function halfOf(id: string): Half {
  return createHash("sha256").update(id).digest()[0] % 2 === 0 ? "tuning" : "held-out";
}
function add(into: Tally, more: Tally) {
  for (const key of Object.keys(more) as (keyof Tally)[]) into[key] += more[key];
}

export async function evaluateSroie(dir: string): Promise<Report> {
  const labels = JSON.parse(readFileSync(path.join(dir, "labels.json"), "utf8")) as Label[];
  const report: Report = {
    receipts: labels.length,
    ceilingWithoutCleanup: empty(),
    ceilingCleanupOnly: empty(),
    ceilingWithCleanup: empty(),
    fromImages: empty(),
    fromDatasetOcr: empty(),
    fromImagesByHalf: { tuning: { ...empty(), receipts: 0 }, "held-out": { ...empty(), receipts: 0 } },
    amountByConfidence: {},
    ocrSecondsPerImage: 0,
    misses: [],
  };
  const noteMisses = (id: string, source: "image" | "dataset-ocr", tally: Tally, parsed: ParsedReceipt, label: Label) => {
    const got = { amount: parsed.amount, date: parsed.dateReadings.join("|"), vendor: parsed.vendorName, vendorPartial: null };
    const expected = { amount: label.total, date: label.dateIso, vendor: label.company, vendorPartial: null };
    for (const field of ["amount", "date", "vendor"] as const) {
      if (!tally[field]) report.misses.push({ id, source, field, expected: expected[field], got: String(got[field]) });
    }
  };
  let ocrMs = 0;
  for (const label of labels) {
    const bytes = readFileSync(path.join(dir, label.file));
    const started = Date.now();
    const asScanned = await ocrImage(bytes, "image/jpeg", [AS_SCANNED]);
    const cleaned = await ocrImage(bytes, "image/jpeg", [ENLARGED_CONTRAST]);
    ocrMs += Date.now() - started;
    // The same text documentText() gives an image (its readings joined), without OCR'ing twice.
    const text = `${asScanned}\n\n${cleaned}`;
    add(report.ceilingWithoutCleanup, ceiling(asScanned, label));
    add(report.ceilingCleanupOnly, ceiling(cleaned, label));
    add(report.ceilingWithCleanup, ceiling(text, label));
    const fromImage = parseReceiptText(text, { dateOrder: DATE_ORDER });
    const imageTally = score(fromImage, label);
    add(report.fromImages, imageTally);
    const half = report.fromImagesByHalf[halfOf(label.id)];
    add(half, imageTally);
    half.receipts++;
    const confidence = (report.amountByConfidence[fromImage.amountConfidence ?? "none"] ??= { right: 0, wrong: 0 });
    if (imageTally.amount) confidence.right++;
    else confidence.wrong++;
    noteMisses(label.id, "image", imageTally, fromImage, label);

    const datasetText = datasetOcrText(path.join(dir, "ocr", `${label.id}.txt`));
    const fromDataset = parseReceiptText(datasetText, { dateOrder: DATE_ORDER });
    const datasetTally = score(fromDataset, label);
    add(report.fromDatasetOcr, datasetTally);
    noteMisses(label.id, "dataset-ocr", datasetTally, fromDataset, label);
  }
  report.ocrSecondsPerImage = Math.round(ocrMs / labels.length) / 1000;
  return report;
}

function printReport(report: Report, verbose: boolean) {
  const n = report.receipts;
  const pct = (k: number) => `${String(k).padStart(2)}/${n} ${((100 * k) / n).toFixed(0).padStart(3)}%`;
  const row = (name: string, t: Tally) =>
    console.log(`${name.padEnd(34)} ${pct(t.amount)}   ${pct(t.date)}   ${pct(t.vendor)}   ${pct(t.vendorPartial)}`);
  console.log(`SROIE: ${n} scanned receipts, dates read day-first (DMY)\n`);
  console.log(`${"".padEnd(34)} ${"amount".padEnd(11)}   ${"date".padEnd(11)}   ${"vendor".padEnd(11)}   vendor (first two words)`);
  row("OCR ceiling, as scanned", report.ceilingWithoutCleanup);
  row("OCR ceiling, enlarged+contrast", report.ceilingCleanupOnly);
  row("OCR ceiling, both readings", report.ceilingWithCleanup);
  row("extraction from images", report.fromImages);
  row("extraction from dataset OCR text", report.fromDatasetOcr);
  for (const half of ["tuning", "held-out"] as const) {
    const t = report.fromImagesByHalf[half];
    const share = (k: number) => `${String(k).padStart(2)}/${t.receipts} ${((100 * k) / Math.max(1, t.receipts)).toFixed(0).padStart(3)}%`;
    console.log(`${`  from images, ${half} half`.padEnd(34)} ${share(t.amount)}   ${share(t.date)}   ${share(t.vendor)}   ${share(t.vendorPartial)}`);
  }
  console.log(`\namount by its confidence (images): ${Object.entries(report.amountByConfidence)
    .map(([c, t]) => `${c} ${t.right}/${t.right + t.wrong} right`).join(", ")}`);
  console.log(`OCR, both readings: ${report.ocrSecondsPerImage} s per image`);
  if (verbose) {
    for (const m of report.misses) console.log(`miss ${m.source.padEnd(11)} ${m.id} ${m.field.padEnd(6)} expected ${m.expected} got ${m.got}`);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const dir = process.argv.slice(2).find((a) => !a.startsWith("--")) ?? DEFAULT_DIR;
  if (!existsSync(path.join(dir, "labels.json"))) {
    console.log(`The SROIE sample is absent (${dir}); nothing to evaluate.`);
    process.exit(0);
  }
  try {
    printReport(await evaluateSroie(dir), process.argv.includes("--verbose"));
  } finally {
    await closeOcr();
  }
}
