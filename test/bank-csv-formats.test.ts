import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parseAmount } from "../src/imports/bank-files/amounts.js";
import { detectDelimiter } from "../src/imports/bank-files/csv.js";
import { parseDate, parseDateFormatOption } from "../src/imports/bank-files/dates.js";
import { readBankFile, readBankStatementFile, type StatementRow } from "../src/imports/bank-files/index.js";
import { failure, readText } from "./helpers/bank-file-reading.js";

const fixture = (name: string) => `test/fixtures/bank-csv/${name}`;
const brief = (rows: StatementRow[]) => rows.map((r) => [r.transactionDate, r.description, r.amount]);

describe("separators", () => {
  it.each([
    ["a,b,c\n1,2,3\n", ","], ["a;b;c\n1;2,5;3\n", ";"], ["a\tb\tc\n1\t2\t3\n", "\t"], ["a|b|c\n1|2|3\n", "|"],
    ['"x;y;z",b,c\n"1;2",2,3\n', ","], ["Date;Text;Amount\n01.02.2025;Coffee;-12,50\n02.02.2025;Tea;-1,50\n", ";"],
  ])("%j is %j-separated", (text, delimiter) => {
    expect(detectDelimiter(text)).toBe(delimiter);
  });

  it("a semicolon file with decimal commas, quoted semicolons and an Amount (EUR) header reads, in EUR, streamed or whole", async () => {
    const file = await readBankStatementFile(fixture("semicolon_decimal_comma.csv"));
    expect(brief(file.rows)).toEqual([
      ["2025-01-02", "BAECKEREI MUELLER", "-12.50"], ["2025-01-03", "GEHALT JANUAR", "2345.67"], ["2025-01-04", "MIETE; WOHNUNG", "-1100.00"],
    ]);
    expect(file.currency).toBe("EUR");
    expect(file.layout).toContain("decimal comma; semicolon-separated");
    expect(readBankFile(readFileSync(fixture("semicolon_decimal_comma.csv"))).rows).toEqual(file.rows);
  });

  it("--delimiter overrides the detection; a one-field file names --delimiter", () => {
    expect(readText("2025-01-02|COFFEE|-3.50\n", { delimiter: "pipe" }).rows[0].amount).toBe("-3.50");
    expect(failure(() => readText("2025-01-02|COFFEE|-3.50\n", { delimiter: "," }))).toMatch(/give --delimiter/);
    expect(failure(() => readText("a,b\n", { delimiter: "colon" }))).toMatch(/^--delimiter must be one of/);
  });
});

