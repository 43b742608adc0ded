import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { BankFileError, readBankFile, type BankFileOptions, type StatementRow } from "../src/imports/bank-files/index.js";
import { looksLikeOfx } from "../src/imports/bank-files/ofx.js";
import { failure, readText } from "./helpers/bank-file-reading.js";

/* OFX as banks really write it (issue 26). The fixtures under test/fixtures/ofx are invented. */

const fixture = (name: string) => readFileSync(`test/fixtures/ofx/${name}`);
const read = (name: string, options: BankFileOptions = {}) => readBankFile(fixture(name), options);
const brief = (rows: StatementRow[]) => rows.map((r) => [r.transactionDate, r.description, r.amount]);

const HEAD = "OFXHEADER:100\nDATA:OFXSGML\nVERSION:102\n\n";
/** A one-account SGML statement around the given <STMTTRN> bodies. */
const statement = (...transactions: string[]) => `${HEAD}<OFX>\n<BANKMSGSRSV1>\n<STMTTRNRS>\n<STMTRS>\n<CURDEF>CAD\n` +
  "<BANKACCTFROM>\n<BANKID>1\n<ACCTID>12345678\n<ACCTTYPE>CHECKING\n</BANKACCTFROM>\n<BANKTRANLIST>\n" +
  transactions.map((t) => `<STMTTRN>\n${t}\n</STMTTRN>\n`).join("") + "</BANKTRANLIST>\n</STMTRS>\n</STMTTRNRS>\n</BANKMSGSRSV1>\n</OFX>\n";
const trn = (fields: Record<string, string>) => Object.entries(fields).map(([k, v]) => `<${k}>${v}`).join("\n");
const base = { TRNTYPE: "DEBIT", DTPOSTED: "20250902", TRNAMT: "-1.00", FITID: "F1", NAME: "SHOP" };

describe("a sloppy OFX 1.x file: BOM, no header, lowercase tags, CRLF/LF mix, unclosed aggregates", () => {
  const file = read("sloppy_sgml.ofx");

  it("reads every transaction with the right numbers", () => {
    expect(file.layout).toBe("OFX 1.x (SGML), currency CAD; UTF-8");
    expect(file.currency).toBe("CAD");
    expect(brief(file.rows)).toEqual([
      ["2025-09-02", "Café & Co", "-12.50"],
      ["2025-09-03", "ACME <Ltd> été", "1250.00"],
      ["2025-09-04", "NORTHWIND UTILITIES", "-0.50"],
      ["2025-09-05", "Cheque 1042", "-800.00"],
      ["2025-09-06", "L-0005", "-2.25"],
      ["2025-09-07", "EQUIPMENT RENTAL", "-1234.56"],
    ]);
    expect(file.rows[0]).toMatchObject({ line: 27, memo: "TERRACE & PATIO", reference: "L-0001", eventType: "expense" });
    expect(file.rows[1]).toMatchObject({ line: 34, eventType: "income" });
    expect(file.rows[5]).toMatchObject({ memo: "Invoice 77", reference: "L-0006" });
  });

  it("says every repair", () => {
    expect(file.warnings).toEqual([
      "The file has no OFX header (OFXHEADER:… or <?OFX …?>) before <OFX>; it is read by its tags alone.",
      "Line 1: tag names are not in upper case (<ofx>); they are read as upper case.",
      "Line 27: <STMTTRN> is never closed (no </STMTTRN>); it is taken to end where the next <STMTTRN> is, on line 34 (and 1 more like it in the file).",
      "Line 71: <LEDGERBAL> is never closed (no </LEDGERBAL>); it is taken to end where </STMTRS> is, on line 74.",
      "Line 24: <BANKTRANLIST> is never closed (no </BANKTRANLIST>); it is taken to end where </STMTRS> is, on line 74.",
      'Line 27: <TRNAMT> "-12,50" is written with a decimal comma; it is read as -12.50 (and 1 more like it in the file).',
      'Line 41: the transaction has neither <NAME> nor <MEMO>; its description is the payee\'s <NAME> in <PAYEE>: "NORTHWIND UTILITIES".',
      "Line 51: the transaction has no <DTPOSTED>; its date is <DTUSER>'s, 2025-09-05.",
      'Line 51: the transaction has neither <NAME> nor <MEMO>; its description is its <CHECKNUM>: "Cheque 1042".',
      'Line 58: the transaction has neither <NAME> nor <MEMO>; its description is its <FITID>: "L-0005".',
    ]);
  });
});

