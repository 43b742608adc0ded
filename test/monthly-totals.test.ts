import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTenant, dataOf, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { until } from "./helpers/until.js";
import { runJobs } from "./helpers/worker.js";
import { accountsOf, bookEvent, call, CLASSIFY, CONFIRM, createEvent, REJECT, UPDATE, type Accounts } from "./ledger-fixtures.js";

/**
 * Monthly totals (migrations/fixtures/ledger/monthly-totals.sql): the months before an
 * organization's `totals_rolled_through` are read from a row a month, the rest from the daily
 * rows. Every report and count reads the same before and after a rollup, and after postings,
 * voids, reversals and date changes in months already rolled; the monthly rows stay the sums of
 * their days; a rollup racing a posting never loses it.
 */
let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(async () => { await h?.close(); });

const REPORTS = `query($org: UUID!, $asOf: Date, $s: Date!, $e: Date!, $from: String, $to: String) {
  trialBalance(organizationId: $org, asOf: $asOf) { asOf rows { accountId debit credit } totalDebit totalCredit }
  balanceSheet(organizationId: $org, asOf: $asOf) { fiscalYearStart assets { accountId balance } liabilities { accountId balance }
    equity { accountName balance } totalAssets totalLiabilities totalEquity }
  incomeStatement(organizationId: $org, startDate: $s, endDate: $e) { incomeAccounts { accountId total } expenseAccounts { accountId total }
    totalIncome totalExpenses netIncome }
  salesTaxReturn(organizationId: $org, startDate: $s, endDate: $e, taxType: "GST_HST") { salesAndRevenue }
  dashboardSummary(organizationId: $org, startDate: $s, endDate: $e) { totalRevenue totalExpenses unreviewedCount }
  accountBalances(organizationId: $org) { accountId balance }
  all: listLedgerEvents(organizationId: $org) { totalCount }
  ranged: listLedgerEvents(organizationId: $org, dateFrom: $from, dateTo: $to) { totalCount }
  confirmed: listLedgerEvents(organizationId: $org, status: ["confirmed"], dateFrom: $from) { totalCount }
}`;

/** Days on both sides of month ends, of the fiscal year's mid-month start (07-15), and open ends. */
const VIEWS = [
  { asOf: null, s: "2026-01-01", e: "2026-11-30", from: null, to: null },
  { asOf: "2026-07-14", s: "2026-02-15", e: "2026-09-01", from: "2026-02-15", to: "2026-09-01" },
  { asOf: "2026-07-15", s: "2026-03-01", e: "2026-08-31", from: "2026-03-01", to: "2026-08-31" },
  { asOf: "2026-08-31", s: "2025-12-31", e: "2026-03-31", from: "2025-12-31", to: "2026-04-30" },
  { asOf: "2025-12-31", s: "2026-09-30", e: "2026-10-01", from: "2026-10-01", to: null },
];

async function reports(t: Tenant) {
  const out = [];
  for (const v of VIEWS) {
    const r = await h.gql(REPORTS, { org: t.organizationId, ...v }, t.apiKey);
    expect(r.body.errors).toBeUndefined();
    out.push(r.body.data);
  }
  return out;
}

/** Months rolled in monthly rows that are not the sums of their days (none when right). */
async function monthsOffTheirDays(org: string) {
  const { rows } = await h.owner.query(`
    with o as (select totals_rolled_through as through from app_public.organizations where id = $1),
    days as (select account_id, date_trunc('month', day::timestamp)::date as month, sum(debit) as debit, sum(credit) as credit
               from app_public.account_daily_totals, o where organization_id = $1 and day < o.through group by 1, 2),
    months as (select account_id, month, debit, credit from app_public.account_monthly_totals where organization_id = $1),
    day_counts as (select date_trunc('month', day::timestamp)::date as month, status, sum(n) as n
                     from app_public.ledger_event_daily_counts, o where organization_id = $1 and day < o.through group by 1, 2),
    month_counts as (select month, status, n from app_public.ledger_event_monthly_counts where organization_id = $1)
    select 'totals' as kind, coalesce(d.account_id, m.account_id)::text as key, coalesce(d.month, m.month)::text as month
      from days d full join months m on m.account_id = d.account_id and m.month = d.month
     where coalesce(d.debit, 0) <> coalesce(m.debit, 0) or coalesce(d.credit, 0) <> coalesce(m.credit, 0)
    union all
    select 'counts', coalesce(d.status, m.status), coalesce(d.month, m.month)::text
      from day_counts d full join month_counts m on m.status = d.status and m.month = d.month
     where coalesce(d.n, 0) <> coalesce(m.n, 0)`, [org]);
  return rows;
}

