import { allMatches } from "./matches.js";

/** What a currency symbol or code on a receipt means; a bare "$" is left unknown (null). */
const SYMBOLS: Record<string, string | null> = {
  $: null,
  CA$: "CAD",
  C$: "CAD",
  US$: "USD",
  AU$: "AUD",
  A$: "AUD",
  NZ$: "NZD",
  S$: "SGD",
  HK$: "HKD",
  RM: "MYR",
  "€": "EUR",
  "£": "GBP",
};

const CODES = ["MYR", "CAD", "USD", "EUR", "GBP", "AUD", "NZD", "SGD", "HKD"];

export function currencyAt(symbol: string): string | null {
  const upper = symbol.toUpperCase();
  if (CODES.includes(upper)) return upper;
  return SYMBOLS[upper] ?? null;
}

// "RM" is only money when it stands alone or before a number, never inside a word ("FIRM").
const MENTION = /(?:CA|C|US|AU|A|NZ|S|HK)\$|€|£|\bRM(?=\s?-?\d|\)|\s*$|\s*:)|\((?:RM|MYR)\)|\b(?:MYR|CAD|USD|EUR|GBP|AUD|NZD|SGD|HKD)\b/g;

/** The currencies a line names, in order. */
export function currenciesIn(line: string): string[] {
  const found: string[] = [];
  for (const [text] of allMatches(MENTION, line)) {
    const code = currencyAt(text.replace(/[()]/g, ""));
    if (code) found.push(code);
  }
  return found;
}

/**
 * The receipt's currency: the one named on the total's line if any, else the one named most
 * often; null when only "$" or nothing appears.
 */
export function receiptCurrency(lines: string[], totalLines: number[]): string | null {
  for (const index of totalLines) {
    const [code] = currenciesIn(lines[index] ?? "");
    if (code) return code;
  }
  const counts = new Map<string, number>();
  for (const line of lines) for (const code of currenciesIn(line)) counts.set(code, (counts.get(code) ?? 0) + 1);
  let best: string | null = null;
  for (const [code, count] of counts) if (best === null || count > counts.get(best)!) best = code;
  return best;
}
