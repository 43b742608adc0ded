/**
 * A seeded evaluation corpus for receipt extraction and receipt-to-bank-transaction matching.
 *
 *   npx tsx scripts/receipts/corpus.ts --seed 1 --out /tmp/corpus [--receipts 80]
 *
 * writes r-001.png / r-002.pdf / r-003.txt … plus corpus.json into the output directory. Everything
 * comes from one mulberry32 stream keyed by the seed (no Math.random, no clock), so a seed always
 * gives the same texts, PDFs and truth; PNGs are byte-identical too with the same sharp/libvips
 * build (font rasterization is libvips' business). Vendors, items and layouts are invented.
 *
 * `npm run eval:receipts` measures extraction and matching on it (scripts/receipts/eval.ts).
 */
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { dayOf, formatDate, iso, isAmbiguous, NUMERIC_ORDER, swappedReading, ymd, type DateFormat } from "./corpus/dates.ts";
import { buildMoney, cents, render, toEmailText, toText, type Line, type Money, type Template } from "./corpus/layout.ts";
import { renderPdf, renderPng } from "./corpus/render.ts";
import { Rng } from "./corpus/rng.ts";
import { REGIONS, VENDORS, type Vendor } from "./corpus/vendors.ts";

export type ReceiptKind = "png" | "pdf" | "email";
export type DateOrder = "auto" | "DMY" | "MDY";

/**
 * How the receipt relates to the bank events:
 * - match: exactly one event should be linked;
 * - match+far: plus a same-vendor, same-amount event 6–14 days away (outside the window);
 * - match+other: plus a same-amount event on the receipt date from another vendor;
 * - twin: two same-vendor, same-amount events on adjacent days in the window → do not link;
 * - far-only: only the far same-vendor event → do not link;
 * - other-only: only the other vendor's same-amount, same-date event → do not link;
 * - none: no event at all.
 */
export type Scenario = "match" | "match+far" | "match+other" | "twin" | "far-only" | "other-only" | "none";

export interface CorpusReceipt {
  id: string;
  /** Relative to outDir. */
  file: string;
  contentType: "image/png" | "application/pdf" | "text/plain";
  kind: ReceiptKind;
  truth: {
    /** The vendor's name as the business writes it (receipts may print it upper-cased). */
    vendorName: string;
    /** Total paid, tip included: "12.30". */
    amount: string;
    /** YYYY-MM-DD. */
    date: string;
    /** "CAD"/"USD" when the document states its currency, else null. */
    currency: string | null;
    /** Written as a numeric date whose day and month are both ≤ 12 (and differ). */
    dateAmbiguous: boolean;
  };
  /** The organization setting under which the date is unambiguous or, for auto, resolvable by matching. */
  dateOrder: DateOrder;
  /** The bank event it should be linked to, or null when none should be. */
  matchEventId: string | null;
  /** Extra (not needed by consumers): the matching scenario and the layout template. */
  scenario: Scenario;
  template: Template;
}

export interface CorpusBankEvent {
  id: string;
  /** As a bank statement shows it: "MAPLE LEAF CAFE #0412 TORONTO ON". */
  merchantName: string;
  amount: string;
  date: string;
  eventType: "expense";
  /** Extra: why the event exists (the receipt id it was made for, if any). */
  role: "match" | "decoy-far" | "decoy-other-vendor" | "decoy-twin" | "filler-same-vendor" | "filler";
  forReceipt: string | null;
}

export interface Corpus {
  seed: number;
  receipts: CorpusReceipt[];
  bankEvents: CorpusBankEvent[];
}

/** A receipt as planned, before rendering: its laid-out lines and amounts (for tests and debugging). */
export interface PlannedReceipt {
  receipt: CorpusReceipt;
  lines: Line[];
  /** The text as drawn (PNG/PDF) or written (email). */
  text: string;
  money: Money;
  dateText: string;
  renderSeed: number;
  vendorLine: string;
  day: number;
}

const FIRST_DAY = dayOf(2023, 1, 3);
const LAST_DAY = dayOf(2024, 12, 20);

const DATE_FORMATS: [DateFormat, number][] = [
  ["iso", 2],
  ["ymdSlash", 0.5],
  ["dmy", 2],
  ["mdy", 2],
  ["dmy2", 1],
  ["mdy2", 1],
  ["monDY", 1.5],
  ["dMonY", 1],
  ["monthDY", 1],
  ["dMONyy", 1],
];

