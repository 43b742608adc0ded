/** How to read a numeric date whose day and month could be swapped (03/04/2023). */
export type DateOrder = "auto" | "DMY" | "MDY";

export interface ParsedReceipt {
  vendorName: string | null;
  /** The grand total as a decimal string with two decimals ("12.30"); negative for a refund or
   * adjustment note. */
  amount: string | null;
  /** How the total was settled (consistency.ts): `checked` by the receipt's own arithmetic, `labelled` by a total label only, `guessed`. */
  amountConfidence: "checked" | "labelled" | "guessed" | null;
  /** ISO 4217 code when the receipt names its currency; null for a bare "$" (the organization's
   * own currency then applies). */
  currency: string | null;
  /** YYYY-MM-DD readings of the receipt's date: two when its day and month could be swapped and
   * the order is "auto" (the matcher tries both), otherwise at most one. */
  dateReadings: string[];
}

export type ReadMethod = "text" | "pdf-text" | "pdf-ocr" | "ocr";

export interface DocumentText {
  text: string;
  method: ReadMethod;
}

export interface ReceiptExtraction extends ParsedReceipt {
  text: string;
  method: ReadMethod;
}
