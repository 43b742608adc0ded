import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readBankFile, readBankStatementFile, type BankFileOptions, type StatementRow } from "../src/imports/bank-files/index.js";
import { readCamt053Statement } from "../src/imports/bank-files/camt053.js";
import { readMt940Statement } from "../src/imports/bank-files/mt940.js";
import { runCli } from "./helpers/cli.js";
import { createTenant, startHarness, type Harness } from "./helpers/harness.js";
import { accountsOf, addAccount } from "./ledger-fixtures.js";
import { failure, readText } from "./helpers/bank-file-reading.js";

const DIR = "test/fixtures/bank-formats";
const sample = (name: string) => readFileSync(`${DIR}/${name}`);
const read = (name: string, options: BankFileOptions = {}) => readBankFile(sample(name), options);
const brief = (rows: StatementRow[]) => rows.map((r) => [r.transactionDate, r.amount, r.description]);
/** Signed cents of the rows: the statement's net movement. */
const total = (rows: StatementRow[]) => rows.reduce((s, r) => s + BigInt(r.amount.replace(".", "")), 0n);

describe("QIF", () => {
  it("a bank register, day-first dates settled by 31.01, thousands commas, U beside T", () => {
    const f = read("chequing.qif");
    expect(f.layout).toBe("QIF, dates D/M/YYYY; UTF-8");
    expect(f.currency).toBeNull();
    expect(brief(f.rows)).toEqual([
      ["2025-01-31", "-1234.56", "NORTHWIND PROPERTIES"],
      ["2025-02-03", "2500.00", "ACME CONSULTING INC"],
      ["2025-02-14", "-19.00", "MONTHLY ACCOUNT FEE"],
      ["2025-02-28", "-12.50", "CAFE LUMIERE"],
    ]);
    expect(f.rows[0]).toMatchObject({ line: 2, memo: "January rent; No. 1042", eventType: "expense" });
    expect(f.rows[0].reference).toBeUndefined();
    expect(total(f.rows)).toBe(123394n);
  });

  it("a card register after an !Account list: apostrophe years, Quicken's padded days, a payment as transfer", () => {
    const f = read("card.qif");
    expect(brief(f.rows)).toEqual([
      ["2025-01-05", "-45.99", "STAPLES #221"],
      ["2025-01-31", "-1020.00", "DELL CANADA"],
      ["2025-02-15", "500.00", "PAYMENT THANK YOU"],
    ]);
    expect(f.rows.map((r) => r.eventType)).toEqual(["expense", "expense", "transfer"]);
    expect(total(f.rows)).toBe(-56599n);
  });

  it("dates that read both ways are refused with the flag to give; the flag settles them", () => {
    expect(failure(() => read("ambiguous.qif"))).toBe('The dates (e.g. "01/02/2025") read as month/day and as day/month: no date in the file settles which. ' +
      "Say which with --date-format M/D/YYYY or --date-format D/M/YYYY.");
    expect(brief(read("ambiguous.qif", { dateFormat: "D/M/YYYY" }).rows)).toEqual([["2025-02-01", "-10.00", "COFFEE"], ["2025-04-03", "20.00", "REFUND"]]);
    expect(brief(read("ambiguous.qif", { dateFormat: "M/D/YYYY" }).rows).map((r) => r[0])).toEqual(["2025-01-02", "2025-03-04"]);
  });

  it("comment lines above the first header: still QIF; a bank section beside an investment one is read, the investments left out with a warning", () => {
    const file = read("commented-mixed.qif");
    expect(file.layout).toMatch(/^QIF/);
    expect(brief(file.rows)).toEqual([["2024-03-01", "-25.40", "Corner Grocer"], ["2024-03-15", "1200.00", "Payroll Inc"]]);
    expect(file.warnings).toContain("Line 17: the investment section (!Type:Invst, 1 record) is left out: only bank, card and cash transactions are read.");
    expect(brief(readText("\n# a comment\n\n#another\n!Type:Bank\nD1/20/2025\nT-1.00\nPX\n^\n").rows)).toEqual([["2025-01-20", "-1.00", "X"]]);
    // An apostrophe before a 4-digit year.
    expect(brief(readText("!Type:Bank\nD2/14'2020\nT-1.00\nPX\n^\n").rows)).toEqual([["2020-02-14", "-1.00", "X"]]);
    // Only investments: refused as before, comments or not.
    expect(failure(() => readText("# export\n!Type:Invst\nD1/2/2025\nT1.00\n^\n"))).toMatch(/^Line 2: the QIF file holds investment transactions/);
  });

  it("malformed: a bad amount, a missing amount, a bad date, an unknown header, an unended record, investments", () => {
    expect(failure(() => read("malformed.qif"))).toBe('Line 7: "TEN DOLLARS" is not an amount.');
    expect(failure(() => readText("!Type:Bank\nD1/2/2025\nPX\n^\n"))).toBe("Line 2: the transaction has no amount (T).");
    expect(failure(() => readText("!Type:Bank\nD1/32/2025\nT1.00\nPX\n^\n"))).toMatch(/^Line 2: "1\/32\/2025" is not a date/);
    expect(failure(() => readText("!Type:Bank\nDyesterday\nT1.00\nPX\n^\n"))).toMatch(/^Line 2: "yesterday" is not a QIF date/);
    expect(failure(() => readText("!Type:Bank\nD1/20/2025\nT1.005\nPX\n^\n"))).toMatch(/^Line 3: "1.005" reads two ways/);
    expect(failure(() => readText("!Type:Bank\nD1/20/2025\nT1.005\nPX\n^\n", { decimal: "point" }))).toMatch(/^Line 3: "1.005" has more than 2 decimals/);
    expect(failure(() => readText("!Type:Invst\nD1/2/2025\nT1.00\n^\n"))).toMatch(/^Line 1: the QIF file holds investment transactions/);
    expect(failure(() => readText("!Type:Bank\nD1/2/2025\nT1.00\nPX\n!Type:Bank\n"))).toBe("Line 2: the record has no end (^) before the header on line 5.");
    expect(failure(() => readText("!Type:Bank\nD1/20/2025\nT1.00\nU2.00\nPX\n^\n"))).toMatch(/^Line 4: the U amount "2.00" differs/);
    expect(failure(() => read("chequing.qif", { preset: "td" }))).toBe("The file is QIF: --preset, --map, --delimiter, --money-out apply to CSV files only.");
  });
});

