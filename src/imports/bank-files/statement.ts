import { checkStatementLength } from "./limits.js";
import type { TextEncodingName } from "./read-text.js";
import { BankFileError, type StatementRow } from "./row.js";

export interface BankFileOptions {
  /** rbc, td or cibc: a known CSV layout instead of detecting it. */
  preset?: string;
  /** `date=COL,description=COL,amount=COL` or `…,debit=COL,credit=COL` (COL: 1-based number or header name). */
  map?: string;
  /** M/D/YYYY, D/M/YYYY, YYYY-MM-DD (or their zero-padded spellings): needed when the file does not settle it. */
  dateFormat?: string;
  /** `,` `;` `tab` or `pipe`: the CSV field separator, when the content does not say it (it is detected). */
  delimiter?: string;
  /** `comma` or `point`: the CSV amounts' decimal mark, when no amount of a column settles it (1,234). */
  decimal?: string;
  /** `positive` or `negative`: how a CSV's single signed amount column writes money out (negative unless said). */
  moneyOut?: string;
  /** The payment account's type (bank, credit_card, clearing): a card's CSV with mostly positive amounts needs `moneyOut`. */
  accountType?: string;
  /** A file of several accounts: the account whose transactions are read (its number, or its last digits). */
  account?: string;
  /** The payment account's last four digits: in a file of several accounts, the one ending in them is read. */
  lastFour?: string;
  /** The reading flags come from the payment account's saved layout, not given for this file. */
  fromSavedLayout?: boolean;
  /** MT940 and camt.053: a statement whose balances do not add up is read, with a warning, instead of refused. */
  skipBalanceCheck?: boolean;
}

/** The reading flags a payment account's files may need, which `--save-layout` keeps for it. */
export const LAYOUT_FLAGS = ["preset", "map", "dateFormat", "delimiter", "decimal", "moneyOut", "account"] as const;
export type LayoutFlags = Partial<Record<(typeof LAYOUT_FLAGS)[number], string>>;

/** A reading option as the command line spells it: moneyOut is --money-out. */
export const flagName = (option: string) => `--${option.replace(/[A-Z]/g, (c) => "-" + c.toLowerCase())}`;

export interface BankFile {
  rows: StatementRow[];
  /** Things the operator should know that do not stop the import (rows left out, a guess made). */
  warnings: string[];
  /** How the file was read: format, columns, date order, encoding. */
  layout: string;
  /** The one currency of the file's amounts (RBC's CAD$ or USD$ column, OFX's CURDEF), or null when the file does not say. */
  currency: string | null;
}

/** A file's rows as read (CSV or OFX), made the statement: at least one row, not too many, one currency. */
export function bankFile(read: Omit<BankFile, "currency">, encoding: TextEncodingName): BankFile {
  if (read.rows.length === 0) throw new BankFileError("The file holds no transactions.");
  checkStatementLength(read.rows.length);
  const currency = fileCurrency(read.rows);
  return { ...read, currency, layout: `${read.layout}; ${encoding === "utf-8" ? "UTF-8" : encoding === "windows-1252" ? "Windows-1252" : encoding.toUpperCase()}` };
}

/**
 * The currency of the whole file. A file holding amounts in two currencies (RBC's CAD$ and USD$
 * columns both used, two OFX statements) is refused, naming the first line in the second one: its
 * rows cannot all be booked in one account's currency.
 */
function fileCurrency(rows: StatementRow[]): string | null {
  const first = rows.find((r) => r.currency);
  if (!first) return null;
  const other = rows.find((r) => r.currency && r.currency !== first.currency);
  if (other) {
    throw new BankFileError(`Line ${other.line}: the amount is in ${other.currency}, the rows before it in ${first.currency} ` +
      `(from line ${first.line}): a file must hold one currency. Export each currency's transactions to a file of its own.`);
  }
  return first.currency!;
}
