import { readCsvStatement } from "./csv.js";
import { parseDateFormatOption } from "./dates.js";
import { looksLikeOfx, readOfxStatement } from "./ofx.js";
import { decodeBankFile } from "./read-text.js";
import { BankFileError } from "./row.js";
import { bankFile, type BankFile, type BankFileOptions } from "./statement.js";

/**
 * A bank or credit-card statement file held in memory (CSV or OFX 1.x/2.x, told apart by content)
 * as statement rows signed from the payment account's side. Throws BankFileError naming the line
 * for a bad file: nothing of a file is imported unless all of it reads. A file on disk is read
 * with readBankStatementFile, which streams a CSV.
 */
export function readBankFile(bytes: Uint8Array, options: BankFileOptions = {}): BankFile {
  const { text, encoding } = decodeBankFile(bytes);
  const dateOrder = options.dateFormat ? parseDateFormatOption(options.dateFormat) : undefined;
  if (looksLikeOfx(text)) {
    if (options.preset || options.map || options.dateFormat) {
      throw new BankFileError("The file is OFX: --preset, --map and --date-format apply to CSV files only.");
    }
    return bankFile(readOfxStatement(text), encoding);
  }
  return bankFile(readCsvStatement(text, { preset: options.preset, map: options.map, dateOrder }), encoding);
}
