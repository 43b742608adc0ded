import { amountsIn, type AmountToken } from "./amounts.js";
import { withoutDates } from "./dates.js";

/**
 * How strongly a line's words say "this is what the customer pays". Higher wins; lines that
 * name some other amount (subtotal, tax, tip, cash tendered, change, rounding, discount,
 * quantities) are NOT_TOTAL and only the fallback may use them, never cash or change.
 */
export const Label = {
  NOT_TOTAL: -1,
  NONE: 0,
  /** "Amount" alone, a card payment line: often the total, weak evidence. */
  WEAK: 1,
  TOTAL: 2,
  /** "Total incl. GST", "Nett total": the total with everything in. */
  INCLUSIVE: 3,
  /** "Amount due", "Balance due", "Grand total", "Total payable", "Total after rounding". */
  DUE: 4,
} as const;
export type Label = (typeof Label)[keyof typeof Label];

// OCR writes T0TAL, TOTA1, TOTAI, TOT AL; receipts abbreviate it TTL or TOT.
const TOTAL_WORD = /t\s?[o0]\s?t\s?[a4@]\s?[l1i|]|\bttl\b|\btot\b|\bjumlah\b|\bsumme\b|\bgesamt/;

function labelWords(line: string): string {
  return line.toLowerCase().replace(/\s+/g, " ");
}

/** Payments and their remainder are never the total, not even as a fallback. */
export function isPaymentLine(words: string): boolean {
  return /\b(cash|change|tender(ed)?|chg due|received|refund to)\b|kembali|\btunai\b/.test(words) &&
    !/\b(cash sales?|cash bill|cash inv)/.test(words);
}

function isChange(words: string): boolean {
  return /\b(change|chg due|kembali)\b/.test(words);
}

/** The words of a subtotal line, OCR's misreadings of "total" included. */
export const SUBTOTAL = /\bsub[\s-]?(t\s?[o0]\s?t\s?[a4]\s?[l1i]|ttl)|\bsubtotal/;
/** A total after rounding: what is paid. */
export const AFTER_ROUNDING = /(after|atf|aft|with)\s?(round|rnd)|rounded (total|amount)|(total|ttl) rounded/;
/** A rounding adjustment's own line ("Ground floor" in an address is none). */
export const ROUNDING = /\bround|\brnd\b|\badj(ustment)?\b/;
/** Amounts taken off the subtotal. */
export const DISCOUNT = /\b(discount|disc|coupon|voucher|promo|you save|savings?)\b/;
/** Taxes and charges added to the subtotal. */
export const TAX_OR_CHARGE = /\b(gst|vat|hst|pst|qst|sst|tax|taxes|service charge|svc|srv|sv chg|serv)\b/;

export function classify(line: string): Label {
  const words = labelWords(line);
  const total = TOTAL_WORD.test(words);
  if (SUBTOTAL.test(words)) return Label.NOT_TOTAL;
  if (AFTER_ROUNDING.test(words)) return Label.DUE;
  if (ROUNDING.test(words) && !/adjustment note/.test(words)) return Label.NOT_TOTAL;
  if (isPaymentLine(words)) return Label.NOT_TOTAL;
  const taxWordFirst = /^\W*(\w+ )?(gst|vat|hst|pst|qst|sst|tax(?! invoice)|taxes|service tax|sales tax)\b/.exec(words);
  const taxFirst = taxWordFirst !== null;
  // "GST payable", "VAT amount due": the tax, not what the customer pays ("GST incl. total payable" is).
  const namesTheTax = taxWordFirst !== null && !/\b(incl\w*|inc|inclusive|including)\b/.test(words.slice(taxWordFirst[0].length));
  if (!namesTheTax && /\b(balance|amount|amt|total|ttl) (due|owing|to pay)\b|\b(payable|grand total|total to pay|please pay)\b|^\W*due\b(?!\W*(date|by)\b)/.test(words)) {
    return Label.DUE;
  }
  if (/\b(qty|quantity|items?|item\(s\)|pcs|units|count|points?|pts|weight|kg)\b|\bno\.? of\b/.test(words)) {
    return Label.NOT_TOTAL;
  }
  if (/\b(sav(ed|ings?)|you save|discount|disc|coupon|voucher|promo|deposit)\b/.test(words)) return Label.NOT_TOTAL;
  if (/\b(excl\w*|exclusive|excluding|before tax|pre-?tax|net of tax|w\/o)\b|\bexc\b|\bnet (sales|amount)\b/.test(words)) {
    return Label.NOT_TOTAL;
  }
  if (/\b(tip|tips|gratuity)\b/.test(words) && !total) return Label.NOT_TOTAL;
  if (total && !taxFirst && /\b(incl\w*|inc|inclusive|including|with)\b/.test(words)) return Label.INCLUSIVE;
  if (/\bnett? (total|amount|amt)\b|\b(total|amount) nett?\b/.test(words)) return Label.INCLUSIVE;
  if (TAX_OR_CHARGE.test(words)) return Label.NOT_TOTAL;
  if (total) return Label.TOTAL;
  if (/\b(amount|amt|visa|mastercard|master|amex|debit|credit|card|paid|payment|eftpos)\b/.test(words)) return Label.WEAK;
  return Label.NONE;
}

