import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTenant, dataOf, errorOf, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { accountsOf, addAccount, call, CLASSIFY, createEvent, REJECT, type Accounts } from "./ledger-fixtures.js";

/**
 * The closing reports (balanceSheet, trialBalance) on hand-checked books across two fiscal years,
 * then a property over random books.
 *
 * Organization A, fiscal year from 04-01 (FY2025 = 2025-04-01..2026-03-31, FY2026 from 2026-04-01):
 *
 *   a1  2025-05-10 sale 1130.00 incl. HST 13 %      Chequing Dr 1130 / Sales Revenue Cr 1000, GST/HST Payable Cr 130
 *   a2  2025-06-15 stock 226.00, tax 26.00            Cost of Goods Sold Dr 200, GST/HST Payable Dr 26 / Chequing Cr 226
 *   a3  2025-09-01 transfer 400.00 to savings         Savings Dr 400 / Chequing Cr 400
 *   a4  2026-02-20 bank fee 45.00                     Bank Fees & Charges Dr 45 / Chequing Cr 45
 *   a5  2026-03-10 stock 80.00, reversed on 04-15     Cost of Goods Sold Dr 80 / Chequing Cr 80; reversal on 2026-04-15 (FY2026)
 *   a6  2026-03-28 bank fee 40.00, posted on 04-02    Bank Fees & Charges Dr 40 / Chequing Cr 40 on 2026-04-02 (FY2026)
 *   a7  2026-03-31 sale 300.00 (processor)            Processor Clearing Dr 300 / Sales Revenue Cr 300 (FY2025's last day)
 *   a8  2026-04-01 sale 565.00 incl. HST 13 %         Chequing Dr 565 / Sales Revenue Cr 500, GST/HST Payable Cr 65 (FY2026's first day)
 *   a9  2026-05-12 paper 105.00 incl. GST 5 %         Office Supplies Dr 100, GST/HST Payable Dr 5 / Processor Clearing Cr 105
 *   a10 2026-05-20 paper 60.00, reversed on 06-10     Office Supplies Dr 60 / Chequing Cr 60; reversal on 2026-06-10
 *   a11 2026-06-01 sale 999.00, confirmed, rejected   voided: in no report
 *   a12 2026-06-05 owner's drawing 250.00             Owner's Equity Dr 250 / Chequing Cr 250
 *   a13 2026-05-01 expense 77.77 left in needs_review not booked
 *
 * As of 2026-03-31 (FY2025): Chequing 1130 - 226 - 400 - 45 - 80 = 379.00, Processor Clearing 300.00,
 *   Savings 400.00 (assets 1079.00); GST/HST Payable 130 - 26 = 104.00; no equity yet;
 *   current-year earnings (1000 + 300) - (200 + 45 + 80) = 975.00. 1079 = 104 + 0 + 975.
 * As of 2026-04-01 (FY2026's first day): Chequing 379 + 565 = 944.00 (assets 1644.00); GST 104 + 65 = 169.00;
 *   Retained Earnings 975.00 (FY2025's earnings); current-year 500.00. 1644 = 169 + 975 + 500.
 * As of 2026-05-31 (a5's reversal in, a10 not yet reversed): Chequing 944 + 80 - 40 - 60 = 924.00, Processor
 *   Clearing 300 - 105 = 195.00 (assets 1519.00); GST 169 - 5 = 164.00; Retained Earnings 975.00; current-year
 *   500 - (40 - 80 + 160) = 380.00. 1519 = 164 + 975 + 380.
 * As of 2026-06-30: Chequing 924 + 60 - 250 = 734.00 (assets 1329.00); GST 164.00; Owner's Equity -250.00,
 *   Retained Earnings 975.00 (equity 725.00); current-year 500 - (40 - 80 + 100) = 440.00. 1329 = 164 + 725 + 440.
 *   a5's expense is in FY2025's retained earnings and its reversal (Cost of Goods Sold Cr 80) in FY2026's
 *   earnings: net zero in equity, as in Chequing.
 *
 * Organization B, fiscal year from 01-01 (the default):
 *   b1 2025-11-15 sale 1000.00, b2 2025-12-31 stock 200.00, b3 2026-01-01 sale 50.00, b4 2026-03-05 bank fee 30.00, all Chequing.
 *   As of 2026-06-30: Chequing 820.00 = Retained Earnings 800.00 + current-year 20.00.
 *   As of 2025-12-31: Chequing 800.00 = current-year 800.00, no retained earnings.
 */
let h: Harness;
let a: Tenant;
let b: Tenant;
let acc: Accounts;
let bAcc: Accounts;
const ev: Record<string, string> = {};

