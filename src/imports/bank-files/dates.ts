import { BankFileError } from "./row.js";

/** The day/month/year orders banks write; zero-padding and the separator (/ - .) do not matter. */
export type DateOrder = "MDY" | "DMY" | "YMD";

export const DATE_FORMAT_LABEL: Record<DateOrder, string> = { MDY: "M/D/YYYY", DMY: "D/M/YYYY", YMD: "YYYY-MM-DD" };

const DATE_FORMAT_OPTIONS: Record<string, DateOrder> = {
  "M/D/YYYY": "MDY", "MM/DD/YYYY": "MDY", "D/M/YYYY": "DMY", "DD/MM/YYYY": "DMY",
  "YYYY-MM-DD": "YMD", "YYYY/MM/DD": "YMD", "YYYY-M-D": "YMD",
};

/** `--date-format`'s value. */
export function parseDateFormatOption(value: string): DateOrder {
  const order = DATE_FORMAT_OPTIONS[value.trim().toUpperCase()];
  if (!order) {
    throw new BankFileError(`--date-format must be one of ${Object.keys(DATE_FORMAT_OPTIONS).join(", ")} (got "${value}").`);
  }
  return order;
}

const DAY_FIRST_OR_MONTH_FIRST = /^(\d{1,2})[/.-](\d{1,2})[/.-](\d{4})$/;
const YEAR_FIRST = /^(\d{4})[/.-](\d{1,2})[/.-](\d{1,2})$/;

/** Shaped like a date in one of the orders, real or not ("13/45/2025" is date-shaped: a bad date, not a description). */
export function isDateShaped(cell: string): boolean {
  const s = cell.trim();
  return DAY_FIRST_OR_MONTH_FIRST.test(s) || YEAR_FIRST.test(s);
}

/** The ISO date the cell means in that order, or null when it means none (wrong shape or no such day). */
export function parseDate(cell: string, order: DateOrder): string | null {
  const s = cell.trim();
  const m = order === "YMD" ? YEAR_FIRST.exec(s) : DAY_FIRST_OR_MONTH_FIRST.exec(s);
  if (!m) return null;
  const [a, b, c] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const [year, month, day] = order === "YMD" ? [a, b, c] : order === "MDY" ? [c, a, b] : [c, b, a];
  return isoDate(year, month, day);
}

/** The dates the books take (app_private.min_date() and max_date()): a row outside them is refused. */
export const FIRST_DATE = "1900-01-01";
export const LAST_DATE = "2199-12-31";

/** Why the books would refuse this ISO date ("outside …"), or undefined when they take it. */
export function dateOutOfRange(iso: string): string | undefined {
  return iso < FIRST_DATE || iso > LAST_DATE ? `outside the dates the books take (${FIRST_DATE} to ${LAST_DATE})` : undefined;
}

/** YYYY-MM-DD when the day exists (2025-02-29 does not), else null. Any 4-digit year: the range is checked apart. */
export function isoDate(year: number, month: number, day: number): string | null {
  if (year < 1000 || year > 9999 || month < 1 || month > 12 || day < 1) return null;
  const t = new Date(Date.UTC(year, month - 1, day));
  if (t.getUTCMonth() !== month - 1 || t.getUTCDate() !== day) return null;
  return t.toISOString().slice(0, 10);
}

export interface DateCell { line: number; text: string }

/**
 * The order the file's dates are written in. Only an order that reads every date settles it: a
 * 30 in first place rules out month-first. When two orders read every date (every day ≤ 12), the
 * file does not say, and guessing would silently swap months and days: the operator must say.
 * When no order reads every date, the one that reads the most is taken, so that the error names
 * the line that is wrong rather than the file. A preset narrows the orders to its bank's.
 */
export function detectDateOrder(cells: DateCell[], orders: DateOrder[] = ["MDY", "YMD", "DMY"]): DateOrder {
  const readable = orders.map((order) => cells.filter((c) => parseDate(c.text, order) !== null).length);
  const all = orders.filter((_, i) => readable[i] === cells.length);
  if (all.length === 1) return all[0];
  if (all.length > 1) {
    const example = cells.find((c) => parseDate(c.text, "MDY") !== parseDate(c.text, "DMY"))?.text;
    // Only days such as 3/3: both readings give the same dates.
    if (example === undefined) return all[0];
    throw new BankFileError(
      `The dates (e.g. "${example}") read as month/day and as day/month: no date in the file settles which. ` +
      `Say which with --date-format M/D/YYYY or --date-format D/M/YYYY.`);
  }
  const best = readable.reduce((a, b) => Math.max(a, b));
  return orders[readable.indexOf(best)];
}

/** Every cell as an ISO date in that order; the first that is not a date (or not one the books take) stops the file, naming its line. */
export function toIsoDate(cell: DateCell, order: DateOrder): string {
  const iso = parseDate(cell.text, order);
  if (iso === null) {
    throw new BankFileError(`Line ${cell.line}: "${cell.text.trim()}" is not a date (${DATE_FORMAT_LABEL[order]}).`);
  }
  const outside = dateOutOfRange(iso);
  if (outside) throw new BankFileError(`Line ${cell.line}: "${cell.text.trim()}" is ${outside}.`);
  return iso;
}
