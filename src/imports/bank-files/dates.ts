import { BankFileError } from "./row.js";

/** The day/month/year orders banks write; zero-padding and the separator (/ - .) do not matter. */
export type DateOrder = "MDY" | "DMY" | "YMD";

export const DATE_FORMAT_LABEL: Record<DateOrder, string> = { MDY: "M/D/YYYY", DMY: "D/M/YYYY", YMD: "YYYY-MM-DD" };

/** No date, with its time and zone, is longer (2025-01-03T23:30:00.123456+01:00 is 32): a longer cell is no date, and no pattern below meets more. */
const MAX_DATE_LENGTH = 64;

/**
 * `--date-format`'s value: the order of day, month and year, any separator (/ - .), zero-padded or
 * not, two- or four-digit year (D/M/YY, DD.MM.YYYY, YYYY-MM-DD, YY/MM/DD…), a time part ignored (DD.MM.YYYY HH:MM).
 */
export function parseDateFormatOption(value: string): DateOrder {
  const format = value.trim().toUpperCase();
  // The lookbehind starts the match only at a run's first space: from every space of a long run, [ T]+ would backtrack quadratically.
  const m = format.length > MAX_DATE_LENGTH ? null
    : /^(D{1,2}|M{1,2}|Y{2}|Y{4})([/.-])(D{1,2}|M{1,2}|Y{2}|Y{4})\2(D{1,2}|M{1,2}|Y{2}|Y{4})$/.exec(format.replace(/(?<![ T])[ T]+H.*$/, ""));
  const order = m ? `${m[1][0]}${m[3][0]}${m[4][0]}` : "";
  if (!m || !["MDY", "DMY", "YMD"].includes(order)) {
    throw new BankFileError(`--date-format must be one of M/D/YYYY, D/M/YYYY, YYYY-MM-DD, YY/MM/DD, DD.MM.YYYY, D/M/YY… ` +
      `(the order of day, month and year; any separator / - .; a time part such as HH:MM is ignored) (got "${value}").`);
  }
  return order as DateOrder;
}

const DAY_FIRST_OR_MONTH_FIRST = /^(\d{1,2})[/.-](\d{1,2})[/.-](\d{4}|\d{2})$/;
/** 2024-12-05; with two digits, 24/12/05 (YY/MM/DD, as Japan and Korea write it), which reads as D/M/YY too: see detectDateOrder. */
const YEAR_FIRST = /^(\d{4}|\d{2})[/.-](\d{1,2})[/.-](\d{1,2})$/;
/** 5 Jan 2025, 05-Jan-25, 5.Jan.2025 */
const DAY_MONTH_NAME = /^(\d{1,2})[\s./-]*([A-Za-z]{3,9})\.?[\s./-]*(\d{4}|\d{2})$/;
/** Jan 5, 2025; January 5 2025 */
const MONTH_NAME_DAY = /^([A-Za-z]{3,9})\.?\s+(\d{1,2}),?\s+(\d{4})$/;
/**
 * A time after the date: 2025-01-01 10:00:01, 01/02/2025 13:45, 2025-01-01T10:00:00Z, 1:45 PM, +01:00.
 * Linear: a run of spaces is entered at its first (the lookbehind), and no two \s* meet.
 */
const TIME = /(?:(?<![ T])[ T]+|,\s*)\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:\s*[AP]\.?M\.?)?(?:\s*(?:Z|UTC|GMT|[+-]\d{2}(?::?\d{2})?))?$/i;
const MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"];

/** The date as the bank wrote it (2019.04.19. as 2019.04.19), without its time (no time zone is applied: the day written is the day booked). */
function datePart(cell: string): string {
  const s = cell.trim();
  return s.length > MAX_DATE_LENGTH ? "" : s.replace(TIME, "").replace(/(\d)\.$/, "$1");
}

/** Two-digit years: 00–69 are 2000–2069, 70–99 are 1970–1999 (CSV, QIF's dates as normalized, MT940's YYMMDD). */
export const fullYear = (year: string) => (year.length === 4 ? Number(year) : Number(year) + (Number(year) < 70 ? 2000 : 1900));

const monthNumber = (word: string) => {
  const w = word.toLowerCase();
  return w === "sept" ? 9 : w.length >= 3 ? MONTHS.findIndex((m) => m.startsWith(w)) + 1 : 0;
};

/** A date with its month's name, which reads the same in every order; null when the cell is not one. */
function namedMonthDate(s: string): string | null | undefined {
  const a = DAY_MONTH_NAME.exec(s);
  if (a && monthNumber(a[2])) return isoDate(fullYear(a[3]), monthNumber(a[2]), Number(a[1]));
  const b = MONTH_NAME_DAY.exec(s);
  if (b && monthNumber(b[1])) return isoDate(fullYear(b[3]), monthNumber(b[1]), Number(b[2]));
  return undefined;
}

