import { randomInt } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dataOf, errorOf, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { call, CLASSIFY, CONFIRM, CREATE, createEvent, GET, tenantWithAccounts, UPDATE, type Accounts } from "./ledger-fixtures.js";

/**
 * Every value GraphQL accepts for an Int, a date or an amount argument is either served or refused
 * with a business error that names the field: never "Internal error." (a date out of range, a
 * numeric overflow, an index row too large, a bad cast inside a batch).
 */
let h: Harness;
let t: Tenant;
let acc: Accounts;
beforeAll(async () => {
  h = await startHarness();
  ({ t, acc } = await tenantWithAccounts(h, { "Big Purchases": ["expense", "expense"] }));
});
afterAll(() => h?.close());

const INT_MIN = -2147483648;
const INT_MAX = 2147483647;
const DATE_RANGE = "must be between 1900-01-01 and 2199-12-31.";
const OUT_OF_RANGE_DATES = ["0001-01-01", "1899-12-31", "2200-01-01", "9999-12-31"];

const LIST_EVENTS = `query($org: UUID!, $sinceDays: Int, $dateFrom: String, $dateTo: String, $amountMin: String, $amountMax: String, $limit: Int, $offset: Int) {
  listLedgerEvents(organizationId: $org, sinceDays: $sinceDays, dateFrom: $dateFrom, dateTo: $dateTo, amountMin: $amountMin,
    amountMax: $amountMax, limit: $limit, offset: $offset) { totalCount pageSize offset items { id functionalAmount } } }`;
const DASHBOARD = `query($org: UUID!, $s: Date, $e: Date) { dashboardSummary(organizationId: $org, startDate: $s, endDate: $e) { totalExpenses } }`;
const INCOME = `query($org: UUID!, $s: Date, $e: Date) { incomeStatement(organizationId: $org, startDate: $s, endDate: $e) { totalExpenses netIncome expenseAccounts { accountName total } } }`;
const BALANCES = `query($org: UUID!) { accountBalances(organizationId: $org) { accountName balance } }`;

const q = (query: string, vars: Record<string, unknown>) => h.gql(query, { org: t.organizationId, ...vars }, t.apiKey);
const eventCount = async () =>
  (await h.owner.query("select count(*)::int as n from app_public.ledger_events where organization_id = $1", [t.organizationId])).rows[0].n as number;

/** A function called as the API role with t's API key, as the GraphQL server would (for arguments GraphQL itself cannot send). */
async function asApi(sql: string, params: unknown[]) {
  const c = await h.auth.connect();
  try {
    await c.query("begin");
    await c.query("select set_config('role', 'accounting_visitor', true), set_config('app.api_key_id', $1, true), set_config('app.organization_id', $2, true)",
      [t.apiKeyId, t.organizationId]);
    return (await c.query(sql, params)).rows[0];
  } finally {
    await c.query("rollback").catch(() => undefined);
    c.release();
  }
}

describe("sinceDays", () => {
  it.each([3000000, 36501, INT_MAX])("refuses %i with a message", async (sinceDays) => {
    expect(errorOf(await q(LIST_EVENTS, { sinceDays }))).toEqual({ message: "sinceDays must be between 0 and 36500.", code: "BAD_USER_INPUT" });
  });

  it("accepts 0 to 36500; a negative value keeps its message", async () => {
    await createEvent(h, t, { merchantName: "Old", transactionDate: "1950-06-01" });
    expect(dataOf(await q(LIST_EVENTS, { sinceDays: 36500 }), "listLedgerEvents").totalCount).toBeGreaterThanOrEqual(1);
    expect(dataOf(await q(LIST_EVENTS, { sinceDays: 0 }), "listLedgerEvents").items).toBeInstanceOf(Array);
    expect(errorOf(await q(LIST_EVENTS, { sinceDays: INT_MIN }))).toEqual({ message: "sinceDays must not be negative.", code: "BAD_USER_INPUT" });
    expect(errorOf(await q(LIST_EVENTS, { sinceDays: 3000000 })).message).toBe("sinceDays must be between 0 and 36500.");
  });
});