describe("MT940", () => {
  it("a SWIFT-wrapped statement: EUR from :60F:, decimal commas, D out, C in, RD in, booking dates, bank references, :86: forms", () => {
    const f = read("statement.sta");
    expect(f.currency).toBe("EUR");
    expect(f.layout).toBe("MT940, 1 statement, currency EUR; UTF-8");
    expect(brief(f.rows)).toEqual([
      ["2025-01-31", "-250.50", "NORTHWIND PROPERTIES"],
      ["2025-02-01", "1200.00", "ACME CONSULTING GMBH"],
      ["2025-01-31", "10.00", "Fee refund for a charge made in error on 30 January, booked twice by the bank"],
    ]);
    expect(f.rows.map((r) => [r.line, r.reference, r.memo])).toEqual([
      [6, "B5A31X001", "INVOICE 2025-001 RENT JANUARY"], [8, "B5A31X002", "INVOICE 17 CONSULTING"], [10, "B5A31X003", "REVERSED FEE"],
    ]);
    // 1000,00 opening + the lines = 1959,50 closing.
    expect(total(f.rows)).toBe(95950n);
  });

  it("two statements of one account; RC (a credit reversed) is money out", () => {
    const f = read("two-statements.mt940");
    expect(f.currency).toBe("CAD");
    expect(brief(f.rows)).toEqual([
      ["2025-02-28", "-75.25", "OFFICE SUPPLIES"],
      ["2025-03-03", "25.00", "INTEREST"],
      ["2025-03-04", "-5.00", "CORRECTION OF CREDIT"],
    ]);
    expect(total(f.rows)).toBe(-5525n);
  });

  it("two accounts' statements: refused naming both and --account; never both into one account (their transfer would be booked twice)", () => {
    expect(failure(() => read("two-accounts.mt940"))).toBe("The MT940 file holds the transactions of 2 accounts: NL17BANK0310029597EUR (2 transactions); " +
      "NL59BANK3181240869EUR (1 transaction). An import goes to one payment account: give --account NUMBER (its number or name as the file writes it, " +
      "or the number's last digits: e.g. --account NL17BANK0310029597) to read one account's transactions, and import the file once for each account.");
    const savings = read("two-accounts.mt940", { account: "NL59 BANK 3181 2408 69" });
    expect(brief(savings.rows)).toEqual([["2025-04-01", "250.00", "TRANSFER FROM CHEQUING"]]);
    expect(savings.layout).toMatch(/^MT940, 1 statement, currency EUR/);
    expect(brief(read("two-accounts.mt940", { lastFour: "9597" }).rows)).toEqual([["2025-04-01", "-250.00", "TRANSFER TO SAVINGS"], ["2025-04-02", "-12.40", "BAKERY SUPPLIES"]]);
    // The statement of the account not read is not checked either: its balances are not this import's.
    const broken = sample("two-accounts.mt940").toString().replace(":62F:C250401EUR250,00", ":62F:C250401EUR999,00");
    expect(readText(broken, { account: "9597" }).rows).toHaveLength(2);
    // Last digits two accounts share choose neither; the whole number chooses one even when another ends in it.
    const alike = sample("two-accounts.mt940").toString().replace("NL59BANK3181240869", "NL59BANK3181249597");
    expect(failure(() => readText(alike, { account: "9597" }))).toBe("--account 9597 matches 2 accounts of the file " +
      "(NL17BANK0310029597EUR (2 transactions); NL59BANK3181249597EUR (1 transaction)); give more of its number.");
    expect(failure(() => readText(alike, { lastFour: "9597" }))).toMatch(/^The MT940 file holds the transactions of 2 accounts/);
    const nested = sample("two-accounts.mt940").toString().replace("NL59BANK3181240869", "NL17BANK0310029597").replace(":25:NL17BANK0310029597EUR", ":25:0310029597EUR");
    expect(readText(nested, { account: "0310029597" }).rows).toHaveLength(2);
    expect(failure(() => readText(sample("two-accounts.mt940").toString(), { account: " - " }))).toBe("--account needs the account's number, or its last digits.");
  });

  it("malformed: lines that do not come to the closing balance, a bad :61:, a cut file, 3 decimals", () => {
    expect(failure(() => read("malformed.mt940"))).toBe("Line 9: the statement REF1's opening balance 500.00 and its 2 lines (-85.25) do not come to its closing balance 424.75: " +
      "the file is incomplete or not MT940 as written by a bank. If the file is complete, import it with --skip-balance-check.");
    const head = ":20:R\n:25:ACC\n:28C:1\n:60F:C250101EUR0,00\n";
    expect(failure(() => readText(`${head}:61:250101X1,00NMSC\n:62F:C250101EUR1,00\n`))).toMatch(/^Line 5: ":61:250101X1,00NMSC" is not an MT940 statement line/);
    expect(failure(() => readText(`${head}:61:250101C1,00NMSC\n:86:X\n`))).toBe("Line 1: the statement R has no closing balance (:62F:); the file is cut short.");
    expect(failure(() => readText(`${head}:61:250101C1,005NMSC\n:62F:C250101EUR1,00\n`))).toBe("Line 5: the amount 1,005 has more than 2 decimals.");
    expect(failure(() => readText(`${head}:61:251301C1,00NMSC\n:62F:C250101EUR1,00\n`))).toBe('Line 5: "251301" is not a date (YYMMDD).');
  });
});