const SETTINGS = `mutation($org: UUID!, $f: String) { updateOrganizationSettings(organizationId: $org, fiscalYearStart: $f) {
  success error organization { fiscalYearStart } } }`;
const CONFIRM_ON = `mutation($org: UUID!, $eventId: UUID!, $postingDate: String) {
  confirmLedgerEvent(organizationId: $org, eventId: $eventId, postingDate: $postingDate) { success error eventId journalEntryId } }`;
const REVERSE = `mutation($org: UUID!, $eventId: UUID!, $postingDate: String) {
  reverseLedgerEvent(organizationId: $org, eventId: $eventId, postingDate: $postingDate) { success error eventId journalEntryId } }`;
const LINE = "accountId accountName balance";
const BALANCE_SHEET = `query($org: UUID!, $asOf: Date) { balanceSheet(organizationId: $org, asOf: $asOf) { asOf fiscalYearStart
  assets { ${LINE} } liabilities { ${LINE} } equity { ${LINE} } totalAssets totalLiabilities totalEquity currentYearEarnings } }`;
const TRIAL_BALANCE = `query($org: UUID!, $asOf: Date) { trialBalance(organizationId: $org, asOf: $asOf) { asOf
  rows { accountId accountName classification debit credit } totalDebit totalCredit } }`;

interface Line { accountId: string | null; accountName: string; balance: string }
interface BalanceSheet {
  asOf: string; fiscalYearStart: string; assets: Line[]; liabilities: Line[]; equity: Line[];
  totalAssets: string; totalLiabilities: string; totalEquity: string; currentYearEarnings: string;
}
interface TrialRow { accountId: string | null; accountName: string; classification: string; debit: string; credit: string }
interface TrialBalance { asOf: string; rows: TrialRow[]; totalDebit: string; totalCredit: string }

const balanceSheet = async (t: Tenant, asOf?: string): Promise<BalanceSheet> =>
  dataOf(await h.gql(BALANCE_SHEET, { org: t.organizationId, asOf }, t.apiKey), "balanceSheet");
const trialBalance = async (t: Tenant, asOf?: string): Promise<TrialBalance> =>
  dataOf(await h.gql(TRIAL_BALANCE, { org: t.organizationId, asOf }, t.apiKey), "trialBalance");

async function setFiscalYearStart(t: Tenant, f: string) {
  const r = dataOf(await h.gql(SETTINGS, { org: t.organizationId, f }, t.ownerJwt), "updateOrganizationSettings");
  if (!r.success) throw new Error(r.error);
  expect(r.organization.fiscalYearStart).toBe(f);
}

/** Created, classified, confirmed (on postingDate when given). */
async function book(t: Tenant, vars: Record<string, unknown>, classify: Record<string, unknown>, postingDate?: string): Promise<string> {
  const id = await createEvent(h, t, { merchantName: "M", ...vars });
  const c = await call(h, t, CLASSIFY, { eventId: id, ...classify }, "updateStagedEntry");
  if (!c.success) throw new Error(c.error);
  const r = await call(h, t, CONFIRM_ON, { eventId: id, postingDate }, "confirmLedgerEvent");
  if (!r.success) throw new Error(r.error);
  return id;
}

async function reverse(t: Tenant, eventId: string, postingDate: string) {
  const r = await call(h, t, REVERSE, { eventId, postingDate }, "reverseLedgerEvent");
  if (!r.success) throw new Error(r.error);
}

const line = (accounts: Accounts, name: string, balance: string): Line => ({ accountId: accounts[name], accountName: name, balance });

