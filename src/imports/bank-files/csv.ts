import { accountKey, chooseAccount, tallyAccounts } from "./accounts.js";
import { parse } from "csv-parse/sync";
import { absolute, amountShape, decimalHint, isZero, negate, parseAmount, type DecimalMark } from "./amounts.js";
import {
  currencyOfHeader, detectLayout, describeLayout, indicatorAlreadySigned, indicatorDirection, isPresentAmount, mapLayout, presetLayout, splitHeader,
  type CsvLayout, type CsvRecord,
} from "./csv-layout.js";
import { DATE_FORMAT_LABEL, detectDateOrder, isDateShaped, toIsoDate, type DateOrder } from "./dates.js";
import { eventTypeFor, isCardPayment } from "./event-type.js";
import { checkStatementLength } from "./limits.js";
import { BankFileError, type StatementRow } from "./row.js";

export interface CsvOptions {
  preset?: string; map?: string; dateOrder?: DateOrder;
  /** The field separator (detectDelimiter when not given: the file's content says). */
  delimiter?: string;
  /** `--decimal comma|point`: the amounts' decimal mark, when a column does not settle it. */
  decimal?: string;
  /** `--money-out positive|negative`: how a single signed amount column writes money out (negative unless said). */
  moneyOut?: MoneyOut;
  /** The payment account's type: a credit card's export may write purchases positive (checkCardSigns). */
  accountType?: string;
  /** The reading flags are a saved layout's, not given for this file: a sign flag is checked against the file. */
  fromSavedLayout?: boolean;
  /** `--account`, and the payment account's last four digits: which account's rows a file of several is read for. */
  account?: string;
  lastFour?: string;
}

export type MoneyOut = "negative" | "positive";

/** The separators a bank file may use, tried in this order when the content does not settle it. */
const DELIMITERS = [",", ";", "\t", "|"] as const;
const DELIMITER_NAMES: Record<string, string> = { ",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe" };

/** `--delimiter ,|;|tab|pipe`'s value as the character. */
export function parseDelimiterOption(value: string): string {
  const v = value.trim().toLowerCase();
  const found = v === "" && value.includes("\t") ? "\t"
    : DELIMITERS.find((d) => d === v || DELIMITER_NAMES[d] === v || (d === "\t" && v === "\\t"));
  if (!found) throw new BankFileError(`--delimiter must be one of , ; tab pipe (also comma, semicolon) (got "${value}").`);
  return found;
}

/** `--decimal comma|point`'s value. */
export function parseDecimalOption(value: string | undefined): DecimalMark | undefined {
  if (value === undefined) return undefined;
  const v = value.trim().toLowerCase();
  if (v === "comma" || v === ",") return "comma";
  if (v === "point" || v === "." || v === "dot") return "point";
  throw new BankFileError(`--decimal must be comma or point (got "${value}").`);
}

/** `--money-out positive|negative`'s value. */
export function parseMoneyOutOption(value: string | undefined): MoneyOut | undefined {
  if (value === undefined) return undefined;
  const v = value.trim().toLowerCase();
  if (v === "positive" || v === "negative") return v;
  throw new BankFileError(`--money-out must be positive or negative (got "${value}").`);
}

/**
 * The field separator of a CSV text (its first lines; quoted fields respected): of comma,
 * semicolon, tab and pipe, the one found the same number of times on the most lines (a preamble
 * line may differ), the more often per line on a tie. A decimal comma (12,50) is in some lines
 * only, or as often as the separator in none of the header: the semicolon wins there.
 */
