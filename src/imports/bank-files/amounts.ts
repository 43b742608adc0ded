/**
 * Amount cells as banks write them, to the exact decimal string the SQL functions take: no
 * floating point anywhere, so "0.1" + nothing stays "0.10" and 1,250.00 never becomes 1249.9999.
 */

/** `{ value }`: a signed amount with exactly 2 decimals ("-19.00"); `{ problem }`: why the cell is not one. */
export type ParsedAmount = { value: string; problem?: undefined } | { value?: undefined; problem: string };

// 1,250.00 / 1250.00 / 1250 / .50, after the sign, parentheses and currency symbol are taken off.
const NUMBER = /^(?:(\d{1,3}(?:,\d{3})+)|(\d+))?(?:\.(\d+))?$/;

export function parseAmount(cell: string, { decimalComma = false } = {}): ParsedAmount {
  let s = cell.trim().replace(/\s+/g, "");
  if (decimalComma && /^[-+−]?\d+,\d+$/.test(s)) s = s.replace(",", ".");
  let negative = false;
  // Accountants' (19.00), a leading or trailing minus (including the Unicode one), a leading $.
  const parens = /^\((.*)\)$/.exec(s);
  if (parens) { negative = true; s = parens[1]; }
  if (/^[-−]/.test(s)) { negative = !negative; s = s.slice(1); } else if (s.startsWith("+")) s = s.slice(1);
  if (s.startsWith("$")) s = s.slice(1);
  if (!parens && s.endsWith("-")) { negative = !negative; s = s.slice(0, -1); }
  const m = NUMBER.exec(s);
  if (!s || !m || (m[1] === undefined && m[2] === undefined && m[3] === undefined)) return { problem: "is not an amount" };
  const whole = ((m[1] ?? m[2] ?? "0").replace(/,/g, "").replace(/^0+(?=\d)/, "")) || "0";
  const fraction = (m[3] ?? "").replace(/0+$/, "");
  if (fraction.length > 2) return { problem: "has more than 2 decimals" };
  const value = `${whole}.${fraction.padEnd(2, "0")}`;
  return { value: negative && !isZero(value) ? `-${value}` : value };
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
