/** One statement row as the import SQL functions take it (BankStatementRowInput), plus its line. */
export interface StatementRow {
  /** 1-based line of the file the row came from: for messages and the preview, never sent to SQL. */
  line: number;
  /** YYYY-MM-DD */
  transactionDate: string;
  description: string;
  /** Signed from the payment account's point of view (money out < 0), at most 2 decimals: "-19.00". */
  amount: string;
  eventType: EventType;
  memo?: string;
  reference?: string;
  /**
   * The currency the file gives the amount (RBC: CAD for the CAD$ column, USD for USD$; OFX: the
   * statement's CURDEF), absent when the file does not say. Never sent to SQL per row: the file's
   * one currency goes as import_bank_statement's currency argument.
   */
  currency?: string;
}

export type EventType = "expense" | "income" | "transfer";

/** A file the operator has to fix: the message names the line (or says what is missing). */
export class BankFileError extends Error {}