beforeAll(async () => {
  h = await startHarness();
  a = await createTenant(h);
  await setFiscalYearStart(a, "04-01");
  acc = await accountsOf(h, a);
  acc["Savings"] = await addAccount(h, a, "Savings", "bank", "asset");
  acc["Office Supplies"] = await addAccount(h, a, "Office Supplies", "expense", "expense");
  const chq = acc["Chequing"];
  const bookA = (vars: Record<string, unknown>, classify: Record<string, unknown>, postingDate?: string) => book(a, vars, classify, postingDate);
  ev.a1 = await bookA({ amount: "1130.00", transactionDate: "2025-05-10", eventType: "income" }, { categoryId: acc["Sales Revenue"], paymentId: chq, taxCode: "HST_ON" });
  ev.a2 = await bookA({ amount: "226.00", transactionDate: "2025-06-15" },
    { categoryId: acc["Cost of Goods Sold"], paymentId: chq, taxAmount: "26.00", taxAccountId: acc["GST/HST Payable"] });
  ev.a3 = await bookA({ amount: "400.00", transactionDate: "2025-09-01", eventType: "transfer" }, { categoryId: acc["Savings"], paymentId: chq });
  ev.a4 = await bookA({ amount: "45.00", transactionDate: "2026-02-20" }, { categoryId: acc["Bank Fees & Charges"], paymentId: chq });
  ev.a5 = await bookA({ amount: "80.00", transactionDate: "2026-03-10" }, { categoryId: acc["Cost of Goods Sold"], paymentId: chq });
  ev.a6 = await bookA({ amount: "40.00", transactionDate: "2026-03-28" }, { categoryId: acc["Bank Fees & Charges"], paymentId: chq }, "2026-04-02");
  ev.a7 = await bookA({ amount: "300.00", transactionDate: "2026-03-31", eventType: "income" }, { categoryId: acc["Sales Revenue"], paymentId: acc["Processor Clearing"] });
  ev.a8 = await bookA({ amount: "565.00", transactionDate: "2026-04-01", eventType: "income" }, { categoryId: acc["Sales Revenue"], paymentId: chq, taxCode: "HST_ON" });
  ev.a9 = await bookA({ amount: "105.00", transactionDate: "2026-05-12" }, { categoryId: acc["Office Supplies"], paymentId: acc["Processor Clearing"], taxCode: "GST" });
  ev.a10 = await bookA({ amount: "60.00", transactionDate: "2026-05-20" }, { categoryId: acc["Office Supplies"], paymentId: chq });
  ev.a11 = await bookA({ amount: "999.00", transactionDate: "2026-06-01", eventType: "income" }, { categoryId: acc["Sales Revenue"], paymentId: chq });
  ev.a12 = await bookA({ amount: "250.00", transactionDate: "2026-06-05", eventType: "transfer" }, { categoryId: acc["Owner's Equity"], paymentId: chq });
  await createEvent(h, a, { amount: "77.77", transactionDate: "2026-05-01", categoryId: acc["Office Supplies"], paymentAccountId: chq });
  await reverse(a, ev.a5, "2026-04-15");
  await reverse(a, ev.a10, "2026-06-10");
  const rejected = await call(h, a, REJECT, { eventId: ev.a11 }, "rejectLedgerEvent");
  if (!rejected.success) throw new Error(rejected.error);

  b = await createTenant(h);
  bAcc = await accountsOf(h, b);
  const bookB = (amount: string, transactionDate: string, eventType: string, category: string) =>
    book(b, { amount, transactionDate, eventType }, { categoryId: bAcc[category], paymentId: bAcc["Chequing"] });
  await bookB("1000.00", "2025-11-15", "income", "Sales Revenue");
  await bookB("200.00", "2025-12-31", "expense", "Cost of Goods Sold");
  await bookB("50.00", "2026-01-01", "income", "Sales Revenue");
  await bookB("30.00", "2026-03-05", "expense", "Bank Fees & Charges");
});
afterAll(() => h?.close());

