import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parseAmount } from "../src/imports/bank-files/amounts.js";
import { eventTypeFor, readBankFile, type BankFileOptions, type StatementRow } from "../src/imports/bank-files/index.js";
import { failure, readText } from "./helpers/bank-file-reading.js";

const sample = (name: string) => readFileSync(`data/samples/bank/${name}`);
const read = (name: string, options: BankFileOptions = {}) => readBankFile(sample(name), options);
const cents = (rows: StatementRow[]) => rows.reduce((sum, r) => sum + Math.round(Number(r.amount) * 100), 0);
const brief = (rows: StatementRow[]) => rows.map((r) => [r.transactionDate, r.description, r.amount, r.eventType]);

describe("the reference samples, each with its preset and detected from the content", () => {
  it("RBC: header row, M/D/YYYY, signed CAD$ column, descriptions joined", () => {
    const detected = read("rbc_chequing_sample.csv");
    expect(detected.layout).toContain("CSV (detected): header row on line 1");
    expect(detected.layout).toContain("dates M/D/YYYY");
    expect(detected.rows).toHaveLength(25);
    expect(read("rbc_chequing_sample.csv", { preset: "rbc" }).rows).toEqual(detected.rows);
    const [first, second, third] = detected.rows;
    expect(first).toEqual({
      line: 2, transactionDate: "2025-09-02", description: "Online Banking payment - 4821 NORTHSTAR HYDRO",
      amount: "-142.37", eventType: "expense", currency: "CAD",
    });
    expect(second).toMatchObject({ description: "e-Transfer received Autodeposit INV-0998", amount: "565.00", eventType: "income" });
    expect(third).toMatchObject({ transactionDate: "2025-09-03", description: "Cheque - 104", amount: "-1850.00" });
    expect(detected.rows.at(-1)).toMatchObject({ line: 26, transactionDate: "2025-10-31", description: "Monthly fee", amount: "-10.95" });
    expect(detected.rows.filter((r) => r.amount.startsWith("-"))).toHaveLength(17);
    expect(cents(detected.rows)).toBe(
      [-142.37, 565, -1850, -89.27, -47.46, 820, -2450, 1056.54, -300, -1.5, -1200, -415.6, -10.95, 0.42, -1850, 684.22,
        -131.08, -89.27, 339, -2450, -612.4, 1057.01, -63.28, 1130, -10.95].reduce((s, a) => s + Math.round(a * 100), 0));
    const byDescription = new Map(detected.rows.map((r) => [r.description, r.eventType]));
    expect(byDescription.get("Online Banking transfer - 3310 TRANSFER TO CREDIT CARD")).toBe("transfer");
    expect(byDescription.get("Misc Payment PROCESSOR PAYOUT")).toBe("transfer");
    expect(byDescription.get("Interest")).toBe("income");
    expect(byDescription.get("e-Transfer sent INTERAC E-TRF 7741")).toBe("expense");
  });

  it("TD: no header, MM/DD/YYYY, withdrawal column out (negative) and deposit column in; the running balance agrees", () => {
    const detected = read("td_chequing_sample.csv");
    expect(detected.layout).toContain("CSV (detected): no header row; date column 1; description column 2; debit column 3 (money out), credit column 4 (money in)");
    expect(detected.rows).toHaveLength(25);
    expect(read("td_chequing_sample.csv", { preset: "td" }).rows).toEqual(detected.rows);
    expect(brief(detected.rows.slice(0, 2))).toEqual([
      ["2025-09-02", "MONTHLY ACCOUNT FEE", "-19.00", "expense"],
      ["2025-09-02", "GC 0412-DEPOSIT", "1250.00", "income"],
    ]);
    // Opening balance 6418.35, closing 4590.51 (column 5): the signs are right only if they add up.
    expect(641835 + cents(detected.rows)).toBe(459051);
    expect(detected.rows.find((r) => r.description === "TFR-TO C/C")).toMatchObject({ amount: "-650.00", eventType: "transfer" });
    expect(detected.rows.find((r) => r.description === "SEND E-TFR ***4kP")?.eventType).toBe("expense");
  });

  it("CIBC card: ISO dates, purchases negative, payments and refunds positive, the card column ignored", () => {
    const detected = read("cibc_credit_card_sample.csv");
    expect(detected.layout).toContain("dates YYYY-MM-DD");
    expect(detected.rows).toHaveLength(25);
    expect(read("cibc_credit_card_sample.csv", { preset: "cibc" }).rows).toEqual(detected.rows);
    expect(detected.rows[0]).toMatchObject({ transactionDate: "2025-09-02", description: "CLOUD HOSTING CO VANCOUVER, BC", amount: "-64.99", eventType: "expense" });
    const payments = detected.rows.filter((r) => r.description === "PAYMENT THANK YOU/PAIEMENT MERCI");
    expect(payments.map((r) => [r.amount, r.eventType])).toEqual([["1200.00", "transfer"], ["900.00", "transfer"]]);
    expect(detected.rows.find((r) => r.transactionDate === "2025-09-17")).toMatchObject({ amount: "24.86", eventType: "income" });
    expect(detected.rows.filter((r) => !r.amount.startsWith("-"))).toHaveLength(4);
    expect(detected.rows.find((r) => r.description.startsWith("RESTAURANT"))?.description).toBe("RESTAURANT BORÉAL TORONTO, ON");
  });

  it("OFX 1.0.2 (SGML) and OFX 2.1.1 (XML): FITID as reference, TRNAMT signed as is, the same rows as the TD CSV", () => {
    const sgml = read("chequing_sample_ofx102.ofx");
    const xml = read("chequing_sample_ofx211.ofx");
    expect(sgml.layout).toMatch(/^OFX 1\.x \(SGML\), currency CAD/);
    expect(xml.layout).toMatch(/^OFX 2\.x \(XML\), currency CAD/);
    expect(sgml.rows).toHaveLength(5);
    expect(sgml.rows[0]).toEqual({
      line: 39, transactionDate: "2025-09-02", description: "MONTHLY ACCOUNT FEE", amount: "-19.00", eventType: "expense", reference: "20250902-0001", currency: "CAD",
    });
    expect(brief(sgml.rows)).toEqual(brief(read("td_chequing_sample.csv").rows.slice(0, 5)));
    expect(xml.rows.map(({ line: _l, memo: _m, ...r }) => r)).toEqual(sgml.rows.map(({ line: _l, ...r }) => r));
    // NAME is the description; MEMO is the memo when there is a NAME.
    expect(xml.rows[1]).toMatchObject({ description: "GC 0412-DEPOSIT", memo: "BRANCH 0412 & ATM", reference: "20250902-0002" });
    expect(cents(sgml.rows)).toBe(446380 - 641835);
  });

  it("OFX credit-card statement with CRLF: MEMO is the description when NAME is absent; the card payment is a transfer", () => {
    const { rows } = read("credit_card_sample_ofx102_crlf.ofx");
    expect(rows).toEqual([
      { line: 37, transactionDate: "2025-09-02", description: "CLOUD HOSTING CO", memo: "VANCOUVER, BC", amount: "-64.99", eventType: "expense", reference: "CC-20250902-01", currency: "CAD" },
      { line: 45, transactionDate: "2025-09-22", description: "PAYMENT THANK YOU/PAIEMENT MERCI", amount: "1200.00", eventType: "transfer", reference: "CC-20250922-01", currency: "CAD" },
      { line: 52, transactionDate: "2025-09-24", description: "SOCIAL ADS PLATFORM", amount: "-150.00", eventType: "expense", reference: "CC-20250924-01", currency: "CAD" },
    ]);
  });
});

