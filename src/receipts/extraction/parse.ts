import { formatCents } from "./amounts.js";
import { receiptCurrency } from "./currency.js";
import { receiptDateReadings } from "./dates.js";
import { receiptLines } from "./lines.js";
import { totalByConsistency } from "./consistency.js";
import type { DateOrder, ParsedReceipt } from "./types.js";
import { findVendor } from "./vendor.js";

/**
 * Reads a receipt's vendor, grand total, currency and date from its text (OCR'd or not). A
 * text may hold two OCR readings of one image one after the other: the total's rules (the
 * strongest label, the largest among equals) and the date's (the labelled one) hold over both.
 */
export function parseReceiptText(text: string, opts: { dateOrder: DateOrder }): ParsedReceipt {
  const lines = receiptLines(text);
  const total = totalByConsistency(lines);
  return {
    vendorName: findVendor(lines),
    amount: total ? formatCents(total.cents) : null,
    amountConfidence: total?.confidence ?? null,
    currency: receiptCurrency(lines, total ? [total.line] : []),
    dateReadings: receiptDateReadings(lines, opts.dateOrder),
  };
}