describe("balanceSheet on hand-checked books, fiscal year from 04-01", () => {
  it("at the end of the first fiscal year: everything is current-year earnings", async () => {
    expect(await balanceSheet(a, "2026-03-31")).toEqual({
      asOf: "2026-03-31", fiscalYearStart: "2025-04-01",
      assets: [line(acc, "Chequing", "379.00"), line(acc, "Processor Clearing", "300.00"), line(acc, "Savings", "400.00")],
      liabilities: [line(acc, "GST/HST Payable", "104.00")],
      equity: [],
      totalAssets: "1079.00", totalLiabilities: "104.00", totalEquity: "0.00", currentYearEarnings: "975.00",
    });
  });

  it("on the next fiscal year's first day: the earlier year's earnings are retained earnings", async () => {
    expect(await balanceSheet(a, "2026-04-01")).toEqual({
      asOf: "2026-04-01", fiscalYearStart: "2026-04-01",
      assets: [line(acc, "Chequing", "944.00"), line(acc, "Processor Clearing", "300.00"), line(acc, "Savings", "400.00")],
      liabilities: [line(acc, "GST/HST Payable", "169.00")],
      equity: [line(acc, "Retained Earnings", "975.00")],
      totalAssets: "1644.00", totalLiabilities: "169.00", totalEquity: "975.00", currentYearEarnings: "500.00",
    });
  });

  it("between an entry and its reversal: the entry counts; a reversal in the next fiscal year lowers that year's expenses", async () => {
    expect(await balanceSheet(a, "2026-05-31")).toEqual({
      asOf: "2026-05-31", fiscalYearStart: "2026-04-01",
      assets: [line(acc, "Chequing", "924.00"), line(acc, "Processor Clearing", "195.00"), line(acc, "Savings", "400.00")],
      liabilities: [line(acc, "GST/HST Payable", "164.00")],
      equity: [line(acc, "Retained Earnings", "975.00")],
      totalAssets: "1519.00", totalLiabilities: "164.00", totalEquity: "975.00", currentYearEarnings: "380.00",
    });
  });

  it("after everything: reversed entries net to zero, the rejected one counts nowhere, a drawing lowers equity", async () => {
    expect(await balanceSheet(a, "2026-06-30")).toEqual({
      asOf: "2026-06-30", fiscalYearStart: "2026-04-01",
      assets: [line(acc, "Chequing", "734.00"), line(acc, "Processor Clearing", "195.00"), line(acc, "Savings", "400.00")],
      liabilities: [line(acc, "GST/HST Payable", "164.00")],
      equity: [line(acc, "Owner's Equity", "-250.00"), line(acc, "Retained Earnings", "975.00")],
      totalAssets: "1329.00", totalLiabilities: "164.00", totalEquity: "725.00", currentYearEarnings: "440.00",
    });
  });

  it("a reversal counts from its posting date, an entry confirmed on a posting date from that date", async () => {
    const chequing = async (asOf: string) => (await balanceSheet(a, asOf)).assets.find((l) => l.accountName === "Chequing")!.balance;
    // a10 (60.00) out on 05-20, back on 06-10; a5 (80.00) out on 03-10, back on 04-15.
    expect([await chequing("2026-05-19"), await chequing("2026-05-20"), await chequing("2026-06-09"), await chequing("2026-06-10")])
      .toEqual(["984.00", "924.00", "674.00", "734.00"]);
    expect([await chequing("2026-03-09"), await chequing("2026-03-10"), await chequing("2026-04-14"), await chequing("2026-04-15")])
      .toEqual(["459.00", "379.00", "904.00", "984.00"]);
    // a6, dated 03-28, is posted on 04-02: not in FY2025 at all.
    expect((await balanceSheet(a, "2026-03-31")).currentYearEarnings).toBe("975.00");
    expect((await balanceSheet(a, "2026-04-01")).currentYearEarnings).toBe("500.00");
    expect((await balanceSheet(a, "2026-04-02")).currentYearEarnings).toBe("460.00");
  });

  it("as of a day before any event: empty lists and 0.00 totals", async () => {
    for (const asOf of ["2025-05-09", "2024-01-01"]) {
      const r = await balanceSheet(a, asOf);
      expect(r).toEqual({
        asOf, fiscalYearStart: asOf === "2025-05-09" ? "2025-04-01" : "2023-04-01", assets: [], liabilities: [], equity: [],
        totalAssets: "0.00", totalLiabilities: "0.00", totalEquity: "0.00", currentYearEarnings: "0.00",
      });
      expect(await trialBalance(a, asOf)).toEqual({ asOf, rows: [], totalDebit: "0.00", totalCredit: "0.00" });
    }
  });

  it("asOf defaults to today", async () => {
    const { rows: [{ today }] } = await h.owner.query("select current_date::text as today");
    const r = await balanceSheet(a);
    expect(r.asOf).toBe(today);
    expect(r).toEqual(await balanceSheet(a, today));
    const tb = await trialBalance(a);
    expect(tb.asOf).toBe(today);
    expect(tb).toEqual(await trialBalance(a, today));
  });

  it.each(["2026-02-30", "soon", "2026-6-30", "30/06/2026", ""])("refuses asOf %j as the caller's mistake", async (asOf) => {
    for (const doc of [BALANCE_SHEET, TRIAL_BALANCE]) {
      const res = await h.gql(doc, { org: a.organizationId, asOf }, a.apiKey);
      expect(errorOf(res)).toEqual({ message: "asOf must be a date in YYYY-MM-DD format.", code: "BAD_USER_INPUT" });
    }
  });

  it("another organization's books never count, and another organization's reports are refused", async () => {
    // B's books are all in Chequing, Sales Revenue, Cost of Goods Sold and Bank Fees: A's figures above
    // hold with them; B's own are below. A's API key cannot read B's reports.
    for (const doc of [BALANCE_SHEET, TRIAL_BALANCE]) {
      const res = await h.gql(doc, { org: b.organizationId, asOf: "2026-06-30" }, a.apiKey);
      expect(errorOf(res)).toEqual({ message: "API Key Not Authorized For This Organization.", code: "FORBIDDEN" });
      expect(res.body.data).toBeNull();
      const jwt = await h.gql(doc, { org: b.organizationId, asOf: "2026-06-30" }, a.ownerJwt);
      expect(errorOf(jwt)).toEqual({ message: "Not A Member Of This Organization.", code: "FORBIDDEN" });
    }
    // A member reads its own organization's reports with a JWT: the same figures as with the API key.
    const own = dataOf(await h.gql(BALANCE_SHEET, { org: a.organizationId, asOf: "2026-06-30" }, a.ownerJwt), "balanceSheet");
    expect(own).toEqual(await balanceSheet(a, "2026-06-30"));
  });
});

