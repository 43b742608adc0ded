import fc from "fast-check";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createTenant, dataOf, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { accountsOf, balancesFromLines, call, CLASSIFY, CONFIRM, CREATE, REJECT, UPDATE } from "./ledger-fixtures.js";

/**
 * Random sequences of create / classify / confirm / reject / update against the database. After
 * every step: each live entry balances, the trial balance is zero, accountBalances equals the sum
 * of the lines, the daily totals equal a recomputation from the lines, and the reports equal a
 * straightforward SQL recomputation.
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.close());

const money = fc.integer({ min: 1, max: 500_000 }).map((c) => (c / 100).toFixed(2));
const day = fc.integer({ min: 0, max: 59 }).map((d) => new Date(Date.UTC(2026, 0, 1 + d)).toISOString().slice(0, 10));
const classifyArgs = { pick: fc.nat(), tax: fc.constantFrom(null, "GST", "HST_ON", "explicit"), payment: fc.constantFrom("Chequing", "Processor Clearing") };
const op = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("create" as const), amount: money, date: day, eventType: fc.constantFrom("expense", "income", "transfer") }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("classify" as const), ...classifyArgs }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("classifyAndConfirm" as const), ...classifyArgs }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("confirm" as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("reject" as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("update" as const), pick: fc.nat(), amount: fc.option(money), date: fc.option(day) }) },
);

async function checkInvariants(t: Tenant) {
  const org = t.organizationId;
  const one = async (sql: string) => (await h.owner.query(sql, [org])).rows;
  // Every live entry balances, and has at least two lines.
  expect(await one(`select j.id from app_public.journal_entries j left join app_public.journal_lines l on l.entry_id = j.id
    where j.organization_id = $1 and j.voided_at is null group by j.id having coalesce(sum(l.debit), 0) <> coalesce(sum(l.credit), 0) or count(l.id) < 2`)).toEqual([]);
  // Trial balance is zero.
  expect((await one(`select coalesce(sum(debit - credit), 0)::text s from app_public.journal_lines where organization_id = $1 and not voided`))[0].s).toMatch(/^0(\.00)?$/);
  // Live lines belong exactly to entries of booked events; voided lines to voided entries.
  expect(await one(`select l.id from app_public.journal_lines l join app_public.journal_entries j on j.id = l.entry_id
    join app_public.ledger_events e on e.id = j.event_id
    where l.organization_id = $1 and (l.voided <> (j.voided_at is not null) or (not l.voided and e.status not in ('confirmed', 'synced', 'reconciled')))`)).toEqual([]);
  // Daily totals equal a recomputation from the lines.
  expect(await one(`select coalesce(t.account_id, r.account_id) a from app_public.account_daily_totals t
    full join (select account_id, txn_date, sum(debit) d, sum(credit) c from app_public.journal_lines where organization_id = $1 and not voided group by 1, 2) r
      on r.account_id = t.account_id and r.txn_date = t.day
    where (t.organization_id = $1 or t.organization_id is null)
      and (coalesce(t.debit, 0) <> coalesce(r.d, 0) or coalesce(t.credit, 0) <> coalesce(r.c, 0))`)).toEqual([]);
  // accountBalances equals the sum of the lines.
  const api = dataOf(await h.gql("query($org: UUID!) { accountBalances(organizationId: $org) { accountName balance } }", { org }, t.apiKey), "accountBalances");
  expect(Object.fromEntries(api.map((b: { accountName: string; balance: string }) => [b.accountName, b.balance]))).toEqual(await balancesFromLines(h, org));
  // Reports equal a straightforward recomputation over the period.
  const stmt = dataOf(await h.gql(`query($org: UUID!) { incomeStatement(organizationId: $org, startDate: "2026-01-01", endDate: "2026-02-28") {
    incomeAccounts { accountName total } expenseAccounts { accountName total } totalIncome totalExpenses netIncome } }`, { org }, t.apiKey), "incomeStatement");
  const recomputed = await one(`select a.name, a.classification,
      (case when a.classification = 'revenue' then sum(l.credit - l.debit) else sum(l.debit - l.credit) end)::numeric(20,2)::text total
    from app_public.journal_lines l join app_public.journal_entries j on j.id = l.entry_id and j.voided_at is null
    join app_public.ledger_events e on e.id = j.event_id and e.status in ('confirmed', 'synced', 'reconciled')
    join app_public.accounts a on a.id = l.account_id
    where l.organization_id = $1 and a.classification in ('revenue', 'expense') and l.txn_date between '2026-01-01' and '2026-02-28'
    group by a.name, a.classification order by a.name`);
  const lines = (c: string) => recomputed.filter((r) => r.classification === c).map((r) => ({ accountName: r.name, total: r.total }));
  const sum = (c: string) => recomputed.filter((r) => r.classification === c).reduce((s, r) => s + Math.round(Number(r.total) * 100), 0);
  expect(stmt).toEqual({
    incomeAccounts: lines("revenue"), expenseAccounts: lines("expense"),
    totalIncome: (sum("revenue") / 100).toFixed(2), totalExpenses: (sum("expense") / 100).toFixed(2),
    netIncome: ((sum("revenue") - sum("expense")) / 100).toFixed(2),
  });
  const dash = dataOf(await h.gql(`query($org: UUID!) { dashboardSummary(organizationId: $org, startDate: "2026-01-01", endDate: "2026-02-28") { totalRevenue totalExpenses netIncome unreviewedCount } }`, { org }, t.apiKey), "dashboardSummary");
  const unreviewed = (await one("select count(*)::int n from app_public.ledger_events where organization_id = $1 and status = 'needs_review'"))[0].n;
  expect(dash).toEqual({ totalRevenue: stmt.totalIncome, totalExpenses: stmt.totalExpenses, netIncome: stmt.netIncome, unreviewedCount: unreviewed });
}

it("random sequences of operations keep the books consistent", async () => {
  await fc.assert(fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 14 }), async (ops) => {
    const t = await createTenant(h);
    const acc = await accountsOf(h, t);
    const events: { id: string; eventType: string }[] = [];
    const categoryFor = (type: string) => type === "income" ? acc["Sales Revenue"] : type === "transfer" ? acc["Owner's Equity"] : acc["Cost of Goods Sold"];
    for (const o of ops) {
      const target = "pick" in o && events.length ? events[o.pick % events.length] : undefined;
      if (o.kind === "create") {
        const r = await call(h, t, CREATE, { merchantName: "M", amount: o.amount, transactionDate: o.date, eventType: o.eventType }, "createLedgerEvent");
        expect(r.success).toBe(true);
        events.push({ id: r.eventId, eventType: o.eventType });
      } else if (!target) {
        continue;
      } else if (o.kind === "classify" || o.kind === "classifyAndConfirm") {
        const tax = o.tax === "explicit" ? { taxAmount: "0.01", taxAccountId: acc["GST/HST Payable"] } : o.tax ? { taxCode: o.tax } : {};
        await call(h, t, CLASSIFY, { eventId: target.id, categoryId: categoryFor(target.eventType), paymentId: acc[o.payment], ...tax }, "updateStagedEntry");
        if (o.kind === "classifyAndConfirm") {
          await checkInvariants(t);
          await call(h, t, CONFIRM, { eventId: target.id }, "confirmLedgerEvent");
        }
      } else if (o.kind === "confirm") {
        await call(h, t, CONFIRM, { eventId: target.id }, "confirmLedgerEvent");
      } else if (o.kind === "reject") {
        await call(h, t, REJECT, { eventId: target.id }, "rejectLedgerEvent");
      } else {
        const r = await call(h, t, UPDATE, { eventId: target.id, amount: o.amount ?? undefined, transactionDate: o.date ?? undefined }, "updateLedgerEvent");
        expect(r.error === null || r.error === "Only events in needs_review or pending can be updated." || r.error === "Tax amount must be less than the amount.").toBe(true);
      }
      await checkInvariants(t);
    }
  }), { numRuns: 40, seed: 20_261_122 });
  // The runs did post and void entries (the property is not vacuous).
  const { rows: [r] } = await h.owner.query("select count(*) filter (where voided_at is null)::int live, count(*) filter (where voided_at is not null)::int voided from app_public.journal_entries");
  expect(r.live).toBeGreaterThan(5);
  expect(r.voided).toBeGreaterThan(0);
});