export function detectDelimiter(text: string): string {
  const counts = new Map<string, number[]>(DELIMITERS.map((d) => [d, []]));
  let quoted = false;
  let line = new Map<string, number>();
  let previous = "\n";
  let lines = 0;
  const end = () => {
    if ([...line.values()].some((n) => n > 0)) for (const d of DELIMITERS) counts.get(d)!.push(line.get(d) ?? 0);
    line = new Map();
    lines++;
  };
  for (let i = 0; i < text.length && lines < 50; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') i++;
        else quoted = false;
      }
    } else if (c === '"' && (previous === "\n" || previous === "\r" || (DELIMITERS as readonly string[]).includes(previous) || previous === " ")) {
      quoted = true;
    } else if (c === "\n") {
      end();
    } else if ((DELIMITERS as readonly string[]).includes(c)) {
      line.set(c, (line.get(c) ?? 0) + 1);
    }
    previous = c;
  }
  if (!quoted && lines < 50) end();
  let best: { d: string; lines: number; per: number } | undefined;
  for (const d of DELIMITERS) {
    const per = counts.get(d)!.filter((n) => n > 0);
    if (per.length === 0) continue;
    const frequency = new Map<number, number>();
    for (const n of per) frequency.set(n, (frequency.get(n) ?? 0) + 1);
    const [mode, modeLines] = [...frequency].reduce((a, b) => (b[1] > a[1] || (b[1] === a[1] && b[0] > a[0]) ? b : a));
    if (!best || modeLines > best.lines || (modeLines === best.lines && mode > best.per)) best = { d, lines: modeLines, per: mode };
  }
  return best?.d ?? ",";
}

export const delimiterName = (d: string) => DELIMITER_NAMES[d] ?? JSON.stringify(d);

export interface CsvStatement { rows: StatementRow[]; warnings: string[]; layout: string }

/** A bank CSV export's rows, read by a preset, a `--map` or the layout detected from the content. */
export function readCsvStatement(text: string, options: CsvOptions): CsvStatement {
  const delimiter = options.delimiter ?? detectDelimiter(text);
  return csvStatement(records(text, delimiter), { ...options, delimiter });
}

