import { amountShape } from "./amounts.js";
import { isDateShaped, type DateOrder } from "./dates.js";
import { BankFileError } from "./row.js";

/** Where a CSV file keeps each field of a statement row. Columns are 0-based here, 1-based for people. */
export interface CsvLayout {
  date: number;
  /** Joined with a space, empty parts left out (RBC's Description 1 and 2). */
  description: number[];
  /**
   * `signed`: the first filled of these columns, signed as written (RBC: CAD$ or USD$).
   * `signed` may name each column's currency (RBC: CAD$ is CAD, USD$ is USD), and the DEBIT/CREDIT
   * column whose words agree with every sign (Chase's Details): the side is then the file's, twice said.
   * `split`: unsigned debit (money out) and credit (money in) columns, one filled per row (TD, CIBC);
   * a zero counts as empty; a negative amount turns a row's side over (a refund in the debit column
   * is money in), unless every amount of the column is negative (the bank's way of writing it).
   * `indicated`: an unsigned amount (first filled of these columns) that a DR/CR indicator column
   * says is money out (DR, D, Debit) or in (CR, C, Credit).
   */
  amount:
    | { kind: "signed"; columns: number[]; currencies?: (string | undefined)[]; confirmedBy?: number }
    | { kind: "split"; debit: number; credit: number }
    | { kind: "indicated"; columns: number[]; indicator: number };
  memo?: number;
  reference?: number;
  /** A column of currency codes (EUR, CAD): each row's amount is in its row's code. */
  currency?: number;
  /** The date orders the bank writes (a preset's); detection picks among them. */
  dateOrders?: DateOrder[];
}

export type PresetName = "rbc" | "td" | "cibc";

/** The layouts of the sample exports (data/samples/bank/README.md). Extra columns (account, balance, card) are ignored. */
export const PRESETS: Record<PresetName, CsvLayout> = {
  // Account Type, Account Number, Transaction Date, Cheque Number, Description 1, Description 2, CAD$, USD$
  rbc: { date: 2, description: [4, 5], amount: { kind: "signed", columns: [6, 7], currencies: ["CAD", "USD"] }, dateOrders: ["MDY"] },
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
  // A preamble holding amounts (DBS's "Available Balance", a French bank's "Balance at end of
  // period") above a header naming a date column, followed by a dated row: the header is that row.
  const labelled = records.slice(0, 30).findIndex((r, i) => r.cells.length > 1 && r.cells.some((c) => HEADER_DATE.test(c.trim()))
    && !r.cells.some((c) => isDateShaped(c) || isAmountCell(c)) && (records[i + 1]?.cells.some(isDateShaped) ?? false));
  if (labelled >= 0 && records.slice(0, labelled).some((r) => r.cells.some(isAmountCell))) {
    return { header: records[labelled], data: records.slice(labelled + 1) };
  }
  let first = 0;
  while (first < records.length && !records[first].cells.some((c) => isDateShaped(c) || isAmountCell(c))) first++;
  const candidate = first > 0 ? records[first - 1] : undefined;
  return { header: candidate && candidate.cells.length > 1 ? candidate : undefined, data: records.slice(first) };
}

const HEADER_DATE = /^(?:transaction\s*|posting\s*|booking\s*|value\s*)?date$|^date\b|^datum$|^buchungstag$|^fecha$|d[aá]tum/i;
const isAmountCell = (cell: string) => cell.trim() !== "" && amountShape(cell) !== undefined;
const isNegativeCell = (cell: string) => amountShape(cell)?.negative === true;
const cell = (r: CsvRecord, column: number) => (r.cells[column] ?? "").trim();

/**
 * `--map date=COL,description=COL,amount=COL` or `…,debit=COL,credit=COL`, optionally `memo=COL`,
 * `reference=COL` and, beside an unsigned amount, `indicator=COL` (a DR/CR column). COL is a
 * 1-based column number or a header name; `A+B` joins two columns (description) or takes the
 * first filled of them (amount). An amount column headed `CAD$`, `USD$`… is in that currency.
 */