/** Shaped like a date in one of the orders, real or not ("13/45/2025" is date-shaped: a bad date, not a description). */
export function isDateShaped(cell: string): boolean {
  const s = datePart(cell);
  return DAY_FIRST_OR_MONTH_FIRST.test(s) || YEAR_FIRST.test(s) || namedMonthDate(s) !== undefined;
}

/** The ISO date the cell means in that order, or null when it means none (wrong shape or no such day). */
export function parseDate(cell: string, order: DateOrder): string | null {
  const s = datePart(cell);
  const named = namedMonthDate(s);
  if (named !== undefined) return named;
  const m = order === "YMD" ? YEAR_FIRST.exec(s) : DAY_FIRST_OR_MONTH_FIRST.exec(s);
  // Dotted dates are day-first wherever they are written (31.12.2024, 31.12.24): never month-first.
  if (!m || (order === "MDY" && s.includes("."))) return null;
  const [year, month, day] = order === "YMD" ? [fullYear(m[1]), Number(m[2]), Number(m[3])]
    : order === "MDY" ? [fullYear(m[3]), Number(m[1]), Number(m[2])] : [fullYear(m[3]), Number(m[2]), Number(m[1])];
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

/** How each order reads a date, and the --date-format that says it for the two-digit years of a refusal. */
const READS_AS: Record<DateOrder, { as: string; flag: string }> = {
  MDY: { as: "month/day/year", flag: "M/D/YY" }, DMY: { as: "day/month/year", flag: "D/M/YY" }, YMD: { as: "year/month/day", flag: "YY/MM/DD" },
};

/** "a", "a or b", "a, b or c" */
const either = (words: string[], last: string) => (words.length > 1 ? `${words.slice(0, -1).join(", ")} ${last} ${words[words.length - 1]}` : words[0]);

/**
 * The order the file's dates are written in. Only an order that reads every date settles it: a
 * 30 in first place rules out month-first, a 45 in first place (a year) day- and month-first.
 * When two orders read every date (every day ≤ 12; or every field of two digits, 24/12/05 being
 * 2005-12-24 and 2024-12-05), the file does not say, and guessing would silently swap months,
 * days and years: the operator must say. Dotted dates are day-first (31.12.24, as German banks
 * write them), never year-first. When no order reads every date, the one that reads the most is
 * taken, so that the error names the line that is wrong rather than the file. A preset narrows the
 * orders to its bank's.
 */
export function detectDateOrder(cells: DateCell[], orders: DateOrder[] = ["MDY", "DMY", "YMD"]): DateOrder {
  const readable = orders.map((order) => cells.filter((c) => parseDate(c.text, order) !== null).length);
  let all = orders.filter((_, i) => readable[i] === cells.length);
  if (all.includes("DMY") && cells.every((c) => datePart(c.text).includes("."))) all = all.filter((order) => order !== "YMD");
  if (all.length === 1) return all[0];
  if (all.length > 1) {
    const example = cells.find((c) => new Set(all.map((order) => parseDate(c.text, order))).size > 1)?.text;
    // Only dates such as 3/3/03: every reading gives the same dates.
    if (example === undefined) return all[0];
    if (!all.includes("YMD")) {
      throw new BankFileError(
        `The dates (e.g. "${example}") read as month/day and as day/month: no date in the file settles which. ` +
        `Say which with --date-format M/D/YYYY or --date-format D/M/YYYY (any separator, e.g. --date-format DD.MM.YYYY).`);
    }
    throw new BankFileError(
      `The dates (e.g. "${example}") read as ${either(all.map((order) => `${READS_AS[order].as} (${parseDate(example, order)})`), "and as")}: ` +
      `no date in the file settles which. Say which with ${either(all.map((order) => `--date-format ${READS_AS[order].flag}`), "or")} (any separator, e.g. --date-format YY-MM-DD).`);
  }
  const best = readable.reduce((a, b) => Math.max(a, b));
  return orders[readable.indexOf(best)];
}

/** Every cell as an ISO date in that order; the first that is not a date (or not one the books take) stops the file, naming its line. */
export function toIsoDate(cell: DateCell, order: DateOrder): string {
  const iso = parseDate(cell.text, order);
  const text = cell.text.trim();
  const shown = text.length > MAX_DATE_LENGTH ? `${text.slice(0, 40)}…` : text;
  if (iso === null) throw new BankFileError(`Line ${cell.line}: "${shown}" is not a date (${DATE_FORMAT_LABEL[order]}).`);
  const outside = dateOutOfRange(iso);
  if (outside) throw new BankFileError(`Line ${cell.line}: "${shown}" is ${outside}.`);
  return iso;
}
