import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { readBankFile, type StatementRow } from "../src/imports/bank-files/index.js";
import { amountShape, parseAmount } from "../src/imports/bank-files/amounts.js";
import { isDateShaped, parseDate, parseDateFormatOption } from "../src/imports/bank-files/dates.js";
import { failure, readText } from "./helpers/bank-file-reading.js";

/* Defects a review's probes found in the bank-file readers: each is refused or read right, and fast. */

const fixture = (name: string) => readFileSync(`test/fixtures/bank-formats/${name}`);
const brief = (rows: StatementRow[]) => rows.map((r) => [r.transactionDate, r.amount, r.description]);

/** Milliseconds `f` takes. 2 s is far above the few milliseconds a linear read takes, and far below the quadratic minutes. */
function elapsed(f: () => unknown): number {
  const start = performance.now();
  f();
  return performance.now() - start;
}
const SLOW = 2000;

/** An MT940 statement of one :61: line (10.00 out) and its :86:. */
const mt940 = (details: string, { date = "250131", opening = "100,00", closing = "90,00" } = {}) =>
  `:20:STMT1\n:25:NL00INVT0123456789\n:60F:C${date}EUR${opening}\n:61:${date}D10,00NTRFNONREF//X1\n:86:${details}\n:62F:C${date}EUR${closing}\n-\n`;