/** The statement rows of a CSV file's records (parsed whole by readCsvStatement, or streamed: read-file.ts). */
export function csvStatement(records: CsvRecord[], options: CsvOptions): CsvStatement {
  if (options.preset && options.map) throw new BankFileError("Give --preset or --map, not both.");
  const { header, data: read } = splitHeader(records);
  const { data: rowsRead, continued } = continuations(read);
  // A balance or total line (no date; "Balance at start of period", "Solde") is no transaction.
  const balanceLines = rowsRead.filter((r) => !r.cells.some(isDateShaped) && BALANCE_LINE.test(r.cells.find((c) => c.trim() !== "")?.trim() ?? ""));
  const allAccounts = rowsRead.filter((r) => !balanceLines.includes(r));
  if (allAccounts.length === 0) {
    throw new BankFileError("The file holds no transactions (no line has a date or an amount)." +
      (records.some((r) => r.cells.length > 1) ? "" : ` Every line is one field: if the fields are separated by something other than a ${delimiterName(options.delimiter ?? ",")}, give --delimiter , ; tab or pipe.`));
  }
  checkStatementLength(allAccounts.length);
  let warnings: string[] = [];
  let layout: CsvLayout;
  if (options.preset) layout = presetLayout(options.preset);
  else if (options.map) layout = mapLayout(options.map, header);
  else {
    // Signs a card account's check (or a --money-out given) settles: an unsigned column is not refused here.
    const detected = detectLayout(header, allAccounts, options.accountType === "credit_card" || options.moneyOut !== undefined);
    layout = detected.layout;
    warnings = detected.warnings;
  }
  const { data, warnings: accountWarnings } = oneAccountsRows(header, allAccounts, options);
  warnings.push(...accountWarnings);

  checkDescription(layout, header, data);
  checkSplitAmounts(layout, header, data, options.delimiter ?? ",");
  const marks = decimalMarks(layout, header, data, parseDecimalOption(options.decimal));
  checkIndicated(layout, header, data);
  checkMoneyOutOption(layout, header, options.moneyOut);
  const dates = data.map((r) => ({ line: r.line, text: (r.cells[layout.date] ?? "").trim() }));
  const order = options.dateOrder ?? detectDateOrder(dates, layout.dateOrders);
  const rows: StatementRow[] = [];
  const sides = splitSides(data, layout);
  const fallbacks = descriptionFallbacks(layout, header, data);
  const undescribed: number[] = [];
  data.forEach((record, i) => {
    const transactionDate = toIsoDate(dates[i], order);
    const { amount, currency, turned } = amountOf(record, layout, sides, marks, header, options.moneyOut);
    if (turned) warnings.push(turned);
    if (isZero(amount)) {
      warnings.push(`Line ${record.line}: the amount is 0.00; the row is left out.`);
      return;
    }
    let description = layout.description.map((c) => cellText(record, c)).filter((p) => p !== "").join(" ");
    if (description === "") {
      // A budgeting app's cash expense with no note: described by the row's memo or category, never refused.
      description = fallbacks.map((c) => cellText(record, c)).find((p) => p !== "") ?? NO_DESCRIPTION;
      undescribed.push(record.line);
    }
    const memo = [layout.memo === undefined ? "" : cellText(record, layout.memo), continued.get(record) ?? ""].filter((p) => p !== "").join(" ");
    const reference = layout.reference === undefined ? "" : cellText(record, layout.reference);
    rows.push({
      line: record.line, transactionDate, description, amount, eventType: eventTypeFor(description, amount),
      ...(memo ? { memo } : {}), ...(reference ? { reference } : {}), ...(currency ? { currency } : {}),
    });
  });
  if (undescribed.length > 0) {
    const from = fallbacks.length > 0 ? `described by ${fallbacks.map((c) => columnName(header, c)).join(" or ")}, else as "${NO_DESCRIPTION}"` : `described as "${NO_DESCRIPTION}"`;
    warnings.push(`${lineList(undescribed)}: the description is empty; ${from}.`);
  }
  checkSigns(layout, header, rows, options);
  const source = options.preset ? `preset ${options.preset.toLowerCase()}` : options.map ? "--map" : "detected";
  const separator = options.delimiter && options.delimiter !== "," ? `; ${delimiterName(options.delimiter)}-separated` : "";
  const decimals = [...new Set(marks.values())].includes("comma") ? "; decimal comma" : "";
  const signs = options.moneyOut === "positive" ? "; money out positive, turned over" : "";
  if (balanceLines.length > 0) warnings.push(`Left out as balance or total lines (no date): line${balanceLines.length > 1 ? "s" : ""} ${balanceLines.map((r) => r.line).join(", ")}.`);
  if (continued.size > 0) warnings.push(`${continued.size} lines with neither a date nor an amount (and nothing in column 1) were read as the row above's continuation, its memo.`);
  return { rows, warnings, layout: `CSV (${source}): ${describeLayout(layout, header)}; dates ${DATE_FORMAT_LABEL[order]}${decimals}${signs}${separator}` };
}