const OTHER_MERCHANTS = [
  "METROLINE TRANSIT FARE TORONTO ON",
  "BRIGHTWAVE TELECOM 888-555-0199 ON",
  "NORTHERN UTILITIES PAY WINNIPEG MB",
  "CITYPARK METERS 0093 OTTAWA ON",
  "QUICKSHIP LOGISTICS MONTREAL QC",
  "SQ *FARMERS MKT STALL 12 GUELPH ON",
  "PAYPAL *SKETCHLAB 4029357733",
  "CANVAS & CO ART SUPPLY HALIFAX NS",
  "TST* URBAN TACO BAR CALGARY AB",
  "HIGHLINE FITNESS CLUB VANCOUVER BC",
];

function scenarioCounts(n: number): Scenario[] {
  const c = (frac: number) => Math.max(1, Math.round(n * frac));
  const list: Scenario[] = [];
  const push = (s: Scenario, k: number) => {
    for (let i = 0; i < k && list.length < n; i++) list.push(s);
  };
  push("twin", c(0.0625));
  push("none", c(0.1125));
  push("far-only", c(0.0375));
  push("other-only", c(0.0375));
  push("match+far", c(0.1));
  push("match+other", c(0.0875));
  push("match", n - list.length);
  return list;
}

function hasMatch(s: Scenario): boolean {
  return s === "match" || s === "match+far" || s === "match+other";
}

export function bankName(v: Vendor, rng: Rng): string {
  const region = REGIONS[v.region]!;
  let name = (v.bankPrefix ?? "") + v.bankBase;
  if (v.store && rng.chance(0.85)) name += ` #${v.store}`;
  const loc = v.bankSuffix ?? `${v.city.toUpperCase().slice(0, 13)} ${region.code}`;
  return `${name} ${loc}`;
}

function chooseTemplate(rng: Rng, kind: ReceiptKind, v: Vendor): Template {
  const invoiceish = ["hardware", "office", "auto", "courier", "electronics", "florist"].includes(v.category);
  if (kind === "email") return v.category === "software" ? "software" : rng.chance(0.5) ? "posEmail" : "orderEmail";
  if (v.category === "software") return "software";
  if (v.category === "gas") return "gas";
  if (v.category === "restaurant") return "restaurant";
  if (v.category === "cafe" && rng.chance(0.3)) return "restaurant";
  if (invoiceish && rng.chance(kind === "pdf" ? 0.7 : 0.1)) return "invoice";
  return "thermal";
}

