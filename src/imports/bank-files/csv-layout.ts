import { parseAmount } from "./amounts.js";
import { isDateShaped, type DateOrder } from "./dates.js";
import { BankFileError } from "./row.js";

/** Where a CSV file keeps each field of a statement row. Columns are 0-based here, 1-based for people. */
export interface CsvLayout {
  date: number;
  /** Joined with a space, empty parts left out (RBC's Description 1 and 2). */
  description: number[];
  /**
   * `signed`: the first filled of these columns, signed as written (RBC: CAD$ or USD$).
   * `split`: unsigned debit (money out) and credit (money in) columns, one filled per row (TD, CIBC).
   */
  amount: { kind: "signed"; columns: number[] } | { kind: "split"; debit: number; credit: number };
  memo?: number;
  reference?: number;
  /** The date orders the bank writes (a preset's); detection picks among them. */
  dateOrders?: DateOrder[];
}

export type PresetName = "rbc" | "td" | "cibc";

/** The layouts of the sample exports (data/samples/bank/README.md). Extra columns (account, balance, card) are ignored. */
export const PRESETS: Record<PresetName, CsvLayout> = {
  // Account Type, Account Number, Transaction Date, Cheque Number, Description 1, Description 2, CAD$, USD$
  rbc: { date: 2, description: [4, 5], amount: { kind: "signed", columns: [6, 7] }, dateOrders: ["MDY"] },
  // date, description, withdrawal, deposit, balance
  td: { date: 0, description: [1], amount: { kind: "split", debit: 2, credit: 3 }, dateOrders: ["MDY"] },
  // date, description, debit, credit, masked card number; ISO dates, MM/DD/YYYY after a re-save
  cibc: { date: 0, description: [1], amount: { kind: "split", debit: 2, credit: 3 }, dateOrders: ["YMD", "MDY"] },
};

export function presetLayout(name: string): CsvLayout {
  const preset = PRESETS[name.trim().toLowerCase() as PresetName];
  if (!preset) throw new BankFileError(`--preset must be one of ${Object.keys(PRESETS).join(", ")} (got "${name}").`);
  return preset;
}

export interface CsvRecord { line: number; cells: string[] }

/**
 * Splits the records into the header row (if any) and the data rows. Leading rows with neither a
 * date nor an amount are a preamble or the header (the last of them, when it has several cells):
 * a data row whose date is broken still has its amount, so it is kept and its error reported.
 */
export function splitHeader(records: CsvRecord[]): { header?: CsvRecord; data: CsvRecord[] } {
  let first = 0;
  while (first < records.length && !records[first].cells.some((c) => isDateShaped(c) || isAmountCell(c))) first++;
  const candidate = first > 0 ? records[first - 1] : undefined;
  return { header: candidate && candidate.cells.length > 1 ? candidate : undefined, data: records.slice(first) };
}

const isAmountCell = (cell: string) => cell.trim() !== "" && parseAmount(cell).value !== undefined;
const isNegativeCell = (cell: string) => (parseAmount(cell).value ?? "").startsWith("-");
const cell = (r: CsvRecord, column: number) => (r.cells[column] ?? "").trim();

/**
 * `--map date=COL,description=COL,amount=COL` or `…,debit=COL,credit=COL`, optionally `memo=COL`
 * and `reference=COL`. COL is a 1-based column number or a header name; `A+B` joins two columns
 * (description) or takes the first filled of them (amount).
 */