describe("a sloppy OFX 2.x file: unclosed elements, CDATA, a missing </CCSTMTRS>", () => {
  it("reads it and says what it repaired", () => {
    const file = read("sloppy_xml.ofx");
    expect(file.layout).toBe("OFX 2.x (XML), currency EUR; UTF-8");
    expect(file.rows).toEqual([
      { line: 14, transactionDate: "2025-09-10", description: "Bäckerei <Müller> & Söhne", amount: "-45.90", eventType: "expense", reference: "X-1", currency: "EUR" },
      { line: 22, transactionDate: "2025-09-12", description: 'Refund "order 12"', amount: "100.00", eventType: "income", reference: "X-2", currency: "EUR" },
    ]);
    expect(file.warnings).toEqual([
      "Line 15: <TRNTYPE> has no closing tag in an OFX 2.x (XML) file; its value is read up to the next tag, as in OFX 1.x.",
      "Line 8: <CCSTMTRS> is never closed (no </CCSTMTRS>); it is taken to end where </CCSTMTTRNRS> is, on line 30.",
      'Line 14: <TRNAMT> "-45,90" is written with a decimal comma; it is read as -45.90.',
    ]);
  });

  it("an XML file without the OFX processing instruction is still OFX", () => {
    const text = fixture("sloppy_xml.ofx").toString().replace(/<\?OFX[^>]*>\n/, "");
    expect(looksLikeOfx(text)).toBe(true);
    const file = readText(text);
    expect(file.layout).toMatch(/^OFX 2\.x \(XML\), currency EUR/);
    expect(file.warnings[0]).toMatch(/^The file has no OFX header/);
  });
});

describe("several statements in one file", () => {
  it("two accounts with transactions: refused, naming both and --account", () => {
    expect(failure(() => read("bank_and_card.ofx"))).toBe(
      "The OFX file holds the transactions of 2 accounts: bank account (CHECKING) ending 6655 (2 transactions in CAD, from line 15); " +
      "credit card ending 9876 (1 transaction in CAD, from line 46). An import goes to one payment account: give --account NUMBER " +
      "(its number or name as the file writes it, or the number's last digits: e.g. --account 6655) to read one account's transactions, and import the file once for each account.");
    expect(failure(() => read("two_bank_accounts.ofx"))).toMatch(/^The OFX file holds the transactions of 2 accounts: bank account \(CHECKING\) ending 6655 .*; bank account \(CHECKING\) ending 4455 /);
  });

  it("--account, or the payment account's last four digits, reads one account's statement and names what it left out", () => {
    const card = read("bank_and_card.ofx", { account: "9876" });
    expect(card.rows).toHaveLength(1);
    expect(card.warnings).toContain("Only credit card ending 9876 is read, as --account says; left out: bank account (CHECKING) ending 6655 (2 transactions in CAD, from line 15).");
    const bank = read("bank_and_card.ofx", { lastFour: "6655" });
    expect(bank.rows).toHaveLength(2);
    expect(bank.warnings.some((w) => w.startsWith("The OFX file holds 2 accounts' transactions; only bank account (CHECKING) ending 6655 is read, its number ending in 6655"))).toBe(true);
    expect(failure(() => read("bank_and_card.ofx", { account: "1111" }))).toMatch(/^--account 1111: no statement in the file is of that account; it holds bank account/);
    expect(failure(() => read("bank_and_card.ofx", { lastFour: "1111" }))).toMatch(/^The OFX file holds the transactions of 2 accounts/);
  });

  it("one account with transactions and one without: the one with transactions is read, and it says so", () => {
    const file = read("bank_and_empty_card.ofx");
    expect(brief(file.rows)).toEqual([["2025-09-02", "COFFEE", "-10.00"], ["2025-09-03", "LUNCH", "-20.00"]]);
    expect(file.warnings).toEqual(["The OFX file also holds a statement with no transactions (credit card ending 9876); only bank account (CHECKING) ending 6655 is read."]);
  });

  it("two statements of the same account (two months): read together", () => {
    const file = read("one_account_two_months.ofx");
    expect(file.rows.map((r) => r.reference)).toEqual(["B-1", "B-2", "B-3"]);
    expect(file.warnings).toEqual(["The OFX file holds 2 statements of bank account (CHECKING) ending 6655; their transactions are read together."]);
  });
});

