/**
 * Amount cells as banks write them, to the exact decimal string the SQL functions take: no
 * floating point anywhere, so "0.1" + nothing stays "0.10" and 1,250.00 never becomes 1249.9999.
 * A CSV column's decimal mark (comma or point) is settled for the whole column (csv.ts,
 * decimalMarkOf), never guessed cell by cell: "1,234" is one thousand two hundred and thirty-four
 * in every row or 1.234 (refused: more than 2 decimals) in every row.
 */

/** `{ value }`: a signed amount with exactly 2 decimals ("-19.00"); `{ problem }`: why the cell is not one. */
export type ParsedAmount =
  | { value: string; currency?: string; problem?: undefined }
  | { value?: undefined; currency?: undefined; problem: string };

export type DecimalMark = "comma" | "point";

/** The cell without its sign, parentheses and currency (a symbol or a code, before or after): the number as written. */
interface Split { negative: boolean; number: string; currency?: string }

const SPACES = /[\u00a0\u202f\u2007\u2009]/g;
/** Direction marks (RLM, LRM, ALM, embeddings, isolates) that right-to-left locales write around amounts: no part of the number. */
const DIRECTION_MARKS = /[\u200e\u200f\u061c\u202a-\u202e\u2066-\u2069]/g;
/**
 * A currency written as a symbol: $ (US$, CA$), any Unicode currency sign (€ £ ¥ ₹ ₪ ₩ ₺ …), or
 * a local abbreviation in a non-Latin script, dotted or not (د.ا. Jordanian dinar, ر.س, лв, ₸).
 * Latin letters other than a 3-letter code are never taken for one: "A12" stays no amount.
 */
const LETTER = String.raw`(?:(?=\p{L})[^\x00-\x7f])`;
// Bounded, each part once: no backtracking through a long run of letters (a description cell is tried too).
const SYMBOL = String.raw`[A-Z]{0,2}\$|\p{Sc}|${LETTER}{1,6}(?:\.${LETTER}{1,6}){0,3}\.?`;
const PREFIX_CURRENCY = new RegExp(String.raw`^(?:([A-Z]{3})(?![A-Z])\$?|${SYMBOL})\s*`, "u");
// No leading \s*: tried at every position of the cell, a space run before a failing end backtracks quadratically. The spaces are trimmed after.
const SUFFIX_CURRENCY = new RegExp(String.raw`(?:(?<![A-Z])([A-Z]{3})|${SYMBOL})$`, "u");
/** No amount is longer (1 234 567 890,00 EUR is 20): a longer cell, a description, goes no further. */
const MAX_AMOUNT_LENGTH = 64;
const NOT_AN_AMOUNT = { problem: "is not an amount" };