export interface Candidate {
  cents: number;
  label: Label;
  /** The label's words ("sub total", "gst 6%"), "" for an amount alone: what the consistency checks read. */
  words: string;
  /** Where the label was written (the line to read the currency from). */
  line: number;
  payment: boolean;
  /** The change given back (a payment line). */
  change: boolean;
  /** A column of a tax summary's row ("SR @6%  40.00  2.40"): the amount before tax or the tax, for the checks only. */
  part?: "net" | "tax";
}

interface Row {
  /** The line with its dates and times blanked out: what the amounts' places are in. */
  text: string;
  amounts: AmountToken[];
  /** The line's words once its amounts are taken out. */
  words: string;
  /** Nothing but an amount (maybe with a currency or a tax-code letter). */
  amountOnly: boolean;
  /** Words and no amount: a label whose amount may be printed elsewhere. */
  labelOnly: boolean;
}

function rowOf(line: string): Row {
  const text = withoutDates(line);
  const amounts = amountsIn(text);
  // Pieces joined once: cutting each amount out of the whole line was quadratic in its amounts.
  const pieces: string[] = [];
  let from = 0;
  for (const a of amounts) {
    pieces.push(text.slice(from, a.start));
    from = a.end;
  }
  pieces.push(text.slice(from));
  const words = labelWords(pieces.join(" "));
  return {
    text,
    amounts,
    words,
    // "RM" as OCR misreads it too ("RH33.90", "RN 5.00", "kM12.70").
    amountOnly: amounts.length > 0 && words.replace(/\b(rm|rh|rn|km|kn|myr|[a-z])\b|[^a-z]/g, "").length === 0,
    labelOnly: amounts.length === 0 && /[a-z]{2}/.test(words),
  };
}

/**
 * Where the amount of a label printed without one is. Scans lose the row structure: the
 * amount may be on the next line, or a column of labels comes out before the column of their
 * amounts ("TOTAL / CASH / CHANGE" then "34.40 / 50.40 / 16.00"): then the label's place in
 * its run of known labels is its amount's place in the run of amounts that follows.
 */
function pairedAmountRow(rows: Row[], known: boolean[], runEnd: number[], i: number): number | null {
  let start = i;
  while (start > 0 && known[start - 1] && i - start < 8) start--;
  const end = runEnd[i];
  if (end - start > 1) {
    const place = end + (i - start);
    let whole = true;
    for (let k = end; k <= place; k++) whole &&= rows[k]?.amountOnly ?? false;
    if (whole) return place;
  }
  return rows[i + 1]?.amountOnly ? i + 1 : null;
}

/**
 * OCR may run two columns into one line ("Total Saving 0.00 Total 66.15"): when words stand
 * before each of several amounts, each amount belongs to the words before it.
 */
function labelledSegments(row: Row): { cents: number; words: string }[] {
  if (row.amounts.length < 2) return [];
  const text = row.text;
  const segments = row.amounts.map((amount, k) => ({
    cents: amount.cents,
    words: labelWords(text.slice(k === 0 ? 0 : row.amounts[k - 1].end, amount.start)),
  }));
  return segments.every((segment) => /[a-z]{2}/.test(segment.words)) ? segments : [];
}

/**
 * A tax summary's row prints its columns side by side with no words between them: the amount
 * before tax, the tax, sometimes their sum ("SR @6%  40.00  2.40", "Total  261.32  15.68  277.00").
 * Its first two are parts the checks add up (never the total: the row's rightmost amount is a
 * tax); a third that is their sum is the total the summary states.
 */
