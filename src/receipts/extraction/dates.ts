import { mendDigits } from "./lines.js";
import { allMatches } from "./matches.js";
import type { DateOrder, FieldConfidence } from "./types.js";

/** A date written on a receipt, with every calendar reading it allows. */
export interface DateMention {
  line: number;
  start: number;
  end: number;
  /** YYYY-MM-DD, the day-first reading first when day and month could be swapped. */
  readings: { iso: string; order: "DMY" | "MDY" | "any" }[];
  /** Mended from OCR's broken digits (reconciledDates): a guess, however careful. */
  repaired?: true;
}

const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const MONTH_NAME =
  "(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\\.?";

/** OCR may glue a clock time to the year ("Oct 31, 20234:55 PM" read "20234155 PM"). */
const TIME_AFTER_YEAR = "(?=\\d{1,2}[:.]?\\d{2}(?:[:.]\\d{2})?\\s?[ap]\\.?m\\b|\\d{1,2}:\\d{2})";
/** A four-digit year, maybe with a clock time glued to it. */
const YEAR4 = `(?:\\d{4}(?!\\d)|20\\d{2}${TIME_AFTER_YEAR})`;

// Each form with the groups it captures; digits around must not continue the number.
const YEAR_FIRST = /(?<![\d/.-])(20\d{2})\s?[-/.]\s?(\d{1,2})\s?[-/.]\s?(\d{1,2})(?![\d/])/g;
const NUMERIC = new RegExp(
  `(?<![\\d/.-])(\\d{1,2})\\s?([-/.])\\s?(\\d{1,2})\\s?\\2\\s?(20\\d{2}${TIME_AFTER_YEAR}|(?:\\d{4}|\\d{2})(?![\\d/]|\\.\\d))`,
  "g",
);
const DAY_MONTH_NAME = new RegExp(
  `(?<![\\d])(\\d{1,2})(?:st|nd|rd|th)?[\\s\\-/.,]*${MONTH_NAME}(?![a-z])[\\s\\-/.,']*(${YEAR4}|\\d{2}(?!\\d))`,
  "gi",
);
const MONTH_NAME_DAY = new RegExp(
  // OCR doubles or drops the separators: "Dec 13,.2023", "Nov 12024" (November 1, 2024).
  `(?<![a-z])${MONTH_NAME}(?![a-z])[\\s\\-/.]*(\\d{1,2})(?:st|nd|rd|th)?` +
    `(?:\\s*[,.]{1,2}\\s*|\\s+|[-/]|(?=20\\d{2}(?!\\d)))` +
    `(${YEAR4}|'?\\d{2}(?=\\s*$|,)(?!\\d))`,
  "gi",
);

const CURRENT_YEAR = new Date().getFullYear();

function fullYear(text: string): number {
  const digits = text.replace(/\D/g, "");
  return digits.length === 2 ? 2000 + Number(digits) : Number(digits);
}

/** YYYY-MM-DD when the parts make a real, plausible calendar day. */
function isoDate(year: number, month: number, day: number): string | null {
  if (year < 2000 || year > CURRENT_YEAR + 1) return null;
  if (month < 1 || month > 12 || day < 1) return null;
  if (day > new Date(Date.UTC(year, month, 0)).getUTCDate()) return null;
  return `${year}-${String(month).padStart(2, "0")}-${String(day).padStart(2, "0")}`;
}

function monthNumber(name: string): number {
  return MONTHS.indexOf(name.slice(0, 3).toLowerCase()) + 1;
}

/** Every date mentioned on the line; spans of one form are not read again by another. */
export function datesInLine(raw: string, lineIndex: number): DateMention[] {
  const line = mendDigits(raw);
  const found: DateMention[] = [];
  // Every form has digits: most lines are done here.
  if (!/\d/.test(line)) return found;
  // The characters dates already cover (made with the first date): a new match is checked over
  // its own span, not against every date found so far (a line of thousands of dates).
  let covered: Uint8Array | undefined;
  const taken = (start: number, end: number) => covered !== undefined && covered.subarray(start, end).includes(1);
  const add = (match: RegExpMatchArray, readings: DateMention["readings"]) => {
    const start = match.index!;
    const end = start + match[0].length;
    if (readings.length > 0 && !taken(start, end)) {
      found.push({ line: lineIndex, start, end, readings });
      (covered ??= new Uint8Array(line.length)).fill(1, start, end);
    }
  };
  for (const m of allMatches(YEAR_FIRST, line)) {
    const iso = isoDate(Number(m[1]), Number(m[2]), Number(m[3]));
    add(m, iso ? [{ iso, order: "any" }] : []);
  }
  for (const m of allMatches(DAY_MONTH_NAME, line)) {
    const iso = isoDate(fullYear(m[3]), monthNumber(m[2]), Number(m[1]));
    add(m, iso ? [{ iso, order: "any" }] : []);
  }
  for (const m of allMatches(MONTH_NAME_DAY, line)) {
    const iso = isoDate(fullYear(m[3]), monthNumber(m[1]), Number(m[2]));
    add(m, iso ? [{ iso, order: "any" }] : []);
  }
  for (const m of allMatches(NUMERIC, line)) add(m, numericReadings(m[1], m[3], m[4]));
  return found;
}

