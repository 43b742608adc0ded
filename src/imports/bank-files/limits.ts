import { BankFileError } from "./row.js";

/*
 * How much of a statement file is taken. The import is one call in one transaction holding every
 * row (the duplicate rules pair identical rows across the whole file, and the preview shows the
 * flags the import went by), so every row is in memory at once, in the command and in
 * PostgreSQL. A file past these limits is refused in words before anything is written, and read
 * no further than it takes to tell.
 */

/**
 * Transactions in one file: a year of a busy account at 270 a day. PostgreSQL's side of the one
 * call grows by about 3 KB a row: at this length its process peaks at 300 to 500 MB, the command
 * near 400 MB, and the import takes 7 to 15 s; at twice the length the database process neared
 * 900 MB, too close to the 1 GB that no process may pass.
 */
export const MAX_STATEMENT_ROWS = 100_000;

/** Lines before the first transaction that a file may have besides (a header, the account's details). */
export const MAX_PREAMBLE_ROWS = 20;

/** A CSV file's size: 100,000 rows of 160 characters, more than a bank writes (about 100 a row). */
export const MAX_CSV_BYTES = 16 * 1024 * 1024;

/**
 * An OFX file's size: its parser reads it whole and holds about 40 times its size (400 MB at
 * this size); 10 MB is some 50,000 to 80,000 transactions.
 */
export const MAX_OFX_BYTES = 10 * 1024 * 1024;

const count = (n: number) => n.toLocaleString("en-US");
const megabytes = (bytes: number) => `${(bytes / (1024 * 1024)).toFixed(bytes < 10 * 1024 * 1024 ? 1 : 0)} MB`;

export function checkStatementLength(transactions: number): void {
  if (transactions > MAX_STATEMENT_ROWS) throw tooManyRows();
}

export function tooManyRows(): BankFileError {
  return new BankFileError(`The file holds more than ${count(MAX_STATEMENT_ROWS)} transactions; a statement file may hold at most ` +
    `${count(MAX_STATEMENT_ROWS)}. Export a shorter period, or split the file and import each part.`);
}

export function tooLarge(bytes: number, format: "CSV" | "OFX"): BankFileError {
  const max = format === "CSV" ? MAX_CSV_BYTES : MAX_OFX_BYTES;
  return new BankFileError(`The file is ${megabytes(bytes)}; ` +
    `a${format === "OFX" ? "n" : ""} ${format} statement file may be at most ${megabytes(max)}. Export a shorter period, or split the file and import each part.`);
}