describe("amounts: never a wrong number", () => {
  it.each([
    ["+12.50", "12.50"], ["12,50", "12.50"], ["-12,5", "-12.50"], [".50", "0.50"], ["-,75", "-0.75"], ["1.234,56", "1234.56"],
    ["1,234.56", "1234.56"], ["  -3.00  ", "-3.00"], ["12.500", "12.50"],
  ])("%j → %s", (written, amount) => {
    expect(readText(statement(trn({ ...base, TRNAMT: written }))).rows[0].amount).toBe(amount);
  });

  it("missing, empty, not a number, ambiguous or sub-cent: the file is refused naming the transaction", () => {
    const { TRNAMT: _, ...noAmount } = base;
    expect(failure(() => readText(statement(trn(base), trn(noAmount))))).toBe(
      "Line 23: the transaction (FITID F1) has no <TRNAMT> (its amount); the file is refused rather than read without it.");
    expect(failure(() => readText(statement(trn({ ...base, TRNAMT: "" }))))).toMatch(/^Line 16: the transaction \(FITID F1\) has no <TRNAMT>/);
    expect(failure(() => readText(statement(trn({ ...base, TRNAMT: "N/A" }))))).toBe('Line 16: "N/A" in <TRNAMT> (FITID F1) is not an amount.');
    expect(failure(() => readText(statement(trn({ ...base, TRNAMT: "1,250" }))))).toMatch(/^Line 16: "1,250" in <TRNAMT> \(FITID F1\) is ambiguous/);
    expect(failure(() => readText(statement(trn({ ...base, TRNAMT: "1.005" }))))).toMatch(/^Line 16: "1.005" in <TRNAMT> \(FITID F1\) has more than 2 decimals/);
    expect(failure(() => readText(statement(`${trn(base)}\n<TRNAMT>-2.00`)))).toMatch(/^Line 16: the transaction has 2 different <TRNAMT>/);
  });
});

describe("dates", () => {
  it.each([
    ["20250902120000.000[-4:EDT]", "2025-09-02"], ["20250902", "2025-09-02"], ["20250902T093000", "2025-09-02"],
    ["20250902235959[+5.30:IST]", "2025-09-02"], ["20250902120000[0]", "2025-09-02"], ["202509021200", "2025-09-02"],
  ])("%s → %s (the day as the bank wrote it)", (written, date) => {
    const file = readText(statement(trn({ ...base, DTPOSTED: written })));
    expect(file.rows[0].transactionDate).toBe(date);
    expect(file.warnings).toEqual([]);
  });

  it("DTUSER only when DTPOSTED is missing; a bad DTPOSTED is refused, never replaced", () => {
    const { DTPOSTED: _, ...noPosted } = base;
    const file = readText(statement(trn({ ...noPosted, DTUSER: "20250830" })));
    expect(file.rows[0].transactionDate).toBe("2025-08-30");
    expect(file.warnings).toEqual(["Line 16: the transaction has no <DTPOSTED>; its date is <DTUSER>'s, 2025-08-30."]);
    expect(readText(statement(trn({ ...base, DTUSER: "20250830" }))).rows[0].transactionDate).toBe("2025-09-02");
    expect(failure(() => readText(statement(trn({ ...base, DTPOSTED: "02092025", DTUSER: "20250830" })))))
      .toBe('Line 16: "02092025" is not an OFX date (YYYYMMDD…) in <DTPOSTED>.');
    expect(failure(() => readText(statement(trn(noPosted))))).toBe("Line 16: the transaction has no <DTPOSTED> (nor <DTUSER>): no date to book it on.");
  });

  it("something odd after the day: the day is read, and it says so", () => {
    const file = readText(statement(trn({ ...base, DTPOSTED: "20250902 12h00" })));
    expect(file.rows[0].transactionDate).toBe("2025-09-02");
    expect(file.warnings).toEqual(['Line 16: <DTPOSTED> "20250902 12h00" has more than an OFX date and time after its day; the date is read from its first 8 digits, 2025-09-02.']);
  });
});

describe("descriptions", () => {
  it("NAME, else MEMO, else PAYEE's NAME, else the cheque number, else the FITID; none of them: refused", () => {
    const { NAME: _, ...noName } = base;
    expect(readText(statement(trn({ ...noName, MEMO: "A MEMO" }))).rows[0]).toMatchObject({ description: "A MEMO" });
    expect(readText(statement(trn({ ...noName, MEMO: "A MEMO" }))).warnings).toEqual([]);
    expect(readText(statement(`${trn(noName)}\n<PAYEE>\n<NAME>PAYEE CO\n</PAYEE>`)).rows[0].description).toBe("PAYEE CO");
    expect(readText(statement(trn({ ...noName, CHECKNUM: "77" }))).rows[0].description).toBe("Cheque 77");
    expect(readText(statement(trn(noName))).rows[0].description).toBe("F1");
    const { FITID: _f, ...nothing } = noName;
    expect(failure(() => readText(statement(trn(nothing))))).toBe("Line 16: the transaction has no <NAME>, <MEMO>, <PAYEE>, <CHECKNUM> or <FITID> to describe it.");
  });

  it("entities: the five XML ones and numeric ones; any other is kept as written, and said", () => {
    const file = readText(statement(trn({ ...base, NAME: "A &amp; B &#38; C &#x41; &nbsp;&bogus; &#0; AT&T" })));
    expect(file.rows[0].description).toBe("A & B & C A &nbsp;&bogus; &#0; AT&T");
    expect(file.warnings).toEqual([
      'Line 21: "&nbsp;" is not one of the XML entities (&amp; &lt; &gt; &quot; &apos;); it is kept as written (and 2 more like it in the file).',
    ]);
  });
});

