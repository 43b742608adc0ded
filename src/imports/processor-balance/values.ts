/**
 * The values of an export's cells. Amounts are major units with at most two decimals (thousands
 * separators allowed, as a spreadsheet re-save writes them); timestamps are `YYYY-MM-DD HH:MM[:SS]`
 * (UTC), or `M/D/YYYY H:MM` after a spreadsheet re-save (a D/M/YYYY re-save is refused at its first
 * day above 12, and the whole import is one transaction, so nothing is written). Each parser returns undefined for a value
 * it cannot read; the reader names the line and column.
 */

const MAX_AMOUNT = 999_999_999.99;
const AMOUNT = /^([+-]?)(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d{1,2}))?$/;

/** A decimal string such as "-12.50", or undefined. */
export function parseAmount(raw: string): string | undefined {
  const m = AMOUNT.exec(raw.trim());
  if (!m) return undefined;
  const whole = m[2].replace(/,/g, "");
  const text = `${m[1] === "-" ? "-" : ""}${whole}.${(m[3] ?? "").padEnd(2, "0")}`;
  if (Math.abs(Number(text)) > MAX_AMOUNT) return undefined;
  return text;
}

const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(?:Z|[+-]00:?00)?)?$/;
const SPREADSHEET = /^(\d{1,2})\/(\d{1,2})\/(\d{4})(?: (\d{1,2}):(\d{2})(?::(\d{2}))?)?$/;

/** The UTC day `YYYY-MM-DD` of a timestamp, or undefined (also for days outside 1900–2199). */
export function parseDay(raw: string): string | undefined {
  const s = raw.trim();
  let y: number, mo: number, d: number, h = 0, mi = 0, se = 0;
  let m = ISO.exec(s);
  if (m) {
    [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
    if (m[4] !== undefined) [h, mi, se] = [Number(m[4]), Number(m[5]), Number(m[6] ?? 0)];
  } else if ((m = SPREADSHEET.exec(s))) {
    [mo, d, y] = [Number(m[1]), Number(m[2]), Number(m[3])];
    if (m[4] !== undefined) [h, mi, se] = [Number(m[4]), Number(m[5]), Number(m[6] ?? 0)];
  } else {
    return undefined;
  }
  if (y < 1900 || y > 2199 || mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || se > 59) return undefined;
  if (d > new Date(Date.UTC(y, mo, 0)).getUTCDate()) return undefined;
  return `${String(y).padStart(4, "0")}-${String(mo).padStart(2, "0")}-${String(d).padStart(2, "0")}`;
}