const rollUp = (org: string, through: string, client: pg.Pool | pg.PoolClient = h.owner) =>
  client.query("select app_private.roll_up_monthly_totals($1, $2) as n", [org, through]);

const currentMonth = async () => (await h.owner.query("select app_private.current_month_start()::text as m")).rows[0].m as string;

/** Back to reading days only: what every report read before monthly totals. */
async function unroll(org: string) {
  await h.owner.query("delete from app_public.account_monthly_totals where organization_id = $1", [org]);
  await h.owner.query("delete from app_public.ledger_event_monthly_counts where organization_id = $1", [org]);
  await h.owner.query("update app_public.organizations set totals_rolled_through = null where id = $1", [org]);
}

async function rebuild(org: string) {
  const c = await h.owner.connect();
  try {
    await c.query("begin isolation level repeatable read");
    const { rows: [{ r }] } = await c.query("select app_private.rebuild_daily_totals($1) as r", [org]);
    await c.query("commit");
    return r;
  } finally {
    c.release();
  }
}

const book = (t: Tenant, acc: Accounts, transactionDate: string, amount: string, eventType = "expense") =>
  bookEvent(h, t, { merchantName: `Vendor ${transactionDate}`, amount, transactionDate, eventType },
    { categoryId: acc[eventType === "income" ? "Sales Revenue" : "Cost of Goods Sold"], paymentId: acc["Chequing"] });