describe("what real downloads look like", () => {
  it("a UTF-8 BOM with CRLF, and Windows-1252 with CRLF, read exactly like the plain UTF-8 file", () => {
    const plain = read("cibc_credit_card_sample.csv");
    const bom = read("cibc_credit_card_bom_crlf.csv");
    const cp1252 = read("cibc_credit_card_cp1252_crlf.csv");
    expect(sample("cibc_credit_card_cp1252_crlf.csv").includes(Buffer.from([0xc9]))).toBe(true);
    expect(bom.rows).toEqual(plain.rows);
    expect(cp1252.rows).toEqual(plain.rows);
    expect(bom.layout).toMatch(/UTF-8$/);
    expect(cp1252.layout).toMatch(/Windows-1252$/);
  });

  it("Windows-1252 bytes outside Latin-1 (€, curly quotes) decode as Windows-1252", () => {
    const bytes = Buffer.concat([Buffer.from("2025-09-02,CAF"), Buffer.from([0xc9, 0x20, 0x93, 0x4c, 0x41, 0x20, 0x50, 0x4c, 0x41, 0x43, 0x45, 0x94, 0x20, 0x80]), Buffer.from(",4.50,\n")]);
    expect(readBankFile(bytes).rows[0].description).toBe("CAFÉ “LA PLACE” €");
  });

  it("a header row preceded by a preamble, extra trailing fields, quoted commas and thousands separators", () => {
    const { rows, layout } = readText([
      "Account statement,Business chequing",
      "",
      "Posted Date,Payee,Amount,Balance",
      '2025-09-02,"ACME, INC.","-1,250.00","8,750.00",,',
      "2025-09-03,REFUND,$12.5,8762.50",
    ].join("\n"));
    expect(layout).toContain('header row on line 3; date "Posted Date" (column 1); description "Payee" (column 2); amount "Amount" (column 3) (signed)');
    expect(brief(rows)).toEqual([["2025-09-02", "ACME, INC.", "-1250.00", "expense"], ["2025-09-03", "REFUND", "12.50", "income"]]);
  });

  it("header names say which columns are withdrawals and deposits", () => {
    const { rows, layout } = readText("Date,Description,Withdrawals,Deposits,Balance\n2025-09-02,FEE,19.00,,100.00\n2025-09-03,DEPOSIT,,50.00,150.00\n");
    expect(layout).toContain('debit "Withdrawals" (column 3) (money out), credit "Deposits" (column 4) (money in)');
    expect(rows.map((r) => r.amount)).toEqual(["-19.00", "50.00"]);
  });

  it("an RBC export holding two accounts: refused naming --account; --account or the payment account's last four reads one account's rows", () => {
    const text = sample("rbc_chequing_sample.csv").toString().replace(/\nChequing,01234-5012345,10\/31\/2025/, "\nSavings,01234-5099999,10/31/2025");
    expect(failure(() => readText(text, { preset: "rbc" }))).toBe("The CSV file holds the transactions of 2 accounts: 01234-5012345 (24 transactions); " +
      "01234-5099999 (1 transaction). An import goes to one payment account: give --account NUMBER (its number or name as the file writes it, " +
      "or the number's last digits: e.g. --account 01234-5012345) to read one account's transactions, and import the file once for each account.");
    const savings = readText(text, { preset: "rbc", account: "5099999" });
    expect(savings.rows).toHaveLength(1);
    expect(savings.warnings).toEqual(["Only 01234-5099999 is read, as --account says; left out: 01234-5012345 (24 transactions)."]);
    const chequing = readText(text, { preset: "rbc", lastFour: "2345" });
    expect(chequing.rows).toHaveLength(24);
    expect(chequing.warnings[0]).toMatch(/^The CSV file holds 2 accounts' transactions; only 01234-5012345 is read, its number ending in 2345 as the payment account's does; left out: 01234-5099999 \(1 transaction\)\. Give --account to read another\.$/);
    expect(failure(() => readText(text, { preset: "rbc", account: "01234" }))).toMatch(/^--account 01234: no statement in the file is of that account/);
  });
});