describe("amounts as banks write them", () => {
  it.each([
    ["1.234,56", "comma", "1234.56"], ["-12,50", "comma", "-12.50"], ["1,234.56", "point", "1234.56"], ["1 234,56", "comma", "1234.56"],
    ["1'234.56", "point", "1234.56"], ["$12.00", "point", "12.00"], ["-€12,50", "comma", "-12.50"], ["12.50 EUR", "point", "12.50"],
    ["CAD 12.00", "point", "12.00"], ["12.50-", "point", "-12.50"], ["($1,000.00)", "point", "-1000.00"], ["12.500", "point", "12.50"],
    ["1.234.567,8", "comma", "1234567.80"], ["€ -3,00", "comma", "-3.00"],
  ] as const)("%s (decimal %s) → %s", (cell, decimal, value) => {
    expect(parseAmount(cell, { decimal }).value).toBe(value);
  });

  it("a code gives the currency", () => {
    expect(parseAmount("12.50 EUR")).toEqual({ value: "12.50", currency: "EUR" });
    expect(parseAmount("12.50 EUR", { decimal: "point" }).currency).toBe("EUR");
    expect(parseAmount("EUR 12.50 USD").value).toBeUndefined();
  });

  it("the mark is settled per column, never per cell; an ambiguous column names --decimal", () => {
    expect(readText("Date,Text,Amount\n2025-01-02,A,\"-1,234\"\n2025-01-03,B,12.50\n").rows.map((r) => r.amount)).toEqual(["-1234.00", "12.50"]);
    expect(readText("Date;Text;Amount\n2025-01-02;A;-1.234\n2025-01-03;B;12,50\n").rows.map((r) => r.amount)).toEqual(["-1234.00", "12.50"]);
    expect(failure(() => readText("Date,Text,Amount\n2025-01-02,A,\"-1,234\"\n2025-01-03,B,\"2,500\"\n"))).toMatch(/reads two ways.*--decimal point.*--decimal comma/);
    expect(readText("Date,Text,Amount\n2025-01-02,A,\"-1,234\"\n2025-01-03,B,\"2,500\"\n", { decimal: "point" }).rows.map((r) => r.amount)).toEqual(["-1234.00", "2500.00"]);
    expect(readText("Date,Text,Amount\n2025-01-02,A,\"-1,23\"\n2025-01-03,B,\"2,5\"\n", { decimal: "comma" }).rows.map((r) => r.amount)).toEqual(["-1.23", "2.50"]);
    expect(failure(() => readText("Date,Text,Amount\n2025-01-02,A,\"-1,25\"\n2025-01-03,B,1.50\n"))).toMatch(/decimal comma.*decimal point.*--decimal comma or --decimal point/);
    expect(failure(() => readText("a,b\n", { decimal: "dot-ish" }))).toMatch(/^--decimal must be comma or point/);
  });

  it("more than 2 decimals is refused unless the extra digits are zeros: never rounded", () => {
    expect(failure(() => readText("Date,Text,Amount\n2025-01-02,A,-12.345\n2025-01-03,B,1.50\n"))).toBe('Line 2: "-12.345" in column 3 has more than 2 decimals.');
    expect(readText("Date,Text,Amount\n2025-01-02,A,-12.340\n2025-01-03,B,1.500\n", { decimal: "point" }).rows.map((r) => r.amount)).toEqual(["-12.34", "1.50"]);
  });
});

describe("dates as banks write them", () => {
  it.each([
    ["2025-01-01 10:00:01", "YMD", "2025-01-01"], ["01/02/2025 13:45", "DMY", "2025-02-01"], ["2025-01-03T09:00:00Z", "YMD", "2025-01-03"],
    ["2025-01-03T23:30:00+01:00", "YMD", "2025-01-03"], ["31.12.2024", "DMY", "2024-12-31"], ["31.12.24", "DMY", "2024-12-31"],
    ["01/02/69", "MDY", "2069-01-02"], ["01/02/70", "MDY", "1970-01-02"], ["5 Jan 2025", "MDY", "2025-01-05"], ["05-Jan-25", "DMY", "2025-01-05"],
    ["Jan 5, 2025", "YMD", "2025-01-05"], ["1/2/2025 1:45 PM", "MDY", "2025-01-02"],
  ] as const)("%s (%s) → %s", (cell, order, iso) => {
    expect(parseDate(cell, order)).toBe(iso);
  });

  it("--date-format takes any separator, two-digit years and a time part", () => {
    expect(parseDateFormatOption("DD.MM.YYYY")).toBe("DMY");
    expect(parseDateFormatOption("dd.mm.yy")).toBe("DMY");
    expect(parseDateFormatOption("MM/DD/YYYY HH:mm:ss")).toBe("MDY");
    expect(parseDateFormatOption("YYYY-MM-DDTHH:MM")).toBe("YMD");
    expect(parseDateFormatOption("YY-MM-DD")).toBe("YMD");
    expect(() => parseDateFormatOption("MM-YY-DD")).toThrow(/^--date-format must be one of/);
  });

  it("dotted dates are day-first", () => {
    expect(readText("Date,Text,Amount\n01.02.2025,A,-1.00\n03.04.25,B,2.00\n").rows.map((r) => r.transactionDate)).toEqual(["2025-02-01", "2025-04-03"]);
  });

  it("date-time cells read, with --date-format too", () => {
    const text = "Date,Text,Amount\n01/02/2025 13:45,A,-1.00\n03/04/2025 08:00:00,B,2.00\n";
    expect(failure(() => readText(text))).toMatch(/--date-format M\/D\/YYYY or --date-format D\/M\/YYYY/);
    expect(readText(text, { dateFormat: "DD/MM/YYYY HH:mm" }).rows.map((r) => r.transactionDate)).toEqual(["2025-02-01", "2025-04-03"]);
  });

  it("a tab file with date-times, $ amounts and parentheses", async () => {
    const file = await readBankStatementFile(fixture("tab_datetime.csv"));
    expect(brief(file.rows)).toEqual([["2025-01-01", "COFFEE SHOP", "12.00"], ["2025-01-02", "REFUND", "1234.56"], ["2025-01-03", "RENT", "-900.00"]]);
    expect(file.currency).toBeNull();
  });

  it("a pipe file with DD.MM.YY dates, trailing minus, apostrophe thousands and a Currency column", async () => {
    const file = await readBankStatementFile(fixture("pipe_dotted_yy.csv"));
    expect(brief(file.rows)).toEqual([["2025-01-05", "SUPERMARKT", "-12.50"], ["2025-01-06", "ERSTATTUNG", "1234.50"]]);
    expect(file.currency).toBe("EUR");
    expect(failure(() => readText("Date,Text,Amount,Currency\n2025-01-02,A,-1.00,EUR\n2025-01-03,B,2.00,USD\n"))).toMatch(/^Line 3: the amount is in USD/);
  });
});