describe("monthly totals", () => {
  it("reports and counts read the same before and after a rollup, and after changes in rolled months", async () => {
    const t = await createTenant(h);
    const acc = await accountsOf(h, t);
    await h.owner.query("update app_public.organizations set fiscal_year_start = '07-15' where id = $1", [t.organizationId]);
    const booked: Record<string, string> = {};
    for (const [day, amount, type] of [["2025-12-31", "100.00", "income"], ["2026-01-01", "12.34", "expense"], ["2026-02-28", "50.00", "expense"],
      ["2026-03-15", "200.00", "income"], ["2026-07-14", "7.77", "expense"], ["2026-07-15", "300.00", "income"], ["2026-08-31", "9.99", "expense"],
      ["2026-09-01", "45.00", "income"], ["2026-10-10", "3.21", "expense"], ["2026-11-02", "60.00", "income"]]) {
      booked[day] = await book(t, acc, day, amount, type);
    }
    // Waiting for review, in a month to be rolled and in the current one.
    const waiting = await createEvent(h, t, { merchantName: "Unsorted", amount: "5.00", transactionDate: "2026-04-10" });
    await createEvent(h, t, { merchantName: "Unsorted", amount: "6.00", transactionDate: "2026-11-03" });

    const before = await reports(t);
    expect(before[0].all.totalCount).toBe(12);
    expect(before[0].dashboardSummary.unreviewedCount).toBe(2);

    expect((await rollUp(t.organizationId, "2026-10-01")).rows[0].n).toBeGreaterThan(0);
    const { rows: [o] } = await h.owner.query("select totals_rolled_through::text as through from app_public.organizations where id = $1", [t.organizationId]);
    expect(o.through).toBe("2026-10-01");
    expect((await h.owner.query("select count(*)::int as n from app_public.account_monthly_totals where organization_id = $1", [t.organizationId])).rows[0].n)
      .toBeGreaterThan(10);
    expect(await monthsOffTheirDays(t.organizationId)).toEqual([]);
    expect(await reports(t)).toEqual(before);
    // Rolled already: nothing read again, nothing counted twice.
    expect((await rollUp(t.organizationId, "2026-10-01")).rows[0].n).toBe(0);
    expect((await rollUp(t.organizationId, "2026-09-01")).rows[0].n).toBe(0);
    expect(await reports(t)).toEqual(before);

    // Changes in rolled months: a posting, a void (rejecting a confirmed event), a reversal, a status
    // change and an event moved out of the rolled months.
    await book(t, acc, "2026-03-20", "11.11");
    expect(await call(h, t, REJECT, { eventId: booked["2026-02-28"] }, "rejectLedgerEvent")).toMatchObject({ success: true });
    expect(dataOf(await h.gql(`mutation($org: UUID!, $eventId: UUID!) { reverseLedgerEvent(organizationId: $org, eventId: $eventId, postingDate: "2026-08-15") {
      success error } }`, { org: t.organizationId, eventId: booked["2026-07-15"] }, t.apiKey), "reverseLedgerEvent")).toMatchObject({ success: true });
    expect(await call(h, t, CLASSIFY, { eventId: waiting, categoryId: acc["Cost of Goods Sold"], paymentId: acc["Chequing"] }, "updateStagedEntry"))
      .toMatchObject({ success: true });
    expect(await call(h, t, CONFIRM, { eventId: waiting }, "confirmLedgerEvent")).toMatchObject({ success: true });
    const moved = await createEvent(h, t, { merchantName: "Moved", amount: "8.00", transactionDate: "2026-05-05" });
    expect(await call(h, t, UPDATE, { eventId: moved, transactionDate: "2026-10-20" }, "updateLedgerEvent")).toMatchObject({ success: true });
    await book(t, acc, "2026-11-20", "1.00");

    expect(await monthsOffTheirDays(t.organizationId)).toEqual([]);
    const rolled = await reports(t);
    await unroll(t.organizationId);
    expect(await reports(t)).toEqual(rolled);

    // Rolled again, in two steps, the second through the current month: the same.
    await rollUp(t.organizationId, "2026-01-01");
    expect(await reports(t)).toEqual(rolled);
    await rollUp(t.organizationId, await currentMonth());
    expect(await monthsOffTheirDays(t.organizationId)).toEqual([]);
    expect(await reports(t)).toEqual(rolled);

    // The operator's rebuild checks the monthly rows too, and puts a wrong one right.
    expect(await rebuild(t.organizationId)).toMatchObject({ equal: true, accountMonthsRepaired: 0, statusMonthsRepaired: 0 });
    expect((await rebuild(t.organizationId)).accountMonths).toBeGreaterThan(10);
    await h.owner.query("update app_public.account_monthly_totals set debit = debit + 0.01 where organization_id = $1 and month = '2026-03-01' and account_id = $2",
      [t.organizationId, acc["Cost of Goods Sold"]]);
    await h.owner.query("delete from app_public.ledger_event_monthly_counts where organization_id = $1 and month = '2026-04-01'", [t.organizationId]);
    expect(await reports(t)).not.toEqual(rolled);
    expect(await rebuild(t.organizationId)).toMatchObject({ equal: false, accountMonthsRepaired: 1, statusMonthsRepaired: 1 });
    expect(await reports(t)).toEqual(rolled);

    // Rolled back by hand without its rows: the rebuild removes them, and the months roll again.
    await h.owner.query("update app_public.organizations set totals_rolled_through = '2026-03-01' where id = $1", [t.organizationId]);
    expect(await rebuild(t.organizationId)).toMatchObject({ equal: false });
    expect((await h.owner.query("select count(*)::int as n from app_public.account_monthly_totals where organization_id = $1 and month >= '2026-03-01'",
      [t.organizationId])).rows[0].n).toBe(0);
    expect(await rebuild(t.organizationId)).toMatchObject({ equal: true });
    expect(await reports(t)).toEqual(rolled);
    expect((await rollUp(t.organizationId, "2026-10-01")).rows[0].n).toBeGreaterThan(0);
    expect(await monthsOffTheirDays(t.organizationId)).toEqual([]);
    expect(await reports(t)).toEqual(rolled);
  });

  it("refuses a rollup through a day that is not a month's first, or into the current month, and changes nothing", async () => {
    const t = await createTenant(h);
    await expect(rollUp(t.organizationId, "2026-10-02")).rejects.toThrow("Monthly totals are rolled up through the first day of a month.");
    const next = (await h.owner.query("select (app_private.current_month_start() + interval '1 month')::date::text as m")).rows[0].m;
    await expect(rollUp(t.organizationId, next)).rejects.toThrow("Monthly totals are rolled up through the current month's first day at the latest.");
    const { rows: [o] } = await h.owner.query("select totals_rolled_through from app_public.organizations where id = $1", [t.organizationId]);
    expect(o.totals_rolled_through).toBeNull();
  });

  it("refuses to roll up in a repeatable-read transaction", async () => {
    const t = await createTenant(h);
    const c = await h.owner.connect();
    try {
      await c.query("begin isolation level repeatable read");
      await expect(rollUp(t.organizationId, "2026-10-01", c)).rejects.toThrow("Monthly totals are rolled up in a read committed transaction.");
    } finally {
      await c.query("rollback");
      c.release();
    }
  });

  it("the nightly task rolls every organization's past months", async () => {
    const t = await createTenant(h);
    const acc = await accountsOf(h, t);
    await book(t, acc, "2026-02-10", "25.00");
    const before = await reports(t);
    await h.owner.query("select graphile_worker.add_job('roll_up_monthly_totals', '{}'::json)");
    await runJobs(h, 1);
    const { rows: [o] } = await h.owner.query(
      "select totals_rolled_through = app_private.current_month_start() as current from app_public.organizations where id = $1", [t.organizationId]);
    expect(o.current).toBe(true);
    expect(await monthsOffTheirDays(t.organizationId)).toEqual([]);
    expect(await reports(t)).toEqual(before);
  });
});