describe("money in and money out: established from the file, or the file is refused", () => {
  const refusal = /^Cannot tell money in from money out: .*--preset rbc\|td\|cibc, or --map date=COL,description=COL,debit=COL,credit=COL .*--map date=COL,description=COL,amount=COL/;

  it("a CIBC card with no payment in the period, a TD account with no deposit: the empty credit column still makes them debits", () => {
    const card = read("cibc_credit_card_no_payment.csv");
    expect(card.layout).toContain("debit column 3 (money out), credit column 4 (money in)");
    expect(card.rows).toHaveLength(8);
    expect(card.rows.every((r) => r.amount.startsWith("-") && r.eventType === "expense")).toBe(true);
    expect(card.warnings).toEqual([]);
    expect(card.rows).toEqual(read("cibc_credit_card_sample.csv").rows.slice(0, 8));

    const td = readText("09/02/2025,MONTHLY ACCOUNT FEE,19.00,,6399.35\n09/15/2025,SEND E-TFR ***4kP,480.00,,5919.35\n");
    expect(td.layout).toContain("debit column 3 (money out), credit column 4 (money in)");
    expect(td.rows.map((r) => r.amount)).toEqual(["-19.00", "-480.00"]);
    // The card column left out (4 columns), or 0.00 written where there is no credit: the same.
    expect(readText("2025-09-02,CLOUD HOSTING,64.99,\n2025-09-03,NORTHERN AIR,418.73,\n").rows.map((r) => r.amount)).toEqual(["-64.99", "-418.73"]);
    expect(readText("2025-09-02,CLOUD HOSTING,64.99,0.00,x1\n2025-09-03,NORTHERN AIR,418.73,0.00,x1\n").rows.map((r) => r.amount)).toEqual(["-64.99", "-418.73"]);
  });

  it("a refund written as a negative purchase is money in for that row only, with a warning", () => {
    const refund = read("cibc_credit_card_negative_refund.csv");
    expect(refund.layout).toContain("debit column 3 (money out), credit column 4 (money in)");
    expect(refund.rows).toEqual(read("cibc_credit_card_sample.csv").rows);
    expect(refund.warnings).toEqual(["Line 10: -24.86 in the debit column (3) is read as money in (a refund or reversal)."]);
    expect(read("cibc_credit_card_negative_refund.csv", { preset: "cibc" }).rows).toEqual(refund.rows);
    // A bank that writes every withdrawal negative still means money out.
    expect(readText("09/02/2025,FEE,-19.00,,100.00\n09/15/2025,DEPOSIT,,50.00,150.00\n09/16/2025,FEE,-1.00,,149.00\n").rows.map((r) => r.amount))
      .toEqual(["-19.00", "50.00", "-1.00"]);
  });

  it("0.00 in the column a row does not use is no amount: the deposit is kept, withdrawals stay out", () => {
    const text = "09/02/2025,MONTHLY ACCOUNT FEE,19.00,0.00,6399.35\n09/03/2025,GC 0412-DEPOSIT,0.00,1250.00,7649.35\n" +
      "09/04/2025,BALANCE INQUIRY,0.00,0.00,7649.35\n09/15/2025,PAYROLL SVC PAY,1980.55,0.00,5668.80\n";
    const detected = readText(text);
    expect(detected.layout).toContain("debit column 3 (money out), credit column 4 (money in)");
    expect(brief(detected.rows)).toEqual([
      ["2025-09-02", "MONTHLY ACCOUNT FEE", "-19.00", "expense"],
      ["2025-09-03", "GC 0412-DEPOSIT", "1250.00", "income"],
      ["2025-09-15", "PAYROLL SVC PAY", "-1980.55", "expense"],
    ]);
    expect(detected.warnings).toEqual(["Line 3: the amount is 0.00; the row is left out."]);
    expect(readText(text, { preset: "td" }).rows).toEqual(detected.rows);
  });

  it("a Debit/Credit (DR/CR, D/C) indicator column named by the header says the side of an unsigned amount", () => {
    const { rows, layout } = readText("Date,Description,Amount,Debit/Credit\n2025-09-02,FEE,19.00,DR\n2025-09-03,DEPOSIT,50.00,CR\n2025-09-04,REVERSAL,-5.00,Debit\n");
    expect(layout).toContain('amount "Amount" (column 3), money out where "Debit/Credit" (column 4) says DR (debit), in where CR (credit)');
    expect(rows.map((r) => r.amount)).toEqual(["-19.00", "50.00", "5.00"]);
    expect(readText("Date,Description,Amount,D/C\n2025-09-02,FEE,19.00,D\n2025-09-03,DEPOSIT,50.00,C\n").rows.map((r) => r.amount)).toEqual(["-19.00", "50.00"]);
    expect(readText("Date,Description,Amount,Transaction Type\n2025-09-02,FEE,19.00,DEBIT\n2025-09-03,DEPOSIT,50.00,CREDIT\n").rows.map((r) => r.amount)).toEqual(["-19.00", "50.00"]);
    expect(failure(() => readText("Date,Description,Amount,DR/CR\n2025-09-02,FEE,19.00,DR\n2025-09-03,DEPOSIT,50.00,XX\n")))
      .toBe('Line 3: "XX" in column 4 is not a debit/credit indicator (DR or CR, D or C, Debit or Credit).');
    // Not named by the header: refused; --map says it.
    expect(failure(() => readText("2025-09-02,FEE,19.00,DR\n2025-09-03,DEPOSIT,50.00,CR\n"))).toMatch(/^Cannot tell money in from money out: column 4 holds debit\/credit words \(DR, CR\).*indicator=COL/);
    expect(failure(() => readText("Date,Description,Amount,Code\n2025-09-02,FEE,19.00,DR\n2025-09-03,DEPOSIT,50.00,CR\n"))).toMatch(/^Cannot tell money in from money out: "Code" \(column 4\)/);
    expect(readText("2025-09-02,FEE,19.00,DR\n2025-09-03,DEPOSIT,50.00,CR\n", { map: "date=1,description=2,amount=3,indicator=4" }).rows.map((r) => r.amount)).toEqual(["-19.00", "50.00"]);
    // A column headed Debit/Credit that holds signed amounts is a signed amount.
    expect(readText("Date,Description,Debit/Credit,Balance\n2025-09-02,FEE,-19.00,100.00\n2025-09-03,DEPOSIT,50.00,150.00\n").rows.map((r) => r.amount)).toEqual(["-19.00", "50.00"]);
  });

  it("refuses, never guesses money in: one unsigned amount column, or debit/credit columns whose signs disagree", () => {
    expect(failure(() => readText("2025-09-02,FEE,19.00\n2025-09-03,DEPOSIT,50.00\n"))).toMatch(refusal);
    expect(failure(() => readText("Date,Description,Amount\n2025-09-02,FEE,19.00\n2025-09-03,DEPOSIT,50.00\n"))).toMatch(refusal);
    expect(failure(() => readText("2025-09-02,FEE,19.00,1000.00\n2025-09-03,DEPOSIT,50.00,1050.00\n"))).toMatch(refusal);
    // As many refunds as purchases, or negative credits: a signed amount per currency as well.
    expect(failure(() => readText("2025-09-02,A,64.99,,x1\n2025-09-03,REFUND,-24.86,,x1\n2025-09-04,PAYMENT,,100.00,x1\n"))).toMatch(refusal);
    expect(failure(() => readText("2025-09-02,A,64.99,,x1\n2025-09-03,B,,-24.86,x1\n2025-09-04,PAYMENT,,100.00,x1\n"))).toMatch(refusal);
    // Purchases and a refund, no payment: a signed column or debits with a refund.
    expect(failure(() => readText("2025-09-02,A,64.99,,x1\n2025-09-03,REFUND,-24.86,,x1\n2025-09-04,B,10.00,,x1\n"))).toMatch(refusal);
    // The operator who says it is heard: a preset, or --map with --money-out saying the unsigned amounts are signed as written.
    expect(failure(() => readText("2025-09-02,FEE,19.00\n2025-09-03,DEPOSIT,50.00\n", { map: "date=1,description=2,amount=3" }))).toMatch(/holds no negative amount/);
    expect(readText("2025-09-02,FEE,19.00\n2025-09-03,DEPOSIT,50.00\n", { map: "date=1,description=2,amount=3", moneyOut: "negative" }).rows.map((r) => r.amount))
      .toEqual(["19.00", "50.00"]);
    expect(readText("2025-09-02,A,64.99,,x1\n2025-09-03,REFUND,-24.86,,x1\n", { preset: "cibc" }).rows.map((r) => r.amount)).toEqual(["-64.99", "24.86"]);
  });
});

