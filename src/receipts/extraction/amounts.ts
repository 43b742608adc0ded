import { currencyAt } from "./currency.js";
import { allMatches } from "./matches.js";

/** A money amount read from a receipt line. */
export interface AmountToken {
  cents: number;
  start: number;
  end: number;
  /** ISO code of a currency written right beside the amount, if any. */
  currency: string | null;
}

/*
 * An amount has exactly two decimals: receipts print money that way, and it keeps quantities,
 * percentages, item codes and phone numbers out. The integer part may carry thousands separators
 * ("1,234.56", "1.234,56"); OCR sometimes puts a space before the decimal point ("12 .30"). A
 * minus may come before or after (discount and refund lines print "2.00-"). At most four
 * separated groups of three digits (999,999,999,999,999.99 is more than any receipt states): with
 * no bound, a line of "'123'123…" was read to its end again from every group, quadratic in its length.
 */
const AMOUNT =
  /(?<![\d.,])(-\s?)?((?:CA|C|US|AU|A|NZ|S|HK)?\$|RM|€|£|\b(?:MYR|CAD|USD|EUR|GBP|AUD|NZD|SGD|HKD)\b)?\s?(-\s?)?(\d{1,3}(?:([.,'])\d{3}(?:\5\d{3}){0,3})?|\d+)(?: ?\. ?|,)(\d{2})(?![\d])(?! ?%)(-(?![\d]))?/g;

/** The amounts written on one line (dates and times should be blanked out first). */
export function amountsIn(line: string): AmountToken[] {
  const found: AmountToken[] = [];
  for (const match of allMatches(AMOUNT, line)) {
    const [text, signBefore, symbol, signAfterSymbol, whole, , decimals, signAfter] = match;
    const units = Number(whole.replace(/[.,']/g, ""));
    const cents = units * 100 + Number(decimals);
    const negative = Boolean(signBefore || signAfterSymbol || signAfter);
    found.push({
      cents: negative ? -cents : cents,
      start: match.index,
      end: match.index + text.length,
      currency: symbol ? currencyAt(symbol) : null,
    });
  }
  return found;
}

/** Formats cents as the API's decimal string: "12.30", "-6.42". */
export function formatCents(cents: number): string {
  const sign = cents < 0 ? "-" : "";
  const abs = Math.abs(cents);
  return `${sign}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, "0")}`;
}

/** A price somewhere on the line ("4.50", "12,00"): an item, a total, a payment, never a heading. */
export function hasPrice(line: string): boolean {
  return /\d[.,]\d{2}\b/.test(line);
}