describe("Int arguments at the ends of GraphQL's range", () => {
  const lists: [string, string][] = [
    ["listLedgerEvents", LIST_EVENTS],
    ["listAccounts", `query($org: UUID!, $limit: Int, $offset: Int) { listAccounts(organizationId: $org, limit: $limit, offset: $offset) { totalCount pageSize offset items { id } } }`],
    ["listContacts", `query($org: UUID!, $limit: Int, $offset: Int) { listContacts(organizationId: $org, limit: $limit, offset: $offset) { totalCount pageSize offset items { id } } }`],
    ["listCategoryRules", `query($org: UUID!, $limit: Int, $offset: Int) { listCategoryRules(organizationId: $org, limit: $limit, offset: $offset) { totalCount pageSize offset items { id } } }`],
    ["listTaxCodes", `query($org: UUID!, $limit: Int, $offset: Int) { listTaxCodes(organizationId: $org, limit: $limit, offset: $offset) { totalCount pageSize offset items { id } } }`],
  ];
  it.each(lists)("%s: offset 2147483647 is an empty page, limit 2147483647 is capped at 200, negatives are refused (sinceDays too)", async (field, doc) => {
    const page = dataOf(await q(doc, { limit: INT_MAX, offset: INT_MAX }), field);
    expect(page).toMatchObject({ pageSize: 200, offset: INT_MAX, items: [] });
    expect(errorOf(await q(doc, { limit: INT_MIN }))).toEqual({ message: "limit must be at least 1.", code: "BAD_USER_INPUT" });
    expect(errorOf(await q(doc, { offset: INT_MIN }))).toEqual({ message: "offset must not be negative.", code: "BAD_USER_INPUT" });
    // The one other Int argument of the schema.
    expect(errorOf(await q(LIST_EVENTS, { sinceDays: INT_MAX })).code).toBe("BAD_USER_INPUT");
  });
});

describe("dates from 1900-01-01 to 2199-12-31", () => {
  it.each(OUT_OF_RANGE_DATES)("createLedgerEvent refuses transactionDate %s and writes nothing", async (transactionDate) => {
    const before = await eventCount();
    const r = await call(h, t, CREATE, { merchantName: "Vendor", amount: "10.00", transactionDate }, "createLedgerEvent");
    expect(r).toEqual({ success: false, error: `Transaction date ${DATE_RANGE}`, eventId: null });
    expect(await eventCount()).toBe(before);
  });

  it("createLedgerEvent accepts 1900-01-01 and 2199-12-31, updateLedgerEvent refuses a day beyond", async () => {
    const first = await createEvent(h, t, { transactionDate: "1900-01-01" });
    const last = await createEvent(h, t, { transactionDate: "2199-12-31" });
    expect((await call(h, t, GET, { eventId: first }, "getLedgerEvent")).transactionDate).toBe("1900-01-01");
    expect((await call(h, t, GET, { eventId: last }, "getLedgerEvent")).transactionDate).toBe("2199-12-31");
    for (const transactionDate of OUT_OF_RANGE_DATES) {
      const r = await call(h, t, UPDATE, { eventId: first, transactionDate }, "updateLedgerEvent");
      expect(r).toEqual({ success: false, error: `Transaction date ${DATE_RANGE}`, event: null });
    }
    expect((await call(h, t, UPDATE, { eventId: first, transactionDate: "2199-12-31" }, "updateLedgerEvent")).event.transactionDate).toBe("2199-12-31");
  });

  it.each(OUT_OF_RANGE_DATES)("list and report filters refuse %s, naming the argument", async (d) => {
    expect(errorOf(await q(LIST_EVENTS, { dateFrom: d }))).toEqual({ message: `dateFrom ${DATE_RANGE}`, code: "BAD_USER_INPUT" });
    expect(errorOf(await q(LIST_EVENTS, { dateTo: d }))).toEqual({ message: `dateTo ${DATE_RANGE}`, code: "BAD_USER_INPUT" });
    for (const doc of [DASHBOARD, INCOME]) {
      expect(errorOf(await q(doc, { s: d, e: "2026-01-01" }))).toEqual({ message: `startDate ${DATE_RANGE}`, code: "BAD_USER_INPUT" });
      expect(errorOf(await q(doc, { s: "1900-01-01", e: d }))).toEqual({ message: `endDate ${DATE_RANGE}`, code: "BAD_USER_INPUT" });
    }
  });

  it("list and report filters accept the whole range, 1900-01-01 to 2199-12-31", async () => {
    expect(dataOf(await q(LIST_EVENTS, { dateFrom: "1900-01-01", dateTo: "2199-12-31" }), "listLedgerEvents").totalCount).toBeGreaterThanOrEqual(2);
    expect(dataOf(await q(DASHBOARD, { s: "1900-01-01", e: "2199-12-31" }), "dashboardSummary").totalExpenses).toMatch(/^\d+\.\d\d$/);
    expect(dataOf(await q(INCOME, { s: "1900-01-01", e: "2199-12-31" }), "incomeStatement").netIncome).toMatch(/^-?\d+\.\d\d$/);
    // One day beyond either end is refused, whichever end.
    expect(errorOf(await q(INCOME, { s: "1899-12-31", e: "2199-12-31" })).message).toBe(`startDate ${DATE_RANGE}`);
  });
});