describe("other shapes", () => {
  it("continuation lines (DBS: ',,details' below each row) become the row's memo; dates ending in a dot (2019.04.19.)", () => {
    const { rows, warnings } = readText("Date,Value date,Description,Withdrawals (SGD),Deposits (SGD)\n18/04/2018,18/04/2018,DEBIT PURCHASE,6.66,\n,,UBER EATS\n" +
      "17/04/2018,17/04/2018,SALARY,,100.00\n,,ACME PTE\n");
    expect(rows.map((r) => [r.description, r.amount, r.memo, r.currency])).toEqual([["DEBIT PURCHASE", "-6.66", "UBER EATS", "SGD"], ["SALARY", "100.00", "ACME PTE", "SGD"]]);
    expect(warnings[0]).toMatch(/^2 lines with neither a date nor an amount/);
    expect(readText("Date,Text,Amount\n2019.04.19.,A,-350\n2019.04.17.,B,1290\n").rows.map((r) => r.transactionDate)).toEqual(["2019-04-19", "2019-04-17"]);
  });

  it("a preamble with balances above the header, and balance lines, are not transactions", () => {
    const { rows, warnings } = readText("Account Number : 0808,: EUR,,,,\nBalance at end of period,,,,\"+31070,11\",\nDate,Operation Number,Label,Debit,Credit,Detail\n" +
      "13/04/20,OP 1,LABEL 1,\"-50,00\",,DETAILS 1\n14/04/20,OP 2,LABEL 2,,\"1300,00\",DETAILS 2\nBalance at start of period,,,,\"+30000,77\",\n",
      { dateFormat: "D/M/YY" }); // 13/04/20 is also 2013-04-20: the file does not settle it
    expect(rows.map((r) => [r.transactionDate, r.description, r.amount])).toEqual([["2020-04-13", "LABEL 1", "-50.00"], ["2020-04-14", "LABEL 2", "1300.00"]]);
    expect(warnings).toContain("Left out as balance or total lines (no date): line 6.");
  });
});