export function mapLayout(spec: string, header: CsvRecord | undefined): CsvLayout {
  const fields = new Map<string, number[]>();
  for (const part of spec.split(",")) {
    const eq = part.indexOf("=");
    const key = part.slice(0, eq).trim().toLowerCase();
    if (eq < 0 || !["date", "description", "amount", "debit", "credit", "memo", "reference"].includes(key)) {
      throw new BankFileError(`--map: "${part.trim()}" is not FIELD=COL with FIELD one of date, description, amount, debit, credit, memo, reference.`);
    }
    if (fields.has(key)) throw new BankFileError(`--map names ${key} twice.`);
    fields.set(key, part.slice(eq + 1).split("+").map((c) => mapColumn(c, header)));
  }
  const one = (key: string) => {
    const columns = fields.get(key);
    if (columns && columns.length > 1) throw new BankFileError(`--map: ${key} takes one column.`);
    return columns?.[0];
  };
  const date = one("date");
  const description = fields.get("description");
  const amount = fields.get("amount");
  const [debit, credit] = [one("debit"), one("credit")];
  if (date === undefined || !description || (!amount && (debit === undefined || credit === undefined)) || (amount && (debit !== undefined || credit !== undefined))) {
    throw new BankFileError("--map needs date, description and either amount or both debit and credit: date=COL,description=COL,amount=COL or date=COL,description=COL,debit=COL,credit=COL.");
  }
  return {
    date, description,
    amount: amount ? { kind: "signed", columns: amount } : { kind: "split", debit: debit!, credit: credit! },
    memo: one("memo"), reference: one("reference"),
  };
}

function mapColumn(text: string, header: CsvRecord | undefined): number {
  const name = text.trim();
  if (/^\d+$/.test(name)) {
    if (Number(name) < 1) throw new BankFileError(`--map: column numbers start at 1 (got ${name}).`);
    return Number(name) - 1;
  }
  const index = header?.cells.findIndex((c) => c.trim().toLowerCase() === name.toLowerCase()) ?? -1;
  if (index < 0) {
    throw new BankFileError(header
      ? `--map: no column is named "${name}"; the header row has ${header.cells.map((c) => `"${c.trim()}"`).join(", ")}.`
      : `--map: no column is named "${name}": the file has no header row, so give column numbers (1 = the first).`);
  }
  return index;
}

/** Per-column facts over the data rows, which detection reads. */
interface ColumnFacts { filled: number; dates: number; amounts: number; negatives: number; distinct: number }

function columnFacts(data: CsvRecord[]): ColumnFacts[] {
  const width = Math.max(0, ...data.map((r) => r.cells.length));
  return Array.from({ length: width }, (_, c) => {
    const values = data.map((r) => cell(r, c)).filter((v) => v !== "");
    return {
      filled: values.length,
      dates: values.filter(isDateShaped).length,
      amounts: values.filter(isAmountCell).length,
      negatives: values.filter(isNegativeCell).length,
      distinct: new Set(values).size,
    };
  });
}

const HEADER_NAMES = {
  date: /date/i,
  description: /desc|payee|merchant|narrative|details|libell|^name$|^transaction$/i,
  debit: /debit|withdraw|retrait|paid out|money out|^out$/i,
  credit: /credit|deposit|d[ée]p[oô]t|paid in|money in|^in$/i,
  signed: /amount|montant|^[A-Z]{3}\s?\$$|^\$$/i,
};

/**
 * The layout read from the file itself. A header row's names are used when they say enough (RBC);
 * otherwise the content decides (TD, CIBC, which have none):
 * - date: the column whose cells are dates (the first such, a "transaction" date before a posting date);
 * - amount: two neighbouring unsigned number columns with exactly one filled per row are debit and
 *   credit (a running balance is filled on every row, so it never pairs); else the first number
 *   column with negative values is a signed amount (with neighbours filled where it is empty: one
 *   column per currency); else the first number column filled on every row;
 * - description: of the remaining text columns, the one with the most different values (an
 *   account type or a masked card number repeats).
 */
