export { extractReceipt, MAX_TEXT_CHARS } from "./extract.js";
export { parseReceiptText } from "./parse.js";
export { closeOcr, documentText, UnreadableDocument } from "./read.js";
export type { DateOrder, DocumentText, ParsedReceipt, ReadMethod, ReceiptExtraction } from "./types.js";