describe("MT940 as banks write it", () => {
  it("a bank's preamble before each :20: and `-` between statements are skipped; :60M:/:62M:, :64:, a D balance, D0,00 read right", () => {
    const f = read("preamble.mt940");
    expect(f.layout).toBe("MT940, 2 statements, currency EUR; UTF-8");
    expect(brief(f.rows)).toEqual([
      ["2025-03-03", "500.00", "LINDEN BAKERY"],
      ["2025-03-04", "-30.50", "CARD 04.03.25 FUEL STATION NORTH"],
      ["2025-03-05", "-349.50", "RENT MARCH"],
    ]);
    expect(f.rows.map((r) => [r.line, r.reference])).toEqual([[8, "P1"], [10, "P2"], [23, "P3"]]);
    expect(f.warnings).toEqual([]);
    // D120,00 opening (-120.00) + 120.00 = D0,00 closing.
    expect(total(f.rows)).toBe(12000n);
    // No `-` between them: what follows a closing balance, up to the next :20:, is a preamble too.
    const unseparated = sample("preamble.mt940").toString("utf8").replace(/^-\n/gm, "");
    expect(brief(readText(unseparated).rows)).toEqual(brief(f.rows));
  });

  it("a line that is no field INSIDE a statement is still refused", () => {
    const head = ":20:R\n:25:ACC\n:28C:1\n:60F:C250101EUR0,00\n";
    expect(failure(() => readText(`${head}ABNANL2A\n:61:250101C1,00NMSC//B1\n:86:X\n:62F:C250101EUR1,00\n`)))
      .toBe('Line 5: "ABNANL2A" is neither an MT940 field (:20:, :61:, …) nor a continuation of one.');
    // A continuation of :86: is one.
    expect(brief(readText(`${head}:61:250101C1,00NMSC//B1\n:86:INTEREST\nJANUARY\n:62F:C250101EUR1,00\n`).rows)).toEqual([["2025-01-01", "1.00", "INTEREST JANUARY"]]);
  });

  it("no :86: and no bank reference: described by the :61: line's supplementary details, else its type code, with a warning", () => {
    const f = read("no-details.mt940");
    expect(brief(f.rows)).toEqual([
      ["2025-04-07", "-12.00", "MONTHLY PACKAGE FEE APRIL"],
      ["2025-04-07", "-200.00", "MT940 NTRF transfer"],
      ["2025-04-08", "55.00", "MT940 NMSC miscellaneous"],
    ]);
    // The account owner's own reference (not NONREF) is kept as the memo; no bank reference, no reference.
    expect(f.rows.map((r) => [r.memo, r.reference])).toEqual([[undefined, undefined], ["INV-2025-31", undefined], [undefined, undefined]]);
    expect(f.warnings).toEqual(['Lines 5, 7, 8: the transaction has no description (:86:) and no bank reference; it is described by what its :61: line says ' +
      '(its supplementary details, else its transaction type), e.g. "MONTHLY PACKAGE FEE APRIL" (line 5).']);
    expect(brief(readText(":20:R\n:25:A\n:60F:C250101EUR0,00\n:61:250101D1,00\n:62F:D250101EUR1,00\n").rows)).toEqual([["2025-01-01", "-1.00", "MT940 debit"]]);
  });

  it("a balance mismatch is refused with what to do next; skipBalanceCheck reads it with a warning naming the figures", () => {
    const text = sample("malformed.mt940").toString("utf8");
    expect(failure(() => readMt940Statement(text))).toMatch(/ If the file is complete, import it with --skip-balance-check\.$/);
    const f = readMt940Statement(text, { skipBalanceCheck: true });
    expect(brief(f.rows)).toEqual([["2025-02-28", "-75.25", "OFFICE SUPPLIES"], ["2025-02-28", "-10.00", "PARKING"]]);
    expect(f.warnings).toEqual(["Line 9: the statement REF1's opening balance 500.00 and its 2 lines (-85.25) do not come to its closing balance 424.75 " +
      "(they come to 414.75, 10.00 from it); read anyway, as --skip-balance-check asks."]);
    // The sign of a D balance counts: C100,00 read as D100,00 would not add up.
    const debit = ":20:R\n:25:A\n:60F:D250101EUR100,00\n:61:250101C100,00NMSC//B1\n:86:DEPOSIT\n:62F:C250101EUR0,00\n";
    expect(readText(debit).rows).toHaveLength(1);
    expect(failure(() => readText(debit.replace(":60F:D", ":60F:C")))).toMatch(/^Line 6: the statement R's opening balance 100.00 and its 1 line \(100.00\) do not come to its closing balance 0.00/);
  });
});

describe("camt.053 as banks write it", () => {
  it("balances with 5 decimals, DBIT below zero, PRCD as opening, ITBD/CLAV ignored; no booking date: the value date, else the statement's", () => {
    const text = sample("balances.camt053.xml").toString("utf8");
    const f = read("balances.camt053.xml");
    expect(f.layout).toBe("camt.053, 2 statements, currency EUR; UTF-8");
    expect(brief(f.rows)).toEqual([
      ["2025-03-03", "400.00", "Linden Bakery"],
      ["2025-03-05", "-29.50", "Card fee March"],
      ["2025-03-31", "-20.00", "camt.053 PMNT/ICDT/ESCT"],
    ]);
    expect(f.warnings).toEqual([
      "Line 12 (entry 1) and 1 more entry of statement 1: no booking date (<BookgDt> empty or absent); the value date (<ValDt>) is used.",
      "Line 35 (entry 3): neither a booking date (<BookgDt>) nor a value date (<ValDt>); the statement's date 2025-03-31 is used.",
      'Line 35 (entry 3): no counterparty name, remittance information (Ustrd) or AddtlNtryInf; described by the bank transaction code (<BkTxCd>), e.g. "camt.053 PMNT/ICDT/ESCT".',
    ]);
    // -250.00 + 400.00 - 29.50 = 120.50, then - 20.00 = 100.50.
    expect(total(f.rows)).toBe(35050n);
    // A non-zero fifth decimal is compared exactly, never rounded away.
    const off = text.replace("120.50000", "120.50001");
    expect(failure(() => readCamt053Statement(off))).toBe("Statement 1: the opening balance -250.00 and the booked entries (370.50) do not come to the closing balance 120.50001: " +
      "the file is incomplete or misread. If the file is complete, import it with --skip-balance-check.");
    expect(readCamt053Statement(off, { skipBalanceCheck: true }).warnings).toContain("Statement 1: the opening balance -250.00 and the booked entries (370.50) " +
      "do not come to the closing balance 120.50001 (they come to 120.50, 0.00001 from it); read anyway, as --skip-balance-check asks.");
    // DBIT is a debit balance: read as CRDT, the statement would not add up.
    expect(failure(() => readCamt053Statement(text.replace("<CdtDbtInd>DBIT</CdtDbtInd><Dt><Dt>2025-03-01", "<CdtDbtInd>CRDT</CdtDbtInd><Dt><Dt>2025-03-01"))))
      .toMatch(/^Statement 1: the opening balance 250.00 and the booked entries \(370.50\) do not come to the closing balance 120.50:/);
    // A booking date that is there but no date is still refused.
    expect(failure(() => readText(text.replace("<BookgDt><Dt/></BookgDt>", "<BookgDt><Dt>2025-02-30</Dt></BookgDt>")))).toBe('Line 12 (entry 1): "2025-02-30" in <BookgDt> is not a date (YYYY-MM-DD).');
  });
});

describe("camt.053", () => {
  it("statements of two accounts: --account reads one, its entries still named by their line in the file", () => {
    const lines = sample("statement.camt053.xml").toString().split("\n");
    lines[6] = lines[6].replace("CH0000000000000000000", "CH9300762011623852957");
    const text = lines.join("\n");
    expect(failure(() => readText(text))).toMatch(/^The camt.053 file holds the transactions of 2 accounts: CH9300762011623852957 \(3 transactions in CAD\); CH0000000000000000000 \(\d+ transactions? in CAD\)\./);
    const second = readText(text, { account: "CH0000000000000000000" });
    expect(second.layout).toBe("camt.053, 1 statement, currency CAD; UTF-8");
    expect(second.warnings[0]).toMatch(/^Only CH0000000000000000000 is read, as --account says; left out: CH9300762011623852957 \(3 transactions in CAD\)\.$/);
    const first = readText(text, { lastFour: "2957" });
    expect(first.rows.map((r) => r.line)).toEqual([10, 23]);
    // The second statement's first entry is the file's fourth, on line 45, whether or not the first statement is read.
    expect(failure(() => readText(text.replace("15.50</Amt>", "15.5x</Amt>"), { account: "CH0000000000000000000" }))).toBe('Line 45 (entry 4): "15.5x" in <Amt> is not an amount.');
  });

  it("two statements: DBIT out, CRDT in, booking Dt or DtTm, names of the other party, Ustrd as memo, AcctSvcrRef, pending left out", () => {
    const f = read("statement.camt053.xml");
    expect(f.currency).toBe("CAD");
    expect(f.layout).toBe("camt.053, 2 statements, currency CAD; UTF-8");
    expect(brief(f.rows)).toEqual([
      ["2025-01-10", "-320.25", "Bergblick Treuhand AG"],
      ["2025-01-20", "2000.00", "Seeblick Hotel & Spa"],
      ["2025-02-03", "-15.50", "ACCOUNT FEE FEBRUARY"],
    ]);
    expect(f.rows.map((r) => [r.line, r.reference, r.memo])).toEqual([
      [10, "ZKB-20250110-0001", "Invoice 4471 Bookkeeping December"], [23, "ZKB-20250120-0002", undefined], [45, "ZKB-20250203-0003", undefined],
    ]);
    expect(f.warnings).toEqual(["Line 34 (entry 3): the entry is pending, not booked; it is left out."]);
    expect(total(f.rows)).toBe(166425n);
  });

  it("malformed: a bad amount, broken XML, a DOCTYPE (no entity is expanded), balances that do not add up", () => {
    expect(failure(() => read("malformed.camt053.xml"))).toBe('Line 13 (entry 2): "1,250.00" in <Amt> is not an amount.');
    expect(failure(() => read("xxe.camt053.xml"))).toMatch(/^Line 2: the XML has a <!DOCTYPE> or <!ENTITY> declaration/);
    const broken = sample("statement.camt053.xml").toString("utf8").replace("</Ntry>", "</Ntri>");
    expect(failure(() => readText(broken))).toMatch(/^Line \d+: the camt\.053 file is not well-formed XML/);
    const off = sample("statement.camt053.xml").toString("utf8").replace("2679.75", "2679.76");
    expect(failure(() => readText(off))).toBe("Statement 1: the opening balance 1000.00 and the booked entries (1679.75) do not come to the closing balance 2679.76: " +
      "the file is incomplete or misread. If the file is complete, import it with --skip-balance-check.");
    const noSign = sample("statement.camt053.xml").toString("utf8").replace("<CdtDbtInd>DBIT</CdtDbtInd>\n        <Sts>BOOK", "<CdtDbtInd>X</CdtDbtInd>\n        <Sts>BOOK");
    expect(failure(() => readText(noSign))).toBe('Line 10 (entry 1): <CdtDbtInd> is "X", not CRDT or DBIT.');
  });
});

describe("chosen by content, whatever the file's name", () => {
  let dir: string;
  beforeAll(() => { dir = mkdtempSync(path.join(tmpdir(), "bank-formats-")); });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each([
    ["chequing.qif", "statement.csv", /^QIF/],
    ["statement.sta", "export.txt", /^MT940/],
    ["statement.camt053.xml", "download.ofx", /^camt\.053/],
  ])("%s named %s", async (from, to, layout) => {
    const file = path.join(dir, to);
    copyFileSync(`${DIR}/${from}`, file);
    const streamed = await readBankStatementFile(file);
    expect(streamed.layout).toMatch(layout);
    expect(streamed).toEqual(read(from));
  });

  it("a UTF-8 byte-order mark and CRLF lines change nothing", () => {
    const qif = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(sample("card.qif").toString("utf8").replace(/\n/g, "\r\n"))]);
    expect(brief(readBankFile(qif).rows)).toEqual(brief(read("card.qif").rows));
  });
});

