import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTenant, dataOf, errorOf, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { GENERAL_LEDGER_PAGE } from "../plugins/general-ledger.js";
import { accountsOf, bookEvent, call, createEvent, REJECT, tenantWithAccounts, type Accounts } from "./ledger-fixtures.js";

/**
 * A hand-checked month of books (March 2026), with tax splits, a voided entry, an unconfirmed
 * event and an event outside the period:
 *
 *   03-05 sale 1130.00 incl. HST 13 % (code)     Chequing Dr 1130.00 / Sales Revenue Cr 1000.00, GST/HST Payable Cr 130.00
 *   03-10 bank fee 25.50, no tax                 Bank Fees & Charges Dr 25.50 / Chequing Cr 25.50
 *   03-15 stock 226.00, tax 26.00 (explicit)     Cost of Goods Sold Dr 200.00, GST/HST Payable Dr 26.00 / Chequing Cr 226.00
 *   03-18 paper 52.50 incl. GST 5 % (code)       Office Supplies Dr 50.00, GST/HST Payable Dr 2.50 / Chequing Cr 52.50
 *   03-20 sale 500.00, confirmed then rejected   voided: in no report
 *   03-25 expense 99.99 left in needs_review     not booked
 *   04-02 sale 80.00, no tax                     Chequing Dr 80.00 / Sales Revenue Cr 80.00 (April)
 *
 * March: revenue 1000.00; expenses 25.50 + 200.00 + 50.00 = 275.50; net 724.50.
 * Balances today: Chequing 1130 - 25.50 - 226 - 52.50 + 80 = 906.00; GST/HST Payable 130 - 26 - 2.50 = 101.50;
 * Sales Revenue 1080.00; Cost of Goods Sold 200.00; Bank Fees & Charges 25.50; Office Supplies 50.00.
 * Check: assets 906.00 = liabilities 101.50 + (1080.00 - 275.50).
 */
let h: Harness;
let t: Tenant;
let acc: Accounts;

beforeAll(async () => {
  h = await startHarness();
  ({ t, acc } = await tenantWithAccounts(h, { "Office Supplies": ["expense", "expense"] }));
  const chq = acc["Chequing"];
  await bookEvent(h, t, { merchantName: "Customer", amount: "1130.00", transactionDate: "2026-03-05", eventType: "income" },
    { categoryId: acc["Sales Revenue"], paymentId: chq, taxCode: "HST_ON" });
  await bookEvent(h, t, { merchantName: "Bank", amount: "25.50", transactionDate: "2026-03-10" },
    { categoryId: acc["Bank Fees & Charges"], paymentId: chq });
  await bookEvent(h, t, { merchantName: "Wholesaler", amount: "226.00", transactionDate: "2026-03-15" },
    { categoryId: acc["Cost of Goods Sold"], paymentId: chq, taxAmount: "26.00", taxAccountId: acc["GST/HST Payable"] });
  await bookEvent(h, t, { merchantName: "Paper Shop", amount: "52.50", transactionDate: "2026-03-18" },
    { categoryId: acc["Office Supplies"], paymentId: chq, taxCode: "GST" });
  const voided = await bookEvent(h, t, { merchantName: "Customer", amount: "500.00", transactionDate: "2026-03-20", eventType: "income" },
    { categoryId: acc["Sales Revenue"], paymentId: chq });
  await call(h, t, REJECT, { eventId: voided }, "rejectLedgerEvent");
  await createEvent(h, t, { merchantName: "Pending", amount: "99.99", transactionDate: "2026-03-25", categoryId: acc["Office Supplies"], paymentAccountId: chq });
  await bookEvent(h, t, { merchantName: "Customer", amount: "80.00", transactionDate: "2026-04-02", eventType: "income" },
    { categoryId: acc["Sales Revenue"], paymentId: chq });
  // Another organization's books never count.
  const other = await createTenant(h);
  const o = await accountsOf(h, other);
  await bookEvent(h, other, { amount: "7.00", transactionDate: "2026-03-07", eventType: "income" }, { categoryId: o["Sales Revenue"], paymentId: o["Chequing"] });
});
afterAll(() => h?.close());

const q = async (query: string, vars: Record<string, unknown> = {}) => h.gql(query, { org: t.organizationId, ...vars }, t.apiKey);