describe("two wrong imports that are now refused", () => {
  it("amounts already signed beside a DR/CR column: the indicator mapping is refused, never turning debits into money in", async () => {
    const message = await readBankStatementFile(fixture("signed_with_indicator.csv"), { map: "date=1,description=3,amount=4,indicator=5" })
      .then(() => "read", (e: Error) => e.message);
    expect(message).toMatch(/already signed \(every one of the 2 debit rows is negative\).*Drop indicator=COL.*amount=4/);
    const signed = await readBankStatementFile(fixture("signed_with_indicator.csv"), { map: "date=1,description=3,amount=4" });
    expect(signed.rows.map((r) => r.amount)).toEqual(["-12.00", "500.00", "-30.00"]);
    // Detected: amounts signed as the words say are read as signed (Chase's Details column); the suggestion is checked before it is made.
    expect(readText("2025-01-02,GROCER,-12.00,DR\n2025-01-04,PAYROLL,500.00,CR\n").rows.map((r) => r.amount)).toEqual(["-12.00", "500.00"]);
    expect(readText("Details,Posting Date,Description,Amount\nDEBIT,3/18/2016,PAYMENT,-2680.89\nCREDIT,3/15/2016,DIRECT DEP,2590.73\n").rows.map((r) => [r.description, r.amount]))
      .toEqual([["PAYMENT", "-2680.89"], ["DIRECT DEP", "2590.73"]]);
    expect(readText("Date,Text,Amount,DR/CR\n2025-01-02,GROCER,-12.00,DR\n2025-01-04,PAYROLL,500.00,CR\n").rows.map((r) => r.amount)).toEqual(["-12.00", "500.00"]);
    expect(failure(() => readText("2025-01-02,GROCER,-12.00,DR\n2025-01-04,PAYROLL,-500.00,CR\n2025-01-05,SHOP,-1.00,DR\n")))
      .toMatch(/already signed \(every one of the 2 debit rows is negative, and 1 credit rows too\).*--map date=1,description=2,amount=3\./);
    expect(failure(() => readText("2025-01-02,GROCER,12.00,DR\n2025-01-04,PAYROLL,500.00,CR\n"))).toMatch(/--map date=1,description=2,amount=3,indicator=4 /);
  });

  it("a description is never a column of dates or amounts", () => {
    const { rows, layout } = readText("Posting Date,Value Date,Amount,Reference\n2025-01-02,2025-01-03,-12.00,COFFEE SHOP\n2025-01-04,2025-01-05,-3.00,BAKERY\n");
    expect(layout).toContain('description "Reference" (column 4)');
    expect(rows.map((r) => r.description)).toEqual(["COFFEE SHOP", "BAKERY"]);
    expect(failure(() => readText("Date,Value Date,Amount\n2025-01-02,2025-01-03,-12.00\n2025-01-04,2025-01-05,-3.00\n"))).toMatch(/^No column holds descriptions/);
    expect(failure(() => readText("Date,Value Date,Amount\n2025-01-02,2025-01-03,-12.00\n", { map: "date=1,description=2,amount=3" })))
      .toMatch(/^column 2 \("Value Date"\) holds dates, not descriptions: give --map/);
  });
});

