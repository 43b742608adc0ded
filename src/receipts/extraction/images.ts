import { createRequire } from "node:module";
import sharp, { type Sharp } from "sharp";
import type { PageLayout } from "./ocr.js";

/** Larger images are refused: decoding them costs hundreds of MB for no better reading. */
export const MAX_IMAGE_PIXELS = 40_000_000;

/**
 * One OCR reading of an image: which engine reads it, and how the image is cleaned first. An
 * image is read by both engines (read.ts): PaddleOCR's models (paddle-ocr.ts) read more of the
 * print, tesseract some dates and names they miss, and the parser's rules hold over both texts.
 */
export interface ImageReading {
  /** tesseract when not given. */
  engine?: "tesseract" | "paddle";
  /** Shrink larger images to fit within this box (never enlarged): the paddle detector runs on
   * the image at its own size, so its time and memory grow with the pixels. */
  fitWithin?: { width: number; height: number };
  /** Enlarge narrower images towards this width, at most twice: small print then lands near
   * the letter height tesseract reads best. */
  enlargeTo?: number;
  grayscale?: boolean;
  /** Stretches contrast between these percentiles of the grey levels (faded thermal print,
   * grey paper). */
  normalise?: { lower: number; upper: number };
  /** Tesseract's page layout mode for this reading (ocr.ts' RECEIPT_LAYOUT when not given). */
  layout?: PageLayout;
}

/**
 * Tesseract's box: a 600 dpi scan (4961 px wide) or a phone's 12-megapixel photo is shrunk to it.
 * Tesseract's time grows with the pixels, not its reading: with PaddleOCR beside it, such a scan
 * read the same fields in 2.4 s against 3.5 s. A landscape photo keeps 60% of its width, where a
 * receipt's print is still several times tesseract's smallest letters. Receipts scanned at the
 * usual 200-300 dpi (the SROIE scans are at most 1080 px wide) and PDF pages (rendered 1700 px
 * wide) are read as they came.
 */
const TESSERACT_BOX = { width: 2400, height: 6000 };
/** Tesseract, the image as it came (within TESSERACT_BOX). */
export const AS_SCANNED: ImageReading = { fitWithin: TESSERACT_BOX };
/** Tesseract on an enlarged, contrast-stretched copy: what was read beside AS_SCANNED before the
 * paddle engine (it reads grey paper and faint dot-matrix print better than the plain image). */
export const ENLARGED_CONTRAST: ImageReading = { enlargeTo: 2000, grayscale: true, normalise: { lower: 2, upper: 98 } };
/** PaddleOCR's models on the image shrunk to at most 960 px wide: on the SROIE scans 1280 px read
 * no more fields and took longer; the height bound keeps a metre-long receipt's detection within
 * a few hundred MB. */
export const PADDLE: ImageReading = { engine: "paddle", fitWithin: { width: 960, height: 4096 } };
/**
 * The readings taken of each image, at the same time, their texts in this order. Measured on
 * the 30 SROIE scans (scripts/receipts/eval-sroie.ts), against tesseract's two readings
 * (AS_SCANNED, ENLARGED_CONTRAST): the total right on 28 against 27, the date on 28 against 24,
 * in 2.4 s per image against 2.6 s (bench/README.md).
 */
export const IMAGE_READINGS: ImageReading[] = [PADDLE, AS_SCANNED];
/**
 * A further reading, taken only when the others lost the total's cents (total.ts'
 * totalLostItsCents): the image as scanned, read by tesseract as one column of lines. On clean
 * but speckled images the default layout analysis may drop the column of cents ("TOTAL : $22.");
 * this mode reads those lines whole.
 */
export const SINGLE_COLUMN: ImageReading = { layout: "4", fitWithin: TESSERACT_BOX };

/** A sharp pipeline over the image, EXIF-rotated, refusing images that are too large. */
function open(bytes: Buffer): Sharp {
  return sharp(bytes, { limitInputPixels: MAX_IMAGE_PIXELS, failOn: "error" }).rotate();
}

/** Re-encodes an image (any format sharp reads) as a PNG cleaned for OCR. */
export async function prepareForOcr(bytes: Buffer, cleanup: ImageReading = AS_SCANNED): Promise<Buffer> {
  let image = open(bytes);
  const { width, orientation } = await image.metadata().catch((error: unknown) => {
    throw unreadable(error);
  });
  // EXIF orientations 5–8 swap the sides: the width read is then the height.
  const uprightWidth = orientation && orientation >= 5 ? undefined : width;
  if (cleanup.fitWithin) {
    image = image.resize({ ...cleanup.fitWithin, fit: "inside", withoutEnlargement: true });
  }
  if (cleanup.enlargeTo && uprightWidth && uprightWidth < cleanup.enlargeTo) {
    image = image.resize({ width: Math.min(2 * uprightWidth, cleanup.enlargeTo) });
  }
  // Transparent pixels would turn black and hide dark text: paper is white.
  image = image.flatten({ background: "#ffffff" });
  if (cleanup.grayscale) image = image.grayscale();
  if (cleanup.normalise) image = image.normalise(cleanup.normalise);
  return image
    .png({ compressionLevel: 1 })
    .toBuffer()
    .catch((error: unknown) => {
      throw unreadable(error);
    });
}

function unreadable(error: unknown): Error {
  const reason = error instanceof Error ? error.message : String(error);
  if (/pixel limit/i.test(reason)) {
    return new Error(`The image is larger than ${MAX_IMAGE_PIXELS / 1_000_000} megapixels; it was not read.`);
  }
  return new Error(`The image could not be decoded: ${reason}`);
}

interface HeicImage {
  width: number;
  height: number;
  decode(): Promise<{ width: number; height: number; data: Uint8ClampedArray }>;
}
type DecodeAllHeic = (input: { buffer: Buffer }) => Promise<HeicImage[] & { dispose(): void }>;

/** HEIC (iPhone photos) is decoded in WASM: sharp's prebuilt libvips has no HEVC decoder. */
export async function heicToPng(bytes: Buffer): Promise<Buffer> {
  const require = createRequire(import.meta.url);
  const decodeAll = (require("heic-decode") as { all: DecodeAllHeic }).all;
  const images = await decodeAll({ buffer: bytes }).catch((error: unknown) => {
    throw new Error(`The HEIC image could not be decoded: ${error instanceof Error ? error.message : String(error)}`);
  });
  try {
    const [first] = images;
    // The size is known before decoding: refuse before allocating the pixels.
    if (first.width * first.height > MAX_IMAGE_PIXELS) {
      throw new Error(`The image is larger than ${MAX_IMAGE_PIXELS / 1_000_000} megapixels; it was not read.`);
    }
    const { width, height, data } = await first.decode().catch((error: unknown) => {
      throw new Error(`The HEIC image could not be decoded: ${error instanceof Error ? error.message : String(error)}`);
    });
    return await sharp(Buffer.from(data.buffer, data.byteOffset, data.byteLength), { raw: { width, height, channels: 4 } })
      .png({ compressionLevel: 1 })
      .toBuffer();
  } finally {
    images.dispose();
  }
}
