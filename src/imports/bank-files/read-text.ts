import { BankFileError } from "./row.js";

export type TextEncodingName = "utf-8" | "utf-16le" | "utf-16be" | "windows-1252";

/**
 * A bank download's bytes as text. Banks write UTF-8 (sometimes with a BOM) or Windows-1252 with
 * no marker at all, so a file that is not valid UTF-8 is taken as Windows-1252: the only single-byte
 * encoding Canadian banks use, and one that decodes any byte sequence.
 */
export function decodeBankFile(bytes: Uint8Array): { text: string; encoding: TextEncodingName } {
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return { text: decode("utf-16le", bytes.subarray(2)), encoding: "utf-16le" };
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return { text: decode("utf-16be", bytes.subarray(2)), encoding: "utf-16be" };
  const body = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? bytes.subarray(3) : bytes;
  // A NUL never occurs in a CSV or OFX text: this is a spreadsheet, a PDF or an image.
  if (body.includes(0)) throw new BankFileError("The file is not a text file (CSV or OFX); export the statement as CSV or OFX.");
  try {
    return { text: decode("utf-8", body, true), encoding: "utf-8" };
  } catch {
    return { text: decode("windows-1252", body), encoding: "windows-1252" };
  }
}

function decode(encoding: string, bytes: Uint8Array, fatal = false): string {
  return new TextDecoder(encoding, { fatal, ignoreBOM: true }).decode(bytes);
}