describe("import_bank_csv end to end", () => {
  let h: Harness;
  beforeAll(async () => { h = await startHarness(); });
  afterAll(() => h?.close());

  const events = async (account: string) => (await h.owner.query(
    `select transaction_date::text as date, merchant_name, functional_amount::text as amount, direction, reference
       from app_public.ledger_events where payment_account_id = $1 order by transaction_date, merchant_name`, [account])).rows;
  const net = (rows: { amount: string; direction: string }[]) => rows.reduce((s, e) => s + (e.direction === "out" ? -1 : 1) * Math.round(Number(e.amount) * 100), 0);

  it.each([
    ["QIF", "card.qif", "card", 3, -56599],
    ["MT940", "two-statements.mt940", "chequing", 3, -5525],
    ["camt.053", "statement.camt053.xml", "chequing", 3, 166425],
  ])("%s: %s imports its rows once", async (_format, file, into, count, cents) => {
    const t = await createTenant(h);
    const card = await addAccount(h, t, "Business Visa", "credit_card", "liability");
    const account = into === "card" ? card : (await accountsOf(h, t)).Chequing;
    const name = into === "card" ? "Business Visa" : "Chequing";
    const first = await runCli(h.databaseUrl, "import_bank_csv", `${DIR}/${file}`, "--org-name", t.name, "--payment-account", name, "--json");
    expect(first.code, first.stderr || first.stdout).toBe(0);
    expect(first.json).toMatchObject({ importedCount: count, skippedCount: 0 });
    const booked = await events(account);
    expect(booked).toHaveLength(count);
    expect(net(booked)).toBe(cents);
    const again = await runCli(h.databaseUrl, "import_bank_csv", `${DIR}/${file}`, "--org-name", t.name, "--payment-account", name, "--json");
    expect(again.json).toMatchObject({ importedCount: 0, skippedCount: count });
  });

  it("a malformed file of each format writes nothing and names its line", async () => {
    const t = await createTenant(h);
    for (const [file, message] of [["malformed.qif", 'Line 7: "TEN DOLLARS" is not an amount.'], ["malformed.mt940", "Line 9: the statement REF1's"],
      ["malformed.camt053.xml", "Line 13 (entry 2)"]]) {
      const r = await runCli(h.databaseUrl, "import_bank_csv", `${DIR}/${file}`, "--org-name", t.name, "--payment-account", "Chequing", "--json");
      expect(r.code).toBe(1);
      expect(r.json.error).toContain(`${DIR}/${file}: ${message}`);
    }
    expect(await events((await accountsOf(h, t)).Chequing)).toHaveLength(0);
  });
});

