import { BankFileError } from "./row.js";

export type TextEncodingName = "utf-8" | "utf-16le" | "utf-16be" | "windows-1252";

/** The encoding a byte-order mark names, and its length; none: UTF-8, else Windows-1252 (see decodeBankFile). */
export function byteOrderMark(bytes: Uint8Array): { encoding?: "utf-16le" | "utf-16be" | "utf-8"; length: number } {
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return { encoding: "utf-16le", length: 2 };
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return { encoding: "utf-16be", length: 2 };
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return { encoding: "utf-8", length: 3 };
  return { length: 0 };
}

/** A NUL never occurs in a CSV or OFX text: this is a spreadsheet, a PDF or an image. */
export function notText(): BankFileError {
  return new BankFileError("The file is not a text file (CSV or OFX); export the statement as CSV or OFX.");
}

/**
 * A bank download's bytes as text. Banks write UTF-8 (sometimes with a BOM) or Windows-1252 with
 * no marker at all, so a file that is not valid UTF-8 is taken as Windows-1252: the only single-byte
 * encoding Canadian banks use, and one that decodes any byte sequence.
 */
export function decodeBankFile(bytes: Uint8Array): { text: string; encoding: TextEncodingName } {
  const bom = byteOrderMark(bytes);
  const body = bytes.subarray(bom.length);
  if (bom.encoding === "utf-16le" || bom.encoding === "utf-16be") return { text: decode(bom.encoding, body), encoding: bom.encoding };
  if (body.includes(0)) throw notText();
  try {
    return { text: decode("utf-8", body, true), encoding: "utf-8" };
  } catch {
    return { text: decode("windows-1252", body), encoding: "windows-1252" };
  }
}

export function decode(encoding: string, bytes: Uint8Array, fatal = false): string {
  return new TextDecoder(encoding, { fatal, ignoreBOM: true }).decode(bytes);
}
