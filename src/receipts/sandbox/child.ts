/**
 * The document reader's process (forked by ./index.ts). It reads one document at a time, as the
 * parent asks over IPC, and keeps its OCR engine between documents. Whatever a document does to
 * it (a page that takes minutes to render, a heap blown by 150,000 pages) stays here: the
 * parent kills and replaces it.
 */
import { closeOcr, extractReceipt } from "../extraction/index.js";
import { paddleAbandonedWork } from "../extraction/paddle-ocr.js";
import type { ReaderReply, ReaderRequest } from "./protocol.js";

const send = (reply: ReaderReply) => process.send?.(reply);

// The parent decides when this process ends: a Ctrl-C or a service manager's SIGTERM sent to
// the whole process group must not kill a read in flight (the receipt would be recorded as
// unreadable). The parent's exit closes the channel, and then this process goes too.
process.on("SIGINT", () => undefined);
process.on("SIGTERM", () => undefined);
process.on("disconnect", () => process.exit(0));
// A parent killed outright may leave the channel's end open a while; this process is then adopted.
const parent = process.ppid;
setInterval(() => { if (process.ppid !== parent) process.exit(0); }, 1000).unref();

process.on("message", (message: ReaderRequest) => {
  if (message.type === "close") {
    void closeOcr().finally(() => process.exit(0));
    return;
  }
  const { id, bytes, contentType, dateOrder } = message;
  // Structured clone hands a Buffer over as a plain Uint8Array: view it as a Buffer again.
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  extractReceipt({ bytes: buffer, contentType, dateOrder }).then(
    (result) => send({ type: "result", id, result, rss: process.memoryUsage().rss, retire: paddleAbandonedWork() }),
    (error: unknown) => send({
      type: "error", id, rss: process.memoryUsage().rss, retire: paddleAbandonedWork(),
      error: {
        message: error instanceof Error ? error.message : String(error),
        // A document that overflows the stack or an array's length would do so again.
        permanent: (error as { permanent?: unknown } | null)?.permanent === true || error instanceof RangeError,
      },
    }),
  );
});

send({ type: "ready" });
