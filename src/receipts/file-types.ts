import { fileTypeFromBuffer } from "file-type";

/**
 * The file types a receipt may be (docs/api.md, Upload), always decided from the bytes, never from
 * a file's name or declared type: a renamed executable stays an executable.
 */
export const RECEIPT_CONTENT_TYPES = ["image/jpeg", "image/png", "image/webp", "image/heic", "application/pdf", "text/plain"] as const;
export type ReceiptContentType = (typeof RECEIPT_CONTENT_TYPES)[number];

/** How many leading bytes detection looks at (file-type's own sample size). */
export const DETECTION_BYTES = 4100;

/** What file-type reports, mapped to ours; HEIF stills (brand mif1) are HEIC for our purpose. */
const DETECTED: Record<string, ReceiptContentType> = {
  "image/jpeg": "image/jpeg",
  "image/png": "image/png",
  "image/webp": "image/webp",
  "image/heic": "image/heic",
  "image/heif": "image/heic",
  "application/pdf": "application/pdf",
};

/**
 * The receipt type of a file from its first bytes (at least DETECTION_BYTES of them, or the whole
 * file when shorter), or null when it is none of ours. `complete`: `head` is the whole file, so a
 * UTF-8 sequence cut at its end is invalid rather than continued later.
 */
export async function detectReceiptType(head: Buffer, options: { complete?: boolean } = {}): Promise<ReceiptContentType | null> {
  if (head.length === 0) return null;
  const found = await fileTypeFromBuffer(head);
  if (found) return DETECTED[found.mime] ?? null;
  const text = new PlainTextCheck();
  return text.push(head) && (!options.complete || text.end()) ? "text/plain" : null;
}

/**
 * Plain text, checked chunk by chunk: valid UTF-8 without NUL or other control characters than
 * tab, LF, FF and CR. Streamed, so a text upload is checked to its last byte without holding it.
 */
export class PlainTextCheck {
  private readonly decoder = new TextDecoder("utf-8", { fatal: true });

  /** False once the text so far is not plain text. */
  push(chunk: Buffer): boolean {
    try {
      return !FORBIDDEN_CONTROL.test(this.decoder.decode(chunk, { stream: true }));
    } catch {
      return false;
    }
  }

  /** False when the text ends inside a UTF-8 sequence. */
  end(): boolean {
    try {
      this.decoder.decode();
      return true;
    } catch {
      return false;
    }
  }
}

// C0 controls but tab (09), LF (0A), FF (0C), CR (0D); DEL and the C1 controls.
// eslint-disable-next-line no-control-regex
const FORBIDDEN_CONTROL = /[\u0000-\u0008\u000B\u000E-\u001F\u007F-\u009F]/;