/** The calendar readings of a numeric date: day first, month first, or both. */
function numericReadings(firstText: string, secondText: string, yearText: string): DateMention["readings"] {
  const [first, second, year] = [Number(firstText), Number(secondText), fullYear(yearText)];
  const dayFirst = isoDate(year, second, first);
  const monthFirst = isoDate(year, first, second);
  const readings: DateMention["readings"] = [];
  if (dayFirst && dayFirst === monthFirst) readings.push({ iso: dayFirst, order: "any" });
  else {
    if (dayFirst) readings.push({ iso: dayFirst, order: "DMY" });
    if (monthFirst) readings.push({ iso: monthFirst, order: "MDY" });
  }
  return readings;
}

/**
 * Broken dates are paired each with each: a receipt prints a handful of dates and its two OCR
 * readings twice that, so the first 50 are plenty, and a text of thousands is not paired in
 * quadratic time.
 */
const MAX_BROKEN_DATES = 50;

/** A numeric date in full ("05/85/2023"): what two OCR readings can be compared digit by digit. */
const FULL_NUMERIC = /(?<![\d/.-])(\d{2})([-/.])(\d{2})\2(\d{4})(?![\d/]|\.\d)/g;

/**
 * Dates that OCR broke in both readings of an image, in different digits ("05/85/2023" and
 * "95/05/2023"; "13/07/2623" and "13/67/2023"): the two are merged digit by digit, each
 * differing digit taken from one or the other, and the merge stands when exactly one choice
 * makes a real date. The mention is placed where the first of the two was written.
 */
export function reconciledDates(lines: string[]): DateMention[] {
  const broken: { line: number; start: number; end: number; digits: string; separator: string }[] = [];
  lines.forEach((raw, line) => {
    for (const m of allMatches(FULL_NUMERIC, mendDigits(raw))) {
      if (broken.length === MAX_BROKEN_DATES) return;
      if (numericReadings(m[1], m[3], m[4]).length > 0) continue;
      broken.push({ line, start: m.index, end: m.index + m[0].length, digits: m[1] + m[3] + m[4], separator: m[2] });
    }
  });
  const found: DateMention[] = [];
  for (let i = 0; i < broken.length; i++) {
    for (let j = i + 1; j < broken.length; j++) {
      const [a, b] = [broken[i], broken[j]];
      if (a.line === b.line || a.separator !== b.separator) continue;
      const differ = [...a.digits].flatMap((digit, k) => (digit === b.digits[k] ? [] : [k]));
      if (differ.length === 0 || differ.length > 3) continue;
      const valid: DateMention["readings"][] = [];
      for (let choice = 0; choice < 1 << differ.length; choice++) {
        const digits = [...a.digits];
        differ.forEach((k, bit) => {
          if (choice & (1 << bit)) digits[k] = b.digits[k];
        });
        const merged = digits.join("");
        const readings = numericReadings(merged.slice(0, 2), merged.slice(2, 4), merged.slice(4));
        if (readings.length > 0) valid.push(readings);
      }
      if (valid.length === 1) found.push({ line: a.line, start: a.start, end: a.end, readings: valid[0], repaired: true });
    }
  }
  if (found.length > 0) return found;
  // One reading, or both broken alike ("17/83/2817"): OCR reads the 0 of a dot-matrix or faded
  // print as 8, 6 or 9. A date stands when exactly one such repair makes it real.
  for (const a of broken) {
    const suspects = [...a.digits].flatMap((digit, k) => (/[689]/.test(digit) ? [k] : []));
    if (suspects.length === 0 || suspects.length > 4) continue;
    const valid: DateMention["readings"][] = [];
    for (let choice = 1; choice < 1 << suspects.length; choice++) {
      const digits = [...a.digits];
      suspects.forEach((k, bit) => {
        if (choice & (1 << bit)) digits[k] = "0";
      });
      const merged = digits.join("");
      const readings = numericReadings(merged.slice(0, 2), merged.slice(2, 4), merged.slice(4));
      if (readings.length > 0) valid.push(readings);
    }
    if (valid.length === 1) found.push({ line: a.line, start: a.start, end: a.end, readings: valid[0], repaired: true });
  }
  return found;
}

/** A line that says which date it carries ("Date:", "Tarikh", "Dt"). */
const DATE_LABEL = /\b(date|dated|dt|tarikh|datum|fecha)\b/i;
/** Dates that are not the purchase's: expiry, validity, due or birth dates. */
const OTHER_DATE = /\b(exp(iry|ires?)?|valid|due|until|before|birth|dob|best|use by)\b/i;