describe("currency", () => {
  it("RBC: CAD for the CAD$ column, USD for USD$; OFX: CURDEF; other files say none", () => {
    expect(read("rbc_chequing_sample.csv").currency).toBe("CAD");
    expect(read("rbc_chequing_sample.csv", { preset: "rbc" }).currency).toBe("CAD");
    const usd = read("rbc_usd_sample.csv");
    expect(usd.currency).toBe("USD");
    expect(usd.rows.map((r) => [r.amount, r.currency])).toEqual([["-142.37", "USD"], ["820.00", "USD"], ["-10.95", "USD"]]);
    expect(read("rbc_usd_sample.csv", { preset: "rbc" }).currency).toBe("USD");
    expect(read("chequing_sample_ofx102.ofx").currency).toBe("CAD");
    expect(read("chequing_sample_ofx102_usd.ofx").currency).toBe("USD");
    expect(read("chequing_sample_ofx102_usd.ofx").layout).toMatch(/^OFX 1\.x \(SGML\), currency USD/);
    expect(readText(sample("chequing_sample_ofx102.ofx").toString().replace("<CURDEF>CAD\n", "")).currency).toBeNull();
    expect(read("td_chequing_sample.csv").currency).toBeNull();
    expect(read("cibc_credit_card_sample.csv").rows.every((r) => r.currency === undefined)).toBe(true);
  });

  it("a file mixing currencies is refused, naming the first line of the second currency", () => {
    const message = "Line 5: the amount is in USD, the rows before it in CAD (from line 2): a file must hold one currency. Export each currency's transactions to a file of its own.";
    expect(failure(() => read("rbc_mixed_currency.csv"))).toBe(message);
    expect(failure(() => read("rbc_mixed_currency.csv", { preset: "rbc" }))).toBe(message);
  });
});