describe("trialBalance on the hand-checked books", () => {
  const row = (name: string, classification: string, debit: string, credit: string): TrialRow =>
    ({ accountId: acc[name], accountName: name, classification, debit, credit });

  it("at the end of the first fiscal year", async () => {
    expect(await trialBalance(a, "2026-03-31")).toEqual({
      asOf: "2026-03-31",
      rows: [
        row("Chequing", "asset", "379.00", "0.00"),
        row("Processor Clearing", "asset", "300.00", "0.00"),
        row("Savings", "asset", "400.00", "0.00"),
        row("GST/HST Payable", "liability", "0.00", "104.00"),
        row("Sales Revenue", "revenue", "0.00", "1300.00"),
        row("Bank Fees & Charges", "expense", "45.00", "0.00"),
        row("Cost of Goods Sold", "expense", "280.00", "0.00"),
      ],
      totalDebit: "1404.00", totalCredit: "1404.00",
    });
  });

  it("in the next fiscal year: revenue and expenses from its first day, the earlier year in retained earnings", async () => {
    expect(await trialBalance(a, "2026-06-30")).toEqual({
      asOf: "2026-06-30",
      rows: [
        row("Chequing", "asset", "734.00", "0.00"),
        row("Processor Clearing", "asset", "195.00", "0.00"),
        row("Savings", "asset", "400.00", "0.00"),
        row("GST/HST Payable", "liability", "0.00", "164.00"),
        row("Owner's Equity", "equity", "250.00", "0.00"),
        row("Retained Earnings", "equity", "0.00", "975.00"),
        row("Sales Revenue", "revenue", "0.00", "500.00"),
        row("Bank Fees & Charges", "expense", "40.00", "0.00"),
        // a5's reversal (FY2026) without its entry (FY2025).
        row("Cost of Goods Sold", "expense", "0.00", "80.00"),
        row("Office Supplies", "expense", "100.00", "0.00"),
      ],
      totalDebit: "1719.00", totalCredit: "1719.00",
    });
  });

  it("a reversal within the year: the account shows the entry between the two, nothing of it after", async () => {
    const supplies = async (asOf: string) => (await trialBalance(a, asOf)).rows.find((r) => r.accountName === "Office Supplies")?.debit;
    expect([await supplies("2026-05-11"), await supplies("2026-05-12"), await supplies("2026-05-20"), await supplies("2026-06-09"), await supplies("2026-06-10")])
      .toEqual([undefined, "100.00", "160.00", "160.00", "100.00"]);
  });

  it("debits equal credits on every day of the books", async () => {
    for (const asOf of ["2025-05-10", "2025-06-15", "2025-12-31", "2026-03-10", "2026-04-01", "2026-04-02", "2026-04-15", "2026-06-01", "2026-06-05", "2026-12-31"]) {
      const tb = await trialBalance(a, asOf);
      expect(tb.totalDebit, asOf).toBe(tb.totalCredit);
      const bs = await balanceSheet(a, asOf);
      expect(cents(bs.totalAssets), asOf).toBe(cents(bs.totalLiabilities) + cents(bs.totalEquity) + cents(bs.currentYearEarnings));
    }
  });
});