describe("QIF amounts: one decimal mark for the whole file", () => {
  const qif = (...amounts: string[]) => "!Type:Bank\n" + amounts.map((a, i) => `D01/${i + 20}/2025\nT${a}\nPPAYEE ${i}\n^\n`).join("");
  it("a decimal comma settled by one amount reads every amount so; both marks, or only amounts that read two ways, are refused naming --decimal", () => {
    expect(readText(qif("-12,50", "-1.250", "2.000")).rows.map((r) => r.amount)).toEqual(["-12.50", "-1250.00", "2000.00"]);
    expect(readText(qif("-1,234.56", "-12.50")).rows.map((r) => r.amount)).toEqual(["-1234.56", "-12.50"]);
    expect(failure(() => readText(qif("-12,50", "-1,234.56")))).toMatch(/^The amounts are written with a decimal comma \("-12,50", line 3\) and with a decimal point \("-1,234.56", line 7\): give --decimal comma/);
    expect(failure(() => readText(qif("-1.250", "2.000")))).toBe('Line 3: "-1.250" reads two ways (a decimal mark or a thousands separator) and no amount of the file settles which. Give --decimal point (1,234.56) or --decimal comma (1.234,56).');
    expect(readText(qif("-1.250", "2.000"), { decimal: "comma" }).rows.map((r) => r.amount)).toEqual(["-1250.00", "2000.00"]);
    expect(readText(qif("-1.234,56", "100")).rows.map((r) => r.amount)).toEqual(["-1234.56", "100.00"]);
  });
});

