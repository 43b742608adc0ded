import { formatCents } from "./amounts.js";
import { receiptCurrency } from "./currency.js";
import { receiptDate } from "./dates.js";
import { unwrapForwarded, vendorFromHeaders } from "./forwarded.js";
import { READING_BREAK, receiptLines } from "./lines.js";
import { type AmountConfidence, totalByConsistency } from "./consistency.js";
import type { DateOrder, FieldConfidence, ParsedReceipt } from "./types.js";
import { findVendor } from "./vendor.js";

/** How settling the total (consistency.ts) translates into the amount's confidence. */
const AMOUNT_CONFIDENCE: Record<AmountConfidence, FieldConfidence> = { checked: "high", labelled: "medium", guessed: "low" };

/**
 * Reads a receipt's vendor, grand total, currency and date from its text (OCR'd or not). A
 * text may hold several OCR readings of one image (READING_BREAK between them): the total's rules
 * (the strongest label, the largest among equals) and the date's (the labelled one) hold over all,
 * and the vendor is looked for at the top of each.
 */
export function parseReceiptText(text: string, opts: { dateOrder: DateOrder }): ParsedReceipt {
  // A forwarded email's signature, marker and headers are no part of the receipt; its sender may name the vendor.
  const readings = text.split(READING_BREAK).map((reading) => unwrapForwarded(receiptLines(reading)));
  const lines = readings.flatMap((reading) => reading.lines);
  const readingStarts: number[] = [];
  readings.reduce((start, reading) => (readingStarts.push(start), start + reading.lines.length), 0);
  const sender = readings.find((reading) => reading.sender)?.sender ?? null;
  const subject = readings.find((reading) => reading.subject)?.subject ?? null;
  const total = totalByConsistency(lines);
  const printed = receiptDate(lines, opts.dateOrder);
  // A forwarded receipt that prints no date was bought no later than it was forwarded: the
  // forwarded headers' date, trusted little (a receipt may be forwarded days later).
  const sentOn = readings.find((reading) => reading.date)?.date ?? null;
  const fromHeader = printed.readings.length === 0 && sentOn ? receiptDate([sentOn.slice(0, 200)], opts.dateOrder) : null;
  const date = fromHeader?.readings.length ? { readings: fromHeader.readings, confidence: "low" as const } : printed;
  const fromDocument = findVendor(lines, readingStarts);
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
