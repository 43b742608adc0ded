import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTenant, dataOf, errorOf, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { accountsOf, call, CONFIRM, createEvent, REJECT, UPDATE, type Accounts } from "./ledger-fixtures.js";

/**
 * listLedgerEvents: every filter, sortBy value and default of the contract and docs/api.md, Paging.
 */
let h: Harness;
let t: Tenant;
let acc: Accounts;

interface Model { id: string; merchantName: string; amount: number; date: string; status: string; memo: string; hasDocument: boolean; category: string | null; payment: string | null; created: number }
const model: Model[] = [];

const LIST = `query($org: UUID!, $status: [String!], $hasDocument: Boolean, $sinceDays: Int, $dateFrom: String, $dateTo: String,
  $amountMin: String, $amountMax: String, $accountIds: [UUID!], $categoryIds: [UUID!], $paymentAccountIds: [UUID!], $search: String,
  $limit: Int, $offset: Int, $sortBy: String, $sortDir: String) {
  listLedgerEvents(organizationId: $org, status: $status, hasDocument: $hasDocument, sinceDays: $sinceDays, dateFrom: $dateFrom,
    dateTo: $dateTo, amountMin: $amountMin, amountMax: $amountMax, accountIds: $accountIds, categoryIds: $categoryIds,
    paymentAccountIds: $paymentAccountIds, search: $search, limit: $limit, offset: $offset, sortBy: $sortBy, sortDir: $sortDir) {
    items { id merchantName functionalAmount transactionDate status category { id } paymentAccount { id } journalEntry { id } receipts { id } }
    totalCount pageSize offset } }`;

const list = async (vars: Record<string, unknown>) => dataOf(await h.gql(LIST, { org: t.organizationId, ...vars }, t.apiKey), "listLedgerEvents");
const isoDaysAgo = (n: number) => new Date(Date.now() - n * 86400_000).toISOString().slice(0, 10);
const cmp = (a: string | number, b: string | number) => (a < b ? -1 : a > b ? 1 : 0);

beforeAll(async () => {
  h = await startHarness();
  t = await createTenant(h);
  const other = await createTenant(h);
  acc = await accountsOf(h, t);
  const office = acc["Cost of Goods Sold"], fees = acc["Bank Fees & Charges"], sales = acc["Sales Revenue"];
  const rows: [string, string, string, string, string | null, string | null, string][] = [
    // merchant, amount, date, action, category, payment, memo
    ["Staples", "12.50", isoDaysAgo(1), "review", null, null, ""],
    ["staples office", "12.50", isoDaysAgo(1), "confirm", office, acc["Chequing"], "printer paper"],
    ["100% Organic", "99.99", isoDaysAgo(3), "review", office, null, ""],
    ["Bank fee_monthly", "4.00", isoDaysAgo(10), "confirm", fees, acc["Chequing"], ""],
    ["Bank fee monthly", "4.00", isoDaysAgo(10), "reject", fees, null, ""],
    ["Customer A", "250.00", isoDaysAgo(40), "confirm", sales, acc["Processor Clearing"], "invoice 100%"],
    ["Customer B", "1000.00", isoDaysAgo(40), "review", sales, acc["Processor Clearing"], ""],
    ["Zed Supplies", "0.01", isoDaysAgo(400), "confirm", office, acc["Chequing"], ""],
    ["Apex", "50.00", "2026-01-15", "review", null, acc["Chequing"], "Note_with_underscore"],
    ["apex", "50.00", "2026-01-15", "pending", null, null, ""],
  ];
  for (const [merchantName, amount, date, action, category, payment, memo] of rows) {
    const eventType = category === sales ? "income" : "expense";
    const vars = { merchantName, amount, transactionDate: date, eventType, categoryId: category ?? undefined, paymentAccountId: payment ?? undefined };
    const id = await createEvent(h, t, vars);
    if (memo) await call(h, t, UPDATE, { eventId: id, memo }, "updateLedgerEvent");
    if (action === "confirm") expect((await call(h, t, CONFIRM, { eventId: id }, "confirmLedgerEvent")).success).toBe(true);
    let status = action === "confirm" ? "confirmed" : "needs_review";
    if (action === "reject") { await call(h, t, REJECT, { eventId: id }, "rejectLedgerEvent"); status = "ignored"; }
    if (action === "pending") { await h.owner.query("update app_public.ledger_events set status = 'pending' where id = $1", [id]); status = "pending"; }
    const { rows: [r] } = await h.owner.query("select memo, extract(epoch from created) c from app_public.ledger_events where id = $1", [id]);
    model.push({ id, merchantName, amount: Number(amount), date, status, memo: r.memo, hasDocument: false, category, payment, created: Number(r.c) });
  }
  // Documents arrive with the receipts issue; the flag is set directly here.
  await h.owner.query("update app_public.ledger_events set has_document = true where id = any ($1)", [[model[1].id, model[5].id]]);
  model[1].hasDocument = model[5].hasDocument = true;
  // Another organization's events never show.
  await createEvent(h, other, { merchantName: "Staples" });
});
afterAll(() => h?.close());

