import { describe, expect, it } from "vitest";
import { extractReceipt, MAX_TEXT_CHARS } from "../src/receipts/extraction/index.js";
import { receiptLines } from "../src/receipts/extraction/lines.js";
import { totalLostItsCents } from "../src/receipts/extraction/total.js";

/**
 * A text receipt is read with regular expressions on the document reader's thread: a pattern that
 * reads a long line again from each place in it is quadratic (one 100 KB word took 56 s), and
 * holds up every other organization's receipts. Each text here is the longest kept (100 KB) and
 * must be read within a few seconds: a linear read takes well under one on an idle machine, and
 * the bound leaves room for the other test files running beside it, not for a quadratic read.
 */
const LIMIT_MS = 3_000;

/** `unit` repeated to exactly the kept length. */
const filled = (unit: string) => unit.repeat(Math.ceil(MAX_TEXT_CHARS / unit.length)).slice(0, MAX_TEXT_CHARS);

const HOSTILE: Record<string, string> = {
  "one word": filled("a"),
  "one capitalised word": filled("A"),
  "one accented word": filled("é"),
  "one word of astral letters": filled("𝐀"),
  "one word, then a period and a word": `${filled("a").slice(0, -4)}. ab`,
  "digits": filled("1"),
  "dots": filled("."),
  "spaces": filled(" "),
  "dots and spaces": filled(". "),
  "spaces and dots": filled(" ."),
  "digits, spaces and dots": filled("1 ."),
  "digits and dots": filled("1."),
  "ideographic spaces after a word": `ab${filled("\u3000").slice(2)}`,
  "long words with periods": filled("abcde. "),
  "hyphenated word": filled("a-"),
  "groups of thousands": filled("'123"),
  "open parentheses": filled("((((1234"),
  "legal forms before a line separator": `${filled("inc ").slice(1)}\u2028`,
  "dates on one line": filled("05/05/2023 "),
  "broken dates, one a line": filled("05/85/2023\n"),
  "time then date": filled("12:30 05/05/2023 "),
  "one-letter lines": filled("a\n"),
  "one-digit lines": filled("1\n"),
  "total labels, one a line": filled("TOTAL\n"),
  "totals": filled("TOTAL 1.00\n"),
  "labels then amounts": filled("TOTAL\nCASH\nCHANGE\n1.00\n2.00\n3.00\n"),
  "totals and rounding": filled("TOTAL 1.00\nROUND\n"),
  "amounts on one line": filled("1.00 "),
  "rounded totals and discounts": filled("TOTAL ROUNDED 1.00\nDISCOUNT 2.00\nTOTAL 9.00\n"),
  "tax summary rows": filled("SR @6% 10.00 0.60\nTotal 10.00 0.60 10.60\n"),
  "cash, change and cards": filled("CASH 5.00\nCHANGE 0.00\nVISA 3.00\nTotal 7.00\n"),
  "partial totals and an amount due": filled("Total 6% supplies 2.00\nTotal 0% supplies 3.00\nTotal payable 5.00\n"),
};

async function timedExtraction(text: string): Promise<number> {
  const started = performance.now();
  await extractReceipt({ bytes: Buffer.from(text, "utf8"), contentType: "text/plain", dateOrder: "auto" });
  totalLostItsCents(receiptLines(text));
  return performance.now() - started;
}

describe("receipt text extraction takes time in proportion to the text", () => {
  it.each(Object.entries(HOSTILE))("100 KB of %s: within a few seconds", async (_name, text) => {
    expect(text.length).toBe(MAX_TEXT_CHARS);
    await timedExtraction(text.slice(0, 1_000)); // compiled once before the clock counts
    expect(await timedExtraction(text)).toBeLessThan(LIMIT_MS);
  });

  it("the rules the rewritten patterns carry still hold", async () => {
    const read = async (text: string) => extractReceipt({ bytes: Buffer.from(text, "utf8"), contentType: "text/plain", dateOrder: "auto" });
    // A speck read as a period after a whole word goes; an abbreviation's stays.
    expect((await read("GUDANG. HASIL SDN BHD\nTOTAL 12.00")).vendorName).toBe("GUDANG HASIL SDN BHD");
    expect((await read("Ab. Hasil Trading\nTOTAL 12.00")).vendorName).toBe("Ab. Hasil Trading");
    // A trailing registration number in brackets is no part of the name.
    expect((await read("SEGI CASH & CARRY SDN.BHD (317041-W)\nTOTAL 12.00")).vendorName).toBe("SEGI CASH & CARRY SDN.BHD");
    // A web address or a street with its number is not the name; a street word alone may be.
    expect((await read("maple-bakery.com\nMaple Bakery\nTOTAL 12.00")).vendorName).toBe("Maple Bakery");
    expect((await read("Lot 7 Jalan Besar\nBUILDING SUPPLY\nTOTAL 12.00")).vendorName).toBe("BUILDING SUPPLY");
    // Thousands separators up to the largest amount a receipt prints.
    expect((await read("TOTAL 1,234,567.89")).amount).toBe("1234567.89");
  });
});