function taxSummaryRow(row: Row): Omit<Candidate, "line">[] | null {
  // Amounts of different currencies side by side ("Total C$39.00 US$29.00") are one total twice.
  if (row.amounts.length < 2 || row.amounts.length > 3 || new Set(row.amounts.map((a) => a.currency).filter(Boolean)).size > 1) return null;
  const text = row.text;
  const between = row.amounts.slice(1).map((a, k) => text.slice(row.amounts[k].end, a.start));
  if (between.some((gap) => /[a-z]/i.test(gap))) return null;
  const words = labelWords(text.slice(0, row.amounts[0].start));
  const summaryWords = TOTAL_WORD.test(words) || TAX_OR_CHARGE.test(words) || /\d\s?%/.test(words) || /\b(sr|zr|tx|gst summary)\b/.test(words);
  if (!summaryWords || /\b(qty|quantity|items?|pcs|x)\b|\d\s?x\b/.test(words)) return null;
  const [net, tax, sum] = row.amounts.map((a) => a.cents);
  if (!(net > 0 && tax >= 0 && tax < net) || (sum !== undefined && sum !== net + tax)) return null;
  const part = (cents: number, role: "net" | "tax") => ({ cents, label: Label.NOT_TOTAL, words, payment: false, change: false, part: role });
  const parts: Omit<Candidate, "line">[] = [part(net, "net"), part(tax, "tax")];
  if (sum !== undefined) parts.push({ cents: sum, label: classify(words), words, payment: false, change: false });
  return parts;
}

/**
 * Which rows are labels known to go with an amount printed elsewhere, and where each run of them
 * ends (past i): found once, not again for every label of a long run.
 */
function labelRuns(rows: Row[]): { known: boolean[]; runEnd: number[] } {
  const known = rows.map((r) => r.labelOnly && (classify(r.words) !== Label.NONE || isPaymentLine(r.words)));
  const runEnd = new Array<number>(rows.length);
  for (let i = rows.length - 1; i >= 0; i--) runEnd[i] = i + 1 < rows.length && known[i + 1] ? runEnd[i + 1] : i + 1;
  return { known, runEnd };
}

/** Every amount with the label it belongs to, if any. */
export function candidates(lines: string[]): Candidate[] {
  const rows = lines.map(rowOf);
  const { known, runEnd } = labelRuns(rows);
  const found: Candidate[] = [];
  const claimed = new Set<number>();
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i];
    const label = classify(row.words);
    const payment = isPaymentLine(row.words);
    const summary = taxSummaryRow(row);
    const segments = summary ? [] : labelledSegments(row);
    if (summary) {
      found.push(...summary.map((c) => ({ ...c, line: i })));
    } else if (segments.length > 1) {
      for (const segment of segments) {
        found.push({ cents: segment.cents, label: classify(segment.words), words: segment.words, line: i, payment: isPaymentLine(segment.words), change: isChange(segment.words) });
      }
    } else if (row.amounts.length > 0 && !row.amountOnly) {
      // A row's own value is its rightmost amount (quantity and unit price come first).
      found.push({ cents: row.amounts[row.amounts.length - 1].cents, label, words: row.words, line: i, payment, change: isChange(row.words) });
    } else if (row.labelOnly && (label !== Label.NONE || payment)) {
      const paired = pairedAmountRow(rows, known, runEnd, i);
      if (paired !== null) {
        claimed.add(paired);
        found.push({ cents: rows[paired].amounts[0].cents, label, words: row.words, line: i, payment, change: isChange(row.words) });
      }
    }
  }
  rows.forEach((row, i) => {
    // Alone, a row's own value is still its rightmost amount ("2 X 5.30 10.60").
    if (row.amountOnly && !claimed.has(i)) found.push({ cents: row.amounts[row.amounts.length - 1].cents, label: Label.NONE, words: "", line: i, payment: false, change: false });
  });
  return promoteRoundedTotals(found, rows);
}

/** The most a rounding adjustment moves a total (cash rounding to 5 or 10 cents). */
const ROUNDING_REACH = 5;

/**
 * A total printed after a rounding adjustment that follows an earlier total is the rounded
 * amount actually paid: it outranks the unrounded one whatever their labels say.
 */