const defaultOrder = (a: Model, b: Model) => -cmp(a.date, b.date) || -cmp(a.id, b.id);
const ids = (items: { id: string }[]) => items.map((i) => i.id);
const expected = (pred: (m: Model) => boolean) => model.filter(pred).sort(defaultOrder).map((m) => m.id);

describe("listLedgerEvents", () => {
  it("defaults: transactionDate desc (ties by id), limit 25, offset 0, every event of the organization", async () => {
    const page = await list({});
    expect(page).toMatchObject({ totalCount: model.length, pageSize: 25, offset: 0 });
    expect(ids(page.items)).toEqual(expected(() => true));
    const booked = page.items.find((i: { id: string }) => i.id === model[1].id);
    expect(booked).toMatchObject({ category: { id: acc["Cost of Goods Sold"] }, paymentAccount: { id: acc["Chequing"] }, receipts: [] });
    expect(booked.journalEntry.id).toBeTruthy();
  });

  const filters: [string, Record<string, unknown>, (m: Model) => boolean][] = [
    ["status one", { status: ["needs_review"] }, (m) => m.status === "needs_review"],
    ["status several", { status: ["confirmed", "ignored"] }, (m) => ["confirmed", "ignored"].includes(m.status)],
    ["hasDocument true", { hasDocument: true }, (m) => m.hasDocument],
    ["hasDocument false", { hasDocument: false }, (m) => !m.hasDocument],
    ["sinceDays", { sinceDays: 10 }, (m) => m.date >= isoDaysAgo(10)],
    ["sinceDays 1", { sinceDays: 1 }, (m) => m.date >= isoDaysAgo(1)],
    ["dateFrom", { dateFrom: isoDaysAgo(40) }, (m) => m.date >= isoDaysAgo(40)],
    ["dateTo", { dateTo: isoDaysAgo(40) }, (m) => m.date <= isoDaysAgo(40)],
    ["dateFrom + dateTo", { dateFrom: "2026-01-15", dateTo: isoDaysAgo(10) }, (m) => m.date >= "2026-01-15" && m.date <= isoDaysAgo(10)],
    ["amountMin inclusive", { amountMin: "50" }, (m) => m.amount >= 50],
    ["amountMax inclusive", { amountMax: "12.50" }, (m) => m.amount <= 12.5],
    ["amount range", { amountMin: "4.00", amountMax: "99.99" }, (m) => m.amount >= 4 && m.amount <= 99.99],
    ["accountIds", { accountIds: ["Cost of Goods Sold"] }, (m) => m.category === acc["Cost of Goods Sold"]],
    ["categoryIds several", { categoryIds: ["Bank Fees & Charges", "Sales Revenue"] }, (m) => [acc["Bank Fees & Charges"], acc["Sales Revenue"]].includes(m.category!)],
    ["paymentAccountIds", { paymentAccountIds: ["Processor Clearing"] }, (m) => m.payment === acc["Processor Clearing"]],
    ["search, case-insensitive, merchant", { search: "STAPLES" }, (m) => /staples/i.test(m.merchantName) || /staples/i.test(m.memo)],
    ["search on memo", { search: "printer" }, (m) => /printer/i.test(m.memo)],
    ["search with a literal %", { search: "100%" }, (m) => m.merchantName.includes("100%") || m.memo.includes("100%")],
    ["search with a literal _", { search: "fee_" }, (m) => m.merchantName.toLowerCase().includes("fee_") || m.memo.toLowerCase().includes("fee_")],
    ["search _ matches only _", { search: "e_w" }, (m) => m.memo.toLowerCase().includes("e_w") || m.merchantName.toLowerCase().includes("e_w")],
    ["several filters together", { status: ["needs_review", "confirmed"], dateFrom: isoDaysAgo(40), search: "s" }, (m) =>
      ["needs_review", "confirmed"].includes(m.status) && m.date >= isoDaysAgo(40) && (/s/i.test(m.merchantName) || /s/i.test(m.memo))],
  ];
  it.each(filters)("filter: %s", async (_name, vars, pred) => {
    const named = Object.fromEntries(Object.entries(vars).map(([k, v]) =>
      [k, k.endsWith("Ids") ? (v as string[]).map((n) => acc[n]) : v]));
    const page = await list(named);
    const want = expected(pred);
    expect(want.length).toBeGreaterThan(0);
    expect(want.length).toBeLessThan(model.length);
    expect(ids(page.items)).toEqual(want);
    expect(page.totalCount).toBe(want.length);
  });

  const sorts: [string, (m: Model) => string | number][] = [
    ["transactionDate", (m) => m.date], ["functionalAmount", (m) => m.amount], ["merchantName", (m) => m.merchantName.toLowerCase()],
    ["status", (m) => m.status], ["created", (m) => m.created],
  ];
  for (const [sortBy, key] of sorts) {
    for (const sortDir of ["asc", "desc"] as const) {
      it(`sortBy ${sortBy} ${sortDir} (ties by id), paged by 3: each event exactly once`, async () => {
        const sign = sortDir === "asc" ? 1 : -1;
        const want = [...model].sort((a, b) => sign * (cmp(key(a), key(b)) || cmp(a.id, b.id))).map((m) => m.id);
        const seen: string[] = [];
        for (let offset = 0; offset < model.length + 3; offset += 3) {
          const page = await list({ sortBy, sortDir, limit: 3, offset });
          expect(page).toMatchObject({ totalCount: model.length, pageSize: 3, offset });
          seen.push(...ids(page.items));
        }
        expect(seen).toEqual(want);
      });
    }
  }

  it("paging with limit 3 over a filtered set returns each event exactly once", async () => {
    const want = expected((m) => m.status !== "ignored" && m.amount <= 250);
    const seen: string[] = [];
    let total = -1;
    for (let offset = 0; ; offset += 3) {
      const page = await list({ status: ["needs_review", "confirmed", "pending"], amountMax: "250.00", limit: 3, offset });
      total = page.totalCount;
      if (page.items.length === 0) break;
      seen.push(...ids(page.items));
    }
    expect(total).toBe(want.length);
    expect(seen).toEqual(want);
    expect(new Set(seen).size).toBe(seen.length);
  });

  it("a page past the end is empty, with no error", async () => {
    expect(await list({ offset: 1000 })).toEqual({ items: [], totalCount: model.length, pageSize: 25, offset: 1000 });
  });

  it("clamps limit to 200", async () => {
    expect((await list({ limit: 1000 })).pageSize).toBe(200);
  });

  it.each([
    [{ limit: 0 }, "limit must be at least 1."],
    [{ offset: -1 }, "offset must not be negative."],
    [{ sortBy: "amount" }, "sortBy must be one of: transactionDate, functionalAmount, merchantName, status, created."],
    [{ sortDir: "up" }, "sortDir must be one of: asc, desc."],
    [{ status: ["open"] }, "status must be any of: needs_review, confirmed, synced, reconciled, pending, ignored."],
    [{ dateFrom: "2026-02-31" }, "dateFrom must be a date in YYYY-MM-DD format."],
    [{ dateTo: "yesterday" }, "dateTo must be a date in YYYY-MM-DD format."],
    [{ amountMin: "1.001" }, "amountMin must be a decimal string."],
    [{ amountMax: "-3" }, "amountMax must be a decimal string."],
    [{ sinceDays: -1 }, "sinceDays must not be negative."],
  ])("refuses %j", async (vars, message) => {
    const res = await h.gql(LIST, { org: t.organizationId, ...vars }, t.apiKey);
    expect(errorOf(res)).toEqual({ message, code: "BAD_USER_INPUT" });
  });
});