describe("budgeting apps' exports (holdout defects, invented samples)", () => {
  it("Outflow/Inflow columns whose unused side is 0.000 (three zero decimals) read as split columns; a colour Flag column is no indicator", () => {
    const file = readBankFile(readFileSync(fixture("budget_outflow_inflow_3dp.csv")));
    expect(brief(file.rows)).toEqual([["2024-03-04", "Corner Grocer", "-12.34"], ["2024-03-05", "Payroll Inc", "1500.00"], ["2024-03-07", "Bean Cafe", "-3.50"]]);
    expect(file.layout).toContain('debit "Outflow" (column 8) (money out), credit "Inflow" (column 9) (money in)');
    expect(file.layout).not.toContain("Flag");
  });

  it("a zero written with any number of zero decimals is empty in the side a row does not use, and settles a decimal point", () => {
    expect(parseAmount("0.000", { decimal: "point" }).value).toBe("0.00");
    expect(readText("Date,Text,Debit,Credit\n2025-01-02,A,12.500,0.000\n2025-01-03,B,0.0000,1.250\n").rows.map((r) => r.amount)).toEqual(["-12.50", "1.25"]);
    expect(readText("Date;Text;Debit;Credit\n2025-01-02;A;12,500;0,000\n2025-01-03;B;0,000;1,250\n").rows.map((r) => r.amount)).toEqual(["-12.50", "1.25"]);
    // Without a zero to settle it, 12.500 still reads two ways.
    expect(failure(() => readText("Date,Text,Amount\n2025-01-02,A,-12.500\n2025-01-03,B,1.250\n"))).toMatch(/reads two ways/);
  });

  it("currency signs of any script and right-to-left direction marks around an amount (a dinar written د.ا.‏4.750)", () => {
    const rlm = "\u200f";
    expect(parseAmount(`د.ا.${rlm}4.750`, { decimal: "point" }).value).toBe("4.75");
    expect(parseAmount(`${rlm}-12.50 ر.س`, { decimal: "point" }).value).toBe("-12.50");
    expect(parseAmount("₪12.00").value).toBe("12.00");
    expect(parseAmount("A12").problem).toBe("is not an amount");
    const text = `Date,Payee,Outflow,Inflow\n2024/03/04,Grocer,د.ا.${rlm}4.750,د.ا.${rlm}0.000\n2024/03/05,Payroll,د.ا.${rlm}0.000,د.ا.${rlm}100.000\n`;
    expect(brief(readText(text).rows)).toEqual([["2024-03-04", "Grocer", "-4.75"], ["2024-03-05", "Payroll", "100.00"]]);
  });

  it("an Indicator or Flag column is an indicator only when every row holds a DR/CR word", () => {
    expect(readText("Date,Description,Amount,Flag\n2025-09-02,FEE,19.00,DR\n2025-09-03,DEPOSIT,50.00,CR\n").rows.map((r) => r.amount)).toEqual(["-19.00", "50.00"]);
    const { rows, layout } = readText("Date,Description,Amount,Flag\n2025-09-02,FEE,-19.00,Red\n2025-09-03,DEPOSIT,50.00,\n");
    expect(rows.map((r) => r.amount)).toEqual(["-19.00", "50.00"]);
    expect(layout).toContain('amount "Amount" (column 3) (signed)');
  });

  it("a row whose description is empty is described by its category (or memo), else '(no description)', with one warning: never refused", () => {
    const file = readBankFile(readFileSync(fixture("budget_app_empty_notes.csv")));
    expect(brief(file.rows)).toEqual([
      ["2024-03-14", "farmers market", "-42.00"], ["2024-03-14", "Taxi", "-18.50"], ["2024-03-15", "march pay", "2100.25"], ["2024-03-18", "Gifts", "-30.00"],
    ]);
    expect(file.warnings.filter((w) => /description is empty/.test(w))).toEqual(['Lines 3, 5: the description is empty; described by column 3 ("category"), else as "(no description)".']);
    const none = readText("Date,Description,Amount\n2025-01-02,,-12.00\n2025-01-03,BAKERY,-3.00\n");
    expect(brief(none.rows)).toEqual([["2025-01-02", "(no description)", "-12.00"], ["2025-01-03", "BAKERY", "-3.00"]]);
    expect(none.warnings).toContain('Line 2: the description is empty; described as "(no description)".');
    const memo = readText("Date,Description,Amount,Memo\n2025-01-02,,-12.00,lunch\n2025-01-03,BAKERY,-3.00,\n", { map: "date=1,description=2,amount=3,memo=4" });
    expect(brief(memo.rows)).toEqual([["2025-01-02", "lunch", "-12.00"], ["2025-01-03", "BAKERY", "-3.00"]]);
  });
});

