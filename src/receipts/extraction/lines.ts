/** Between two OCR readings of one image (read.ts): a form feed on a line of its own, which
 * receiptLines drops and parse.ts splits on. */
export const READING_BREAK = "\n\f\n";

/** A receipt's text as trimmed, non-empty lines with runs of spaces collapsed. */
export function receiptLines(text: string): string[] {
  return text
    .split(/\r?\n|\r/)
    .map((line) => line.replace(/[\t\u00a0\u2007\u202f ]+/g, " ").trim())
    .filter((line) => line.length > 0);
}

/**
 * OCR reads 0 as O and 1 as l or I inside numbers ("4O.00", "2O18", "l2.30"). Only characters
 * touching a digit are mended, so words stay as they were; use this for numbers, not for names.
 */
export function mendDigits(line: string): string {
  return line
    .replace(/(?<=\d[.,/-]?)[Oo](?![A-Za-z]{2})|(?<![A-Za-z])[Oo](?=[.,/-]?\d)/g, "0")
    .replace(/(?<=\d[.,/-]?)[lI|](?![A-Za-z]{2})|(?<![A-Za-z])[lI|](?=[.,/-]?\d)/g, "1");
}
