import { parse } from "csv-parse/sync";
import { absolute, isZero, negate, parseAmount } from "./amounts.js";
import {
  detectLayout, describeLayout, indicatorDirection, isPresentAmount, mapLayout, presetLayout, splitHeader, type CsvLayout, type CsvRecord,
} from "./csv-layout.js";
import { DATE_FORMAT_LABEL, detectDateOrder, toIsoDate, type DateOrder } from "./dates.js";
import { eventTypeFor } from "./event-type.js";
import { checkStatementLength } from "./limits.js";
import { BankFileError, type StatementRow } from "./row.js";

export interface CsvOptions { preset?: string; map?: string; dateOrder?: DateOrder }

export interface CsvStatement { rows: StatementRow[]; warnings: string[]; layout: string }

/** A bank CSV export's rows, read by a preset, a `--map` or the layout detected from the content. */
export function readCsvStatement(text: string, options: CsvOptions): CsvStatement {
  return csvStatement(records(text), options);
}

/** The statement rows of a CSV file's records (parsed whole by readCsvStatement, or streamed: read-file.ts). */
export function csvStatement(records: CsvRecord[], options: CsvOptions): CsvStatement {
  if (options.preset && options.map) throw new BankFileError("Give --preset or --map, not both.");
  const { header, data } = splitHeader(records);
  if (data.length === 0) throw new BankFileError("The file holds no transactions (no line has a date or an amount).");
  checkStatementLength(data.length);
  let warnings: string[] = [];
  let layout: CsvLayout;
  if (options.preset) layout = presetLayout(options.preset);
  else if (options.map) layout = mapLayout(options.map, header);
  else {
    const detected = detectLayout(header, data);
    layout = detected.layout;
    warnings = detected.warnings;
  }

  const dates = data.map((r) => ({ line: r.line, text: (r.cells[layout.date] ?? "").trim() }));
  const order = options.dateOrder ?? detectDateOrder(dates, layout.dateOrders);
  const rows: StatementRow[] = [];
  const sides = splitSides(data, layout);
  data.forEach((record, i) => {
    const transactionDate = toIsoDate(dates[i], order);
    const { amount, currency, turned } = amountOf(record, layout, sides);
    if (turned) warnings.push(turned);
    if (isZero(amount)) {
      warnings.push(`Line ${record.line}: the amount is 0.00; the row is left out.`);
      return;
    }
    const description = layout.description.map((c) => cellText(record, c)).filter((p) => p !== "").join(" ");
    if (description === "") throw new BankFileError(`Line ${record.line}: the description is empty.`);
    const memo = layout.memo === undefined ? "" : cellText(record, layout.memo);
    const reference = layout.reference === undefined ? "" : cellText(record, layout.reference);
    rows.push({
      line: record.line, transactionDate, description, amount, eventType: eventTypeFor(description, amount),
      ...(memo ? { memo } : {}), ...(reference ? { reference } : {}), ...(currency ? { currency } : {}),
    });
  });
  const accounts = mixedAccounts(header, data, options.preset);
  if (accounts) warnings.push(accounts);
  const source = options.preset ? `preset ${options.preset.toLowerCase()}` : options.map ? "--map" : "detected";
  return { rows, warnings, layout: `CSV (${source}): ${describeLayout(layout, header)}; dates ${DATE_FORMAT_LABEL[order]}` };
}

/** How bank exports are parsed, whole or streamed. */
export const CSV_OPTIONS = {
  relax_column_count: true, // RBC rows end with one or two empty fields
  relax_quotes: true, // a quote inside an unquoted field (12" PIZZA) is text
  skip_empty_lines: true,
  skip_records_with_empty_values: true,
  info: true,
} as const;

function records(text: string): CsvRecord[] {
  try {
    const parsed = parse(text, CSV_OPTIONS) as unknown as { record: string[]; info: { lines: number } }[];
    return parsed.map((p) => ({ line: p.info.lines, cells: p.record }));
  } catch (e) {
    throw notCsv(e);
  }
}

/** csv-parse's error, with the line it names. */
export function notCsv(e: unknown): BankFileError {
  const err = e as { message: string; lines?: number };
  return new BankFileError(`${err.lines ? `Line ${err.lines}: ` : ""}the file is not valid CSV (${err.message}).`);
}

const cellText = (r: CsvRecord, column: number) => (r.cells[column] ?? "").trim();

/**
 * For debit/credit columns: whether every amount of the column is negative. Such a column is
 * signed by the bank's habit (withdrawals written -19.00) and keeps its side; in any other, a
 * negative amount turns that row's side over (a refund in a card's purchase column is money in).
 */
interface SplitSides { debitAllNegative: boolean; creditAllNegative: boolean }

