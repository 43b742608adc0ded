import { formatCents } from "./amounts.js";
import { receiptCurrency } from "./currency.js";
import { receiptDateReadings } from "./dates.js";
import { unwrapForwarded, vendorFromHeaders } from "./forwarded.js";
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
  // A forwarded email's signature, marker and headers are no part of the receipt; its sender may name the vendor.
  const { lines, sender, subject } = unwrapForwarded(receiptLines(text));
  const total = totalByConsistency(lines);
  return {
    vendorName: findVendor(lines) ?? vendorFromHeaders(sender, subject),
    amount: total ? formatCents(total.cents) : null,
    amountConfidence: total?.confidence ?? null,
    currency: receiptCurrency(lines, total ? [total.line] : []),
    dateReadings: receiptDateReadings(lines, opts.dateOrder),
  };
}