describe("dates", () => {
  it("a file whose every day is ≤ 12 needs --date-format, and reads either way when told", () => {
    const message = failure(() => read("day_month_ambiguous.csv"));
    expect(message).toContain("--date-format");
    expect(message).toContain('"03/09/2025"');
    expect(read("day_month_ambiguous.csv", { dateFormat: "DD/MM/YYYY" }).rows.map((r) => r.transactionDate))
      .toEqual(["2025-09-03", "2025-09-05", "2025-10-08", "2025-10-11"]);
    expect(read("day_month_ambiguous.csv", { dateFormat: "M/D/YYYY" }).rows.map((r) => r.transactionDate))
      .toEqual(["2025-03-09", "2025-05-09", "2025-08-10", "2025-11-10"]);
  });

  it("one day above 12 settles the order", () => {
    const { rows, layout } = read("day_month_settled.csv");
    expect(layout).toContain("dates D/M/YYYY");
    expect(rows[1].transactionDate).toBe("2025-09-15");
    expect(rows.map((r) => r.eventType)).toEqual(["expense", "income", "income", "transfer"]);
  });

  it("--date-format that contradicts the file names the first line it cannot read", () => {
    expect(failure(() => read("td_chequing_sample.csv", { dateFormat: "D/M/YYYY" }))).toBe('Line 10: "09/15/2025" is not a date (D/M/YYYY).');
    expect(failure(() => read("td_chequing_sample.csv", { dateFormat: "Y/M/D" }))).toMatch(/^--date-format must be one of M\/D\/YYYY/);
  });
});