describe("long runs of spaces or digits are read in linear time", () => {
  const spaces = " ".repeat(200_000);

  it("a CSV description cell of 200,000 spaces between two letters", () => {
    const text = `Date,Description,Amount\n2025-01-02,A${spaces}B,-4.50\n2025-01-03,Coffee,1.00\n`;
    let rows: StatementRow[] = [];
    expect(elapsed(() => { rows = readText(text).rows; })).toBeLessThan(SLOW);
    expect(rows.map((r) => r.amount)).toEqual(["-4.50", "1.00"]);
  });

  it("one long cell tried as an amount and as a date: neither", () => {
    for (const cell of [`1${spaces}x`, `A${spaces}-`, `12.00${spaces}EU`, `2025-01-01${spaces}1:00x`, `1,${spaces}1:00 PM x`, `1.${"0".repeat(200_000)}1`]) {
      expect(elapsed(() => {
        expect(amountShape(cell)).toBeUndefined();
        expect(parseAmount(cell).problem).toBe("is not an amount");
        expect(isDateShaped(cell)).toBe(false);
      })).toBeLessThan(SLOW);
    }
    expect(elapsed(() => expect(() => parseDateFormatOption(`DD/MM/YYYY${spaces}X`)).toThrow(/^--date-format must be one of/))).toBeLessThan(SLOW);
  });

  it("an MT940 file with a 200,000-character :86: line", () => {
    let rows: StatementRow[] = [];
    expect(elapsed(() => { rows = readText(mt940(`A${spaces}B`)).rows; })).toBeLessThan(SLOW);
    expect(rows.map((r) => r.amount)).toEqual(["-10.00"]);
  });

  it("an MT940 amount or balance with 200,000 decimals: refused, quickly", () => {
    const zeros = "0".repeat(200_000);
    expect(elapsed(() => expect(failure(() => readText(mt940("X").replace("D10,00", `D10,${zeros}1`)))).toMatch(/^Line 4: the amount 10,0{37} has more than 2 decimals\.$/)))
      .toBeLessThan(SLOW);
    expect(elapsed(() => expect(failure(() => readText(mt940("X", { opening: `100,${zeros}1` })))).toMatch(/^Line 6: the statement STMT1's opening balance 100\.0{20}/)))
      .toBeLessThan(SLOW);
  });
});

describe("a sign inside parentheses", () => {
  it("is no amount: (-12.00) is negative twice, never read as money in", () => {
    for (const cell of ["(-12.00)", "(12.00-)", "(+12.00)", "(−12.00)", "(-$12.00)"]) {
      expect(parseAmount(cell).problem).toMatch(/^is not an amount: it has both parentheses and a sign/);
    }
    expect(parseAmount("(12.00)").value).toBe("-12.00");
    expect(parseAmount("($1,234.50)").value).toBe("-1234.50");
    expect(failure(() => readText("Date,Text,Amount\n2025-01-02,A,(-12.00)\n2025-01-03,B,(2.00)\n")))
      .toBe('Line 2: "(-12.00)" in column 3 is not an amount: it has both parentheses and a sign (-12.00 or (12.00), not both).');
  });
});

describe("two-digit dates that read with the year first as well as last", () => {
  const probe = "24/12/05,Coffee,-4.50\n24/12/19,Pay,100.00\n25/01/03,Rent,-900.00\n";

  it("are refused naming --date-format, never read as D/M/YY in silence", () => {
    expect(failure(() => readText(probe))).toBe('The dates (e.g. "24/12/05") read as day/month/year (2005-12-24) and as year/month/day (2024-12-05): ' +
      "no date in the file settles which. Say which with --date-format D/M/YY or --date-format YY/MM/DD (any separator, e.g. --date-format YY-MM-DD).");
    expect(failure(() => readText("01/02/03,Coffee,-4.50\n"))).toMatch(/read as month\/day\/year \(2003-01-02\), day\/month\/year \(2003-02-01\) and as year\/month\/day \(2001-02-03\).*--date-format M\/D\/YY, --date-format D\/M\/YY or --date-format YY\/MM\/DD/);
  });

  it("--date-format YY/MM/DD (any separator) reads them; D/M/YY reads them the other way", () => {
    for (const format of ["YY/MM/DD", "yy-mm-dd", "YY.MM.DD HH:mm"]) expect(parseDateFormatOption(format)).toBe("YMD");
    expect(brief(readText(probe, { dateFormat: "YY/MM/DD" }).rows).map((r) => r[0])).toEqual(["2024-12-05", "2024-12-19", "2025-01-03"]);
    expect(brief(readText(probe, { dateFormat: "DD/MM/YY" }).rows).map((r) => r[0])).toEqual(["2005-12-24", "2019-12-24", "2003-01-25"]);
    expect(failure(() => parseDateFormatOption("YY/DD/MM"))).toMatch(/^--date-format must be one of M\/D\/YYYY, D\/M\/YYYY, YYYY-MM-DD, YY\/MM\/DD,/);
  });

  it("a date the other reading cannot be settles it; four-digit years and dotted dates read as before", () => {
    // 99 is no day: year first. 31/12/45: 45 is no day, year last.
    expect(brief(readText("99/12/05,A,-1.00\n24/12/19,B,2.00\n").rows).map((r) => r[0])).toEqual(["1999-12-05", "2024-12-19"]);
    expect(brief(readText("31/12/45,A,-1.00\n24/12/19,B,2.00\n").rows).map((r) => r[0])).toEqual(["2045-12-31", "2019-12-24"]);
    expect(brief(readText("24/12/2005,A,-1.00\n25/01/2003,B,2.00\n").rows).map((r) => r[0])).toEqual(["2005-12-24", "2003-01-25"]);
    expect(brief(readText("Date,Text,Amount\n31.12.24,A,-1.00\n03.04.25,B,2.00\n").rows).map((r) => r[0])).toEqual(["2024-12-31", "2025-04-03"]);
    expect(parseDate("24-12-05", "YMD")).toBe("2024-12-05");
    expect(parseDate("2024-12-05", "YMD")).toBe("2024-12-05");
  });
});

describe("OFX: what follows </OFX>", () => {
  it("a second OFX document is refused, naming where it begins", () => {
    expect(failure(() => readBankFile(fixture("hardening-two-documents.ofx"))))
      .toBe("The file holds a second OFX document from line 67, after the first one's </OFX> on line 65: its transactions would be left out. Import each as a file of its own.");
    const xml = readFileSync("test/fixtures/ofx/sloppy_xml.ofx", "utf8");
    expect(failure(() => readText(xml + xml))).toMatch(/^The file holds a second OFX document from line 33, after the first one's <\/OFX> on line 32:/);
    // The first never closed: its <OFX> is no aggregate to close and go on from.
    const unclosed = fixture("hardening-two-documents.ofx").toString("utf8").replace("</OFX>", "");
    expect(failure(() => readText(unclosed))).toBe("The file holds a second OFX document from line 67, before the first one's </OFX>: its transactions would be left out. Import each as a file of its own.");
  });

  it("a transaction after </OFX> is refused; other text after it is a warning", () => {
    const one = fixture("hardening-two-documents.ofx").toString("utf8").split("\n").slice(0, 65).join("\n");
    expect(failure(() => readText(`${one}\n<STMTTRN>\n<TRNAMT>-5.00\n</STMTTRN>\n`)))
      .toMatch(/^Line 66: a transaction \(<STMTTRN>\) follows <\/OFX> \(line 65\), outside the statement: it would be left out\./);
    const file = readText(`${one}\nexported by MyBank\n`);
    expect(file.rows).toHaveLength(3);
    expect(file.warnings).toContain("Line 65: what follows </OFX> is ignored.");
  });
});

describe("camt.053: the status in <Sts>, <Sts><Cd> or <Sts><Prtry>", () => {
  it("pending (PDNG) and information-only (INFO) entries are left out, booked ones read; the balances agree", () => {
    const file = readBankFile(fixture("hardening-proprietary-status.camt053.xml"));
    expect(brief(file.rows)).toEqual([["2025-01-10", "-320.25", "Bookkeeping December"], ["2025-01-20", "2000.00", "Seeblick Hotel"]]);
    expect(file.warnings).toEqual([
      "Line 26 (entry 3): the entry is pending, not booked; it is left out.",
      "Line 33 (entry 4): the entry is of status INFO, not booked; it is left out.",
    ]);
  });

  it("a status written in an element it does not know is refused, not taken for booked", () => {
    const text = fixture("hardening-proprietary-status.camt053.xml").toString("utf8").replace("<Prtry>PDNG</Prtry>", "<Other>PDNG</Other>");
    expect(failure(() => readText(text))).toMatch(/^Line 26 \(entry 3\): the entry's status \(<Sts>\) holds neither a code \(<Cd>\) nor a proprietary one \(<Prtry>\)/);
  });
});

describe("MT940's two-digit years follow the CSV rule: 00–69 are 2000–2069, 70–99 1970–1999", () => {
  it.each([["690131", "2069-01-31"], ["700131", "1970-01-31"], ["790131", "1979-01-31"], ["991231", "1999-12-31"], ["250131", "2025-01-31"]])("%s → %s", (date, iso) => {
    expect(readText(mt940("X", { date })).rows[0].transactionDate).toBe(iso);
  });
});
