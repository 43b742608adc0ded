import { mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { createWorker, type Worker } from "tesseract.js";

/**
 * One tesseract worker for the whole process: starting one loads ~10 MB of language data and
 * a WASM engine (about a second), far more than recognising a receipt. Calls are serialised
 * through it because a tesseract worker handles one job at a time anyway.
 */

/** A document's OCR must not hold the worker for ever (a pathological image could). */
export const OCR_TIMEOUT_MS = 60_000;

let worker: Promise<Worker> | undefined;
let queue: Promise<unknown> = Promise.resolve();

function englishDataDir(): string {
  // The data ships in an npm package so that OCR works offline: never fetch it from a CDN.
  const require = createRequire(import.meta.url);
  return path.join(path.dirname(require.resolve("@tesseract.js-data/eng/package.json")), "4.0.0_best_int");
}

/** Where tesseract.js keeps the unpacked language data between workers of this machine. */
function ocrCacheDir(): string {
  const dir = path.join(os.tmpdir(), "receipt-ocr-cache");
  mkdirSync(dir, { recursive: true });
  return dir;
}

function ocrWorker(): Promise<Worker> {
  worker ??= createWorker("eng", 1, {
    langPath: englishDataDir(),
    gzip: true,
    cachePath: ocrCacheDir(),
  }).catch((error: unknown) => {
    worker = undefined;
    throw error;
  });
  return worker;
}

/**
 * Tesseract's page layout modes: "3" finds blocks and columns on its own (its default), "4"
 * reads one column of lines of varying size, "6" one uniform block.
 */
export type PageLayout = "3" | "4" | "6" | "11";

/** The layout mode that read the 30 SROIE scans best: "4" found as much but took 25% longer,
 * "6" lost half the totals and dates (scripts/receipts/eval-sroie.ts). */
export const RECEIPT_LAYOUT: PageLayout = "3";

let currentLayout: PageLayout | undefined;

export interface Recognised {
  text: string;
  /** Tesseract's mean word confidence, 0–100. */
  confidence: number;
}

/** Recognises the text of one image (PNG/JPEG bytes), one call at a time. */
export function recognise(image: Buffer, options: { layout?: PageLayout; deadlineMs?: number } = {}): Promise<Recognised> {
  const job = queue.then(() => recogniseNow(image, options.layout ?? RECEIPT_LAYOUT, options.deadlineMs ?? OCR_TIMEOUT_MS));
  queue = job.catch(() => undefined);
  return job;
}

async function recogniseNow(image: Buffer, layout: PageLayout, deadline: number): Promise<Recognised> {
  const w = await ocrWorker();
  if (layout !== currentLayout) {
    await w.setParameters({ tessedit_pageseg_mode: layout as never });
    currentLayout = layout;
  }
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      // A stuck worker cannot be interrupted mid-job: drop it, the next call starts a new one.
      worker = undefined;
      currentLayout = undefined;
      void w.terminate();
      // Permanent: the same image would take as long again, holding a reader every other
      // organization waits on.
      reject(Object.assign(new Error(`OCR took longer than ${deadline / 1000} s; the image was given up.`), { permanent: true }));
    }, deadline);
  });
  try {
    const result = await Promise.race([w.recognize(image), timeout]);
    return { text: result.data.text, confidence: result.data.confidence };
  } finally {
    clearTimeout(timer);
  }
}

/** Terminates the shared tesseract worker (read.ts' closeOcr); the next call starts another. */
export async function closeTesseract(): Promise<void> {
  const current = worker;
  worker = undefined;
  currentLayout = undefined;
  if (!current) return;
  await queue.catch(() => undefined);
  const w = await current.catch(() => undefined);
  await w?.terminate();
}