describe("bad files: a message naming the line, nothing read", () => {
  it("a bad date", () => {
    expect(failure(() => read("td_chequing_bad_date.csv"))).toBe('Line 7: "13/45/2025" is not a date (M/D/YYYY).');
    expect(failure(() => read("td_chequing_bad_date.csv", { preset: "td" }))).toBe('Line 7: "13/45/2025" is not a date (M/D/YYYY).');
  });

  it("a bad amount, two amounts, none, an empty description, unclosed quotes", () => {
    const td = (line: string) => ["09/02/2025,FEE,19.00,,100.00", line, "09/04/2025,FEE,1.00,,98.00"].join("\n");
    expect(failure(() => readText(td("09/03/2025,FEE,1.5.0,,99.00"), { preset: "td" }))).toBe('Line 2: "1.5.0" in column 3 is not an amount.');
    expect(failure(() => readText(td("09/03/2025,FEE,1.005,,99.00"), { preset: "td" }))).toBe('Line 2: "1.005" in column 3 has more than 2 decimals.');
    expect(failure(() => readText(td("09/03/2025,FEE,1.00,2.00,99.00"), { preset: "td" }))).toMatch(/^Line 2: both a debit \(column 3\) and a credit \(column 4\)/);
    expect(failure(() => readText(td("09/03/2025,FEE,,,99.00"), { preset: "td" }))).toBe("Line 2: no amount (columns 3 and 4 are empty).");
    expect(readText(td("09/03/2025,,1.00,,99.00"), { preset: "td" }).rows[1].description).toBe("(no description)");
    expect(failure(() => readText(td('09/03/2025,"FEE,1.00,,99.00'), { preset: "td" }))).toMatch(/not valid CSV/);
  });

  it("not a statement at all", () => {
    expect(failure(() => readBankFile(Buffer.from([0x50, 0x4b, 0x03, 0x04, 0x00, 0x00])))).toMatch(/not a text file/);
    expect(failure(() => readText(""))).toMatch(/^The file holds no transactions/);
    expect(failure(() => readText("Date,Description,Amount\n"))).toBe("The file holds no transactions (no line has a date or an amount).");
    expect(failure(() => readText("Dear customer,\nyour statement is attached.\n"))).toBe("The file holds no transactions (no line has a date or an amount).");
    expect(failure(() => readText("OFXHEADER:100\n\n<OFX><BANKMSGSRSV1></BANKMSGSRSV1></OFX>"))).toMatch(/no bank or credit-card statement/);
    const badOfx = sample("chequing_sample_ofx102.ofx").toString().replace("<DTPOSTED>20250903120000.000[-4:EDT]", "<DTPOSTED>2025-09-03");
    expect(failure(() => readText(badOfx))).toBe('Line 53: "2025-09-03" is not an OFX date (YYYYMMDD…) in <DTPOSTED>.');
  });
});

