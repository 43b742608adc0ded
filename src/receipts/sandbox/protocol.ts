import type { DateOrder, ReceiptExtraction } from "../extraction/types.js";

/** Parent → reader. */
export type ReaderRequest =
  | { type: "extract"; id: number; bytes: Uint8Array; contentType: string; dateOrder: DateOrder }
  | { type: "close" };

/** Reader → parent. `rss` is the reader's resident memory after the document; `retire` asks the
 * parent to replace the reader (an OCR engine still busy with a document given up). */
export type ReaderReply =
  | { type: "ready" }
  | { type: "result"; id: number; result: ReceiptExtraction; rss: number; retire: boolean }
  | { type: "error"; id: number; error: { message: string; permanent: boolean }; rss: number; retire: boolean };
