import type { AccountChoice } from "./accounts.js";
import { csvReadOptions, parseDecimalOption, readCsvStatement } from "./csv.js";
import { parseDateFormatOption } from "./dates.js";
import { looksLikeCamt053, readCamt053Statement } from "./camt053.js";
import { MAX_OFX_BYTES } from "./limits.js";
import { looksLikeMt940, readMt940Statement } from "./mt940.js";
import { looksLikeOfx, readOfxStatement } from "./ofx.js";
import { looksLikeQif, readQifStatement } from "./qif.js";
import { decodeBankFile } from "./read-text.js";
import { BankFileError } from "./row.js";
import { bankFile, flagName, LAYOUT_FLAGS, type BankFile, type BankFileOptions, type LayoutFlags } from "./statement.js";

/**
 * A bank or credit-card statement file held in memory (CSV, OFX 1.x/2.x, QIF, MT940 or camt.053, told apart by content)
 * as statement rows signed from the payment account's side. Throws BankFileError naming the line
 * for a bad file: nothing of a file is imported unless all of it reads. A file on disk is read
 * with readBankStatementFile, which streams a CSV.
 */
export function readBankFile(bytes: Uint8Array, given: BankFileOptions = {}): BankFile {
  const { text, encoding } = decodeBankFile(bytes);
  if (looksLikeOfx(text)) {
    const { options, passedOver } = flagsFor("OFX", given);
    return withWarnings(bankFile(readOfxStatement(text, accountChoice(options)), encoding), passedOver);
  }
  const whole = wholeFileFormat(text);
  if (whole) {
    if (bytes.length > MAX_WHOLE_FILE_BYTES) throw wholeFileTooLarge(bytes.length, whole);
    const { options, passedOver } = flagsFor(whole, given);
    const dateOrder = options.dateFormat ? parseDateFormatOption(options.dateFormat) : undefined;
    const balances = { skipBalanceCheck: options.skipBalanceCheck, ...accountChoice(options) };
    const read = whole === "QIF" ? readQifStatement(text, dateOrder, parseDecimalOption(options.decimal), accountChoice(options))
      : whole === "MT940" ? readMt940Statement(text, balances) : readCamt053Statement(text, balances);
    return withWarnings(bankFile(read, encoding), passedOver);
  }
  const dateOrder = given.dateFormat ? parseDateFormatOption(given.dateFormat) : undefined;
  return bankFile(readCsvStatement(text, { preset: given.preset, map: given.map, dateOrder, ...csvReadOptions(given) }), encoding);
}

/** The reading flags each format other than CSV takes (CSV takes them all): the one list of which flag applies where. */
const FORMAT_FLAGS: Record<string, (keyof LayoutFlags)[]> = { OFX: ["account"], QIF: ["dateFormat", "decimal", "account"], MT940: ["account"], "camt.053": ["account"] };

/**
 * The options a file of `format` is read with. Flags given for this file that do not apply to it
 * are refused. A saved layout was saved for the account's files of one format (a bank's CSV
 * export); a file of another (its OFX download) is read without the saved flags that do not apply
 * to it, saying so.
 */
function flagsFor(format: string, options: BankFileOptions): { options: BankFileOptions; passedOver: string[] } {
  // A saved --decimal was a CSV export's: a QIF download settles its own mark (or is told it for the file).
  const applies = (flag: keyof LayoutFlags) => FORMAT_FLAGS[format].includes(flag) && !(options.fromSavedLayout && flag === "decimal");
  const dropped = LAYOUT_FLAGS.filter((flag) => options[flag] !== undefined && !applies(flag));
  if (dropped.length === 0) return { options, passedOver: [] };
  if (!options.fromSavedLayout) {
    const csvOnly = LAYOUT_FLAGS.filter((flag) => flag !== "account" && !FORMAT_FLAGS[format].includes(flag)).map(flagName);
    throw new BankFileError(`The file is ${format}: ${csvOnly.join(", ")} apply to CSV files only.`);
  }
  const kept: BankFileOptions = { ...options };
  for (const flag of dropped) delete kept[flag];
  const names = dropped.map(flagName);
  return {
    options: kept,
    passedOver: [`The saved layout's ${names.join(", ")} ${names.length === 1 ? "does" : "do"} not apply to this ${format} file: passed over.`],
  };
}

const withWarnings = (file: BankFile, warnings: string[]): BankFile => (warnings.length ? { ...file, warnings: [...warnings, ...file.warnings] } : file);

/** Which account of a file of several is read: `--account`, else the payment account's last four digits. */
export const accountChoice = (options: BankFileOptions): AccountChoice => ({
  ...(options.account !== undefined ? { account: options.account } : {}),
  ...(options.lastFour ? { lastFour: options.lastFour } : {}),
});

/** QIF, MT940 and camt.053 are read whole (by content, whatever the file's name), up to the size an OFX file may have. */
export const MAX_WHOLE_FILE_BYTES = MAX_OFX_BYTES;

/** The format of a statement file read whole, other than OFX; undefined for CSV. */
export function wholeFileFormat(text: string): "QIF" | "MT940" | "camt.053" | undefined {
  if (looksLikeQif(text)) return "QIF";
  if (looksLikeMt940(text)) return "MT940";
  if (looksLikeCamt053(text)) return "camt.053";
  return undefined;
}

export function wholeFileTooLarge(bytes: number, format: string): BankFileError {
  const mb = (n: number) => `${(n / (1024 * 1024)).toFixed(1)} MB`;
  return new BankFileError(`The file is ${mb(bytes)}; a ${format} statement file may be at most ${mb(MAX_WHOLE_FILE_BYTES)}. ` +
    "Export a shorter period, or split the file and import each part.");
}