describe("reports on a hand-checked month", () => {
  it("dashboardSummary", async () => {
    const res = await q(`query($org: UUID!) { dashboardSummary(organizationId: $org, startDate: "2026-03-01", endDate: "2026-03-31") {
      totalRevenue totalExpenses netIncome receiptCount unreviewedCount } }`);
    expect(dataOf(res, "dashboardSummary")).toEqual({
      totalRevenue: "1000.00", totalExpenses: "275.50", netIncome: "724.50", receiptCount: 0, unreviewedCount: 1,
    });
  });

  it("incomeStatement: accounts with activity, by name", async () => {
    const res = await q(`query($org: UUID!) { incomeStatement(organizationId: $org, startDate: "2026-03-01", endDate: "2026-03-31") {
      incomeAccounts { accountId accountName total } expenseAccounts { accountId accountName total } totalIncome totalExpenses netIncome } }`);
    expect(dataOf(res, "incomeStatement")).toEqual({
      incomeAccounts: [{ accountId: acc["Sales Revenue"], accountName: "Sales Revenue", total: "1000.00" }],
      expenseAccounts: [
        { accountId: acc["Bank Fees & Charges"], accountName: "Bank Fees & Charges", total: "25.50" },
        { accountId: acc["Cost of Goods Sold"], accountName: "Cost of Goods Sold", total: "200.00" },
        { accountId: acc["Office Supplies"], accountName: "Office Supplies", total: "50.00" },
      ],
      totalIncome: "1000.00", totalExpenses: "275.50", netIncome: "724.50",
    });
  });

  it("periods are inclusive at both ends", async () => {
    const one = async (d: string) => dataOf(await q(`query($org: UUID!, $d: Date) { incomeStatement(organizationId: $org, startDate: $d, endDate: $d) { totalIncome totalExpenses } }`, { d }), "incomeStatement");
    expect(await one("2026-03-05")).toEqual({ totalIncome: "1000.00", totalExpenses: "0.00" });
    expect(await one("2026-04-02")).toEqual({ totalIncome: "80.00", totalExpenses: "0.00" });
    expect(await one("2026-03-20")).toEqual({ totalIncome: "0.00", totalExpenses: "0.00" });
  });

  it("accountBalances: every active account as of today, exact to the cent", async () => {
    const rows = dataOf(await q(`query($org: UUID!) { accountBalances(organizationId: $org) { accountId accountName accountType classification balance } }`), "accountBalances");
    const byName = Object.fromEntries(rows.map((r: { accountName: string; balance: string }) => [r.accountName, r.balance]));
    expect(byName).toEqual({
      "Bank Fees & Charges": "25.50", "Chequing": "906.00", "Cost of Goods Sold": "200.00", "GST/HST Payable": "101.50",
      "Office Supplies": "50.00", "Owner's Equity": "0.00", "Processor Clearing": "0.00", "Retained Earnings": "0.00", "Sales Revenue": "1080.00",
    });
    expect(rows.find((r: { accountName: string }) => r.accountName === "Chequing")).toMatchObject({ accountId: acc["Chequing"], accountType: "bank", classification: "asset" });
  });

  it("listAccounts shows the same balances as numbers", async () => {
    const res = await q(`query($org: UUID!) { listAccounts(organizationId: $org, limit: 200) { items { name currentBalance } } }`);
    const byName = Object.fromEntries(dataOf(res, "listAccounts").items.map((a: { name: string; currentBalance: number }) => [a.name, a.currentBalance]));
    expect(byName).toMatchObject({ "Chequing": 906, "GST/HST Payable": 101.5, "Sales Revenue": 1080, "Office Supplies": 50 });
  });

  it("defaults: dashboard for the current month, income statement for the current year", async () => {
    const d = dataOf(await q(`query($org: UUID!) { dashboardSummary(organizationId: $org) { totalRevenue unreviewedCount } }`), "dashboardSummary");
    const thisMonth = new Date().toISOString().slice(0, 7);
    expect(d).toEqual({ totalRevenue: thisMonth === "2026-03" ? "1000.00" : thisMonth === "2026-04" ? "80.00" : "0.00", unreviewedCount: 1 });
    const i = dataOf(await q(`query($org: UUID!) { incomeStatement(organizationId: $org) { totalIncome } }`), "incomeStatement");
    expect(i.totalIncome).toBe(new Date().getUTCFullYear() === 2026 ? "1080.00" : "0.00");
  });

  it.each([
    [{ s: "2026-03-31", e: "2026-03-01" }, "startDate must not be after endDate."],
    [{ s: "2026-02-30", e: "2026-03-01" }, "startDate must be a date in YYYY-MM-DD format."],
    [{ s: "2026-03-01", e: "soon" }, "endDate must be a date in YYYY-MM-DD format."],
  ])("refuses a bad period %j", async ({ s, e }, message) => {
    const res = await q(`query($org: UUID!, $s: Date, $e: Date) { incomeStatement(organizationId: $org, startDate: $s, endDate: $e) { netIncome } }`, { s, e });
    expect(errorOf(res)).toEqual({ message, code: "BAD_USER_INPUT" });
  });
});