export function detectLayout(header: CsvRecord | undefined, data: CsvRecord[]): { layout: CsvLayout; warnings: string[] } {
  const facts = columnFacts(data);
  const warnings: string[] = [];
  const names = header?.cells.map((c) => c.trim()) ?? [];
  const named = (re: RegExp, exclude: number[] = []) =>
    names.map((n, i) => (re.test(n) && !exclude.includes(i) ? i : -1)).filter((i) => i >= 0);

  const dateColumns = facts.map((f, i) => (f.filled > 0 && f.dates * 2 > data.length ? i : -1)).filter((i) => i >= 0);
  if (dateColumns.length === 0) throw new BankFileError("No column holds dates: give --map date=COL,description=COL,amount=COL (or a --preset).");
  const date = dateColumns.find((i) => /trans/i.test(names[i] ?? "")) ?? dateColumns[0];

  const numberColumn = (i: number) => i !== date && facts[i].filled > 0 && facts[i].amounts === facts[i].filled;
  let amount: CsvLayout["amount"] | undefined;
  const [namedDebit, namedCredit] = [named(HEADER_NAMES.debit, [date]), named(HEADER_NAMES.credit, [date])];
  const namedSigned = named(HEADER_NAMES.signed, [date]);
  // One "Debit/Credit" column is a DR/CR indicator, not a pair of amount columns.
  if (namedDebit.length === 1 && namedCredit.length === 1 && namedDebit[0] !== namedCredit[0]) amount = { kind: "split", debit: namedDebit[0], credit: namedCredit[0] };
  else if (namedSigned.length > 0) amount = { kind: "signed", columns: namedSigned };
  else amount = detectAmount(data, facts, numberColumn, warnings);
  const amountColumns = amount.kind === "signed" ? amount.columns : [amount.debit, amount.credit];

  let description = named(HEADER_NAMES.description, [date, ...amountColumns]);
  if (description.length === 0) {
    const text = facts.map((f, i) => i).filter((i) => i !== date && !amountColumns.includes(i) && !numberColumn(i) && facts[i].filled > 0);
    const best = text.reduce<number | undefined>((b, i) => (b === undefined || facts[i].distinct > facts[b].distinct ? i : b), undefined);
    if (best === undefined) throw new BankFileError("No column holds descriptions: give --map date=COL,description=COL,amount=COL (or a --preset).");
    description = [best];
  }
  return { layout: { date, description, amount }, warnings };
}

function detectAmount(data: CsvRecord[], facts: ColumnFacts[], numberColumn: (i: number) => boolean, warnings: string[]): CsvLayout["amount"] {
  for (let i = 0; i + 1 < facts.length; i++) {
    if (!numberColumn(i) || !numberColumn(i + 1) || facts[i].negatives + facts[i + 1].negatives > 0) continue;
    const exactlyOne = data.every((r) => (cell(r, i) !== "") !== (cell(r, i + 1) !== ""));
    if (exactlyOne) return { kind: "split", debit: i, credit: i + 1 };
  }
  const signed = facts.findIndex((f, i) => numberColumn(i) && f.negatives > 0);
  if (signed >= 0) {
    const columns = [signed];
    // One column per currency: a neighbour filled exactly where this one is empty.
    for (let n = signed + 1; n < facts.length && numberColumn(n) && data.every((r) => !(cell(r, signed) !== "" && cell(r, n) !== "")); n++) {
      columns.push(n);
    }
    return { kind: "signed", columns };
  }
  const always = facts.findIndex((f, i) => numberColumn(i) && f.filled === data.length);
  if (always >= 0) {
    warnings.push(`Column ${always + 1} has no negative amounts: every row is read as money in. If the file has withdrawal and deposit columns, give --map.`);
    return { kind: "signed", columns: [always] };
  }
  throw new BankFileError("Could not tell which columns hold the amounts: give --map …,amount=COL or …,debit=COL,credit=COL (or a --preset).");
}

/** One line telling the operator how the file was read, so a wrong guess is seen before importing. */
export function describeLayout(layout: CsvLayout, header: CsvRecord | undefined): string {
  const name = (i: number) => {
    const label = header?.cells[i]?.trim();
    return label ? `"${label}" (column ${i + 1})` : `column ${i + 1}`;
  };
  const amount = layout.amount.kind === "signed"
    ? `amount ${layout.amount.columns.map(name).join(" or ")} (signed)`
    : `debit ${name(layout.amount.debit)} (money out), credit ${name(layout.amount.credit)} (money in)`;
  return [
    header ? `header row on line ${header.line}` : "no header row",
    `date ${name(layout.date)}`,
    `description ${layout.description.map(name).join(" + ")}`,
    amount,
    ...(layout.memo !== undefined ? [`memo ${name(layout.memo)}`] : []),
    ...(layout.reference !== undefined ? [`reference ${name(layout.reference)}`] : []),
  ].join("; ");
}