function splitCell(cell: string): Split | { problem: string } {
  let s = cell.replace(DIRECTION_MARKS, "").replace(SPACES, " ").trim();
  if (s.length > MAX_AMOUNT_LENGTH) return NOT_AN_AMOUNT;
  let negative = false;
  let signs = 0;
  const currencies: string[] = [];
  // Accountants' (19.00), a leading or trailing minus (including the Unicode one), $12.00, -€12,50, 12.50 EUR, CAD 12.00.
  const parens = /^\((.*)\)$/.exec(s);
  if (parens) { negative = true; s = parens[1].trim(); }
  for (let i = 0; i < 3; i++) {
    const sign = /^([-−+])\s*/.exec(s);
    const money = sign ? null : PREFIX_CURRENCY.exec(s);
    if (sign) { if (sign[1] !== "+") negative = !negative; signs++; s = s.slice(sign[0].length); } else if (money) { if (money[1]) currencies.push(money[1]); s = s.slice(money[0].length); } else break;
  }
  for (let i = 0; i < 3; i++) {
    const minus = s.endsWith("-") || s.endsWith("−");
    const money = minus ? null : SUFFIX_CURRENCY.exec(s);
    if (minus) { negative = !negative; signs++; s = s.slice(0, -1).trimEnd(); } else if (money) { if (money[1]) currencies.push(money[1]); s = s.slice(0, money.index).trimEnd(); } else break;
  }
  if (signs > 1 || new Set(currencies).size > 1 || !/^[\d.,' ’]*$/.test(s) || !/\d/.test(s)) return NOT_AN_AMOUNT;
  // (-12.00) is negative twice: read by the rule it would be money in, by intent money out. Neither is guessed.
  if (parens && signs > 0) return { problem: `is not an amount: it has both parentheses and a sign (-${s} or (${s}), not both)` };
  return { negative, number: s, ...(currencies.length ? { currency: currencies[0] } : {}) };
}

/** The digits without their trailing zeros ("1500" → "15"), by hand: /0+$/ is quadratic on a long run of zeros before a last digit. */
export function dropTrailingZeros(digits: string): string {
  let end = digits.length;
  while (end > 0 && digits.charCodeAt(end - 1) === 48) end--;
  return digits.slice(0, end);
}

/** The number read with that decimal mark: the other mark, a space or an apostrophe may group thousands (by 3). */
function readNumber(number: string, mark: DecimalMark): { whole: string; fraction: string } | undefined {
  const [decimal, thousands] = mark === "comma" ? [",", "."] : [".", ","];
  const parts = number.split(decimal);
  if (parts.length > 2) return undefined;
  const [integer, fraction = ""] = parts;
  if (parts.length === 2 && !/^\d+$/.test(fraction)) return undefined;
  if (integer === "" && fraction === "") return undefined;
  const separators = integer.match(/[^\d]/g) ?? [];
  if (separators.length > 0) {
    const sep = separators[0];
    if (sep !== thousands && sep !== " " && sep !== "'" && sep !== "’") return undefined;
    // A grouped number never leads with a 0 group: "0.000" and "0,500" are a zero and a half with 3 decimals, not thousands.
    if (!integer.split(sep).every((g, i) => (i === 0 ? /^[1-9]\d{0,2}$/ : /^\d{3}$/).test(g))) return undefined;
  }
  const whole = integer.replace(/[^\d]/g, "").replace(/^0+(?=\d)/, "") || "0";
  return { whole, fraction };
}

const valueOf = (r: { whole: string; fraction: string }) => `${r.whole}.${dropTrailingZeros(r.fraction)}`;

/**
 * What the cell says of its column's decimal mark: "comma" or "point" when only that mark reads it
 * (12,50; 1,234.56), "either" when both read it differently (1,234; 1.500), undefined when both read
 * it the same (19; 1 234) or it is no amount.
 */
export function decimalHint(cell: string): DecimalMark | "either" | undefined {
  const split = splitCell(cell);
  if ("problem" in split) return undefined;
  const [point, comma] = [readNumber(split.number, "point"), readNumber(split.number, "comma")];
  if (point && comma) return valueOf(point) === valueOf(comma) ? undefined : "either";
  return point ? "point" : comma ? "comma" : undefined;
}

/** Shaped like an amount with either mark (detection: which columns hold amounts, and their signs). */
export function amountShape(cell: string): { negative: boolean; zero: boolean } | undefined {
  const split = splitCell(cell);
  if ("problem" in split || (!readNumber(split.number, "point") && !readNumber(split.number, "comma"))) return undefined;
  const zero = !/[1-9]/.test(split.number);
  return { negative: split.negative && !zero, zero };
}

/**
 * The cell as an amount. `decimal`: the column's mark (a point when not given). `decimalComma`
 * (OFX, QIF): a lone comma is the decimal mark (12,50), otherwise a point.
 */
export function parseAmount(cell: string, { decimalComma = false, decimal }: { decimalComma?: boolean; decimal?: DecimalMark } = {}): ParsedAmount {
  const split = splitCell(cell);
  if ("problem" in split) return { problem: split.problem };
  const mark: DecimalMark = decimal ?? (decimalComma && split.number.includes(",") && !split.number.includes(".") ? "comma" : "point");
  const read = readNumber(split.number, mark);
  if (!read) {
    const other = mark === "comma" ? "point" : "comma";
    return { problem: decimal && readNumber(split.number, other) ? `is not an amount with a decimal ${mark} (--decimal ${decimal})` : "is not an amount" };
  }
  const fraction = dropTrailingZeros(read.fraction);
  if (fraction.length > 2) {
    // Never rounded: the books keep cents. The column's own amounts settled its mark, so the cell is wrong.
    return { problem: "has more than 2 decimals" };
  }
  const value = `${read.whole}.${fraction.padEnd(2, "0")}`;
  return { value: split.negative && !isZero(value) ? `-${value}` : value, ...(split.currency ? { currency: split.currency } : {}) };
}

export function isZero(amount: string): boolean {
  return /^-?0+\.00$/.test(amount);
}

export function negate(amount: string): string {
  if (isZero(amount)) return amount;
  return amount.startsWith("-") ? amount.slice(1) : `-${amount}`;
}

export function absolute(amount: string): string {
  return amount.startsWith("-") ? amount.slice(1) : amount;
}
