import { createRequire } from "node:module";
import sharp, { type Sharp } from "sharp";
import type { PageLayout } from "./ocr.js";

/** Larger images are refused: decoding them costs hundreds of MB for no better reading. */
export const MAX_IMAGE_PIXELS = 40_000_000;

/**
 * How an image is cleaned before OCR. Measured on 30 real scans (scripts/receipts/eval-sroie.ts):
 * no single clean-up beat the plain image on every receipt (tesseract binarises on its own), but
 * an enlarged, contrast-stretched copy reads many of the receipts the plain one misses (grey
 * paper, faint dot-matrix print), so images are read both ways.
 */
export interface Cleanup {
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

export const AS_SCANNED: Cleanup = {};
export const ENLARGED_CONTRAST: Cleanup = { enlargeTo: 2000, grayscale: true, normalise: { lower: 2, upper: 98 } };
/** The readings taken of each image, in order. */
export const IMAGE_READINGS: Cleanup[] = [AS_SCANNED, ENLARGED_CONTRAST];
/**
 * A further reading, taken only when the others lost the total's cents (total.ts'
 * totalLostItsCents): the image as scanned, read as one column of lines. On clean but speckled
 * images the default layout analysis may drop the column of cents ("TOTAL : $22."); this mode
 * reads those lines whole. Taken always, it would cost a second and lose SROIE totals.
 */
export const SINGLE_COLUMN: Cleanup = { layout: "4" };

/** A sharp pipeline over the image, EXIF-rotated, refusing images that are too large. */
function open(bytes: Buffer): Sharp {
  return sharp(bytes, { limitInputPixels: MAX_IMAGE_PIXELS, failOn: "error" }).rotate();
}

/** Re-encodes an image (any format sharp reads) as a PNG cleaned for OCR. */
export async function prepareForOcr(bytes: Buffer, cleanup: Cleanup = AS_SCANNED): Promise<Buffer> {
  let image = open(bytes);
  const { width, orientation } = await image.metadata().catch((error: unknown) => {
    throw unreadable(error);
  });
  // EXIF orientations 5–8 swap the sides: the width read is then the height.
  const uprightWidth = orientation && orientation >= 5 ? undefined : width;
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