function splitSides(data: CsvRecord[], layout: CsvLayout): SplitSides | undefined {
  if (layout.amount.kind !== "split") return undefined;
  const allNegative = (column: number) => {
    const amounts = data.map((r) => cellText(r, column)).filter(isPresentAmount).map((c) => parseAmount(c).value!);
    return amounts.length > 0 && amounts.every((a) => a.startsWith("-"));
  };
  return { debitAllNegative: allNegative(layout.amount.debit), creditAllNegative: allNegative(layout.amount.credit) };
}

/**
 * Signed from the payment account's side: a debit (withdrawal, card purchase) is money out. With
 * the currency of the column it came from, when the layout knows it (RBC's CAD$ and USD$), and a
 * warning when a negative amount turned the row's side over.
 */
function amountOf(record: CsvRecord, layout: CsvLayout, sides: SplitSides | undefined): { amount: string; currency?: string; turned?: string } {
  const read = (column: number) => {
    const raw = cellText(record, column);
    const parsed = parseAmount(raw);
    if (parsed.problem) throw new BankFileError(`Line ${record.line}: "${raw}" in column ${column + 1} ${parsed.problem}.`);
    return parsed.value!;
  };
  if (layout.amount.kind === "signed" || layout.amount.kind === "indicated") {
    const { columns } = layout.amount;
    const index = columns.findIndex((c) => cellText(record, c) !== "");
    if (index < 0) throw new BankFileError(`Line ${record.line}: no amount.`);
    const amount = read(columns[index]);
    if (layout.amount.kind === "signed") return { amount, currency: layout.amount.currencies?.[index] };
    const { indicator } = layout.amount;
    const word = cellText(record, indicator);
    const direction = indicatorDirection(word);
    if (!direction) {
      throw new BankFileError(`Line ${record.line}: "${word}" in column ${indicator + 1} is not a debit/credit indicator (DR or CR, D or C, Debit or Credit).`);
    }
    // DR: money out. A negative amount beside DR is a reversal, money in (as in a debit column).
    return { amount: direction === "out" ? negate(amount) : amount };
  }
  const { debit, credit } = layout.amount;
  const [debitText, creditText] = [cellText(record, debit), cellText(record, credit)];
  if (debitText === "" && creditText === "") throw new BankFileError(`Line ${record.line}: no amount (columns ${debit + 1} and ${credit + 1} are empty).`);
  // 0.00 in the column a row does not use is no amount.
  const [hasDebit, hasCredit] = [debitText !== "" && !isZeroCell(debitText), creditText !== "" && !isZeroCell(creditText)];
  if (hasDebit && hasCredit) {
    throw new BankFileError(`Line ${record.line}: both a debit (column ${debit + 1}) and a credit (column ${credit + 1}); a row has one of them.`);
  }
  if (!hasDebit && !hasCredit) return { amount: read(debitText !== "" ? debit : credit) };
  const value = read(hasDebit ? debit : credit);
  const keepsSide = hasDebit ? sides?.debitAllNegative : sides?.creditAllNegative;
  if (keepsSide || !value.startsWith("-")) return { amount: hasDebit ? negate(absolute(value)) : absolute(value) };
  const column = hasDebit ? debit : credit;
  return {
    amount: hasDebit ? absolute(value) : value,
    turned: `Line ${record.line}: ${value} in the ${hasDebit ? "debit" : "credit"} column (${column + 1}) is read as money ${hasDebit ? "in (a refund or reversal)" : "out (a reversal)"}.`,
  };
}

/** A cell that reads as a zero amount ("0.00", "0", "-0.00"); a cell that is not an amount is not zero. */
const isZeroCell = (text: string) => {
  const parsed = parseAmount(text);
  return parsed.value !== undefined && isZero(parsed.value);
};

/** Accounts named in the warning about several of them; the rest are counted. */
const ACCOUNTS_NAMED = 10;

/** RBC exports every account of a login in one file: all its rows go to the one payment account, so say so. */
function mixedAccounts(header: CsvRecord | undefined, data: CsvRecord[], preset: string | undefined): string | undefined {
  const column = preset?.toLowerCase() === "rbc" ? 1 : header?.cells.findIndex((c) => /^account number$/i.test(c.trim())) ?? -1;
  if (column < 0) return undefined;
  const accounts = Array.from(new Set(data.map((r) => cellText(r, column)).filter((a) => a !== "")));
  if (accounts.length <= 1) return undefined;
  const named = accounts.slice(0, ACCOUNTS_NAMED).join(", ") + (accounts.length > ACCOUNTS_NAMED ? ` and ${accounts.length - ACCOUNTS_NAMED} more` : "");
  return `The file holds rows of ${accounts.length} accounts (${named}); all of them go to the one payment account. Export one account per file to keep them apart.`;
}