describe("card exports that write purchases positive", () => {
  const card = () => readFileSync(fixture("card_purchases_positive.csv"));

  it("into a credit card account, mostly positive amounts are refused naming --money-out, never booked as payments", () => {
    const message = failure(() => readBankFile(card(), { accountType: "credit_card" }));
    expect(message).toMatch(/credit card and 3 of the 5 amounts in column 3 \("Amount"\) are positive/);
    expect(message).toContain("give --money-out positive");
    expect(message).toContain("give --money-out negative");
  });

  it("--money-out positive turns every amount over: purchases out, payments and refunds in; negative reads as written", () => {
    const out = readBankFile(card(), { accountType: "credit_card", moneyOut: "positive" });
    expect(brief(out.rows)).toEqual([
      ["2025-03-01", "CORNER CAFE", "-4.75"], ["2025-03-03", "HARDWARE DEPOT", "-128.40"], ["2025-03-04", "CORNER CAFE REFUND", "4.75"],
      ["2025-03-10", "ONLINE BOOKS", "-36.99"], ["2025-03-15", "PAYMENT THANK YOU", "150.00"],
    ]);
    expect(out.layout).toContain("money out positive, turned over");
    expect(readBankFile(card(), { accountType: "credit_card", moneyOut: "negative" }).rows.map((r) => r.amount))
      .toEqual(["4.75", "128.40", "-4.75", "36.99", "-150.00"]);
  });

  it("a card file signed from the holder's side needs --money-out negative once (any positive amount could be either); all negative, or a bank account's file, read without it", () => {
    const holderSide = "Date,Description,Amount\n2025-03-01,CORNER CAFE,-4.75\n2025-03-03,HARDWARE DEPOT,-128.40\n2025-03-15,PAYMENT,150.00\n";
    expect(failure(() => readText(holderSide, { accountType: "credit_card" }))).toMatch(/^The payment account is a credit card and 1 of the 3 amounts/);
    expect(readText(holderSide, { accountType: "credit_card", moneyOut: "negative" }).rows.map((r) => r.amount)).toEqual(["-4.75", "-128.40", "150.00"]);
    // One purchase and one payment: nothing in the counts can say which way the file is written.
    expect(failure(() => readText("Date,Description,Amount\n2025-03-01,STARBUCKS,4.50\n2025-03-15,PAYMENT THANK YOU,-4.50\n", { accountType: "credit_card" })))
      .toMatch(/^The payment account is a credit card and 1 of the 2 amounts/);
    expect(readText("Date,Description,Amount\n2025-03-01,CAFE,-4.75\n2025-03-03,DEPOT,-128.40\n", { accountType: "credit_card" }).rows).toHaveLength(2);
    expect(readBankFile(card(), { accountType: "bank" }).rows.map((r) => r.amount)).toEqual(["4.75", "128.40", "-4.75", "36.99", "-150.00"]);
  });

  it("an amount in the merchant's currency (OriginalAmount) is never the account's amount, not even where Amount is empty", () => {
    const text = "Date,Merchant,Amount,Currency,OriginalAmount,OriginalCurrency\n2025-05-05,WINDSURF,-12.90,CHF,-15.00,USD\n2025-05-06,CAFE,,CHF,-4.00,EUR\n";
    expect(failure(() => readText(text))).toBe("Line 3: no amount.");
    const { rows, layout } = readText(text.split("\n").slice(0, 2).join("\n") + "\n");
    expect(rows.map((r) => [r.amount, r.currency])).toEqual([["-12.90", "CHF"]]);
    expect(layout).not.toContain("OriginalAmount");
  });

  it("a card export with only purchases (no negative at all): the card refusal naming --money-out, not a dead end", () => {
    const text = "Merchant Name,Date,Amount\nMOBIL,01/10/2019,36.33\nITUNES,12/15/2018,13.98\n";
    expect(failure(() => readText(text, { accountType: "credit_card" }))).toMatch(/^The payment account is a credit card and 2 of the 2 amounts in column 3 \("Amount"\) are positive/);
    expect(readText(text, { accountType: "credit_card", moneyOut: "positive" }).rows.map((r) => r.amount)).toEqual(["-36.33", "-13.98"]);
    expect(failure(() => readText(text, { accountType: "bank" }))).toMatch(/^Cannot tell money in from money out: "Amount" \(column 3\) holds no negative amount/);
    expect(failure(() => readText("2025-09-02,FEE,19.00\n2025-09-03,CAFE,4.50\n", { accountType: "credit_card" }))).toMatch(/^The payment account is a credit card/);
  });

  it("--money-out is refused where the file says the side itself, and for a bad value", () => {
    const split = "Date,Description,Debit,Credit\n2025-03-01,CAFE,4.75,\n2025-03-15,PAYMENT,,150.00\n";
    expect(failure(() => readText(split, { moneyOut: "positive" }))).toMatch(/^--money-out applies to a single signed amount column; this file's debit and credit columns/);
    expect(failure(() => readBankFile(card(), { moneyOut: "sideways" }))).toBe('--money-out must be positive or negative (got "sideways").');
    expect(failure(() => readBankFile(readFileSync("test/fixtures/bank-formats/statement.sta"), { moneyOut: "positive" }))).toMatch(/--money-out.*apply to CSV files only/);
  });
});

describe("after review: what a file does not say is never assumed", () => {
  it("a row wider than the header (an unquoted decimal comma) is refused, never read as its first half", () => {
    const split = /looks like an amount with a decimal comma split in two by the file's comma separator/;
    expect(failure(() => readText("Date,Description,Amount\n2025-01-05,Coffee,-4,50\n2025-01-06,Pay,100.00\n"))).toMatch(/^Line 2: "-4,50" in column 3 \("Amount"\) looks like/);
    expect(failure(() => readText("2025-01-05,Coffee,-4.50\n2025-01-06,Pay,100,25\n2025-01-07,Rent,-900.00\n"))).toMatch(/^Line 2: "100,25" in column 3 looks like/);
    // The split's cents pushed into an empty Balance column, or a header ending in a separator, or every amount split.
    expect(failure(() => readText("Date,Description,Amount,Balance\n2025-01-02,COFFEE,-4,50,\n2025-01-03,TEA,-3.00,\n"))).toMatch(split);
    expect(failure(() => readText("Date,Description,Amount,\n2025-01-02,COFFEE,-4,50\n2025-01-03,TEA,-3.00\n"))).toMatch(split);
    expect(failure(() => readText("2025-01-02,COFFEE,-4,50\n2025-01-03,TEA,-3,10\n"))).toMatch(split);
    // Empty fields past the header are only a trailing separator (RBC); a preamble line, or text past the last column, is no split amount.
    expect(readText("Date,Description,Amount\n2025-01-05,Coffee,-4.50,,\n").rows[0].amount).toBe("-4.50");
    expect(readText("Account,Chequing 1234\n2025-01-02,COFFEE,-4.50\n2025-01-03,PAY,100.00\n").rows.map((r) => r.amount)).toEqual(["-4.50", "100.00"]);
    expect(readText("Date,Amount,Memo\n2025-01-02,-4.50,TESCO, LONDON\n2025-01-03,100.00,PAY\n").rows.map((r) => r.amount)).toEqual(["-4.50", "100.00"]);
  });

  it("a header wider than every row reads (no crash), the missing columns empty", () => {
    for (const header of ["Date,Description,Amount,DR/CR", "Date,Amount,Memo,Description", "Date,Amount,Memo,Type"]) {
      const message = (() => { try { readText(`${header}\n2025-01-05,Coffee,-4.50\n2025-01-06,Pay,100.00\n`); return "read"; } catch (e) { return e instanceof Error ? e.constructor.name : "?"; } })();
      expect(["read", "BankFileError"]).toContain(message);
    }
  });

  it("a currency written in the cell that its column or row contradicts is refused", () => {
    expect(failure(() => readText("Date,Description,CAD$\n2025-01-02,COFFEE,-4.50 USD\n2025-01-03,PAY,100.00\n"))).toBe(
      'Line 2: "-4.50 USD" is in USD, but column 3 ("CAD$") says CAD: the file contradicts itself about the row\'s currency; correct it, or export the file again.');
    expect(failure(() => readText("Date,Description,Amount,Currency\n2025-01-02,COFFEE,-4.50 USD,EUR\n2025-01-03,PAY,100.00,EUR\n"))).toMatch(/^Line 2: "-4.50 USD" is in USD, but column 4 \("Currency"\) says EUR/);
    expect(readText("Date,Description,Amount,Currency\n2025-01-02,COFFEE,-4.50 EUR,EUR\n2025-01-03,PAY,100.00,EUR\n").currency).toBe("EUR");
  });

  it("DEBIT/CREDIT words agreeing with every sign say the sides: no card refusal, and --money-out refused", () => {
    const text = "Date,Description,Details,Amount\n2025-03-01,CAFE,DEBIT,-4.75\n2025-03-02,PAYMENT,CREDIT,150.00\n2025-03-03,REFUND,CREDIT,20.00\n";
    expect(readText(text, { accountType: "credit_card" }).rows.map((r) => r.amount)).toEqual(["-4.75", "150.00", "20.00"]);
    expect(failure(() => readText(text, { accountType: "credit_card", moneyOut: "positive" })))
      .toBe('--money-out applies to a single signed amount column; this file\'s column 3 ("Details"), whose DEBIT/CREDIT words agree with every sign, already say which rows are money out. Leave --money-out out.');
  });

  it("a saved --money-out positive meeting a file written from the holder's side is refused; given for the file, it is obeyed", () => {
    const holderSide = "Date,Description,Amount\n2025-03-01,BAKERY,-7.25\n2025-03-02,OFFICE SUPPLY,-88.10\n2025-03-15,PAYMENT THANK YOU,200.00\n";
    expect(failure(() => readText(holderSide, { accountType: "credit_card", moneyOut: "positive", fromSavedLayout: true })))
      .toMatch(/^2 of the 3 amounts in column 3 \("Amount"\) are negative as written, but the saved --money-out positive would turn them all over/);
    expect(readText(holderSide, { accountType: "credit_card", moneyOut: "positive" }).rows.map((r) => r.amount)).toEqual(["7.25", "88.10", "-200.00"]);
  });

  it("--map amount=COL holding no negative amount is refused unless --money-out says the signs are as written", () => {
    const text = "Date,Description,Debit,Credit\n2025-01-02,RENT,900.00,0.00\n2025-01-03,COFFEE,4.50,0.00\n2025-01-04,PAY,0.00,100.00\n";
    expect(failure(() => readText(text, { map: "date=1,description=2,amount=3" }))).toMatch(/^column 3 \("Debit"\), mapped as the signed amount, holds no negative amount: every row would be money in/);
    expect(readText("Date,Description,Amount\n2025-01-02,PAYOUT,900.00\n", { map: "date=1,description=2,amount=3", moneyOut: "negative" }).rows[0].amount).toBe("900.00");
  });

  it("a saved layout's CSV flags are passed over, saying so, for the account's OFX, MT940 or camt.053 file; given for the file, refused", () => {
    const ofx = readFileSync("test/fixtures/ofx/bank_and_card.ofx");
    const file = readBankFile(ofx, { decimal: "point", moneyOut: "positive", account: "6655", fromSavedLayout: true });
    expect(file.rows).toHaveLength(2);
    expect(file.warnings[0]).toBe("The saved layout's --decimal, --money-out do not apply to this OFX file: passed over.");
    expect(failure(() => readBankFile(ofx, { decimal: "point" }))).toMatch(/^The file is OFX: .*apply to CSV files only\.$/);
    const mt940 = readBankFile(readFileSync("test/fixtures/bank-formats/statement.sta"), { delimiter: ";", fromSavedLayout: true });
    expect(mt940.warnings[0]).toBe("The saved layout's --delimiter does not apply to this MT940 file: passed over.");
    // A CSV export's saved decimal comma is no QIF download's: the QIF settles its own mark.
    const qif = readBankFile(Buffer.from("!Type:Bank\nD01/20/2025\nT-10.00\nPCAFE\n^\n"), { decimal: "comma", fromSavedLayout: true });
    expect(qif.rows[0].amount).toBe("-10.00");
    expect(qif.warnings[0]).toBe("The saved layout's --decimal does not apply to this QIF file: passed over.");
  });
});