describe("QIF of several accounts", () => {
  const text = "!Account\nNChequing\nTBank\n^\n!Type:Bank\nD01/20/2025\nT-12.00\nPCAFE\n^\nD01/21/2025\nT-200.00\nPPAYMENT TO VISA\n^\n" +
    "!Account\nNVisa\nTCCard\n^\n!Type:CCard\nD01/21/2025\nT200.00\nPPAYMENT THANK YOU\n^\n";
  it("is refused naming each !Account; --account NAME (or the payment account's) reads that section only", () => {
    expect(failure(() => readText(text))).toMatch(/^The QIF file holds the transactions of 2 accounts: the account "Chequing" \(2 transactions from line 5\); the account "Visa" \(1 transaction from line 18\)\..*--account Chequing/);
    const visa = readText(text, { account: "visa" });
    expect(visa.rows.map((r) => [r.description, r.amount])).toEqual([["PAYMENT THANK YOU", "200.00"]]);
    expect(visa.warnings[0]).toMatch(/^Only the account "Visa" is read, as --account says; left out: the account "Chequing"/);
    expect(readText(text, { account: "Chequing" }).rows).toHaveLength(2);
    // Sections with no !Account name are one account's register, read together.
    expect(readText("!Type:Bank\nD01/20/2025\nT-12.00\nPCAFE\n^\n!Type:Bank\nD01/22/2025\nT-3.00\nPTEA\n^\n").warnings)
      .toContain("The QIF file holds 2 sections of one account; their transactions are read together.");
  });
});