/** Plans the whole corpus (no I/O). */
export function planCorpus(opts: { seed: number; receipts?: number }): { corpus: Corpus; plans: PlannedReceipt[] } {
  const n = opts.receipts ?? 80;
  if (!Number.isInteger(n) || n < 1) throw new Error("receipts must be a positive integer");
  const rng = new Rng(opts.seed);
  const nPng = Math.round(n * 0.45);
  const nPdf = Math.round(n * 0.3);
  const kinds = rng.shuffle<ReceiptKind>([...Array(nPng).fill("png"), ...Array(nPdf).fill("pdf"), ...Array(n - nPng - nPdf).fill("email")]);
  const scenarios = rng.shuffle(scenarioCounts(n));
  const usedTotals = new Set<number>();
  const plans: PlannedReceipt[] = [];
  const software = VENDORS.filter((v) => v.category === "software");
  const inStore = VENDORS.filter((v) => v.category !== "software");

  for (let i = 0; i < n; i++) {
    const rr = rng.fork(i + 1);
    const kind = kinds[i]!;
    const scenario = scenarios[i]!;
    const vendor = kind === "png" ? rr.pick(inStore) : rr.chance(0.22) ? rr.pick(software) : rr.pick(inStore);
    const template = chooseTemplate(rr, kind, vendor);
    const region = REGIONS[vendor.region]!;
    const tipped = (vendor.category === "restaurant" && rr.chance(0.85)) || (vendor.category === "cafe" && (template === "restaurant" || template === "posEmail") && rr.chance(0.4));
    const fees = template === "orderEmail" && rr.chance(0.5);
    const cashOk = template !== "orderEmail" && template !== "software" && template !== "invoice";
    let money = buildMoney(rr, vendor, { tipped, fees, cashOk });
    for (let tries = 0; usedTotals.has(money.total) || money.total < 150; tries++) {
      if (tries > 50) throw new Error("could not find a unique total");
      money = buildMoney(rr, vendor, { tipped, fees, cashOk });
    }
    usedTotals.add(money.total);

    let currency: string | null = null;
    if (vendor.category === "software") currency = region.country === "US" ? "USD" : rr.chance(0.6) ? "CAD" : null;
    else if (region.country === "US") currency = rr.chance(0.4) ? "USD" : null;
    else currency = rr.chance(0.2) ? "CAD" : null;

    const dateFormat = rr.weighted(DATE_FORMATS);
    let day = rr.int(FIRST_DAY, LAST_DAY);
    if (NUMERIC_ORDER[dateFormat] && rr.chance(0.6)) {
      const { y } = ymd(day);
      const m = rr.int(1, 12);
      let d = rr.int(1, 11);
      if (d >= m) d++;
      day = dayOf(y, m, d);
    }
    const dateAmbiguous = isAmbiguous(day, dateFormat);
    const dateOrder: DateOrder = dateAmbiguous ? (hasMatch(scenario) && rr.chance(0.5) ? "auto" : NUMERIC_ORDER[dateFormat]!) : "auto";
    const upperName = kind === "png" ? rr.chance(0.5) : kind === "pdf" ? rr.chance(0.3) : false;
    const lines = render(template, { rng: rr, vendor, money, day, dateFormat, currency, upperName });
    // PNG receipts are laid out at various widths; narrow PDFs at 40 columns (Courier 8pt on 80 mm).
    const text = kind === "email" ? toEmailText(lines, rr.chance(0.3)) : toText(lines, kind === "png" ? rr.int(34, 44) : 40);
    const id = `r-${String(i + 1).padStart(3, "0")}`;
    const ext = kind === "email" ? "txt" : kind;
    plans.push({
      receipt: {
        id,
        file: `${id}.${ext}`,
        contentType: kind === "png" ? "image/png" : kind === "pdf" ? "application/pdf" : "text/plain",
        kind,
        truth: { vendorName: vendor.name, amount: cents(money.total), date: iso(day), currency, dateAmbiguous },
        dateOrder,
        matchEventId: null,
        scenario,
        template,
      },
      lines,
      text,
      money,
      dateText: formatDate(day, dateFormat),
      renderSeed: rr.int(1, 0x7fffffff),
      vendorLine: upperName ? vendor.name.toUpperCase() : vendor.name,
      day,
    });
  }

  // Bank events.
  type Draft = Omit<CorpusBankEvent, "id" | "date" | "amount"> & { day: number; total: number; tie: number; matchFor?: PlannedReceipt };
  const drafts: Draft[] = [];
  const brng = rng.fork(0xbadc0de);
  const vendorOf = (p: PlannedReceipt) => VENDORS.find((v) => v.name === p.receipt.truth.vendorName)!;
  const add = (d: Omit<Draft, "tie" | "eventType">) => drafts.push({ ...d, eventType: "expense", tie: brng.next() });
  for (const p of plans) {
    const v = vendorOf(p);
    const total = p.money.total;
    const r = p.receipt.id;
    const s = p.receipt.scenario;
    if (hasMatch(s)) add({ merchantName: bankName(v, brng), day: p.day + brng.int(0, 3), total, role: "match", forReceipt: r, matchFor: p });
    if (s === "match+far" || s === "far-only") {
      const off = brng.int(6, 14) * (brng.chance(0.5) ? 1 : -1);
      add({ merchantName: bankName(v, brng), day: p.day + off, total, role: "decoy-far", forReceipt: r });
    }
    if (s === "match+other" || s === "other-only") {
      const other = brng.pick(VENDORS.filter((o) => o.name !== v.name && o.bankBase !== v.bankBase));
      add({ merchantName: bankName(other, brng), day: p.day, total, role: "decoy-other-vendor", forReceipt: r });
    }
    if (s === "twin") {
      const d0 = p.day + brng.int(0, 2);
      const name = bankName(v, brng);
      add({ merchantName: name, day: d0, total, role: "decoy-twin", forReceipt: r });
      add({ merchantName: brng.chance(0.5) ? name : bankName(v, brng), day: d0 + 1, total, role: "decoy-twin", forReceipt: r });
    }
  }
  const fillerAmount = () => {
    for (;;) {
      const c = brng.chance(0.7) ? brng.int(300, 9999) : brng.int(10000, 60000);
      if (!usedTotals.has(c)) return c;
    }
  };
  const nFiller = Math.round(n * 0.6);
  for (let k = 0; k < nFiller; k++) {
    if (k % 3 === 0) {
      const p = brng.pick(plans);
      add({ merchantName: bankName(vendorOf(p), brng), day: p.day + brng.int(-2, 3), total: fillerAmount(), role: "filler-same-vendor", forReceipt: null });
    } else {
      const merchant = brng.chance(0.5) ? brng.pick(OTHER_MERCHANTS) : bankName(brng.pick(VENDORS), brng);
      add({ merchantName: merchant, day: brng.int(FIRST_DAY - 5, LAST_DAY + 5), total: fillerAmount(), role: "filler", forReceipt: null });
    }
  }
  drafts.sort((a, b) => a.day - b.day || a.tie - b.tie);
  const bankEvents: CorpusBankEvent[] = drafts.map((d, k) => {
    const id = `ev-${String(k + 1).padStart(4, "0")}`;
    if (d.matchFor) d.matchFor.receipt.matchEventId = id;
    return { id, merchantName: d.merchantName, amount: cents(d.total), date: iso(d.day), eventType: "expense", role: d.role, forReceipt: d.forReceipt };
  });

  // Sanity: an "auto" ambiguous receipt must be resolvable — nothing of its amount near the other reading.
  for (const p of plans) {
    if (!(p.receipt.truth.dateAmbiguous && p.receipt.dateOrder === "auto")) continue;
    const alt = swappedReading(p.day);
    const clash = drafts.some((d) => d.total === p.money.total && d.day >= alt && d.day <= alt + 3);
    if (clash || !p.receipt.matchEventId) throw new Error(`internal: ${p.receipt.id} is not resolvable by matching`);
  }
  return { corpus: { seed: opts.seed, receipts: plans.map((p) => p.receipt), bankEvents }, plans };
}

