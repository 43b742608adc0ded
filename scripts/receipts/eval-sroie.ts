/**
 * Measures receipt extraction on the 30 real SROIE scans kept beside the project
 * (/work/shared/data/receipts_sroie, never committed): how often each OCR engine's text holds
 * the true total, date and company at all, and how often extraction picks them, reading the
 * images as the service does (paddle and tesseract together), with each engine alone, and from
 * the dataset's own OCR text; with each engine's time per image.
 *
 *   npx tsx scripts/receipts/eval-sroie.ts [dir] [--verbose] [--service-only] [--cache FILE]
 *
 * `--service-only` reads each image once, as the service does (for larger samples, such as the
 * unseen ones scripts/receipts/sroie-sample.ts builds). `--cache FILE` keeps the service's readings
 * by receipt id (reused when the file exists; the times are then the first run's): for working on
 * the parsing. Delete it when the reading itself changes (engines, image preparation).
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { closeOcr, parseReceiptText, type ParsedReceipt } from "../../src/receipts/extraction/index.js";
import { AS_SCANNED, ENLARGED_CONTRAST, PADDLE, SINGLE_COLUMN } from "../../src/receipts/extraction/images.js";
import { receiptLines } from "../../src/receipts/extraction/lines.js";
import { totalLostItsCents } from "../../src/receipts/extraction/total.js";
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

/** How the images were read: as the service reads them, or by one engine. */
export const METHODS = ["paddle + tesseract (the service)", "tesseract, two readings (before)", "paddle alone"] as const;
export type Method = (typeof METHODS)[number];

export interface MethodResult {
  all: Tally;
  /**
   * By half of the sample (halfOf: a fixed split by the id's hash): a change is made looking at
   * the "tuning" half only; the "held-out" half is the figure to quote.
   */
  halves: Record<Half, Tally & { receipts: number }>;
  /** How often each field was right for each confidence the extractor gave it. */
  byConfidence: Record<"amount" | "date" | "vendor", Record<string, { right: number; wrong: number }>>;
  /** Seconds of OCR per image, clean-up included. */
  secondsPerImage: number;
}

export interface Report {
  receipts: number;
  /** The methods measured: all of METHODS, or the service's alone. */
  measured: Method[];
  /** Per reading: in how many texts each field appears at all. */
  ceilings: Record<string, Tally>;
  methods: Record<Method, MethodResult>;
  fromDatasetOcr: Tally;
  /** Seconds per image of each engine's reading alone. */
  engineSeconds: Record<string, number>;
  misses: { id: string; source: string; field: keyof Tally; expected: string; got: string }[];
}

const squeeze = (s: string) => s.toUpperCase().replace(/\s+/g, "");

function amountText(cents: number): string {
  const abs = Math.abs(cents);
  return `${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, "0")}`;
}

/** Month abbreviations as receipts and the dataset's labels print them. */
export const MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"];
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

function emptyMethod(): MethodResult {
  return {
    all: empty(),
    halves: { tuning: { ...empty(), receipts: 0 }, "held-out": { ...empty(), receipts: 0 } },
    byConfidence: { amount: {}, date: {}, vendor: {} },
    secondsPerImage: 0,
  };
}

async function timed<T>(work: () => Promise<T>): Promise<[T, number]> {
  const started = performance.now();
  const result = await work();
  return [result, performance.now() - started];
}

