import { Readable } from "node:stream";
import type { Storage } from "../storage/index.js";
import type { ReceiptContentType } from "./file-types.js";
import { ReceiptInspector, UnsupportedFileType } from "./inspect.js";

export interface StoredFile {
  key: string;
  contentType: ReceiptContentType;
  size: number;
  sha256: string;
}

/** At most this many bytes per receipt file (docs/api.md, Upload). */
export const RECEIPT_MAX_BYTES = 20 * 1024 * 1024;

/**
 * Streams a file into storage under `key` if, from its bytes, it is a receipt type: null when it
 * is not (nothing stored). Rejects with FileTooLarge past `maxBytes`, or with the stream's or the
 * storage's error; an object begun is then deleted, so a failure leaves nothing behind.
 */
export async function storeReceiptFile(
  storage: Storage, key: string, content: Buffer | Readable, maxBytes = RECEIPT_MAX_BYTES,
): Promise<StoredFile | null> {
  if (!Buffer.isBuffer(content) && content.destroyed) throw new Error("The file stream was closed before it was read.");
  const inspector = new ReceiptInspector(maxBytes);
  const source = Buffer.isBuffer(content) ? Readable.from([content]) : content;
  // Errors of the source reach the inspector (and so the put); the inspector's own errors are
  // reported by the put or by `type`.
  source.on("error", (e) => inspector.destroy(e));
  inspector.on("error", () => {});
  source.pipe(inspector);
  let type: ReceiptContentType | null;
  try {
    type = await inspector.type;
  } catch (e) {
    source.unpipe(inspector);
    throw e;
  }
  if (type === null) {
    source.unpipe(inspector);
    return null;
  }
  try {
    await storage.put(key, inspector);
  } catch (e) {
    source.unpipe(inspector);
    await storage.delete(key).catch(() => {});
    // The storage may report a failed source in its own words (an aborted S3 upload): the
    // inspector's reason is the real one.
    const reason = inspector.failure ?? e;
    // Text that stopped being plain text part way is a refused type, like any other.
    if (reason instanceof UnsupportedFileType) return null;
    throw reason;
  }
  return { key, contentType: type, size: inspector.size, sha256: inspector.sha256() };
}
