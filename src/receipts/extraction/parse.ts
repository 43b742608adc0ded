import { formatCents } from "./amounts.js";
import { receiptCurrency } from "./currency.js";
import { receiptDate } from "./dates.js";
import { unwrapForwarded, vendorFromHeaders } from "./forwarded.js";
import { receiptLines } from "./lines.js";
import { type AmountConfidence, totalByConsistency } from "./consistency.js";
import type { DateOrder, FieldConfidence, ParsedReceipt } from "./types.js";
import { findVendor } from "./vendor.js";

/**
 * Reads a receipt's vendor, grand total, currency and date from its text (OCR'd or not). A
 * text may hold two OCR readings of one image one after the other: the total's rules (the
 * strongest label, the largest among equals) and the date's (the labelled one) hold over both.
 */
/** How settling the total (consistency.ts) translates into the amount's confidence. */
const AMOUNT_CONFIDENCE: Record<AmountConfidence, FieldConfidence> = { checked: "high", labelled: "medium", guessed: "low" };

export function parseReceiptText(text: string, opts: { dateOrder: DateOrder }): ParsedReceipt {
  // A forwarded email's signature, marker and headers are no part of the receipt; its sender may name the vendor.
  const { lines, sender, subject } = unwrapForwarded(receiptLines(text));
  const total = totalByConsistency(lines);
  const date = receiptDate(lines, opts.dateOrder);
  const fromDocument = findVendor(lines);
  const fromHeaders = fromDocument ? null : vendorFromHeaders(sender, subject);
  return {
    vendorName: fromDocument?.name ?? fromHeaders,
    vendorConfidence: fromDocument?.confidence ?? (fromHeaders ? "low" : null),
    amount: total ? formatCents(total.cents) : null,
    amountConfidence: total ? AMOUNT_CONFIDENCE[total.confidence] : null,
    currency: receiptCurrency(lines, total ? [total.line] : []),
    dateReadings: date.readings,
    dateConfidence: date.confidence,
  };
}