describe("one maximum amount: 999,999,999.99", () => {
  const TOO_BIG = ["1000000000.00", "1000000000", "999999999999999.99", "0000001000000000.01", "9".repeat(400)];

  it.each(TOO_BIG)("createLedgerEvent and updateLedgerEvent refuse %s with their own message", async (amount) => {
    const before = await eventCount();
    const r = await call(h, t, CREATE, { merchantName: "Vendor", amount, transactionDate: "2026-03-01" }, "createLedgerEvent");
    expect(r).toEqual({ success: false, error: "Amount must be at most 999,999,999.99.", eventId: null });
    expect(await eventCount()).toBe(before);
    const id = await createEvent(h, t, {});
    expect(await call(h, t, UPDATE, { eventId: id, amount }, "updateLedgerEvent"))
      .toEqual({ success: false, error: "Amount must be at most 999,999,999.99.", event: null });
  });

  it("malformed amounts keep their messages", async () => {
    for (const amount of ["1.234", "-5", "abc", "0", "1e9"]) {
      const r = await call(h, t, CREATE, { merchantName: "Vendor", amount, transactionDate: "2026-03-01" }, "createLedgerEvent");
      expect(r.error).toBe("Amount must be a positive decimal string.");
    }
    // ... and a too large amount does not get the malformed message.
    const r = await call(h, t, CREATE, { merchantName: "Vendor", amount: "1000000000.00", transactionDate: "2026-03-01" }, "createLedgerEvent");
    expect(r.error).toBe("Amount must be at most 999,999,999.99.");
  });

  it("taxAmount and the amountMin/amountMax filters have the same limit", async () => {
    const id = await createEvent(h, t, { amount: "999999999.99" });
    expect(await call(h, t, CLASSIFY, { eventId: id, taxAmount: "1000000000.00" }, "updateStagedEntry"))
      .toEqual({ success: false, error: "Tax amount must be at most 999,999,999.99." });
    expect(await call(h, t, CLASSIFY, { eventId: id, taxAmount: "999999999.99" }, "updateStagedEntry"))
      .toEqual({ success: false, error: "Tax amount must be less than the amount." });
    expect(errorOf(await q(LIST_EVENTS, { amountMin: "1000000000" }))).toEqual({ message: "amountMin must be at most 999,999,999.99.", code: "BAD_USER_INPUT" });
    expect(errorOf(await q(LIST_EVENTS, { amountMax: "99999999999999999999" }))).toEqual({ message: "amountMax must be at most 999,999,999.99.", code: "BAD_USER_INPUT" });
    const page = dataOf(await q(LIST_EVENTS, { amountMin: "999999999.99", amountMax: "999999999.99" }), "listLedgerEvents");
    expect(page.items.map((e: { id: string }) => e.id)).toContain(id);
  });

  it("999,999,999.99 is accepted and confirmable, and daily totals and reports stay exact; one cent more is refused", async () => {
    const day = "2031-07-15";
    const classify = { categoryId: acc["Big Purchases"], paymentId: acc["Chequing"] };
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const id = await createEvent(h, t, { merchantName: `Big ${i}`, amount: "999999999.99", transactionDate: day });
      expect((await call(h, t, CLASSIFY, { eventId: id, ...classify }, "updateStagedEntry")).success).toBe(true);
      const c = await call(h, t, CONFIRM, { eventId: id }, "confirmLedgerEvent");
      expect(c).toMatchObject({ success: true, error: null });
      ids.push(id);
    }
    const e = await call(h, t, GET, { eventId: ids[0] }, "getLedgerEvent");
    expect(e).toMatchObject({ functionalAmount: "999999999.99", status: "confirmed", journalEntry: { totalAmount: "999999999.99" } });
    const { rows: [tot] } = await h.owner.query(
      "select debit::text, credit::text from app_public.account_daily_totals where organization_id = $1 and account_id = $2 and day = $3",
      [t.organizationId, acc["Big Purchases"], day]);
    expect(tot).toEqual({ debit: "2999999999.97", credit: "0.00" });
    const income = dataOf(await q(INCOME, { s: day, e: day }), "incomeStatement");
    expect(income).toEqual({ totalExpenses: "2999999999.97", netIncome: "-2999999999.97",
      expenseAccounts: [{ accountName: "Big Purchases", total: "2999999999.97" }] });
    expect(dataOf(await q(DASHBOARD, { s: day, e: day }), "dashboardSummary")).toEqual({ totalExpenses: "2999999999.97" });
    const balances = dataOf(await q(BALANCES, {}), "accountBalances");
    // The event is in the future: not in today's balances.
    expect(balances.find((b: { accountName: string }) => b.accountName === "Big Purchases").balance).toBe("0.00");
    const r = await call(h, t, CREATE, { merchantName: "Vendor", amount: "1000000000.00", transactionDate: day }, "createLedgerEvent");
    expect(r.error).toBe("Amount must be at most 999,999,999.99.");
  });
});