/** A whole number as an amount column holds it before its decimal comma split it off: -4, 1.234, (12. */
const WHOLE_PART = /^[-+]?\(?(?:\d{1,3}(?:[.' ]\d{3})+|\d+)$/;
/** The cents a split left in the next field: 50, 5, 50). */
const SPLIT_CENTS = /^\d{1,2}\)?$/;

/**
 * An unquoted decimal comma in a comma-separated file splits an amount in two ("-4,50" read as -4
 * and 50, the 50 pushing the fields after it along). Refused, never read as its first half: a row
 * whose amount is a whole number followed by a field of one or two digits, when the row is wider
 * than most rows, or when every amount of the column is split so (a file with no row unsplit).
 */
function checkSplitAmounts(layout: CsvLayout, header: CsvRecord | undefined, data: CsvRecord[], delimiter: string): void {
  if (delimiter !== ",") return;
  const counts = new Map<number, number>();
  for (const r of data) counts.set(r.cells.length, (counts.get(r.cells.length) ?? 0) + 1);
  // The most common width; on a tie the narrower, so that a split row stands out.
  const typical = [...counts.entries()].sort((a, b) => b[1] - a[1] || a[0] - b[0])[0]?.[0] ?? 0;
  for (const column of amountColumns(layout)) {
    const split = (r: CsvRecord) => WHOLE_PART.test(cellText(r, column)) && SPLIT_CENTS.test(cellText(r, column + 1));
    const filled = data.filter((r) => cellText(r, column) !== "");
    const row = data.find((r) => split(r) && r.cells.length > typical) ?? (filled.length > 0 && filled.every(split) ? filled[0] : undefined);
    if (!row) continue;
    throw new BankFileError(`Line ${row.line}: "${cellText(row, column)},${cellText(row, column + 1)}" in ${columnName(header, column)} looks like an amount ` +
      "with a decimal comma split in two by the file's comma separator (the file is not quoted around it). Export the file with amounts quoted, " +
      "or separated by semicolons or tabs (then give --delimiter if it is not detected).");
  }
}

/**
 * DBS writes each transaction's details on a line of their own below it (",,UBER EATS …"): a line
 * with no date and no amount, nothing in its first column, after a row, continues that row (its
 * memo). Any other line without date or amount stays, to be reported.
 */
function continuations(data: CsvRecord[]): { data: CsvRecord[]; continued: Map<CsvRecord, string> } {
  const continued = new Map<CsvRecord, string>();
  const kept: CsvRecord[] = [];
  for (const r of data) {
    const cells = r.cells.map((c) => c.trim());
    const previous = kept[kept.length - 1];
    if (previous && cells[0] === "" && cells.some((c) => c !== "") && !cells.some((c) => c !== "" && (isDateShaped(c) || amountShape(c) !== undefined))) {
      continued.set(previous, [continued.get(previous), cells.filter((c) => c !== "").join(" ")].filter(Boolean).join(" "));
    } else kept.push(r);
  }
  return { data: kept, continued };
}

const BALANCE_LINE = /^(?:(?:opening|closing|available|ledger|current|final|start(?:ing)?|end(?:ing)?)\s+)?balance\b|^(?:solde|saldo|kontostand|total)\b/i;

/** How bank exports are parsed, whole or streamed. */
export const CSV_OPTIONS = {
  relax_column_count: true, // RBC rows end with one or two empty fields
  relax_quotes: true, // a quote inside an unquoted field (12" PIZZA) is text
  skip_empty_lines: true,
  skip_records_with_empty_values: true,
  info: true,
} as const;

function records(text: string, delimiter: string): CsvRecord[] {
  try {
    const parsed = parse(text, { ...CSV_OPTIONS, delimiter }) as unknown as { record: string[]; info: { lines: number } }[];
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
    const amounts = data.map((r) => cellText(r, column)).filter(isPresentAmount);
    return amounts.length > 0 && amounts.every((a) => amountShape(a)?.negative);
  };
  return { debitAllNegative: allNegative(layout.amount.debit), creditAllNegative: allNegative(layout.amount.credit) };
}

/**
 * Signed from the payment account's side: a debit (withdrawal, card purchase) is money out. With
 * the currency of the column it came from, when the layout knows it (RBC's CAD$ and USD$), and a
 * warning when a negative amount turned the row's side over.
 */
function amountOf(record: CsvRecord, layout: CsvLayout, sides: SplitSides | undefined, marks: Map<number, DecimalMark>,
  header: CsvRecord | undefined, moneyOut: MoneyOut | undefined): { amount: string; currency?: string; turned?: string } {
  const rowCurrency = layout.currency === undefined ? undefined : cellText(record, layout.currency).toUpperCase() || undefined;
  let cellCurrency: string | undefined;
  let cellSays: { raw: string; column: number; currency: string } | undefined;
  const read = (column: number) => {
    const raw = cellText(record, column);
    const parsed = parseAmount(raw, { decimal: marks.get(column) ?? "point" });
    if (parsed.problem) throw new BankFileError(`Line ${record.line}: "${raw}" in column ${column + 1} ${parsed.problem}.`);
    if (parsed.currency) cellSays = { raw, column, currency: parsed.currency };
    cellCurrency = parsed.currency ?? currencyOfHeader(header?.cells[column]);
    return parsed.value!;
  };
  const withCurrency = (result: { amount: string; currency?: string; turned?: string }) => {
    // The currency written beside the amount is the amount's: a column or header saying another is a contradiction, not a default.
    const others: [string | undefined, string][] = [
      [result.currency, columnName(header, cellSays?.column ?? 0)],
      [rowCurrency, columnName(header, layout.currency ?? 0)],
      [currencyOfHeader(header?.cells[cellSays?.column ?? -1]), `the header of ${columnName(header, cellSays?.column ?? 0)}`],
    ];
    const clash = cellSays && others.find(([c]) => c !== undefined && c !== cellSays!.currency);
    if (cellSays && clash) {
      throw new BankFileError(`Line ${record.line}: "${cellSays.raw}" is in ${cellSays.currency}, but ${clash[1]} says ${clash[0]}: ` +
        "the file contradicts itself about the row's currency; correct it, or export the file again.");
    }
    const currency = result.currency ?? rowCurrency ?? cellCurrency;
    return { ...result, ...(currency ? { currency } : {}) };
  };
  const result = amountIn(record, layout, sides, read);
  // A file that writes money out positive (a card issuer's side) is turned to the account's side.
  return withCurrency(moneyOut === "positive" ? { ...result, amount: negate(result.amount) } : result);
}

function amountIn(record: CsvRecord, layout: CsvLayout, sides: SplitSides | undefined, read: (column: number) => string): { amount: string; currency?: string; turned?: string } {
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
    // DR: money out. A negative amount beside DR is a reversal, money in (as in a debit column);
    // amounts signed like the indicator were refused (checkIndicated).
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

/** A cell that reads as a zero amount ("0.00", "0", "-0.00", "0,00"); a cell that is not an amount is not zero. */
const isZeroCell = (text: string) => amountShape(text)?.zero === true;

const columnName = (header: CsvRecord | undefined, column: number) => {
  const name = header?.cells[column]?.trim();
  return name ? `column ${column + 1} ("${name}")` : `column ${column + 1}`;
};

const amountColumns = (layout: CsvLayout) =>
  layout.amount.kind === "split" ? [layout.amount.debit, layout.amount.credit] : layout.amount.columns;

/**
 * Each amount column's decimal mark, settled by the whole column: a cell only one mark reads
 * (12,50; 1,234.56) settles it; a column whose cells read either way (1,234) takes the mark of
 * the file's other amount columns; with none, it is refused, never guessed per cell. `--decimal`
 * says it for every column.
 */
function decimalMarks(layout: CsvLayout, header: CsvRecord | undefined, data: CsvRecord[], given: DecimalMark | undefined): Map<number, DecimalMark> {
  const marks = new Map<number, DecimalMark>();
  const open: { column: number; example: { line: number; text: string } }[] = [];
  for (const column of amountColumns(layout)) {
    if (given) { marks.set(column, given); continue; }
    const seen: Partial<Record<DecimalMark | "either", { line: number; text: string }>> = {};
    for (const r of data) {
      const text = cellText(r, column);
      const hint = text === "" ? undefined : decimalHint(text);
      if (hint && !seen[hint]) seen[hint] = { line: r.line, text };
    }
    if (seen.comma && seen.point) {
      throw new BankFileError(`${columnName(header, column)} writes amounts with a decimal comma ("${seen.comma.text}", line ${seen.comma.line}) ` +
        `and with a decimal point ("${seen.point.text}", line ${seen.point.line}): correct the file, or give --decimal comma or --decimal point ` +
        `to say which it uses (the lines in the other are then refused by name).`);
    }
    if (seen.comma || seen.point) marks.set(column, seen.comma ? "comma" : "point");
    else if (seen.either) open.push({ column, example: seen.either });
    else marks.set(column, "point");
  }
  const settled = new Set([...marks.values()]);
  for (const { column, example } of open) {
    if (settled.size === 1 && !given) { marks.set(column, [...settled][0]); continue; }
    const sep = example.text.includes(",") ? "," : ".";
    throw new BankFileError(`Line ${example.line}: "${example.text}" in ${columnName(header, column)} reads two ways (the "${sep}" a decimal mark or a thousands ` +
      `separator) and no amount of the file settles which. Give --decimal point (1,234.56) or --decimal comma (1.234,56).`);
  }
  return marks;
}

/**
 * An amount beside a DR/CR indicator must be unsigned: the indicator gives the side, and a negative
 * amount beside DR now and then is a reversal (money in). Amounts already signed the way the
 * indicator says (every DR row negative) are refused: the indicator would turn every debit over.
 */
function checkIndicated(layout: CsvLayout, header: CsvRecord | undefined, data: CsvRecord[]): void {
  if (layout.amount.kind !== "indicated") return;
  const signed = indicatorAlreadySigned(data, layout.amount.columns, layout.amount.indicator);
  if (!signed) return;
  throw new BankFileError(`The amounts in ${layout.amount.columns.map((c) => columnName(header, c)).join(" and ")} are already signed ` +
    `(${signed}): the debit/credit indicator would turn them over. Drop indicator=COL and read them as signed: ` +
    `--map date=COL,description=COL,amount=${layout.amount.columns.map((c) => c + 1).join("+")}.`);
}

/** Debit/credit columns, a DR/CR indicator, or DEBIT/CREDIT words agreeing with every sign: the file says each row's side itself. */
const sidesSaid = (layout: CsvLayout) => layout.amount.kind !== "signed" || layout.amount.confirmedBy !== undefined;

/** `--money-out` says how one signed column writes money out; a file that says each row's side needs no saying. */
function checkMoneyOutOption(layout: CsvLayout, header: CsvRecord | undefined, moneyOut: MoneyOut | undefined): void {
  if (moneyOut === undefined || !sidesSaid(layout)) return;
  const by = layout.amount.kind === "split" ? "debit and credit columns"
    : layout.amount.kind === "indicated" ? "DR/CR indicator" : `${columnName(header, layout.amount.confirmedBy!)}, whose DEBIT/CREDIT words agree with every sign,`;
  throw new BankFileError(`--money-out applies to a single signed amount column; this file's ${by} already say which rows are money out. Leave --money-out out.`);
}

/**
 * One signed column, nothing else saying the sides: signs the reader cannot check are not taken on trust.
 * - Card issuers' exports often write purchases positive (the issuer's side: the holder owes more).
 *   Into a credit card account, mostly positive amounts are refused until `--money-out` says which
 *   way they are written: read as written, every purchase would be booked as a payment.
 * - A saved `--money-out positive` meeting a file whose amounts are mostly negative (another
 *   export, written from the holder's side) is refused rather than turned over.
 * - A `--map …,amount=COL` with no negative amount may be unsigned withdrawals: refused unless
 *   `--money-out` says the signs are as written.
 */
function checkSigns(layout: CsvLayout, header: CsvRecord | undefined, rows: StatementRow[], options: CsvOptions): void {
  if (sidesSaid(layout) || layout.amount.kind !== "signed") return;
  const columns = layout.amount.columns.map((c) => columnName(header, c)).join(" and ");
  // As written in the file: a saved --money-out positive has turned them over already.
  const asWritten = (r: StatementRow) => (options.moneyOut === "positive" ? !r.amount.startsWith("-") : r.amount.startsWith("-"));
  const negative = rows.filter(asWritten).length;
  const positive = rows.length - negative;
  // The card's own payment written positive like the purchases: the amounts are unsigned, and no sign flag can part them.
  const payment = options.accountType === "credit_card" && options.moneyOut !== "negative"
    ? rows.find((r) => !asWritten(r) && isCardPayment(r.description)) : undefined;
  if (payment && negative === 0) {
    throw new BankFileError(`Every amount in ${columns} is positive, the card's payment on line ${payment.line} ("${payment.description}") too: ` +
      `the amounts are unsigned, and --money-out cannot tell purchases from payments. Give --map date=COL,description=COL,debit=COL,credit=COL ` +
      `if purchases and payments have columns of their own, or --map …,amount=COL,indicator=COL if a column says which each row is.`);
  }
  // Any positive amount: a purchase the issuer's way, or a payment the holder's way; the file cannot say which (a month may hold one of each).
  if (options.moneyOut === undefined && options.accountType === "credit_card" && positive > 0) {
    throw new BankFileError(`The payment account is a credit card and ${positive} of the ${rows.length} amounts in ${columns} are positive: ` +
      `card exports often write purchases as positive amounts. If the positive amounts are purchases, give --money-out positive ` +
      `(they are booked as money out); if they are payments and refunds, give --money-out negative (read as written).`);
  }
  // The card's own payment settles which side the file is written from; else the majority, a tie counting against the saved flag.
  const paymentSide = rows.find((r) => isCardPayment(r.description));
  const holderSide = paymentSide ? !asWritten(paymentSide) : negative * 2 >= rows.length;
  if (options.moneyOut === "positive" && options.fromSavedLayout && holderSide) {
    throw new BankFileError(`${negative} of the ${rows.length} amounts in ${columns} are negative as written, but the saved --money-out positive ` +
      `would turn them all over: this file looks written from the account holder's side. Give --money-out negative to read it as written, ` +
      `or --money-out positive to turn it over all the same.`);
  }
  if (options.map && options.moneyOut === undefined && negative === 0) {
    throw new BankFileError(`${columns}, mapped as the signed amount, holds no negative amount: every row would be money in. If they are ` +
      `unsigned withdrawals and deposits, map debit=COL,credit=COL or add indicator=COL; if every row is money in, give --money-out negative ` +
      `(read as written).`);
  }
}

/** A description is never a column of dates or amounts (a "Value Date" column would give every merchant a date). */
function checkDescription(layout: CsvLayout, header: CsvRecord | undefined, data: CsvRecord[]): void {
  for (const column of layout.description) {
    const cells = data.map((r) => cellText(r, column)).filter((c) => c !== "");
    if (cells.length > 0 && cells.every((c) => isDateShaped(c) || amountShape(c) !== undefined)) {
      const what = cells.every(isDateShaped) ? "dates" : cells.every((c) => amountShape(c) !== undefined) ? "amounts" : "dates and amounts";
      throw new BankFileError(`${columnName(header, column)} holds ${what}, not descriptions: ` +
        `give --map date=COL,description=COL,amount=COL naming the column of payees or details as description.`);
    }
  }
}

/** What a row with an empty description (and nothing to describe it by) is described as. */
export const NO_DESCRIPTION = "(no description)";

/** Lines named in a warning; the rest are counted. */
const LINES_NAMED = 20;
const lineList = (lines: number[]) =>
  `Line${lines.length > 1 ? "s" : ""} ${lines.slice(0, LINES_NAMED).join(", ")}${lines.length > LINES_NAMED ? ` and ${lines.length - LINES_NAMED} more` : ""}`;

/** A header naming a column of notes or categories, which may describe a row whose description is empty. */
const FALLBACK_HEADER = /memo|note|comment|remark|category|categorie|kategorie|purpose|details|text|payee|reference/i;

/**
 * The columns that describe a row whose description is empty: the layout's memo, then text columns
 * the header names as notes or categories (not the date, amounts, currency or description itself).
 */
function descriptionFallbacks(layout: CsvLayout, header: CsvRecord | undefined, data: CsvRecord[]): number[] {
  const used = new Set([layout.date, ...layout.description, ...amountColumns(layout), ...(layout.amount.kind === "indicated" ? [layout.amount.indicator] : []),
    ...(layout.currency !== undefined ? [layout.currency] : [])]);
  const text = (c: number) => {
    const cells = data.map((r) => cellText(r, c)).filter((v) => v !== "");
    return cells.length > 0 && !cells.every((v) => isDateShaped(v) || amountShape(v) !== undefined);
  };
  const named = (header?.cells ?? []).map((n, c) => (FALLBACK_HEADER.test(n.trim()) && !used.has(c) && c !== layout.memo && text(c) ? c : -1)).filter((c) => c >= 0);
  return [...(layout.memo !== undefined ? [layout.memo] : []), ...named];
}

/**
 * Exports that hold several of the holder's own accounts, and the column naming each row's: RBC's
 * (a login's accounts), Rabobank's IBAN/BBAN, KBC's Rekeningnummer, Sparkasse's Auftragskonto,
 * Commerzbank's Auftraggeberkonto, bunq's Rekening or Account, and budgeting apps' Account (YNAB,
 * Monefy, Mint's Account Name). "Account number" alone is not one: N26's is the payee's.
 */
const OWN_ACCOUNT_HEADER = /^(?:iban\/bban|rekeningnummer|rekening|auftragskonto|auftraggeberkonto|account|account name)$/i;

function ownAccountColumn(header: CsvRecord | undefined, data: CsvRecord[], preset: string | undefined): number {
  const names = header?.cells.map((c) => c.trim()) ?? [];
  if (preset?.toLowerCase() === "rbc" || (/^account type$/i.test(names[0] ?? "") && /^account number$/i.test(names[1] ?? ""))) return 1;
  // A preamble line taken for the header ("Account,Chequing 1234") names no column of accounts: its cells are dates or amounts.
  return names.findIndex((n, c) => OWN_ACCOUNT_HEADER.test(n) && !data.some((r) => isDateShaped(cellText(r, c)) || amountShape(cellText(r, c)) !== undefined));
}

/** One account's rows of an export holding several (ownAccountColumn), as chooseAccount says. */
function oneAccountsRows(header: CsvRecord | undefined, data: CsvRecord[], options: CsvOptions): { data: CsvRecord[]; warnings: string[] } {
  const column = ownAccountColumn(header, data, options.preset);
  if (column < 0) {
    if (options.account !== undefined) {
      throw new BankFileError("--account: the file has no column naming the account of each row (such as RBC's Account Number or Rabobank's IBAN/BBAN): " +
        "it holds one account's transactions. Leave --account out.");
    }
    return { data, warnings: [] };
  }
  // Told apart by letters and digits: a stray quote or space (Rabobank's second line) is the same account.
  const idOf = (r: CsvRecord) => cellText(r, column).replace(/^["'\s]+|["'\s]+$/g, "");
  const accounts = tallyAccounts(data, (r) => {
    const id = idOf(r);
    return { key: accountKey(id), id, label: id || "rows with no account", suggest: /\s/.test(id) ? JSON.stringify(id) : id || "NUMBER" };
  }, () => 1);
  const chosen = chooseAccount("CSV", accounts, options);
  return { data: chosen.key === undefined ? data : data.filter((r) => accountKey(idOf(r)) === chosen.key), warnings: chosen.warnings };
}

/** The CSV options of BankFileOptions (`--delimiter`, `--decimal`), checked. */
/** The CSV options of BankFileOptions (`--delimiter`, `--decimal`, `--money-out`, `--account`, the payment account's type and last four), checked. */
export function csvReadOptions(options: {
  delimiter?: string; decimal?: string; moneyOut?: string; accountType?: string; account?: string; lastFour?: string; fromSavedLayout?: boolean;
}): Pick<CsvOptions, "delimiter" | "decimal" | "moneyOut" | "accountType" | "account" | "lastFour" | "fromSavedLayout"> {
  parseDecimalOption(options.decimal);
  const moneyOut = parseMoneyOutOption(options.moneyOut);
  return {
    ...(options.delimiter !== undefined ? { delimiter: parseDelimiterOption(options.delimiter) } : {}),
    ...(options.decimal !== undefined ? { decimal: options.decimal } : {}),
    ...(moneyOut ? { moneyOut } : {}),
    ...(options.accountType !== undefined ? { accountType: options.accountType } : {}),
    ...(options.account !== undefined ? { account: options.account } : {}),
    ...(options.lastFour !== undefined ? { lastFour: options.lastFour } : {}),
    ...(options.fromSavedLayout ? { fromSavedLayout: true } : {}),
  };
}
