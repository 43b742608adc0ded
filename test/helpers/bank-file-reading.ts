import { expect } from "vitest";
import { BankFileError, readBankFile, type BankFileOptions } from "../../src/imports/bank-files/index.js";

/** A statement file's text, read as the import reads its bytes. */
export const readText = (text: string, options: BankFileOptions = {}) => readBankFile(Buffer.from(text, "utf8"), options);

/** The message of the BankFileError `f` throws; fails the test when it throws none, or another error. */
export function failure(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(BankFileError);
    return (e as Error).message;
  }
  throw new Error("expected a BankFileError");
}