describe("the reporting schema for analysts", () => {
  async function asAnalyst<T>(org: string | null, fn: (c: pg.Client) => Promise<T>): Promise<T> {
    const c = new pg.Client({ connectionString: h.databaseUrl });
    await c.connect();
    try {
      await c.query("begin");
      await c.query("set local role reporting_reader");
      if (org) await c.query("select set_config('app.organization_id', $1, true)", [org]);
      return await fn(c);
    } finally {
      await c.query("rollback").catch(() => undefined);
      await c.end();
    }
  }

  it("trial balance sums to zero and matches the balances", async () => {
    const rows = await asAnalyst(t.organizationId, async (c) => (await c.query(
      "select account_name, debit::text, credit::text, balance::text from reporting.trial_balance order by account_name")).rows);
    const totals = await asAnalyst(t.organizationId, async (c) => (await c.query(
      "select sum(debit)::text d, sum(credit)::text c from reporting.trial_balance")).rows[0]);
    expect(totals.d).toBe(totals.c);
    expect(totals.d).toBe("1514.00"); // debits: 1130 + 25.50 + 200 + 26 + 50 + 2.50 + 80
    expect(rows.find((r) => r.account_name === "Chequing")).toEqual({ account_name: "Chequing", debit: "1210.00", credit: "304.00", balance: "906.00" });
  });

  it("general ledger lines and the monthly income statement", async () => {
    const gl = await asAnalyst(t.organizationId, async (c) => (await c.query(
      "select month::text, account_name, sum(debit)::text d, sum(credit)::text c, count(*)::int n from reporting.general_ledger group by 1, 2 order by 1, 2")).rows);
    expect(gl).toContainEqual({ month: "2026-03-01", account_name: "Chequing", d: "1130.00", c: "304.00", n: 4 });
    expect(gl).toContainEqual({ month: "2026-04-01", account_name: "Sales Revenue", d: "0.00", c: "80.00", n: 1 });
    const monthly = await asAnalyst(t.organizationId, async (c) => (await c.query(
      "select month::text, account_name, total::text from reporting.income_statement_monthly order by 1, 2")).rows);
    expect(monthly).toEqual([
      { month: "2026-03-01", account_name: "Bank Fees & Charges", total: "25.50" },
      { month: "2026-03-01", account_name: "Cost of Goods Sold", total: "200.00" },
      { month: "2026-03-01", account_name: "Office Supplies", total: "50.00" },
      { month: "2026-03-01", account_name: "Sales Revenue", total: "1000.00" },
      { month: "2026-04-01", account_name: "Sales Revenue", total: "80.00" },
    ]);
  });

  it("is scoped by RLS: no organization set, no rows; and no writes", async () => {
    expect(await asAnalyst(null, async (c) => (await c.query("select count(*)::int n from reporting.general_ledger")).rows[0].n)).toBe(0);
    const orgs = await asAnalyst(t.organizationId, async (c) => (await c.query("select distinct organization_id from reporting.general_ledger")).rows);
    expect(orgs).toEqual([{ organization_id: t.organizationId }]);
    await expect(asAnalyst(t.organizationId, (c) => c.query("delete from app_public.journal_lines"))).rejects.toThrow(/permission denied/);
  });
});

