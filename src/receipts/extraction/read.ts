import { AS_SCANNED, heicToPng, IMAGE_READINGS, type ImageReading, prepareForOcr, SINGLE_COLUMN } from "./images.js";
import { READING_BREAK, receiptLines } from "./lines.js";
import { closeTesseract, recognise } from "./ocr.js";
import { closePaddleOcr, recogniseWithPaddle } from "./paddle-ocr.js";
import { openPdf, pdfPageImages, pdfTextLayer } from "./pdf.js";
import { totalLostItsCents } from "./total.js";
import type { DocumentText } from "./types.js";

/** A document that no retry can read: corrupt, unsupported, or too large. */
export class UnreadableDocument extends Error {
  readonly permanent = true;
}

const IMAGE_TYPES = new Set(["image/jpeg", "image/jpg", "image/png", "image/webp", "image/heic", "image/heif"]);

/** All the OCR of one document (its readings, its pages) must end within this. */
export const DOCUMENT_OCR_BUDGET_MS = 90_000;

/**
 * OCR of one image (any type sharp reads, or HEIC), one reading per entry of `readings`, all at
 * once (each engine serialises its own calls), the texts joined in the order given (the parser's
 * rules hold over all: see parse.ts). With the default readings, one more is taken when they
 * lost the total's cents (SINGLE_COLUMN), unless the document's time is nearly spent.
 */
export async function ocrImage(
  bytes: Buffer,
  contentType: string,
  readings: ImageReading[] = IMAGE_READINGS,
  deadlineAt = Date.now() + DOCUMENT_OCR_BUDGET_MS,
): Promise<string> {
  const decodable = /^image\/hei[cf]$/.test(contentType) ? await heicToPng(bytes) : bytes;
  const read = async (reading: ImageReading) => {
    const image = await prepareForOcr(decodable, reading);
    const left = Math.max(deadlineAt - Date.now(), 1_000);
    if (reading.engine === "paddle") return (await recogniseWithPaddle(image, left)).trim();
    return (await recognise(image, { layout: reading.layout, deadlineMs: left })).text.trim();
  };
  const settled = await Promise.allSettled(readings.map(read));
  // A reading that fails (an engine that could not start, one past its time) leaves the others'
  // texts; an image no engine reads fails, for good when any reason is permanent.
  const texts = settled.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
  if (texts.length === 0) {
    // A permanent reason (a timeout, an undecodable image) outranks a passing one (an engine that did not start).
    const reasons = settled.map((r) => (r as PromiseRejectedResult).reason as { permanent?: unknown });
    throw reasons.find((reason) => reason?.permanent === true) ?? reasons[0];
  }
  settled.forEach((r, i) => {
    if (r.status === "rejected") {
      console.warn(`receipt OCR: the ${readings[i].engine ?? "tesseract"} reading failed, the others' text was used: ${r.reason instanceof Error ? r.reason.message : String(r.reason)}`);
    }
  });
  if (readings === IMAGE_READINGS && deadlineAt - Date.now() > 10_000 && totalLostItsCents(receiptLines(texts.join("\n")))) {
    // A further reading that fails leaves the texts already read.
    texts.push(await read(SINGLE_COLUMN).catch(() => ""));
  }
  return texts.join(READING_BREAK);
}

/** Ends both OCR engines (tests and process shutdown); the next read starts them again. */
export async function closeOcr(): Promise<void> {
  await Promise.all([closeTesseract(), closePaddleOcr()]);
}

/** The text of a receipt: its own for text and text-layer PDFs, OCR'd for images and scans. */
export async function documentText(bytes: Buffer, contentType: string): Promise<DocumentText> {
  const type = contentType.split(";")[0].trim().toLowerCase();
  if (type === "text/plain") return { text: bytes.toString("utf8"), method: "text" };
  if (type === "application/pdf") {
    const pdf = await openPdf(bytes).catch((error: Error) => {
      throw new UnreadableDocument(error.message);
    });
    try {
      const layer = await pdfTextLayer(pdf);
      if (layer !== null) return { text: layer, method: "pdf-text" };
      const deadlineAt = Date.now() + DOCUMENT_OCR_BUDGET_MS;
      const pages = await pdfPageImages(pdf);
      const texts: string[] = [];
      // Rendered pages are clean: one reading each is enough.
      for (const page of pages) texts.push(await ocrImage(page, "image/png", [AS_SCANNED], deadlineAt));
      return { text: texts.join("\n"), method: "pdf-ocr" };
    } finally {
      await pdf.loadingTask.destroy();
    }
  }
  if (IMAGE_TYPES.has(type)) {
    const text = await ocrImage(bytes, type).catch((error: Error) => {
      // Timeouts may pass on a retry; a broken or oversized image never will.
      if (/could not be decoded|megapixels/.test(error.message)) throw new UnreadableDocument(error.message);
      throw error;
    });
    return { text, method: "ocr" };
  }
  throw new UnreadableDocument(`Receipts of type ${type} cannot be read (text, PDF, JPEG, PNG, WebP or HEIC).`);
}