describe("search text", () => {
  it.each([
    ["listTaxCodes", "listTaxCodes(organizationId: $org, search: $s) { totalCount }"],
    ["listAccounts", "listAccounts(organizationId: $org, search: $s) { totalCount }"],
    ["listContacts", "listContacts(organizationId: $org, search: $s) { totalCount }"],
    ["listCategoryRules", "listCategoryRules(organizationId: $org, search: $s) { totalCount }"],
    ["listLedgerEvents", "listLedgerEvents(organizationId: $org, search: $s) { totalCount }"],
  ])("%s: at most 200 characters, refused at once beyond (ILIKE costs grow with the pattern)", async (field, selection) => {
    const query = `query($org: UUID!, $s: String) { ${selection} }`;
    expect((await q(query, { s: "%".repeat(200) })).body.errors).toBeUndefined();
    const started = Date.now();
    const res = await q(query, { s: "%".repeat(100_000) });
    expect(errorOf(res)).toEqual({ message: "search must be at most 200 characters.", code: "BAD_USER_INPUT" });
    expect(Date.now() - started).toBeLessThan(1000);
    void field;
  });
});

describe("other inputs that used to reach the database raw", () => {
  it("a memo of 5,000 characters is stored, whatever its text (it no longer rides in an index row)", async () => {
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    const memo = Array.from({ length: 5000 }, () => alphabet[randomInt(alphabet.length)]).join("");
    const id = await createEvent(h, t, { merchantName: "\u{1F600}".repeat(500) });
    const r = await call(h, t, UPDATE, { eventId: id, memo }, "updateLedgerEvent");
    expect(r).toMatchObject({ success: true, error: null, event: { memo } });
    expect((await call(h, t, UPDATE, { eventId: id, memo: memo + "x" }, "updateLedgerEvent")).error).toBe("Memo must be at most 5000 characters.");
  });

  it("a batch item of the wrong JSON type is that item's error, not the batch's", async () => {
    const { r } = await asApi("select app_public.batch_create_accounts($1, $2) as r", [t.organizationId, JSON.stringify([
      "not an object",
      { name: 42, accountType: "expense", classification: "expense" },
      { name: "Batch Typed", accountType: "expense", classification: "expense", taxCodeId: "not-a-uuid" },
      { name: "Batch Typed", accountType: "expense", classification: "expense", parentId: ["x"] },
      { name: "Batch Typed", accountType: "expense", classification: "expense" },
    ])]);
    expect(r).toEqual({ created: 1, errors: [
      { index: 0, error: "Each item must be an object." },
      { index: 1, error: "name must be a string." },
      { index: 2, error: "taxCodeId must be a UUID." },
      { index: 3, error: "parentId must be a string." },
    ] });
    const { r: c } = await asApi("select app_public.batch_create_contacts($1, $2) as r", [t.organizationId, JSON.stringify([
      7, { contactType: "vendor", displayName: { x: 1 } }, { contactType: "vendor", displayName: "Batch Typed" },
    ])]);
    expect(c).toEqual({ created: 1, errors: [{ index: 0, error: "Each item must be an object." }, { index: 1, error: "displayName must be a string." }] });
  });

  it("list filters of the wrong JSON type are refused with a message", async () => {
    const listWith = (args: string, params: unknown[]) =>
      asApi(`select app_public.list_ledger_events($1, ${args}) as r`, [t.organizationId, ...params]).then(() => null, (e) => ({ code: e.code, message: e.message }));
    expect(await listWith("account_ids => $2", [JSON.stringify(["nope"])])).toEqual({ code: "AP400", message: "accountIds must be a list of UUIDs." });
    expect(await listWith("payment_account_ids => $2", [JSON.stringify({ a: 1 })])).toEqual({ code: "AP400", message: "paymentAccountIds must be a list of UUIDs." });
    expect(await listWith("status => $2", [JSON.stringify("confirmed")]))
      .toEqual({ code: "AP400", message: "status must be any of: needs_review, confirmed, synced, reconciled, pending, ignored." });
  });

  it("the operator's create_organization refuses a blank or long name and a bad currency with a message", async () => {
    const fail = (params: unknown[]) =>
      h.owner.query("select app_private.create_organization($1, $2)", params).then(() => null, (e) => ({ code: e.code, message: e.message }));
    expect(await fail(["   ", "CAD"])).toEqual({ code: "AP400", message: "Name is required." });
    expect(await fail(["x".repeat(201), "CAD"])).toEqual({ code: "AP400", message: "Name must be at most 200 characters." });
    expect(await fail(["Currency Org", "dollars"])).toEqual({ code: "AP400", message: "Currency must be a three-letter code such as CAD." });
    const user = (email: string) =>
      h.owner.query("select app_private.create_user($1)", [email]).then(() => null, (e) => ({ code: e.code, message: e.message }));
    expect(await user("a".repeat(3000) + "@example.test")).toEqual({ code: "AP400", message: "Email must look like an email address." });
  });
});