describe("the general ledger in GraphQL (@graphile/pg-aggregates)", () => {
  const GL = `{ generalLedgerEntries { totalCount aggregates { sum { debit credit } }
    groupedAggregates(groupBy: [ACCOUNT_NAME, MONTH]) { keys sum { amount } distinctCount { entryId } } } }`;

  it("sums and counts grouped by account and month, the API key's organization only", async () => {
    const gl = dataOf(await h.gql(GL, {}, t.apiKey), "generalLedgerEntries");
    expect(gl.totalCount).toBe(13); // 3 + 2 + 3 + 3 lines in March, 2 in April; the voided entry's lines are out
    expect(gl.aggregates.sum).toEqual({ debit: "1514.00", credit: "1514.00" });
    const chequingMarch = gl.groupedAggregates.find((g: { keys: string[] }) => g.keys[0] === "Chequing" && g.keys[1].startsWith("2026-03"));
    expect(chequingMarch).toMatchObject({ sum: { amount: "826.00" }, distinctCount: { entryId: "4" } });
  });

  it("has no mutation and shows nothing without an organization in scope", async () => {
    expect(Object.keys((await h.gql("{ __schema { mutationType { fields { name } } } }")).body.data.__schema.mutationType.fields.reduce(
      (o: Record<string, true>, f: { name: string }) => ({ ...o, [f.name]: true }), {}))).not.toContain("createGeneralLedgerEntry");
    const gl = dataOf(await h.gql("{ generalLedgerEntries { totalCount } }", {}, t.ownerJwt), "generalLedgerEntries");
    expect(gl.totalCount).toBe(0);
  });

  it("reads pages of at most 1,000 lines (100 unless asked), and refuses negative first or offset as the caller's mistake", async () => {
    const page = (args: string) => h.gql(`{ generalLedgerEntries${args} { totalCount nodes { entryId } } }`, {}, t.apiKey);
    const two = dataOf(await page("(first: 2, offset: 1)"), "generalLedgerEntries");
    expect(two.nodes).toHaveLength(2);
    expect(two.totalCount).toBe(13);
    expect(dataOf(await page(""), "generalLedgerEntries").nodes).toHaveLength(13);
    for (const [args, message] of [
      ["(first: -1)", `first must be between 0 and ${GENERAL_LEDGER_PAGE.max}.`],
      [`(first: ${GENERAL_LEDGER_PAGE.max + 1})`, `first must be between 0 and ${GENERAL_LEDGER_PAGE.max}.`],
      ["(offset: -5)", "offset must not be negative."],
    ]) {
      expect(errorOf(await page(args))).toEqual({ message, code: "BAD_USER_INPUT" });
    }
    const intro = await h.gql(`{ __type(name: "Query") { fields { name args { name defaultValue } } } }`);
    const field = intro.body.data.__type.fields.find((f: { name: string }) => f.name === "generalLedgerEntries");
    expect(field.args.find((a: { name: string }) => a.name === "first").defaultValue).toBe(String(GENERAL_LEDGER_PAGE.default));
  });

  it("a having filter value that is no number is the caller's mistake, before any SQL; dates are grouped, never filtered by sums", async () => {
    const res = await h.gql(`{ generalLedgerEntries { groupedAggregates(groupBy: [ACCOUNT_NAME], having: { sum: { amount: { equalTo: "0x10" } } }) { keys } } }`, {}, t.apiKey);
    expect(errorOf(res).code).toBe("BAD_USER_INPUT");
    expect(errorOf(res).message).toMatch(/BigFloat must be a decimal number such as "12.34"/);
    const viaVariable = await h.gql(`query($v: BigFloat) { generalLedgerEntries { groupedAggregates(groupBy: [ACCOUNT_NAME], having: { sum: { amount: { equalTo: $v } } }) { keys } } }`, { v: "1,000.00" }, t.apiKey);
    expect(errorOf(viaVariable)).toMatchObject({ code: "BAD_USER_INPUT" });
    expect(errorOf(viaVariable).message).toMatch(/BigFloat must be a decimal number/);
    // Groups only by columns of few values: a line's id would give every line, past the page limit.
    const perLine = await h.gql(`{ generalLedgerEntries(first: 1) { groupedAggregates(groupBy: [ROW_ID]) { keys } } }`, {}, t.apiKey);
    expect(errorOf(perLine).code).toBe("BAD_USER_INPUT");
    const dates = await h.gql(`{ generalLedgerEntries { groupedAggregates(groupBy: [MONTH], having: { sum: { txnDate: { greaterThan: "2026-01-01" } } }) { keys } } }`, {}, t.apiKey);
    expect(errorOf(dates)).toMatchObject({ code: "BAD_USER_INPUT" });
    expect(errorOf(dates).message).toMatch(/txnDate/);
  });

  it("a JWT session names its organization with X-Organization-Id, checked for membership", async () => {
    const own = dataOf(await h.gql("{ generalLedgerEntries { totalCount } }", {}, t.ownerJwt, { "X-Organization-Id": t.organizationId }), "generalLedgerEntries");
    expect(own.totalCount).toBe(13);
    const other = await createTenant(h);
    const refused = await h.gql("{ generalLedgerEntries { totalCount } }", {}, t.ownerJwt, { "X-Organization-Id": other.organizationId });
    expect(refused.body).toEqual({ errors: [{ message: "Not A Member Of This Organization.", extensions: { code: "FORBIDDEN" } }] });
    const unknown = await h.gql("{ generalLedgerEntries { totalCount } }", {}, t.ownerJwt, { "X-Organization-Id": "00000000-0000-4000-8000-000000000000" });
    expect(unknown.body.errors[0]).toEqual({ message: "Organization Not Found.", extensions: { code: "NOT_FOUND" } });
    // An operation that names another organization still gets its own access check.
    const res = await h.gql("query($o: UUID!) { listAccounts(organizationId: $o) { totalCount } }", { o: other.organizationId }, t.ownerJwt,
      { "X-Organization-Id": t.organizationId });
    expect(res.body.errors[0].message).toBe("Not A Member Of This Organization.");
  });
});