describe("fiscal year from 01-01 (the default)", () => {
  it("the calendar year's earnings are current, the year before retained", async () => {
    expect(await balanceSheet(b, "2026-06-30")).toEqual({
      asOf: "2026-06-30", fiscalYearStart: "2026-01-01",
      assets: [line(bAcc, "Chequing", "820.00")], liabilities: [], equity: [line(bAcc, "Retained Earnings", "800.00")],
      totalAssets: "820.00", totalLiabilities: "0.00", totalEquity: "800.00", currentYearEarnings: "20.00",
    });
    expect(await balanceSheet(b, "2025-12-31")).toEqual({
      asOf: "2025-12-31", fiscalYearStart: "2025-01-01",
      assets: [line(bAcc, "Chequing", "800.00")], liabilities: [], equity: [],
      totalAssets: "800.00", totalLiabilities: "0.00", totalEquity: "0.00", currentYearEarnings: "800.00",
    });
    expect(await trialBalance(b, "2026-01-01")).toEqual({
      asOf: "2026-01-01",
      rows: [
        { accountId: bAcc["Chequing"], accountName: "Chequing", classification: "asset", debit: "850.00", credit: "0.00" },
        { accountId: bAcc["Retained Earnings"], accountName: "Retained Earnings", classification: "equity", debit: "0.00", credit: "800.00" },
        { accountId: bAcc["Sales Revenue"], accountName: "Sales Revenue", classification: "revenue", debit: "0.00", credit: "50.00" },
      ],
      totalDebit: "850.00", totalCredit: "850.00",
    });
  });

  it("a change of fiscalYearStart moves the split, not the totals; a bad one is refused", async () => {
    await setFiscalYearStart(b, "12-01");
    try {
      // FY from 2025-12-01: b2 (12-31), b3 and b4 are current; b1 (11-15) retained.
      expect(await balanceSheet(b, "2026-06-30")).toMatchObject({
        fiscalYearStart: "2025-12-01", totalAssets: "820.00", totalEquity: "1000.00", currentYearEarnings: "-180.00",
      });
      const bad = dataOf(await h.gql(SETTINGS, { org: b.organizationId, f: "02-29" }, b.ownerJwt), "updateOrganizationSettings");
      expect(bad).toEqual({ success: false, error: "fiscalYearStart must be a day of the year in MM-DD format, such as 01-01 or 04-01.", organization: null });
    } finally {
      await setFiscalYearStart(b, "01-01");
    }
  });
});

describe("a chart without a retained earnings account", () => {
  it("shows the earlier years' earnings on a Retained Earnings line of its own (no account)", async () => {
    const c = await createTenant(h);
    const cAcc = await accountsOf(h, c);
    await h.owner.query("delete from app_public.accounts where id = $1", [cAcc["Retained Earnings"]]);
    await book(c, { amount: "70.00", transactionDate: "2025-07-01", eventType: "income" }, { categoryId: cAcc["Sales Revenue"], paymentId: cAcc["Chequing"] });
    await book(c, { amount: "20.00", transactionDate: "2026-02-01" }, { categoryId: cAcc["Bank Fees & Charges"], paymentId: cAcc["Chequing"] });
    const bs = await balanceSheet(c, "2026-02-01");
    expect(bs.equity).toEqual([{ accountId: null, accountName: "Retained Earnings", balance: "70.00" }]);
    expect(bs).toMatchObject({ totalAssets: "50.00", totalEquity: "70.00", currentYearEarnings: "-20.00" });
    const tb = await trialBalance(c, "2026-02-01");
    expect(tb.rows).toContainEqual({ accountId: null, accountName: "Retained Earnings", classification: "equity", debit: "0.00", credit: "70.00" });
    expect(tb).toMatchObject({ totalDebit: "70.00", totalCredit: "70.00" });
  });
});

/** "123.45" / "-0.50" in cents, exactly. */
function cents(s: string): number {
  const m = /^(-?)(\d+)\.(\d{2})$/.exec(s);
  if (!m) throw new Error(`not money: ${s}`);
  return (m[1] ? -1 : 1) * (Number(m[2]) * 100 + Number(m[3]));
}
const money = (c: number) => (c < 0 ? "-" : "") + (Math.abs(c) / 100).toFixed(2);

const isoDay = (d: number) => new Date(Date.UTC(2024, 0, 1 + d)).toISOString().slice(0, 10);
const addDays = (day: string, n: number) => new Date(Date.parse(day + "T00:00:00Z") + n * 86_400_000).toISOString().slice(0, 10);

/** The fiscal year's first day for asOf, worked out here from MM-DD (not by the SQL's function). */
function yearStart(mmdd: string, asOf: string): string {
  const y = Number(asOf.slice(0, 4));
  const s = `${y}-${mmdd}`;
  return s <= asOf ? s : `${y - 1}-${mmdd}`;
}

