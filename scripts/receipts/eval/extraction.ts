/**
 * Extraction over the corpus: every file read with its organization's date order, each field
 * scored against the truth (scripts/receipts/eval.ts prints the figures).
 */
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { extractReceipt, type ReceiptExtraction } from "../../../src/receipts/extraction/index.js";
import type { CorpusReceipt, ReceiptKind } from "../corpus.ts";
import { photograph } from "../corpus/render.ts";
import { Rng } from "../corpus/rng.ts";

export const FIELDS = ["vendor", "amount", "date", "currency"] as const;
export type Field = (typeof FIELDS)[number];

export interface Extracted {
  receipt: CorpusReceipt;
  extraction: ReceiptExtraction;
  ms: number;
  size: number;
  sha256: string;
  /** Extraction threw (the receipt is then recorded with no fields). */
  error?: string;
  correct: Record<Field, boolean>;
}

const squeeze = (s: string | null | undefined) => (s ?? "").toLowerCase().replace(/\s+/g, "");

/** Which fields extraction got right: vendor ignoring case and spaces, amount to the cent, the
 * true date among the readings under dateOrder auto (else the single reading), currency exactly. */
export function scoreExtraction(r: CorpusReceipt, x: Pick<ReceiptExtraction, "vendorName" | "amount" | "currency" | "dateReadings">): Record<Field, boolean> {
  const cents = (a: string | null) => (a === null || !/^-?\d+(\.\d{1,2})?$/.test(a) ? null : Math.round(Number(a) * 100));
  return {
    vendor: squeeze(x.vendorName) !== "" && squeeze(x.vendorName) === squeeze(r.truth.vendorName),
    amount: cents(x.amount) !== null && cents(x.amount) === cents(r.truth.amount),
    date: r.dateOrder === "auto" ? x.dateReadings.includes(r.truth.date) : x.dateReadings.length === 1 && x.dateReadings[0] === r.truth.date,
    currency: (x.currency ?? null) === r.truth.currency,
  };
}

/** One file of a receipt read with its organization's date order, and scored. */
async function extractOne(receipt: CorpusReceipt, bytes: Buffer, contentType: string): Promise<Extracted> {
  const started = performance.now();
  let extraction: ReceiptExtraction;
  let error: string | undefined;
  try {
    extraction = await extractReceipt({ bytes, contentType, dateOrder: receipt.dateOrder });
  } catch (e) {
    error = (e as Error).message;
    extraction = { vendorName: null, vendorConfidence: null, amount: null, amountConfidence: null, currency: null, dateReadings: [], dateConfidence: null, text: "", method: "text" };
  }
  return { receipt, extraction, ms: performance.now() - started, error,
    size: bytes.length, sha256: createHash("sha256").update(bytes).digest("hex"), correct: scoreExtraction(receipt, extraction) };
}

/** Reads every receipt of the corpus (one at a time: OCR uses the machine's cores itself). */
export async function extractCorpus(
  receipts: CorpusReceipt[],
  dir: string,
  onProgress?: (done: number, total: number, item: Extracted) => void,
): Promise<Extracted[]> {
  const out: Extracted[] = [];
  for (const receipt of receipts) {
    out.push(await extractOne(receipt, await readFile(path.join(dir, receipt.file)), receipt.contentType));
    onProgress?.(out.length, receipts.length, out[out.length - 1]);
  }
  return out;
}

/**
 * The corpus' PNG receipts as a phone would photograph them (render.ts' photograph, seeded by the
 * corpus seed and each receipt's place), each read as a JPEG.
 */
export async function extractPhotographs(receipts: CorpusReceipt[], dir: string, seed: number): Promise<Extracted[]> {
  const out: Extracted[] = [];
  const rng = new Rng(seed * 7919 + 1);
  for (const [i, receipt] of receipts.entries()) {
    if (receipt.kind !== "png") continue;
    out.push(await extractOne(receipt, await photograph(await readFile(path.join(dir, receipt.file)), rng.fork(i + 1)), "image/jpeg"));
  }
  return out;
}

export interface Accuracy {
  n: number;
  right: Record<Field, number>;
  /** Seconds of extraction, all receipts of the group. */
  seconds: number;
}

export function accuracy(items: Extracted[]): Accuracy {
  const right = { vendor: 0, amount: 0, date: 0, currency: 0 };
  for (const it of items) for (const f of FIELDS) right[f] += Number(it.correct[f]);
  return { n: items.length, right, seconds: items.reduce((s, it) => s + it.ms, 0) / 1000 };
}

export function accuracyByKind(items: Extracted[]): { kind: ReceiptKind | "all"; acc: Accuracy }[] {
  const kinds: ReceiptKind[] = ["png", "pdf", "email"];
  return [
    ...kinds.map((kind) => ({ kind, acc: accuracy(items.filter((it) => it.receipt.kind === kind)) })),
    { kind: "all" as const, acc: accuracy(items) },
  ];
}

export const pct = (k: number, n: number) => (n === 0 ? "–" : `${((100 * k) / n).toFixed(1)}%`);