describe("hostile input", () => {
  it("a DOCTYPE's entities are never expanded", () => {
    const text = statement(trn({ ...base, NAME: "X &boom; Y" })).replace("<OFX>\n", '<OFX>\n<!DOCTYPE OFX [<!ENTITY boom "BOOM">]>\n');
    const file = readText(text);
    expect(file.rows[0].description).toBe("X &boom; Y");
    expect(file.warnings.some((w) => /declaration "<!DOCTYPE/.test(w))).toBe(true);
  });

  it("an unclosed CDATA section, nesting past 64 levels, an OFX with no statement: refused", () => {
    expect(failure(() => readText(statement(trn({ ...base, NAME: "<![CDATA[never closed" }))))).toBe("Line 21: a CDATA section (<![CDATA[) is never closed (no ]]>).");
    expect(failure(() => readText(`${HEAD}<OFX>${Array.from({ length: 100 }, (_, i) => `<AGG${i}>\n`).join("")}`))).toMatch(/nested more than 64 deep/);
    expect(failure(() => readText(`${HEAD}<OFX>\n<SIGNONMSGSRSV1>\n</SIGNONMSGSRSV1>\n</OFX>`))).toBe("The OFX file holds no bank or credit-card statement.");
  });

  it("stays linear on pathological text: many '<' without '>', long whitespace runs, half-open tags", () => {
    const started = performance.now();
    for (const junk of ["<".repeat(2_000_000), `OFXHEADER:100${"\n".repeat(2_000_000)}`, "<A ".repeat(500_000), "&#".repeat(1_000_000), "<![CDATA[".repeat(10)]) {
      try {
        readText(`${HEAD}<OFX>${junk}`);
      } catch (e) {
        expect(e).toBeInstanceOf(BankFileError);
      }
    }
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it("a stray closing tag and text outside elements are ignored, and said", () => {
    const text = statement(trn(base)).replace("</BANKTRANLIST>", "</NOTOPEN>\nstray words\n</BANKTRANLIST>");
    const file = readText(text);
    expect(file.rows).toHaveLength(1);
    expect(file.warnings).toEqual([
      "Line 23: </NOTOPEN> closes no open element; it is ignored.",
      'Line 24: text outside any element ("stray words", in <BANKTRANLIST>) is ignored.',
    ]);
  });
});

describe("statements with no account number", () => {
  it("two statements without ACCTID on one line are two accounts, never merged; --account naming an account with nothing is refused", () => {
    const one = "<OFX><BANKMSGSRSV1><STMTTRNRS><STMTRS><CURDEF>CAD<BANKACCTFROM><ACCTTYPE>CHECKING</BANKACCTFROM><BANKTRANLIST>" +
      "<STMTTRN><TRNTYPE>DEBIT<DTPOSTED>20250102<TRNAMT>-4.50<FITID>A1<NAME>CAFE</STMTTRN></BANKTRANLIST></STMTRS></STMTTRNRS></BANKMSGSRSV1>" +
      "<CREDITCARDMSGSRSV1><CCSTMTTRNRS><CCSTMTRS><CURDEF>CAD<CCACCTFROM></CCACCTFROM><BANKTRANLIST>" +
      "<STMTTRN><TRNTYPE>CREDIT<DTPOSTED>20250103<TRNAMT>100.00<FITID>B1<NAME>PAYMENT</STMTTRN></BANKTRANLIST></CCSTMTRS></CCSTMTTRNRS></CREDITCARDMSGSRSV1></OFX>";
    expect(failure(() => readText(one))).toMatch(/^The OFX file holds the transactions of 2 accounts/);
    expect(failure(() => read("bank_and_empty_card.ofx", { account: "9876" }))).toMatch(/^--account 9876: credit card ending 9876 has no transactions in the file; it holds bank account/);
  });
});