describe("property: random books across three years", () => {
  // One event: its type, amount in cents, date (2024-01-01 + 0..1095 days), tax, and what happens to it.
  const event = fc.record({
    type: fc.constantFrom("income", "expense", "transfer"),
    amount: fc.integer({ min: 1, max: 500_000 }),
    day: fc.integer({ min: 0, max: 1095 }),
    pick: fc.nat(),
    payment: fc.constantFrom("Chequing", "Processor Clearing", "Visa"),
    tax: fc.oneof(fc.constant(null), fc.constantFrom("GST", "HST_ON"), fc.double({ min: 0, max: 0.99, noNaN: true })),
    fate: fc.constantFrom("confirmed", "confirmed", "confirmed", "posted later", "rejected", "reversed", "posted later, reversed", "unconfirmed"),
    later: fc.integer({ min: 0, max: 400 }),
    reversalAfter: fc.integer({ min: 0, max: 500 }),
  });
  type Ev = typeof event extends fc.Arbitrary<infer T> ? T : never;
  const fiscal = fc.oneof(
    fc.constantFrom("01-01", "04-01", "07-01", "10-01", "12-31", "02-28", "03-01"),
    fc.record({ m: fc.integer({ min: 1, max: 12 }), d: fc.integer({ min: 1, max: 28 }) })
      .map(({ m, d }) => `${String(m).padStart(2, "0")}-${String(d).padStart(2, "0")}`),
  );
  const asOfs = fc.array(fc.integer({ min: -200, max: 1400 }), { minLength: 3, maxLength: 5 });

  async function makeBooks(t: Tenant, accounts: Accounts, events: Ev[]) {
    const categories: Record<string, string[]> = {
      income: ["Sales Revenue", "Consulting Revenue"],
      expense: ["Cost of Goods Sold", "Bank Fees & Charges", "Equipment"],
      // Retained Earnings too: a line of its own that the earlier years' earnings add to.
      transfer: ["Savings", "Owner's Equity", "Bank Loan", "Retained Earnings"],
    };
    const one = async (e: Ev) => {
      const date = isoDay(e.day);
      const options = categories[e.type];
      const id = await createEvent(h, t, { merchantName: "M", amount: money(e.amount), transactionDate: date, eventType: e.type,
        categoryId: accounts[options[e.pick % options.length]], paymentAccountId: accounts[e.payment] });
      if (e.tax !== null) {
        const tax = typeof e.tax === "string" ? { taxCode: e.tax }
          : { taxAmount: money(Math.floor(e.tax * e.amount)), taxAccountId: accounts["GST/HST Payable"] };
        const c = await call(h, t, CLASSIFY, { eventId: id, ...tax }, "updateStagedEntry");
        if (!c.success) throw new Error(c.error);
      }
      if (e.fate === "unconfirmed") return;
      const posted = e.fate.startsWith("posted later") ? addDays(date, e.later) : undefined;
      const r = await call(h, t, CONFIRM_ON, { eventId: id, postingDate: posted }, "confirmLedgerEvent");
      if (!r.success) throw new Error(r.error);
      if (e.fate === "rejected") {
        const x = await call(h, t, REJECT, { eventId: id }, "rejectLedgerEvent");
        if (!x.success) throw new Error(x.error);
      } else if (e.fate.endsWith("reversed")) {
        await reverse(t, id, addDays(posted ?? date, e.reversalAfter));
      }
    };
    // A few at a time: each event's steps in order, the events side by side.
    const queue = [...events];
    await Promise.all(Array.from({ length: 6 }, async () => {
      for (let e = queue.shift(); e; e = queue.shift()) await one(e);
    }));
  }

  /** The balance sheet and trial balance, worked out from the live journal lines with plain SQL and arithmetic here. */
  async function expected(org: string, mmdd: string, asOf: string) {
    const start = yearStart(mmdd, asOf);
    const { rows } = await h.owner.query(`
      select a.id, a.name, a.classification, a.account_type,
             (sum(l.debit - l.credit) filter (where l.txn_date <= $2) * 100)::bigint::text as all_time,
             (coalesce(sum(l.debit - l.credit) filter (where l.txn_date between $3 and $2), 0) * 100)::bigint::text as this_year
        from app_public.journal_lines l
        join app_public.journal_entries j on j.id = l.entry_id and j.voided_at is null
        join app_public.accounts a on a.id = l.account_id
       where l.organization_id = $1 and not l.voided and l.txn_date <= $2
       group by a.id, a.name, a.classification, a.account_type`, [org, asOf, start]);
    const { rows: [re] } = await h.owner.query(
      "select id, name from app_public.accounts where organization_id = $1 and account_type = 'retained_earnings'", [org]);
    const net = new Map<string, { name: string; classification: string; net: number }>();
    let earlier = 0;
    for (const r of rows) {
      const pl = r.classification === "revenue" || r.classification === "expense";
      net.set(r.id, { name: r.name, classification: r.classification, net: Number(pl ? r.this_year : r.all_time) });
      if (pl) earlier += Number(r.all_time) - Number(r.this_year);
    }
    if (earlier !== 0) {
      const x = net.get(re.id) ?? { name: re.name, classification: "equity", net: 0 };
      net.set(re.id, { ...x, net: x.net + earlier });
    }
    const live = [...net.entries()].filter(([, x]) => x.net !== 0);
    const lines = (cls: string) => live.filter(([, x]) => x.classification === cls)
      .map(([id, x]) => ({ accountId: id, accountName: x.name, balance: money(cls === "asset" ? x.net : -x.net) }));
    const total = (cls: string) => live.filter(([, x]) => x.classification === cls).reduce((s, [, x]) => s + (cls === "asset" ? x.net : -x.net), 0);
    const earnings = -live.filter(([, x]) => x.classification === "revenue" || x.classification === "expense").reduce((s, [, x]) => s + x.net, 0);
    const sheet: BalanceSheet = {
      asOf, fiscalYearStart: start, assets: lines("asset"), liabilities: lines("liability"), equity: lines("equity"),
      totalAssets: money(total("asset")), totalLiabilities: money(total("liability")), totalEquity: money(total("equity")),
      currentYearEarnings: money(earnings),
    };
    const trial: TrialBalance = {
      asOf,
      rows: live.map(([id, x]) => ({ accountId: id, accountName: x.name, classification: x.classification,
        debit: money(Math.max(x.net, 0)), credit: money(Math.max(-x.net, 0)) })),
      totalDebit: money(live.reduce((s, [, x]) => s + Math.max(x.net, 0), 0)),
      totalCredit: money(live.reduce((s, [, x]) => s + Math.max(-x.net, 0), 0)),
    };
    return { sheet, trial };
  }

  const byId = <T extends { accountId: string | null }>(xs: T[]) => [...xs].sort((p, q) => String(p.accountId).localeCompare(String(q.accountId)));

  it("balance sheet balances, debits equal credits, and every line equals the journal's", async () => {
    let checked = 0;
    let nonEmpty = 0;
    await fc.assert(fc.asyncProperty(fiscal, fc.array(event, { minLength: 8, maxLength: 24 }), asOfs, async (mmdd, events, days) => {
      const t = await createTenant(h);
      if (mmdd !== "01-01") await setFiscalYearStart(t, mmdd);
      const accounts = await accountsOf(h, t);
      accounts["Consulting Revenue"] = await addAccount(h, t, "Consulting Revenue", "income", "revenue");
      accounts["Equipment"] = await addAccount(h, t, "Equipment", "fixed_asset", "asset");
      accounts["Savings"] = await addAccount(h, t, "Savings", "bank", "asset");
      accounts["Bank Loan"] = await addAccount(h, t, "Bank Loan", "long_term_liability", "liability");
      accounts["Visa"] = await addAccount(h, t, "Visa", "credit_card", "liability");
      await makeBooks(t, accounts, events);
      // Random days, and both sides of a fiscal year's first day.
      const boundary = yearStart(mmdd, "2025-07-15");
      for (const asOf of [...days.map(isoDay), boundary, addDays(boundary, -1)]) {
        const [sheet, trial, want] = await Promise.all([balanceSheet(t, asOf), trialBalance(t, asOf), expected(t.organizationId, mmdd, asOf)]);
        expect(cents(sheet.totalAssets)).toBe(cents(sheet.totalLiabilities) + cents(sheet.totalEquity) + cents(sheet.currentYearEarnings));
        expect(trial.totalDebit).toBe(trial.totalCredit);
        expect({ ...sheet, assets: byId(sheet.assets), liabilities: byId(sheet.liabilities), equity: byId(sheet.equity) })
          .toEqual({ ...want.sheet, assets: byId(want.sheet.assets), liabilities: byId(want.sheet.liabilities), equity: byId(want.sheet.equity) });
        expect({ ...trial, rows: byId(trial.rows) }).toEqual({ ...want.trial, rows: byId(want.trial.rows) });
        checked++;
        if (trial.rows.length) nonEmpty++;
      }
    }), { numRuns: 6, seed: 20_261_127 });
    expect(checked).toBeGreaterThan(20);
    expect(nonEmpty).toBeGreaterThan(10);
    // The runs did reverse, void and post on other days (the property is not vacuous).
    const { rows: [r] } = await h.owner.query(`select count(*) filter (where reverses_entry_id is not null)::int reversals,
        count(*) filter (where voided_at is not null)::int voided,
        (select count(*)::int from app_public.journal_entries j join app_public.ledger_events e on e.id = j.event_id
          where j.reverses_entry_id is null and j.txn_date <> e.transaction_date) later
      from app_public.journal_entries`);
    expect(r.reversals).toBeGreaterThan(2);
    expect(r.voided).toBeGreaterThan(2);
    expect(r.later).toBeGreaterThan(2);
  });
});