describe("dates the books take: 1900-01-01 to 2199-12-31", () => {
  it("a date outside them names its line, in a CSV and in an OFX file", () => {
    expect(failure(() => readText("2025-09-02,FEE,-1.00\n2500-09-03,FEE,-2.00\n2025-09-04,DEPOSIT,3.00\n")))
      .toBe('Line 2: "2500-09-03" is outside the dates the books take (1900-01-01 to 2199-12-31).');
    expect(failure(() => readText("09/02/2025,FEE,-1.00\n12/31/2200,FEE,-2.00\n09/15/2025,DEPOSIT,3.00\n")))
      .toBe('Line 2: "12/31/2200" is outside the dates the books take (1900-01-01 to 2199-12-31).');
    expect(failure(() => readText("1899-12-31,FEE,-1.00\n2025-09-04,DEPOSIT,3.00\n")))
      .toBe('Line 1: "1899-12-31" is outside the dates the books take (1900-01-01 to 2199-12-31).');
    expect(readText("2199-12-31,FEE,-1.00\n1900-01-01,DEPOSIT,3.00\n").rows.map((r) => r.transactionDate)).toEqual(["2199-12-31", "1900-01-01"]);
    const ofx = sample("chequing_sample_ofx102.ofx").toString().replace("<DTPOSTED>20250903120000.000[-4:EDT]", "<DTPOSTED>22000903");
    expect(failure(() => readText(ofx))).toBe('Line 53: <DTPOSTED> "22000903" is outside the dates the books take (1900-01-01 to 2199-12-31).');
  });
});

