/** How to read a numeric date whose day and month could be swapped (03/04/2023). */
export type DateOrder = "auto" | "DMY" | "MDY";

/**
 * How a field was read. Amount: `high` when the receipt's own arithmetic confirms the total
 * (subtotal + tax ± rounding, cash − change, a card payment), `medium` when only a total label
 * names it, `low` when neither does. Date: `high` when a labelled or timestamped date is read
 * alike twice, `medium` when labelled or timestamped, `low` when mended from broken digits or
 * merely the first date seen. Vendor: `high` for a registered name (its legal form: Inc., Ltd.,
 * SDN BHD) or one read alike twice or named in a sentence, `medium` for the strongest line at
 * the top, `low` when taken from a forwarded email's sender or subject.
 */
export type FieldConfidence = "high" | "medium" | "low";

export interface ParsedReceipt {
  vendorName: string | null;
  /** The grand total as a decimal string with two decimals ("12.30"); negative for a refund or
   * adjustment note. */
  amount: string | null;
  /** How far each field can be trusted (null when it was not read); matching asks more of a
   * `low` field (docs/api.md, Matching). */
  vendorConfidence: FieldConfidence | null;
  amountConfidence: FieldConfidence | null;
  dateConfidence: FieldConfidence | null;
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