export function mapLayout(spec: string, header: CsvRecord | undefined): CsvLayout {
  const keys = ["date", "description", "amount", "debit", "credit", "indicator", "memo", "reference", "currency"];
  const fields = new Map<string, number[]>();
  for (const part of spec.split(",")) {
    const eq = part.indexOf("=");
    const key = part.slice(0, eq).trim().toLowerCase();
    if (eq < 0 || !keys.includes(key)) {
      throw new BankFileError(`--map: "${part.trim()}" is not FIELD=COL with FIELD one of ${keys.join(", ")}.`);
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
  const [debit, credit, indicator] = [one("debit"), one("credit"), one("indicator")];
  if (date === undefined || !description || (!amount && (debit === undefined || credit === undefined)) || (amount && (debit !== undefined || credit !== undefined))) {
    throw new BankFileError("--map needs date, description and either amount or both debit and credit: date=COL,description=COL,amount=COL or date=COL,description=COL,debit=COL,credit=COL.");
  }
  if (indicator !== undefined && !amount) throw new BankFileError("--map: indicator=COL goes with amount=COL (the amount it says is a debit or a credit).");
  const currencies = amount?.map((c) => currencyOfHeader(header?.cells[c]));
  return {
    date, description,
    amount: !amount ? { kind: "split", debit: debit!, credit: credit! }
      : indicator !== undefined ? { kind: "indicated", columns: amount, indicator }
      : { kind: "signed", columns: amount, ...(currencies?.some((c) => c) ? { currencies } : {}) },
    memo: one("memo"), reference: one("reference"), currency: one("currency"),
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

/** Per-column facts over the data rows, which detection reads. A zero amount ("0.00") is no amount. */
interface ColumnFacts {
  filled: number; dates: number; amounts: number; distinct: number;
  /** Non-zero amounts, and how many of them are negative. */
  present: number; negatives: number;
  /** Cells that are a debit/credit indicator word (DR, CR, D, C, Debit, Credit), and which way. */
  indicators: number; debitWords: number; creditWords: number;
}

/** The most cells of any row: folded, as a file's rows are more than a call takes arguments. */
function widest(data: CsvRecord[]): number {
  let width = 0;
  for (const r of data) width = Math.max(width, r.cells.length);
  return width;
}

/** Facts for every column of the rows or the header, the wider (a header may name columns no row fills). */
function columnFacts(data: CsvRecord[], headerWidth: number): ColumnFacts[] {
  const width = Math.max(widest(data), headerWidth);
  return Array.from({ length: width }, (_, c) => {
    const values = data.map((r) => cell(r, c)).filter((v) => v !== "");
    const words = values.map(indicatorDirection);
    return {
      filled: values.length,
      dates: values.filter(isDateShaped).length,
      amounts: values.filter(isAmountCell).length,
      distinct: new Set(values).size,
      present: values.filter(isPresentAmount).length,
      negatives: values.filter(isNegativeCell).length,
      indicators: words.filter((w) => w !== undefined).length,
      debitWords: words.filter((w) => w === "out").length,
      creditWords: words.filter((w) => w === "in").length,
    };
  });
}

/** An amount that is not zero: "0.00" in the column a row does not use counts as empty. */
export const isPresentAmount = (cell: string) => {
  const shape = cell.trim() === "" ? undefined : amountShape(cell);
  return shape !== undefined && !shape.zero;
};

/**
 * Whether amounts beside an indicator column are signed already, the indicator's way: every DR row
 * negative (and no CR row negative). Then what is wrong is reading them by the indicator, which
 * would turn every debit into money in. Says how, or undefined when the amounts are unsigned
 * (a few negatives beside DR being reversals).
 */
export function indicatorAlreadySigned(data: CsvRecord[], columns: number[], indicator: number): string | undefined {
  let [debits, negativeDebits, negativeCredits] = [0, 0, 0];
  for (const r of data) {
    const amount = columns.map((c) => cell(r, c)).find((c) => c !== "");
    if (amount === undefined || !isPresentAmount(amount)) continue;
    const direction = indicatorDirection(cell(r, indicator));
    const negative = isNegativeCell(amount);
    if (direction === "out") { debits++; if (negative) negativeDebits++; } else if (direction === "in" && negative) negativeCredits++;
  }
  if (debits === 0 || negativeDebits < debits) return undefined;
  return `every one of the ${debits} debit rows is negative${negativeCredits ? `, and ${negativeCredits} credit rows too` : ""}`;
}

/** Every debit row's amount negative, no credit row's: signed as the indicator says. */
function signedLikeIndicator(data: CsvRecord[], columns: number[], indicator: number): boolean {
  let debits = 0;
  for (const r of data) {
    const amount = columns.map((c) => cell(r, c)).find((c) => c !== "");
    if (amount === undefined || !isPresentAmount(amount)) continue;
    const direction = indicatorDirection(cell(r, indicator));
    const negative = isNegativeCell(amount);
    if (direction === "out") { if (!negative) return false; debits++; } else if (direction === "in") { if (negative) return false; } else return false;
  }
  return debits > 0;
}

/** DR / D / Debit: money out of the account; CR / C / Credit: money in. Undefined: not an indicator. */
export function indicatorDirection(cell: string): "out" | "in" | undefined {
  const word = cell.trim().toLowerCase().replace(/\.$/, "");
  if (["dr", "d", "db", "debit", "débit"].includes(word)) return "out";
  if (["cr", "c", "credit", "crédit"].includes(word)) return "in";
  return undefined;
}

const HEADER_NAMES = {
  date: /date/i,
  description: /desc|payee|merchant|narrative|details|libell|^label$|^name$|^transaction$/i,
  debit: /debit|withdraw|retrait|paid out|money out|^out$|^outflow$/i,
  credit: /credit|deposit|d[ée]p[oô]t|paid in|money in|^in$|^inflow$/i,
  signed: /amount|montant|^[A-Z]{3}\s?\$$|^\$$/i,
  /** An amount in the currency the merchant charged (Viseca's OriginalAmount): never the account's amount, not even as a fallback. */
  foreign: /orig|foreign|exchange|instructed/i,
  /**
   * A column that says, per row, whether the amount beside it is a debit or a credit.
   * `\s*(?:\/\s*)?`, not `\s*\/?\s*`: the same names, without trying every split of a run of spaces.
   */
  indicator: /^(?:(?:dr|cr|d|c|debit|credit)\s*(?:\/|\bor\b|-|\|)\s*(?:dr|cr|d|c|debit|credit)|(?:dr|debit)\s*(?:\/\s*)?(?:cr|credit)\s*(?:indicator|flag))$/i,
  /**
   * "Indicator" or "Flag" alone names no debit/credit column by itself (YNAB's Flag holds colours):
   * such a column is an indicator only when every row holds a DR/CR/D/C/Debit/Credit word.
   */
  maybeIndicator: /^(?:(?:transaction\s*)?type|sign|dr\s*cr|indicator|flag)$/i,
};

/** `CAD$` → CAD, `Amount (EUR)` → EUR, `Amount EUR` → EUR: the currency of an amount column, when its header names it. */
export function currencyOfHeader(name: string | undefined): string | undefined {
  const text = (name ?? "").trim();
  // A header naming its currency is short; a long one is read no further (the patterns scan it whole).
  if (text.length > 64) return undefined;
  const m = /^([A-Z]{3})\s?\$$/i.exec(text) ?? /[([]\s*([A-Z]{3})\s*[)\]]$/.exec(text) ?? /^(?:amount|montant|betrag|importe|bedrag)\s+(?:in\s+)?([A-Z]{3})$/i.exec(text);
  return m ? m[1].toUpperCase() : undefined;
}

/** A header naming a column of currency codes. */
const CURRENCY_HEADER = /^(?:currency(?:\s*code)?|ccy|curr\.?|devise|w[äa]hrung|valuta|moneda)$/i;
export const isCurrencyCode = (cell: string) => /^[A-Z]{3}$/.test(cell.trim());

const HOW_TO_SAY = "Give --preset rbc|td|cibc, or --map date=COL,description=COL,debit=COL,credit=COL " +
  "(withdrawals or purchases, deposits or payments), or --map date=COL,description=COL,amount=COL (a signed amount, negative = money out).";
const cannotTell = (why: string, first?: string) =>
  new BankFileError(`Cannot tell money in from money out: ${why}. ${first ? `${first} Otherwise: ${HOW_TO_SAY.charAt(0).toLowerCase()}${HOW_TO_SAY.slice(1)}` : HOW_TO_SAY}`);

/**
 * The layout read from the file itself. A header row's names are used when they say enough (RBC);
 * otherwise the content decides (TD, CIBC, which have none). Money in and money out must be
 * established, never guessed: when they cannot be, the file is refused (give --preset or --map).
 * - date: the column whose cells are dates (the first such, a "transaction" date before a posting date);
 * - amount, by header names: Debit/Withdrawal and Credit/Deposit columns; an unsigned Amount with
 *   a DR/CR (D/C, Debit/Credit) indicator column that the header names; a signed Amount (or one
 *   column per currency, CAD$ and USD$), which must hold a negative amount;
 * - amount, by content (zero amounts count as empty):
 *   - two neighbouring number columns with at most one amount per row are debit and credit (a
 *     running balance is filled on every row, so it never pairs); a few negative amounts in the
 *     debit column are refunds; negatives anywhere else leave the sides unknown: refused;
 *   - with no header, in a file shaped like TD's or CIBC's (4 or 5 columns), an unsigned amount
 *     column followed by an empty (or all-zero) column is a debit column whose credit column holds
 *     nothing this period (a card with no payment, an account with no deposit);
 *   - else the first number column holding negative amounts is a signed amount;
 *   - an unsigned amount column alone is refused.
 * - description: of the remaining text columns, the one with the most different values (an
 *   account type or a masked card number repeats).
 */
/**
 * `unsignedMayBeSigned`: one amount column with no negative is taken as a signed column (not
 * refused here) when the reader will check its signs itself: a credit card's export writing every
 * purchase positive (a month without payments or refunds), refused later until `--money-out` says
 * which way it is written, or a `--money-out` given for the file.
 */
export function detectLayout(header: CsvRecord | undefined, data: CsvRecord[], unsignedMayBeSigned = false): { layout: CsvLayout; warnings: string[] } {
  const facts = columnFacts(data, header?.cells.length ?? 0);
  const warnings: string[] = [];
  const names = header?.cells.map((c) => c.trim()) ?? [];
  const label = (i: number) => (names[i] ? `"${names[i]}" (column ${i + 1})` : `column ${i + 1}`);
  const named = (re: RegExp, exclude: number[] = []) =>
    names.map((n, i) => (re.test(n) && !exclude.includes(i) ? i : -1)).filter((i) => i >= 0);

  const dateColumns = facts.map((f, i) => (f.filled > 0 && f.dates * 2 > data.length ? i : -1)).filter((i) => i >= 0);
  if (dateColumns.length === 0) throw new BankFileError("No column holds dates: give --map date=COL,description=COL,amount=COL (or a --preset).");
  const date = dateColumns.find((i) => /trans/i.test(names[i] ?? "")) ?? dateColumns[0];

  const numberColumn = (i: number) => i !== date && facts[i].filled > 0 && facts[i].amounts === facts[i].filled;
  const currency = names.findIndex((n, i) => CURRENCY_HEADER.test(n) && facts[i]?.filled > 0 && data.every((r) => cell(r, i) === "" || isCurrencyCode(cell(r, i))));
  // A description is never a column of dates or of amounts ("Value Date", a balance), nor of DEBIT/CREDIT words.
  const notText = (i: number) => i === date || i === currency || facts[i].filled === 0 || facts[i].dates + facts[i].amounts >= facts[i].filled
    || facts[i].indicators === facts[i].filled;
  const pickDescription = (exclude: number[]): number[] => {
    const byName = named(HEADER_NAMES.description, exclude).filter((i) => !notText(i));
    if (byName.length > 0) return byName;
    const text = facts.map((f, i) => i).filter((i) => !exclude.includes(i) && !notText(i));
    const best = text.reduce<number | undefined>((b, i) => (b === undefined || facts[i].distinct > facts[b].distinct ? i : b), undefined);
    return best === undefined ? [] : [best];
  };
  const allIndicators = (i: number) => i !== date && facts[i].filled === data.length && facts[i].indicators === data.length;
  // A "Debit/Credit" column holding amounts is a signed amount, not an indicator.
  const indicatorColumns = [
    ...named(HEADER_NAMES.indicator, [date]),
    ...named(HEADER_NAMES.maybeIndicator, [date]).filter(allIndicators),
  ].filter((i) => !numberColumn(i));
  const notAmounts = [date, ...indicatorColumns];
  let amount: CsvLayout["amount"];
  const [namedDebit, namedCredit] = [named(HEADER_NAMES.debit, notAmounts), named(HEADER_NAMES.credit, notAmounts)];
  const namedSigned = named(HEADER_NAMES.signed, notAmounts).filter((i) => !HEADER_NAMES.foreign.test(names[i] ?? ""));
  if (namedDebit.length === 1 && namedCredit.length === 1 && namedDebit[0] !== namedCredit[0]) {
    amount = { kind: "split", debit: namedDebit[0], credit: namedCredit[0] };
  } else if (indicatorColumns.length > 0) {
    const indicator = indicatorColumns[0];
    const columns = namedSigned.length > 0 ? namedSigned : facts.map((_, i) => i).filter((i) => numberColumn(i) && facts[i].filled === data.length).slice(0, 1);
    if (columns.length === 0) throw cannotTell(`${label(indicator)} says debit or credit, but no column holds an amount on every row`);
    // Amounts signed just as the indicator says (every debit negative, no credit negative): both say the same; read as signed.
    amount = signedLikeIndicator(data, columns, indicator) ? { kind: "signed", columns, confirmedBy: indicator } : { kind: "indicated", columns, indicator };
  } else {
    // DR and CR words in a column the header does not name: an indicator perhaps, perhaps not.
    const unnamed = facts.findIndex((f, i) => allIndicators(i) && f.debitWords > 0 && f.creditWords > 0);
    const beside = namedSigned.length > 0 ? namedSigned : facts.map((_, i) => i).filter((i) => numberColumn(i) && facts[i].filled === data.length).slice(0, 1);
    // Chase's Details (DEBIT/CREDIT) beside an Amount signed the same way: the words only confirm the signs.
    if (unnamed >= 0 && beside.length > 0 && signedLikeIndicator(data, beside, unnamed)) {
      amount = { kind: "signed", columns: beside, confirmedBy: unnamed };
    } else if (unnamed >= 0) {
      throw cannotTell(`${label(unnamed)} holds debit/credit words (${[...new Set(data.map((r) => cell(r, unnamed)))].slice(0, 4).join(", ")}) ` +
        `but ${header ? "its header does not say it is a debit/credit indicator" : "the file has no header row to say it is a debit/credit indicator"}`,
        indicatorSuggestion(unnamed));
    } else if (namedSigned.length > 0) {
      if (!unsignedMayBeSigned && namedSigned.every((i) => facts[i]?.negatives === 0)) {
        throw cannotTell(`${namedSigned.map(label).join(" and ")} ${namedSigned.length > 1 ? "hold" : "holds"} no negative amount and no column says which rows are debits`);
      }
      const currencies = namedSigned.map((i) => currencyOfHeader(names[i]));
      amount = { kind: "signed", columns: namedSigned, ...(currencies.some((c) => c) ? { currencies } : {}) };
    } else {
      amount = detectAmount(header, data, facts, numberColumn, unsignedMayBeSigned);
    }
  }
  const amountColumns = amount.kind === "split" ? [amount.debit, amount.credit]
    : amount.kind === "indicated" ? [...amount.columns, amount.indicator] : amount.columns;

  const description = pickDescription([date, ...amountColumns]);
  if (description.length === 0) throw new BankFileError("No column holds descriptions (text other than dates and amounts): give --map date=COL,description=COL,amount=COL (or a --preset).");
  return { layout: { date, description, amount, ...(currency >= 0 ? { currency } : {}) }, warnings };

  /**
   * The --map to give when the indicator column is one, checked before it is offered: an amount
   * column filled on every row whose amounts are all unsigned (or all negative) and a description.
   * Amounts already signed both ways are read as they are signed, never turned by an indicator.
   */
  function indicatorSuggestion(indicator: number): string {
    const generic = "If it is one, give --map date=COL,description=COL,amount=COL,indicator=COL.";
    const amounts = facts.map((_, i) => i).filter((i) => numberColumn(i) && facts[i].filled === data.length);
    if (amounts.length === 0) return generic;
    const column = amounts[0];
    const [description] = pickDescription([date, column, indicator]);
    if (description === undefined) return generic;
    const signed = indicatorAlreadySigned(data, [column], indicator);
    if (signed) {
      return `${label(column)} holds amounts already signed (${signed}): they are read as signed, not turned by the indicator. ` +
        `If that is right, give --map date=${date + 1},description=${description + 1},amount=${column + 1}.`;
    }
    return `If it is one (an unsigned amount in ${label(column)}), give --map date=${date + 1},description=${description + 1},amount=${column + 1},indicator=${indicator + 1} ` +
      `(--map date=COL,description=COL,amount=COL,indicator=COL).`;
  }
}

function detectAmount(header: CsvRecord | undefined, data: CsvRecord[], facts: ColumnFacts[], numberColumn: (i: number) => boolean,
  unsignedMayBeSigned: boolean): CsvLayout["amount"] {
  const present = (r: CsvRecord, c: number) => isPresentAmount(cell(r, c));
  // Debit and credit columns: neighbours, at most one amount per row, each used somewhere.
  for (let i = 0; i + 1 < facts.length; i++) {
    const [debit, credit] = [facts[i], facts[i + 1]];
    if (!numberColumn(i) || !numberColumn(i + 1) || debit.present === 0 || credit.present === 0) continue;
    const pair = data.every((r) => !(present(r, i) && present(r, i + 1)) && (cell(r, i) !== "" || cell(r, i + 1) !== ""));
    if (!pair) continue;
    // A refund or reversal is a negative debit, now and then; a bank may also write every debit
    // negative. Other negatives (a credit column with them, as many refunds as purchases) could as
    // well be one signed column per currency: the sides are unknown.
    const debitsRead = debit.negatives === 0 || debit.negatives === debit.present || debit.negatives * 2 < debit.present;
    if (credit.negatives === 0 && debitsRead) return { kind: "split", debit: i, credit: i + 1 };
    throw cannotTell(`columns ${i + 1} and ${i + 2} hold one amount per row, like debit and credit columns, but both ` +
      `positive and negative amounts (${debit.negatives + credit.negatives} negative), so neither their sides nor their signs can be trusted`);
  }
  // TD with no deposit in the period, a CIBC card with no payment: the credit column is empty.
  const width = widest(data);
  const first = facts.findIndex((f, i) => numberColumn(i) && f.present > 0);
  if (!header && (width === 4 || width === 5) && first >= 0 && first + 1 < width && facts[first + 1].present === 0
      && (facts[first + 1].filled === 0 || numberColumn(first + 1))) {
    const f = facts[first];
    if (f.negatives === 0 || f.negatives === f.present) return { kind: "split", debit: first, credit: first + 1 };
    throw cannotTell(`column ${first + 1} holds amounts of both signs and column ${first + 2} is empty: a signed amount, ` +
      `or debits (with refunds) whose credit column is empty this period`);
  }
  const signed = facts.findIndex((f, i) => numberColumn(i) && f.negatives > 0);
  if (signed >= 0) {
    const columns = [signed];
    // One column per currency: a neighbour filled exactly where this one is empty.
    for (let n = signed + 1; n < facts.length && numberColumn(n) && data.every((r) => !(present(r, signed) && present(r, n))); n++) {
      columns.push(n);
    }
    return { kind: "signed", columns };
  }
  if (first >= 0 && unsignedMayBeSigned && facts.filter((f, i) => numberColumn(i) && f.present > 0).length === 1) return { kind: "signed", columns: [first] };
  if (first >= 0) {
    throw cannotTell(`column ${first + 1} holds amounts with no sign (none is negative) and no column says which are money out`);
  }
  throw new BankFileError(`Could not tell which columns hold the amounts. ${HOW_TO_SAY}`);
}

/** One line telling the operator how the file was read, so a wrong guess is seen before importing. */
export function describeLayout(layout: CsvLayout, header: CsvRecord | undefined): string {
  const name = (i: number) => {
    const label = header?.cells[i]?.trim();
    return label ? `"${label}" (column ${i + 1})` : `column ${i + 1}`;
  };
  const a = layout.amount;
  const amount = a.kind === "signed"
    ? `amount ${a.columns.map((c, i) => `${name(c)}${a.currencies?.[i] && !header?.cells[c]?.trim() ? ` (${a.currencies[i]})` : ""}`).join(" or ")} (signed)`
    : a.kind === "indicated"
      ? `amount ${a.columns.map(name).join(" or ")}, money out where ${name(a.indicator)} says DR (debit), in where CR (credit)`
      : `debit ${name(a.debit)} (money out), credit ${name(a.credit)} (money in)`;
  return [
    header ? `header row on line ${header.line}` : "no header row",
    `date ${name(layout.date)}`,
    `description ${layout.description.map(name).join(" + ")}`,
    amount,
    ...(layout.memo !== undefined ? [`memo ${name(layout.memo)}`] : []),
    ...(layout.reference !== undefined ? [`reference ${name(layout.reference)}`] : []),
  ].join("; ");
}