function promoteRoundedTotals(found: Candidate[], rows: Row[]): Candidate[] {
  const totals = found.filter((c) => c.label >= Label.TOTAL).sort((a, b) => a.line - b.line);
  // Rounding moves a total by a few cents: a "rounded" total well below another total, by more
  // than any discount printed explains, is another amount paired with the label (a photo's column
  // of labels read apart from its amounts: "TOTAL ROUNDED" with the change).
  // Folded once each, not compared pair by pair: a hostile text holds thousands of totals.
  const discount = found.reduce((m, c) => (DISCOUNT.test(c.words) ? Math.max(m, Math.abs(c.cents)) : m), 0);
  const unrounded = totals.reduce((m, t) => (AFTER_ROUNDING.test(t.words) ? m : Math.max(m, t.cents)), -Infinity);
  const belowAnother = (c: Candidate) => c.cents > 0 && unrounded - discount - c.cents > ROUNDING_REACH;
  // One of a few cents, where the receipt has larger amounts, is the rounding adjustment itself.
  const largest = found.reduce((m, c) => Math.max(m, Math.abs(c.cents)), 0);
  const roundingSized = (c: Candidate) => Math.abs(c.cents) <= ROUNDING_REACH && largest > ROUNDING_REACH;
  for (const c of totals) if (AFTER_ROUNDING.test(c.words) && (belowAnother(c) || roundingSized(c))) c.label = Label.NONE;
  const isRounding = (r: Row) => /\bround|\brnd\b/.test(r.words) && !/after|atf/.test(r.words);
  for (let k = 1; k < totals.length; k++) {
    if (totals[k].label === Label.NONE) continue;
    // Only the rows between the two totals: each row is read for one pair at most.
    let rounding = false;
    for (let i = totals[k - 1].line + 1; i < totals[k].line && !rounding; i++) rounding = isRounding(rows[i]);
    if (rounding && totals[k].label < Label.DUE) totals[k].label = Label.DUE;
  }
  return found;
}

/**
 * The grand total: the amount with the strongest total label, the largest among equals (a
 * total after a tip or service charge includes them; a tax summary's "Total" is smaller). With
 * no total label, the largest amount that is not a payment or change.
 */
export function findTotal(lines: string[]): { cents: number; line: number } | null {
  return totalAmong(candidates(lines));
}

/** findTotal's choice among a text's candidates (consistency.ts reads the same candidates for its checks). */
export function totalAmong(found: Candidate[]): { cents: number; line: number } | null {
  // A zero "Balance due" after payment says nothing about the total: zeros count only alone.
  const nonZero = found.filter((c) => c.cents !== 0);
  const all = nonZero.length > 0 ? nonZero : found;
  // Cash tendered with change given back bounds what was paid: cash minus change.
  // Folded, not spread into Math.max: a long text holds more amounts than a call takes arguments.
  const largest = (of: Candidate[], floor: number, value: (c: Candidate) => number) => of.reduce((m, c) => Math.max(m, value(c)), floor);
  const change = largest(all.filter((c) => c.change), 0, (c) => c.cents);
  const cash = change > 0 ? largest(all.filter((c) => c.payment && !c.change), 0, (c) => c.cents) : 0;
  const paidInCash = cash > change ? cash - change : null;
  const strongest: number = largest(all, Label.NONE, (c) => c.label);
  if (strongest < Label.TOTAL && paidInCash !== null) {
    // No total printed (or read): what the cash paid is the total.
    return { cents: paidInCash, line: all.find((c) => c.payment && !c.change && c.cents === cash)!.line };
  }
  let pool = strongest > Label.NONE ? all.filter((c) => c.label === strongest) : all.filter((c) => !c.payment);
  // A "total" larger than the cash handed over (OCR read "RM41.81" as "441.81") is misread:
  // the largest amount the cash covers is taken instead.
  if (paidInCash !== null && pool.every((c) => c.cents > cash)) {
    pool = all.filter((c) => !c.payment && c.cents <= cash);
  }
  if (pool.length === 0) return null;
  const best = pool.reduce((a, b) => (b.cents > a.cents ? b : a));
  return { cents: best.cents, line: best.line };
}

/** An amount OCR cut at its decimal point ("TOTAL : $22.", "Total $41."): the whole units. */
const CUT_AMOUNT = /(?<![\d.,/-])(?:[$€£]|rm\s?)?(\d{1,6})\.\s*$/i;

/**
 * Whether a reading lost the cents of the total: a line labelled as the total ends with an
 * amount cut at its decimal point, and the total found is missing or has other units (OCR's
 * page layout analysis sometimes drops the column of cents of a clean but speckled image).
 */
export function totalLostItsCents(lines: string[]): boolean {
  const cut = lines.flatMap((line) => {
    const match = CUT_AMOUNT.exec(withoutDates(line));
    if (!match || amountsIn(withoutDates(line)).length > 0) return [];
    const rest = labelWords(line.slice(0, line.length - match[0].length));
    return classify(rest) >= Label.TOTAL ? [Number(match[1])] : [];
  });
  if (cut.length === 0) return false;
  const total = findTotal(lines);
  return total === null || cut.some((units) => Math.trunc(Math.abs(total.cents) / 100) !== units);
}
