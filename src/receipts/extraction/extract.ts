import { parseReceiptText } from "./parse.js";
import { documentText } from "./read.js";
import type { DateOrder, ReceiptExtraction } from "./types.js";

/** Kept text is capped: a receipt is short; anything longer is not worth storing whole. */
export const MAX_TEXT_CHARS = 100_000;

export async function extractReceipt(input: {
  bytes: Buffer;
  contentType: string;
  dateOrder: DateOrder;
}): Promise<ReceiptExtraction> {
  const { text, method } = await documentText(input.bytes, input.contentType);
  const kept = text.length > MAX_TEXT_CHARS ? text.slice(0, MAX_TEXT_CHARS) : text;
  return { ...parseReceiptText(kept, { dateOrder: input.dateOrder }), text: kept, method };
}