/** A clock time right after a date ("14:32", "at 9:08 AM"), and one right before it (both at most 16 characters long: TIME_REACH). */
const TIME_AFTER = /^\W{0,3}(?:at\s|@\s?)?(\d{1,2}:\d{2}|\d{1,2}\.\d{2}\s?[ap]m)/i;
const TIME_BEFORE = /\d{1,2}:\d{2}(:\d{2})?\s?([ap]\.?m\.?)?\W{0,3}$/i;
const TIME_REACH = 16;

/**
 * The purchase date's readings: from the date next to a "Date" label when there is one,
 * otherwise the first plausible date. An ambiguous day/month gives both readings under "auto",
 * ordered by the order the receipt's unambiguous dates show (day-first when none do).
 */
export function receiptDate(lines: string[], order: DateOrder): { readings: string[]; confidence: FieldConfidence | null } {
  const mentions = [...lines.flatMap((line, index) => datesInLine(line, index)), ...reconciledDates(lines)];
  if (mentions.length === 0) return { readings: [], confidence: null };
  // What a line says is read once per line, not once per date on it (a line of thousands).
  const perLine = <T>(read: (index: number) => T) => {
    const known = new Map<number, T>();
    return (index: number) => {
      if (!known.has(index)) known.set(index, read(index));
      return known.get(index)!;
    };
  };
  const otherDate = perLine((i) => OTHER_DATE.test(lines[i]));
  const labelledLine = perLine((i) => DATE_LABEL.test(lines[i]) || (i > 0 && /^\W*(date|tarikh|dt)\W*$/i.test(lines[i - 1])));
  const mended = perLine((i) => mendDigits(lines[i]));
  // A date printed with a clock time is the transaction's timestamp; others may be an
  // event's dates, a card's expiry, a promotion's end. The time is looked for right beside the
  // date only: the patterns cannot reach further (TIME_AFTER, TIME_BEFORE).
  const timed = (d: DateMention) => {
    const line = mended(d.line);
    return TIME_AFTER.test(line.slice(d.end, d.end + TIME_REACH)) || TIME_BEFORE.test(line.slice(Math.max(0, d.start - TIME_REACH), d.start));
  };
  const rank = (d: DateMention) => (otherDate(d.line) ? 3 : labelledLine(d.line) ? 0 : timed(d) ? 1 : 2);
  let chosen = mentions[0];
  let chosenRank = rank(chosen);
  for (const d of mentions.slice(1)) {
    const r = rank(d);
    if (r < chosenRank || (r === chosenRank && (d.line < chosen.line || (d.line === chosen.line && d.start < chosen.start)))) {
      [chosen, chosenRank] = [d, r];
    }
  }
  const readings = orderedReadings(chosen, mentions, order);
  // A labelled or timestamped date is confirmed when another line (the other OCR reading, a second
  // print) reads the same day: one misread digit seldom repeats. A mended date, or one that is
  // merely the first seen (or an expiry's), is a guess however often it is read.
  const confirmed = mentions.some((d) => !d.repaired && d.line !== chosen.line &&
    d.readings.some((r) => (order === "auto" || r.order === order || r.order === "any") && readings.includes(r.iso)));
  const confidence: FieldConfidence = chosen.repaired || chosenRank >= 2 ? "low" : confirmed ? "high" : "medium";
  return { readings, confidence };
}

function orderedReadings({ readings }: DateMention, mentions: DateMention[], order: DateOrder): string[] {
  if (readings.length === 1) return [readings[0].iso];
  if (order !== "auto") return readings.filter((r) => r.order === order).map((r) => r.iso);
  const evidence = mentions.flatMap((d) => (d.readings.length === 1 ? [d.readings[0].order] : []));
  const monthFirst = evidence.includes("MDY") && !evidence.includes("DMY");
  const ordered = monthFirst ? [...readings].reverse() : readings;
  return ordered.map((r) => r.iso);
}

/** The line with the dates and clock times blanked out, so they are not read as amounts. */
export function withoutDates(line: string): string {
  const mended = mendDigits(line);
  // Pieces joined once: blanking each date in the whole line was quadratic in its dates.
  const pieces: string[] = [];
  let from = 0;
  for (const d of datesInLine(line, 0).sort((a, b) => a.start - b.start)) {
    pieces.push(mended.slice(from, d.start), " ".repeat(d.end - d.start));
    from = d.end;
  }
  pieces.push(mended.slice(from));
  const out = pieces.join("");
  // "13.45" is a time only where the line says so; elsewhere it may be money.
  const timeLine = /\b(time|hrs|jam|masa)\b/i.test(line);
  return out.replace(/\b\d{1,2}[:.]\d{2}(?:[:.]\d{2})?\s?(?:[ap]\.?m\.?)?(?![\d.,])/gi, (t) =>
    timeLine || /:|[ap]\.?m/i.test(t) ? " ".repeat(t.length) : t,
  );
}