export async function evaluateSroie(dir: string, opts: { serviceOnly?: boolean; cache?: string } = {}): Promise<Report> {
  const labels = JSON.parse(readFileSync(path.join(dir, "labels.json"), "utf8")) as Label[];
  const measured: Method[] = opts.serviceOnly ? [METHODS[0]] : [...METHODS];
  const report: Report = {
    receipts: labels.length,
    measured,
    ceilings: {},
    methods: Object.fromEntries(METHODS.map((m) => [m, emptyMethod()])) as Record<Method, MethodResult>,
    fromDatasetOcr: empty(),
    engineSeconds: {},
    misses: [],
  };
  const noteMisses = (id: string, source: string, tally: Tally, parsed: ParsedReceipt, label: Label) => {
    const got = { amount: parsed.amount, date: parsed.dateReadings.join("|"), vendor: parsed.vendorName, vendorPartial: null };
    const expected = { amount: label.total, date: label.dateIso, vendor: label.company, vendorPartial: null };
    for (const field of ["amount", "date", "vendor"] as const) {
      if (!tally[field]) report.misses.push({ id, source, field, expected: expected[field], got: String(got[field]) });
    }
  };
  const cached: Record<string, [string, number]> = opts.cache && existsSync(opts.cache) ? JSON.parse(readFileSync(opts.cache, "utf8")) : {};
  const ms: Record<string, number> = {};
  const addMs = (key: string, value: number) => (ms[key] = (ms[key] ?? 0) + value);
  for (const label of labels) {
    const bytes = readFileSync(path.join(dir, label.file));
    // The service's reading (ocrImage's defaults, as documentText reads an image), then each
    // engine's alone, for their texts and times.
    const [service, serviceMs] = (cached[label.id] ??= await timed(() => ocrImage(bytes, "image/jpeg")));
    const texts = { [METHODS[0]]: [service, serviceMs] } as Record<Method, [string, number]>;
    const readings: Record<string, string> = { [METHODS[0]]: service };
    if (!opts.serviceOnly) {
      const [paddle, paddleMs] = await timed(() => ocrImage(bytes, "image/jpeg", [PADDLE]));
      const [asScanned, asScannedMs] = await timed(() => ocrImage(bytes, "image/jpeg", [AS_SCANNED]));
      const [enlarged, enlargedMs] = await timed(() => ocrImage(bytes, "image/jpeg", [ENLARGED_CONTRAST]));
      addMs("paddle", paddleMs);
      addMs("tesseract, as scanned", asScannedMs);
      addMs("tesseract, enlarged+contrast", enlargedMs);
      // The former pipeline also read the image as one column when both readings lost the total's cents.
      const [column, columnMs] = totalLostItsCents(receiptLines(`${asScanned}\n${enlarged}`))
        ? await timed(() => ocrImage(bytes, "image/jpeg", [SINGLE_COLUMN]))
        : ["", 0];
      const tesseract = [asScanned, enlarged, column].filter(Boolean).join("\n\n");
      Object.assign(readings, {
        "tesseract, as scanned": asScanned,
        "tesseract, enlarged+contrast": enlarged,
        "tesseract, both readings": tesseract,
        paddle,
      });
      texts["tesseract, two readings (before)"] = [tesseract, asScannedMs + enlargedMs + columnMs];
      texts["paddle alone"] = [paddle, paddleMs];
    }
    for (const [name, text] of Object.entries(readings)) add((report.ceilings[name] ??= empty()), ceiling(text, label));
    for (const method of measured) {
      const [text, took] = texts[method];
      const result = report.methods[method];
      const parsed = parseReceiptText(text, { dateOrder: DATE_ORDER });
      const tally = score(parsed, label);
      add(result.all, tally);
      const half = result.halves[halfOf(label.id)];
      add(half, tally);
      half.receipts++;
      for (const [field, confidence] of [["amount", parsed.amountConfidence], ["date", parsed.dateConfidence], ["vendor", parsed.vendorConfidence]] as const) {
        const counts = (result.byConfidence[field][confidence ?? "none"] ??= { right: 0, wrong: 0 });
        if (tally[field]) counts.right++;
        else counts.wrong++;
      }
      result.secondsPerImage += took / 1000 / labels.length;
      noteMisses(label.id, method, tally, parsed, label);
    }

    const datasetText = datasetOcrText(path.join(dir, "ocr", `${label.id}.txt`));
    const fromDataset = parseReceiptText(datasetText, { dateOrder: DATE_ORDER });
    const datasetTally = score(fromDataset, label);
    add(report.fromDatasetOcr, datasetTally);
    noteMisses(label.id, "dataset OCR", datasetTally, fromDataset, label);
  }
  if (opts.cache) writeFileSync(opts.cache, JSON.stringify(cached));
  for (const [engine, total] of Object.entries(ms)) report.engineSeconds[engine] = Math.round(total / labels.length) / 1000;
  for (const method of measured) report.methods[method].secondsPerImage = Math.round(report.methods[method].secondsPerImage * 100) / 100;
  return report;
}

const percent = (k: number, n: number) => `${((100 * k) / Math.max(1, n)).toFixed(0)}%`;

/** The report as printed by this script and by eval:receipts. */
export function sroieLines(report: Report, verbose = false): string[] {
  const n = report.receipts;
  const cell = (k: number, of = n) => `${String(k).padStart(2)}/${of} ${percent(k, of).padStart(4)}`;
  const row = (name: string, t: Tally, of = n) =>
    `${name.padEnd(44)} ${cell(t.amount, of)}   ${cell(t.date, of)}   ${cell(t.vendor, of)}   ${cell(t.vendorPartial, of)}`;
  const lines = [
    `SROIE: ${n} scanned receipts, dates read day-first (DMY)`,
    "",
    `${"".padEnd(44)} ${"amount".padEnd(10)}   ${"date".padEnd(10)}   ${"vendor".padEnd(10)}   vendor (first two words)`,
    ...Object.entries(report.ceilings).map(([name, t]) => row(`OCR ceiling, ${name}`, t)),
  ];
  for (const method of report.measured) {
    const result = report.methods[method];
    lines.push(row(`extraction, ${method}`, result.all));
    for (const half of ["tuning", "held-out"] as const) {
      const t = result.halves[half];
      lines.push(row(`  ${half} half`, t, t.receipts));
    }
  }
  lines.push(row("extraction from the dataset's OCR text", report.fromDatasetOcr), "");
  for (const method of report.measured) {
    const result = report.methods[method];
    lines.push(`${method}: ${result.secondsPerImage} s per image`);
    for (const [field, counts] of Object.entries(result.byConfidence)) {
      const order = ["high", "medium", "low", "none"];
      const cells = Object.entries(counts).sort(([a], [b]) => order.indexOf(a) - order.indexOf(b));
      lines.push(`  ${field} right, by the confidence given: ${cells.map(([c, t]) => `${c} ${t.right}/${t.right + t.wrong}`).join(", ")}`);
    }
  }
  if (Object.keys(report.engineSeconds).length) lines.push(`each engine's reading alone: ${Object.entries(report.engineSeconds).map(([e, s]) => `${e} ${s} s`).join(", ")} per image`);
  if (verbose) {
    for (const m of report.misses) lines.push(`miss ${m.source.padEnd(34)} ${m.id} ${m.field.padEnd(6)} expected ${m.expected} got ${m.got}`);
  }
  return lines;
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const args = process.argv.slice(2);
  const dir = args.find((a, i) => !a.startsWith("--") && args[i - 1] !== "--cache") ?? DEFAULT_DIR;
  if (!existsSync(path.join(dir, "labels.json"))) {
    console.log(`The SROIE sample is absent (${dir}); nothing to evaluate.`);
    process.exit(0);
  }
  try {
    const serviceOnly = process.argv.includes("--service-only");
    const cache = args.includes("--cache") ? args[args.indexOf("--cache") + 1] : undefined;
    for (const line of sroieLines(await evaluateSroie(dir, { serviceOnly, cache }), process.argv.includes("--verbose"))) console.log(line);
  } finally {
    await closeOcr();
  }
}
