/**
 * A problem with the file or its content that the operator must fix: shown as is, nothing is
 * written, and a job that meets it is not retried (`permanent`).
 */
export class ImportFileError extends Error {
  readonly permanent = true;
}

/** `Line 12, column Amount: "12,x" is not an amount.` */
export function cellError(line: number, column: string, problem: string): ImportFileError {
  return new ImportFileError(`Line ${line}, column ${column}: ${problem}`);
}

/** A value as the message quotes it: at most 40 characters. */
export function quoted(value: string): string {
  return JSON.stringify(value.length > 40 ? value.slice(0, 40) + "…" : value);
}
