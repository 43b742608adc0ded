import { parse } from "csv-parse/sync";
import { absolute, isZero, negate, parseAmount } from "./amounts.js";
import { detectLayout, describeLayout, mapLayout, presetLayout, splitHeader, type CsvLayout, type CsvRecord } from "./csv-layout.js";
import { DATE_FORMAT_LABEL, detectDateOrder, toIsoDate, type DateOrder } from "./dates.js";
import { eventTypeFor } from "./event-type.js";
import { BankFileError, type StatementRow } from "./row.js";

export interface CsvOptions { preset?: string; map?: string; dateOrder?: DateOrder }

/** A bank CSV export's rows, read by a preset, a `--map` or the layout detected from the content. */
export function readCsvStatement(text: string, options: CsvOptions): { rows: StatementRow[]; warnings: string[]; layout: string } {
  if (options.preset && options.map) throw new BankFileError("Give --preset or --map, not both.");
  const { header, data } = splitHeader(records(text));
  if (data.length === 0) throw new BankFileError("The file holds no transactions (no line has a date or an amount).");
  const warnings: string[] = [];
  let layout: CsvLayout;
  if (options.preset) layout = presetLayout(options.preset);
  else if (options.map) layout = mapLayout(options.map, header);
  else {
    const detected = detectLayout(header, data);
    layout = detected.layout;
    warnings.push(...detected.warnings);
  }

  const dates = data.map((r) => ({ line: r.line, text: (r.cells[layout.date] ?? "").trim() }));
  const order = options.dateOrder ?? detectDateOrder(dates, layout.dateOrders);
  const rows: StatementRow[] = [];
  data.forEach((record, i) => {
    const transactionDate = toIsoDate(dates[i], order);
    const amount = amountOf(record, layout);
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
      ...(memo ? { memo } : {}), ...(reference ? { reference } : {}),
    });
  });
  warnings.push(...mixedAccounts(header, data, options.preset));
  const source = options.preset ? `preset ${options.preset.toLowerCase()}` : options.map ? "--map" : "detected";
  return { rows, warnings, layout: `CSV (${source}): ${describeLayout(layout, header)}; dates ${DATE_FORMAT_LABEL[order]}` };
}

function records(text: string): CsvRecord[] {
  try {
    const parsed = parse(text, {
      relax_column_count: true, // RBC rows end with one or two empty fields
      relax_quotes: true, // a quote inside an unquoted field (12" PIZZA) is text
      skip_empty_lines: true,
      skip_records_with_empty_values: true,
      info: true,
    }) as unknown as { record: string[]; info: { lines: number } }[];
    return parsed.map((p) => ({ line: p.info.lines, cells: p.record }));
  } catch (e) {
    const err = e as { message: string; lines?: number };
    throw new BankFileError(`${err.lines ? `Line ${err.lines}: ` : ""}the file is not valid CSV (${err.message}).`);
  }
}

const cellText = (r: CsvRecord, column: number) => (r.cells[column] ?? "").trim();

/** Signed from the payment account's side: a debit (withdrawal, card purchase) is money out. */
function amountOf(record: CsvRecord, layout: CsvLayout): string {
  const read = (column: number) => {
    const raw = cellText(record, column);
    const parsed = parseAmount(raw);
    if (parsed.problem) throw new BankFileError(`Line ${record.line}: "${raw}" in column ${column + 1} ${parsed.problem}.`);
    return parsed.value!;
  };
  if (layout.amount.kind === "signed") {
    const column = layout.amount.columns.find((c) => cellText(record, c) !== "");
    if (column === undefined) throw new BankFileError(`Line ${record.line}: no amount.`);
    return read(column);
  }
  const { debit, credit } = layout.amount;
  const [hasDebit, hasCredit] = [cellText(record, debit) !== "", cellText(record, credit) !== ""];
  if (hasDebit && hasCredit) {
    throw new BankFileError(`Line ${record.line}: both a debit (column ${debit + 1}) and a credit (column ${credit + 1}); a row has one of them.`);
  }
  if (!hasDebit && !hasCredit) throw new BankFileError(`Line ${record.line}: no amount (columns ${debit + 1} and ${credit + 1} are empty).`);
  // Debit and credit columns are unsigned; a bank that signs them anyway still means out and in.
  return hasDebit ? negate(absolute(read(debit))) : absolute(read(credit));
}

/** RBC exports every account of a login in one file: all its rows go to the one payment account, so say so. */
function mixedAccounts(header: CsvRecord | undefined, data: CsvRecord[], preset: string | undefined): string[] {
  const column = preset?.toLowerCase() === "rbc" ? 1 : header?.cells.findIndex((c) => /^account number$/i.test(c.trim())) ?? -1;
  if (column < 0) return [];
  const accounts = [...new Set(data.map((r) => cellText(r, column)).filter((a) => a !== ""))];
  return accounts.length > 1
    ? [`The file holds rows of ${accounts.length} accounts (${accounts.join(", ")}); all of them go to the one payment account. Export one account per file to keep them apart.`]
    : [];
}