describe("--preset and --map", () => {
  it("--map by column numbers or header names, `+` joining description columns", () => {
    const byNumber = read("td_chequing_sample.csv", { map: "date=1,description=2,debit=3,credit=4" });
    expect(byNumber.rows).toEqual(read("td_chequing_sample.csv").rows);
    const byName = read("rbc_chequing_sample.csv", { map: "date=Transaction Date,description=Description 1+Description 2,amount=cad$" });
    expect(byName.rows).toEqual(read("rbc_chequing_sample.csv").rows);
    const withReference = read("rbc_chequing_sample.csv", { map: "date=3,description=5,amount=7,reference=4" });
    expect(withReference.rows[2]).toMatchObject({ description: "Cheque - 104", reference: "104" });
    expect(withReference.rows[0].reference).toBeUndefined();
  });

  it("refuses a map that is incomplete or names what is not there, and a preset with a map", () => {
    expect(failure(() => read("td_chequing_sample.csv", { map: "date=1,description=2" }))).toMatch(/^--map needs date, description and either amount or both debit and credit/);
    expect(failure(() => read("td_chequing_sample.csv", { map: "date=1,description=2,amount=Amount" }))).toMatch(/the file has no header row, so give column numbers/);
    expect(failure(() => read("rbc_chequing_sample.csv", { map: "date=Date,description=5,amount=7" }))).toMatch(/^--map: no column is named "Date"; the header row has "Account Type"/);
    expect(failure(() => read("td_chequing_sample.csv", { map: "when=1" }))).toMatch(/^--map: "when=1" is not FIELD=COL/);
    expect(failure(() => read("td_chequing_sample.csv", { preset: "bmo" }))).toBe('--preset must be one of rbc, td, cibc (got "bmo").');
    expect(failure(() => read("td_chequing_sample.csv", { preset: "td", map: "date=1,description=2,amount=3" }))).toBe("Give --preset or --map, not both.");
    expect(failure(() => read("chequing_sample_ofx102.ofx", { preset: "td" }))).toMatch(/^The file is OFX/);
  });

  it("a preset skips a header row when the export has one (CIBC sometimes does)", () => {
    const withHeader = Buffer.concat([Buffer.from("Date,Description,Debit,Credit,Card\n"), sample("cibc_credit_card_sample.csv")]);
    expect(readBankFile(withHeader, { preset: "cibc" }).rows.map(({ line: _l, ...r }) => r))
      .toEqual(read("cibc_credit_card_sample.csv").rows.map(({ line: _l, ...r }) => r));
  });
});

describe("event types (Behavior rule 8)", () => {
  it.each([
    ["PAYMENT THANK YOU/PAIEMENT MERCI", "900.00", "transfer"],
    ["TFR-TO C/C", "-650.00", "transfer"],
    ["Online Banking transfer - 3310 TRANSFER TO CREDIT CARD", "-1200.00", "transfer"],
    ["CARD LOAD FROM CHEQUING", "200.00", "transfer"],
    ["Misc Payment PROCESSOR PAYOUT", "1056.54", "transfer"],
    ["Interest", "0.42", "income"],
    ["CASHBACK REWARD", "12.00", "income"],
    ["INTEREST CHARGE", "-3.10", "expense"],
    ["e-Transfer received Autodeposit INV-0998", "565.00", "income"],
    ["SEND E-TFR ***4kP", "-480.00", "expense"],
    ["INTERAC E-TRANSFER TO J SMITH", "-50.00", "expense"],
    ["CLOUD HOSTING CO", "-64.99", "expense"],
    ["LOAN PAYMENT", "-387.11", "expense"],
  ])("%s %s → %s", (description, amount, type) => {
    expect(eventTypeFor(description, amount)).toBe(type);
  });

  it("an OFX XFER is a transfer", () => {
    expect(eventTypeFor("ONLINE 4412", "-100.00", "XFER")).toBe("transfer");
  });
});

describe("amounts", () => {
  it.each([
    ["19", "19.00"], ["19.5", "19.50"], ["-19.00", "-19.00"], ["1,250.00", "1250.00"], ["$1,250", "1250.00"],
    ["(42.10)", "-42.10"], ["42.10-", "-42.10"], ["−3.00", "-3.00"], ["+7.25", "7.25"], [".5", "0.50"], ["0012.3400", "12.34"], ["-0.00", "0.00"],
  ])("%s → %s", (cell, value) => {
    expect(parseAmount(cell)).toEqual({ value });
  });

  it.each(["", "abc", "1.2.3", "12,34", "1.234", "CAD$", "-"])("%j is refused", (cell) => {
    expect(parseAmount(cell).value).toBeUndefined();
  });

  it("a zero amount is left out with a warning", () => {
    const { rows, warnings } = readText("2025-09-02,FEE,1.00\n2025-09-03,INFO,0.00\n2025-09-04,FEE,-1.00\n");
    expect(rows).toHaveLength(2);
    expect(warnings).toContain("Line 2: the amount is 0.00; the row is left out.");
  });
});