/** A connection as the API's role with a user's identity, in an open transaction. */
async function callerClient(userId: string) {
  const c = await h.auth.connect();
  await c.query("begin");
  await c.query("select set_config('role', 'accounting_visitor', true), set_config('app.user_id', $1, true)", [userId]);
  const { rows: [{ pid }] } = await c.query("select pg_backend_pid() as pid");
  return { c, pid };
}

const blockedBy = (waiter: number, holder: number) => until(`backend ${waiter} to wait for ${holder}`, async () =>
  (await h.owner.query("select $2::int = any (pg_blocking_pids($1)) as blocked", [waiter, holder])).rows[0].blocked);

describe("a rollup racing a posting", () => {
  const staged = async (t: Tenant, acc: Accounts, transactionDate: string) => {
    const id = await createEvent(h, t, { merchantName: "Racer", amount: "40.00", transactionDate });
    expect(await call(h, t, CLASSIFY, { eventId: id, categoryId: acc["Cost of Goods Sold"], paymentId: acc["Chequing"] }, "updateStagedEntry"))
      .toMatchObject({ success: true });
    return id;
  };
  const may = async (org: string) => (await h.owner.query(
    `select debit::text from app_public.account_monthly_totals m join app_public.accounts a on a.id = m.account_id
      where m.organization_id = $1 and m.month = '2026-05-01' and a.name = 'Cost of Goods Sold'`, [org])).rows[0]?.debit;

  it("a change in flight, of a past month or of the current one, makes a rollup fail at once and change nothing; after it, the rollup counts it", async () => {
    const t = await createTenant(h);
    const acc = await accountsOf(h, t);
    await book(t, acc, "2026-05-02", "10.00");
    const past = await staged(t, acc, "2026-05-10");
    const month = await currentMonth();
    const now = await staged(t, acc, month);
    for (const id of [now, past]) {
      const a = await callerClient(t.ownerId);
      try {
        const { rows: [{ r }] } = await a.c.query("select app_public.confirm_ledger_event($1, $2) as r", [t.organizationId, id]);
        expect(r).toMatchObject({ success: true });
        const started = Date.now();
        await expect(rollUp(t.organizationId, month)).rejects.toMatchObject({ code: "55P03", message: "The organization's totals are being changed; try again." });
        expect(Date.now() - started).toBeLessThan(1000);
        await a.c.query("commit");
      } finally {
        await a.c.query("rollback").catch(() => undefined);
        a.c.release();
      }
    }
    const { rows: [o] } = await h.owner.query("select totals_rolled_through from app_public.organizations where id = $1", [t.organizationId]);
    expect(o.totals_rolled_through).toBeNull();
    expect((await rollUp(t.organizationId, month)).rows[0].n).toBeGreaterThan(0);
    expect(await may(t.organizationId)).toBe("50.00");
    expect(await monthsOffTheirDays(t.organizationId)).toEqual([]);
  });

  it("a change of the current month in flight (no row lock, no monthly row to write) still makes a rollup fail; after it, the rollup counts it", async () => {
    const t = await createTenant(h);
    const acc = await accountsOf(h, t);
    await book(t, acc, "2026-05-02", "10.00");
    const month = await currentMonth();
    const moved = await createEvent(h, t, { merchantName: "Moved", amount: "8.00", transactionDate: month });
    const nextDay = (await h.owner.query("select ($1::date + 1)::text as d", [month])).rows[0].d;
    const a = await callerClient(t.ownerId);
    try {
      // Had the clock passed into the next month before it compared its day, this change would be
      // one the rollup through that month must wait for: its advisory lock is all that tells.
      const { rows: [{ r }] } = await a.c.query("select app_public.update_ledger_event($1, $2, transaction_date => $3) as r",
        [t.organizationId, moved, nextDay]);
      expect(r).toMatchObject({ success: true });
      await expect(rollUp(t.organizationId, month)).rejects.toMatchObject({ code: "55P03", message: "The organization's totals are being changed; try again." });
      await a.c.query("commit");
    } finally {
      await a.c.query("rollback").catch(() => undefined);
      a.c.release();
    }
    expect((await rollUp(t.organizationId, month)).rows[0].n).toBeGreaterThan(0);
    expect(await monthsOffTheirDays(t.organizationId)).toEqual([]);
  });

  it("a rollup in flight holds the posting back, which then adds to the month rolled", async () => {
    const t = await createTenant(h);
    const acc = await accountsOf(h, t);
    await book(t, acc, "2026-05-02", "10.00");
    const id = await staged(t, acc, "2026-05-10");
    const a = await callerClient(t.ownerId);
    const b = await h.owner.connect();
    try {
      await b.query("begin");
      const { rows: [{ pid }] } = await b.query("select pg_backend_pid() as pid");
      await rollUp(t.organizationId, "2026-10-01", b);
      const posting = a.c.query("select app_public.confirm_ledger_event($1, $2) as r", [t.organizationId, id]);
      await blockedBy(a.pid, pid);
      await b.query("commit");
      expect((await posting).rows[0].r).toMatchObject({ success: true });
      await a.c.query("commit");
    } finally {
      await a.c.query("rollback").catch(() => undefined);
      await b.query("rollback").catch(() => undefined);
      a.c.release();
      b.release();
    }
    expect(await may(t.organizationId)).toBe("50.00");
    expect(await monthsOffTheirDays(t.organizationId)).toEqual([]);
  });

  it("the nightly task leaves an organization whose row stays held for the next run, and rolls the others", async () => {
    const held = await createTenant(h);
    const other = await createTenant(h);
    const acc = await accountsOf(h, held);
    const id = await staged(held, acc, "2026-05-10");
    await book(other, await accountsOf(h, other), "2026-03-03", "3.00");
    const a = await callerClient(held.ownerId);
    try {
      expect((await a.c.query("select app_public.confirm_ledger_event($1, $2) as r", [held.organizationId, id])).rows[0].r).toMatchObject({ success: true });
      const { rows: [r] } = await h.owner.query("call app_private.roll_up_all_monthly_totals()");
      expect(r.left_for_later).toBeGreaterThanOrEqual(1);
      await a.c.query("commit");
    } finally {
      await a.c.query("rollback").catch(() => undefined);
      a.c.release();
    }
    const through = "select totals_rolled_through is not null as rolled from app_public.organizations where id = $1";
    expect((await h.owner.query(through, [held.organizationId])).rows[0].rolled).toBe(false);
    expect((await h.owner.query(through, [other.organizationId])).rows[0].rolled).toBe(true);
    await h.owner.query("call app_private.roll_up_all_monthly_totals()");
    expect((await h.owner.query(through, [held.organizationId])).rows[0].rolled).toBe(true);
    expect(await may(held.organizationId)).toBe("40.00");
    expect(await monthsOffTheirDays(held.organizationId)).toEqual([]);
  });
});