/** Plans and writes the corpus: one file per receipt plus corpus.json. */
export async function generateCorpus(opts: { seed: number; receipts?: number; outDir: string; concurrency?: number }): Promise<Corpus> {
  const { corpus, plans } = planCorpus(opts);
  await mkdir(opts.outDir, { recursive: true });
  const queue = plans.slice();
  const worker = async () => {
    for (let p = queue.shift(); p; p = queue.shift()) {
      const file = path.join(opts.outDir, p.receipt.file);
      const rng = new Rng(p.renderSeed);
      if (p.receipt.kind === "email") await writeFile(file, p.text);
      else if (p.receipt.kind === "png") await renderPng(p.text, rng, file);
      else {
        const narrow = !(p.receipt.template === "invoice" || p.receipt.template === "software");
        await renderPdf(p.lines, rng, file, { narrow, vendorLine: p.vendorLine, creation: new Date(p.day * 86_400_000 + 12 * 3_600_000) });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, opts.concurrency ?? 4) }, worker));
  await writeFile(path.join(opts.outDir, "corpus.json"), JSON.stringify(corpus, null, 2) + "\n");
  return corpus;
}

function parseArgs(argv: string[]): { seed: number; out: string; receipts?: number } {
  const get = (name: string) => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 ? argv[i + 1] : argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  };
  const seed = Number(get("seed") ?? "1");
  const out = get("out");
  const receipts = get("receipts");
  if (!Number.isInteger(seed) || !out) throw new Error("usage: npx tsx scripts/receipts/corpus.ts --seed 1 --out /tmp/corpus [--receipts 80]");
  return { seed, out, receipts: receipts ? Number(receipts) : undefined };
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const args = parseArgs(process.argv.slice(2));
  const started = performance.now();
  const corpus = await generateCorpus({ seed: args.seed, receipts: args.receipts, outDir: args.out });
  const by = (f: (r: CorpusReceipt) => string) => corpus.receipts.reduce<Record<string, number>>((acc, r) => ((acc[f(r)] = (acc[f(r)] ?? 0) + 1), acc), {});
  const roles = corpus.bankEvents.reduce<Record<string, number>>((acc, e) => ((acc[e.role] = (acc[e.role] ?? 0) + 1), acc), {});
  console.log(`wrote ${corpus.receipts.length} receipts and ${corpus.bankEvents.length} bank events to ${args.out} in ${Math.round(performance.now() - started)} ms`);
  console.log("kinds:", by((r) => r.kind));
  console.log("scenarios:", by((r) => r.scenario));
  console.log("dateOrder:", by((r) => `${r.dateOrder}${r.truth.dateAmbiguous ? " (ambiguous)" : ""}`));
  console.log("events:", roles);
}
