import { createReadStream, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { importProcessorBalance } from "../src/imports/processor-balance/import.js";
import { runCli } from "./helpers/cli.js";
import { createTenant, createUser, dataOf, errorOf, jwtFor, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { tempStorage } from "./helpers/temp-storage.js";
import { until } from "./helpers/until.js";
import { runJobs } from "./helpers/worker.js";
import { accountsOf, bookEvent, call, CLASSIFY, createEvent, eventRow, type Accounts } from "./ledger-fixtures.js";

/**
 * The lock date (migrations/fixtures/ledger/lock-date.sql): no journal line dated on or before an
 * organization's lock date is added, voided or removed, whoever writes it: a request, the CLI's
 * imports and deletes, the worker, the owner's own SQL. Each path is refused with
 * "The books are locked through YYYY-MM-DD." and changes nothing, then accepted after unlocking
 * (or with a posting date after the lock date). Postings racing a lock change land before it or
 * are refused.
 */
const { tmp, storage, remove } = tempStorage("lock-date-");

let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(async () => {
  await h?.close();
  remove();
});

const LOCK = "2026-01-31";
const LOCKED = `The books are locked through ${LOCK}.`;

const SETTINGS = `mutation($org: UUID!, $lockDate: String, $fiscalYearStart: String, $dateOrder: String) {
  updateOrganizationSettings(organizationId: $org, lockDate: $lockDate, fiscalYearStart: $fiscalYearStart, dateOrder: $dateOrder) {
    success error organization { id lockDate fiscalYearStart dateOrder } } }`;
const CONFIRM_ON = `mutation($org: UUID!, $eventId: UUID!, $postingDate: String) {
  confirmLedgerEvent(organizationId: $org, eventId: $eventId, postingDate: $postingDate) { success error eventId journalEntryId } }`;
const REJECT = `mutation($org: UUID!, $eventId: UUID!) { rejectLedgerEvent(organizationId: $org, eventId: $eventId) { success error eventId } }`;
const REVERSE = `mutation($org: UUID!, $eventId: UUID!, $postingDate: String) {
  reverseLedgerEvent(organizationId: $org, eventId: $eventId, postingDate: $postingDate) { success error eventId journalEntryId } }`;
const ENTRY = "id txnDate totalAmount voidedAt";
const GET = `query($org: UUID!, $eventId: UUID!) { getLedgerEvent(organizationId: $org, eventId: $eventId) {
  id status transactionDate journalEntry { ${ENTRY} } reversalEntry { ${ENTRY} } } }`;
const HISTORY = `query($org: UUID!, $eventId: UUID!) { ledgerEventHistory(organizationId: $org, eventId: $eventId) {
  action changes { field oldValue newValue } } }`;
const IMPORT_BANK = `mutation($org: UUID!, $p: UUID!, $rows: [BankStatementRowInput!]!) {
  importBankStatement(organizationId: $org, paymentAccountId: $p, rows: $rows) { success error importedCount } }`;

const cli = (...args: string[]) => runCli(h.databaseUrl, ...args);
const lastLine = (s: string) => s.trim().split("\n").pop();

/** updateOrganizationSettings with `credential` (the owner's JWT unless told): the raw response. */
const settings = (t: Tenant, vars: Record<string, unknown>, credential = t.ownerJwt) =>
  h.gql(SETTINGS, { org: t.organizationId, ...vars }, credential);

async function setLock(t: Tenant, lockDate: string | null): Promise<void> {
  const r = dataOf(await settings(t, { lockDate }), "updateOrganizationSettings");
  expect(r).toMatchObject({ success: true, error: null, organization: { id: t.organizationId, lockDate } });
}

const lockDateOf = async (org: string): Promise<string | null> =>
  (await h.owner.query("select to_char(lock_date, 'YYYY-MM-DD') d from app_public.organizations where id = $1", [org])).rows[0].d;

const confirm = (t: Tenant, eventId: string, postingDate?: string) =>
  call(h, t, CONFIRM_ON, { eventId, postingDate }, "confirmLedgerEvent");

/** An event created and classified (Cost of Goods Sold, paid from Chequing), left in needs_review. */
async function staged(t: Tenant, acc: Accounts, transactionDate: string, amount = "40.00", classify: Record<string, unknown> = {}): Promise<string> {
  const id = await createEvent(h, t, { merchantName: "Supplier", amount, transactionDate });
  const c = await call(h, t, CLASSIFY, { eventId: id, categoryId: acc["Cost of Goods Sold"], paymentId: acc["Chequing"], ...classify }, "updateStagedEntry");
  expect(c).toMatchObject({ success: true });
  return id;
}

/** The per-account daily totals (app_public.account_daily_totals), through a day when given; zero rows left out unless `raw`. */
async function dailyTotals(org: string, through: string | null = null, raw = false) {
  const { rows } = await h.owner.query(
    `select a.name as account, t.day::text as day, t.debit::text as debit, t.credit::text as credit
       from app_public.account_daily_totals t join app_public.accounts a on a.id = t.account_id
      where t.organization_id = $1 and ($2::date is null or t.day <= $2::date) and ($3 or t.debit <> 0 or t.credit <> 0)
      order by t.day, a.name`, [org, through, raw]);
  return rows as { account: string; day: string; debit: string; credit: string }[];
}

/** Everything a refused write could have changed: the journal's rows, the events' states, the batches and the daily totals. */
async function books(org: string) {
  const { rows: [c] } = await h.owner.query(`select
      (select count(*)::int from app_public.ledger_events where organization_id = $1) as events,
      (select count(*)::int from app_public.journal_entries where organization_id = $1) as entries,
      (select count(*)::int from app_public.journal_entries where organization_id = $1 and voided_at is null) as live_entries,
      (select count(*)::int from app_public.journal_lines where organization_id = $1) as lines,
      (select count(*)::int from app_public.journal_lines where organization_id = $1 and voided) as voided_lines,
      (select count(*)::int from app_public.import_batches where organization_id = $1) as batches,
      (select coalesce(jsonb_agg(jsonb_build_array(id, status, journal_entry_id, reversal_entry_id) order by id), '[]')
         from app_public.ledger_events where organization_id = $1) as event_states`, [org]);
  return { ...c, totals: await dailyTotals(org, null, true) };
}

/** The daily totals are what the live lines add up to, per account and day. */
async function expectTotalsMatchLines(org: string): Promise<void> {
  const { rows: fromLines } = await h.owner.query(
    `select a.name as account, l.txn_date::text as day, sum(l.debit)::numeric(20,2)::text as debit, sum(l.credit)::numeric(20,2)::text as credit
       from app_public.journal_lines l join app_public.accounts a on a.id = l.account_id
      where l.organization_id = $1 and not l.voided group by 1, 2 having sum(l.debit) <> 0 or sum(l.credit) <> 0 order by 2, 1`, [org]);
  expect(await dailyTotals(org)).toEqual(fromLines);
}

/** The lines of an entry: account, date, debit, credit, voided. */
async function linesOf(entryId: string) {
  const { rows } = await h.owner.query(
    `select a.name as account, l.txn_date::text as day, l.debit::text as debit, l.credit::text as credit, l.voided
       from app_public.journal_lines l join app_public.accounts a on a.id = l.account_id where l.entry_id = $1 order by a.name`, [entryId]);
  return rows;
}

/** A processor export (layout A) of the given rows: [id, type, amount, fee, created]. */
function processorFile(name: string, rows: [string, string, string, string, string][]): string {
  const file = path.join(tmp, name);
  writeFileSync(file, ["id,Type,Amount,Fee,Currency,Created (UTC),Description",
    ...rows.map(([id, type, amount, fee, created]) => `${id},${type},${amount},${fee},cad,${created},Order ${id}`)].join("\n") + "\n");
  return file;
}

/** Three rows, two of them in January (locked through 01-31), making 5 events and 10 lines. */
const JANUARY_ROWS: [string, string, string, string, string][] = [
  ["txn_jan_1", "charge", "50.00", "1.75", "2026-01-10 10:00"],
  ["txn_jan_2", "refund", "-5.00", "0.00", "2026-01-20 09:00"],
  ["txn_feb_1", "charge", "20.00", "0.90", "2026-02-10 12:00"],
];

describe("confirmLedgerEvent", () => {
  it("refuses an event dated in the locked period, on the lock date too; posts it with a postingDate after the lock, where the totals move", async () => {
    const t = await createTenant(h);
    const acc = await accountsOf(h, t);
    await bookEvent(h, t, { amount: "7.00", transactionDate: "2026-01-05" }, { categoryId: acc["Cost of Goods Sold"], paymentId: acc["Chequing"] });
    const id = await staged(t, acc, "2026-01-15", "40.00");
    const onLockDay = await staged(t, acc, LOCK, "3.00");
    const dayAfter = await staged(t, acc, "2026-02-01", "2.00");
    await setLock(t, LOCK);
    const lockedTotals = await dailyTotals(t.organizationId, LOCK, true);
    const before = await books(t.organizationId);

    expect(await confirm(t, id)).toMatchObject({ success: false, error: LOCKED, journalEntryId: null });
    expect(await confirm(t, onLockDay)).toMatchObject({ success: false, error: LOCKED });
    // A posting date in the locked period is refused as well.
    expect(await confirm(t, id, "2026-01-31")).toMatchObject({ success: false, error: LOCKED });
    expect(await books(t.organizationId)).toEqual(before);
    expect(await eventRow(h, id)).toMatchObject({ status: "needs_review", journal_entry_id: null });

    // The day after the lock date is open.
    expect(await confirm(t, dayAfter)).toMatchObject({ success: true });
    const r = await confirm(t, id, "2026-02-01");
    expect(r).toMatchObject({ success: true, error: null, eventId: id, journalEntryId: expect.any(String) });
    const e = await call(h, t, GET, { eventId: id }, "getLedgerEvent");
    expect(e).toMatchObject({ status: "confirmed", transactionDate: "2026-01-15",
      journalEntry: { id: r.journalEntryId, txnDate: "2026-02-01", totalAmount: "40.00", voidedAt: null }, reversalEntry: null });
    expect(await linesOf(r.journalEntryId)).toEqual([
      { account: "Chequing", day: "2026-02-01", debit: "0.00", credit: "40.00", voided: false },
      { account: "Cost of Goods Sold", day: "2026-02-01", debit: "40.00", credit: "0.00", voided: false }]);
    // The totals moved on the posting date (with the 2.00 of the event dated that day), none in the locked period.
    expect(await dailyTotals(t.organizationId, LOCK, true)).toEqual(lockedTotals);
    expect((await dailyTotals(t.organizationId)).filter((x) => x.day > LOCK)).toEqual([
      { account: "Chequing", day: "2026-02-01", debit: "0.00", credit: "42.00" },
      { account: "Cost of Goods Sold", day: "2026-02-01", debit: "42.00", credit: "0.00" }]);
    expect((await dailyTotals(t.organizationId)).some((x) => x.day === "2026-01-15")).toBe(false);
    await expectTotalsMatchLines(t.organizationId);
  });
});

describe("a posting date", () => {
  it("is never before the transaction date, locked or not; malformed, it is refused", async () => {
    const t = await createTenant(h);
    const acc = await accountsOf(h, t);
    const id = await staged(t, acc, "2026-05-10", "5.00");
    expect(await confirm(t, id, "2026-05-09")).toMatchObject({ success: false, error: "Posting date must not be before the transaction date (2026-05-10)." });
    expect(await confirm(t, id, "2026-5-10")).toMatchObject({ success: false, error: "Posting date must be a date in YYYY-MM-DD format." });
    expect((await eventRow(h, id)).status).toBe("needs_review");
    expect(await confirm(t, id, "2026-05-10")).toMatchObject({ success: true });
  });
});

describe("rejectLedgerEvent", () => {
  it("refuses to void an entry in the locked period; voids one posted after the lock; after unlocking (lockDate: null) voids it", async () => {
    const t = await createTenant(h);
    const acc = await accountsOf(h, t);
    const id = await bookEvent(h, t, { amount: "25.00", transactionDate: "2026-01-20" }, { categoryId: acc["Cost of Goods Sold"], paymentId: acc["Chequing"] });
    const postedLater = await staged(t, acc, "2026-01-25", "9.00");
    await setLock(t, LOCK);
    const { journal_entry_id: entry } = await eventRow(h, id);
    const before = await books(t.organizationId);

    expect(await call(h, t, REJECT, { eventId: id }, "rejectLedgerEvent")).toMatchObject({ success: false, error: LOCKED });
    expect(await books(t.organizationId)).toEqual(before);
    expect((await h.owner.query("select voided_at from app_public.journal_entries where id = $1", [entry])).rows[0].voided_at).toBeNull();
    expect((await linesOf(entry)).every((l) => !l.voided)).toBe(true);
    expect((await eventRow(h, id)).status).toBe("confirmed");

    // Dated in the locked period but posted after it: its entry is open, and rejecting it voids it.
    expect(await confirm(t, postedLater, "2026-02-02")).toMatchObject({ success: true });
    expect(await call(h, t, REJECT, { eventId: postedLater }, "rejectLedgerEvent")).toMatchObject({ success: true });
    expect((await linesOf((await eventRow(h, postedLater)).journal_entry_id)).every((l) => l.voided)).toBe(true);

    // Unlocked by an explicit null through GraphQL.
    await setLock(t, null);
    expect(await lockDateOf(t.organizationId)).toBeNull();
    expect(await call(h, t, REJECT, { eventId: id }, "rejectLedgerEvent")).toMatchObject({ success: true, eventId: id });
    expect((await eventRow(h, id)).status).toBe("ignored");
    expect((await h.owner.query("select voided_at from app_public.journal_entries where id = $1", [entry])).rows[0].voided_at).not.toBeNull();
    expect((await linesOf(entry)).every((l) => l.voided)).toBe(true);
    expect(await dailyTotals(t.organizationId)).toEqual([]);
    await expectTotalsMatchLines(t.organizationId);
  });
});

describe("reverseLedgerEvent", () => {
  it("refuses a posting date in the locked period; after it, posts every line swapped, keeps the original and the locked period's totals, ignores the event", async () => {
    const t = await createTenant(h);
    const acc = await accountsOf(h, t);
    // Three lines: Cost of Goods Sold 95.00 and GST/HST Payable 5.00 debited, Chequing 100.00 credited.
    const id = await bookEvent(h, t, { amount: "100.00", transactionDate: "2026-01-12" },
      { categoryId: acc["Cost of Goods Sold"], paymentId: acc["Chequing"], taxAmount: "5.00", taxAccountId: acc["GST/HST Payable"] });
    const { journal_entry_id: original } = await eventRow(h, id);
    const originalLines = await linesOf(original);
    expect(originalLines).toHaveLength(3);
    await setLock(t, LOCK);
    const lockedTotals = await dailyTotals(t.organizationId, LOCK, true);
    const before = await books(t.organizationId);

    for (const postingDate of ["2026-01-20", LOCK]) {
      expect(await call(h, t, REVERSE, { eventId: id, postingDate }, "reverseLedgerEvent")).toMatchObject({ success: false, error: LOCKED });
    }
    expect(await books(t.organizationId)).toEqual(before);
    expect(await eventRow(h, id)).toMatchObject({ status: "confirmed", reversal_entry_id: null });

    const r = await call(h, t, REVERSE, { eventId: id, postingDate: "2026-02-03" }, "reverseLedgerEvent");
    expect(r).toMatchObject({ success: true, error: null, eventId: id, journalEntryId: expect.any(String) });
    expect(r.journalEntryId).not.toBe(original);
    expect(await linesOf(r.journalEntryId)).toEqual(originalLines.map((l) => ({ ...l, day: "2026-02-03", debit: l.credit, credit: l.debit })));
    expect(await linesOf(original)).toEqual(originalLines);
    expect(await dailyTotals(t.organizationId, LOCK, true)).toEqual(lockedTotals);
    expect((await dailyTotals(t.organizationId)).filter((x) => x.day > LOCK)).toEqual([
      { account: "Chequing", day: "2026-02-03", debit: "100.00", credit: "0.00" },
      { account: "Cost of Goods Sold", day: "2026-02-03", debit: "0.00", credit: "95.00" },
      { account: "GST/HST Payable", day: "2026-02-03", debit: "0.00", credit: "5.00" }]);
    await expectTotalsMatchLines(t.organizationId);

    const e = await call(h, t, GET, { eventId: id }, "getLedgerEvent");
    expect(e).toMatchObject({ status: "ignored",
      journalEntry: { id: original, txnDate: "2026-01-12", totalAmount: "100.00", voidedAt: null },
      reversalEntry: { id: r.journalEntryId, txnDate: "2026-02-03", totalAmount: "100.00", voidedAt: null } });
    const history = await call(h, t, HISTORY, { eventId: id }, "ledgerEventHistory");
    const reversal = history.filter((x: { action: string }) => x.action === "reverse");
    expect(reversal).toHaveLength(1);
    expect(reversal[0].changes).toEqual(expect.arrayContaining([
      { field: "reversal_entry_id", oldValue: null, newValue: r.journalEntryId },
      { field: "status", oldValue: "confirmed", newValue: "ignored" }]));
    // Once only.
    expect(await call(h, t, REVERSE, { eventId: id, postingDate: "2026-02-04" }, "reverseLedgerEvent")).toMatchObject({ success: false, error: "Event is already reversed." });
  });
});

describe("bank statement imports into a locked period", () => {
  it("importBankStatement takes the lines as needs_review without posting; confirming them is refused, with a postingDate after the lock accepted", async () => {
    const t = await createTenant(h);
    const acc = await accountsOf(h, t);
    await setLock(t, LOCK);
    const r = await call(h, t, IMPORT_BANK, { p: acc["Chequing"], rows: [
      { transactionDate: "2026-01-05", description: "Hydro", amount: "-60.00", eventType: "expense" },
      { transactionDate: LOCK, description: "Stationery", amount: "-12.00", eventType: "expense" },
      { transactionDate: "2026-02-01", description: "Courier", amount: "-8.00", eventType: "expense" }] }, "importBankStatement");
    expect(r).toMatchObject({ success: true, importedCount: 3 });
    const { rows: events } = await h.owner.query(
      "select id, merchant_name, status, journal_entry_id from app_public.ledger_events where organization_id = $1 order by transaction_date", [t.organizationId]);
    expect(events.map((e) => [e.merchant_name, e.status, e.journal_entry_id])).toEqual([
      ["Hydro", "needs_review", null], ["Stationery", "needs_review", null], ["Courier", "needs_review", null]]);
    expect((await books(t.organizationId)).lines).toBe(0);

    for (const e of events) {
      expect(await call(h, t, CLASSIFY, { eventId: e.id, categoryId: acc["Cost of Goods Sold"] }, "updateStagedEntry")).toMatchObject({ success: true });
    }
    const before = await books(t.organizationId);
    for (const e of events.slice(0, 2)) expect(await confirm(t, e.id)).toMatchObject({ success: false, error: LOCKED });
    expect(await books(t.organizationId)).toEqual(before);
    expect(await confirm(t, events[2].id)).toMatchObject({ success: true });
    expect(await confirm(t, events[0].id, "2026-02-01")).toMatchObject({ success: true });
    expect((await dailyTotals(t.organizationId)).map((x) => [x.account, x.day, x.debit, x.credit])).toEqual([
      ["Chequing", "2026-02-01", "0.00", "68.00"], ["Cost of Goods Sold", "2026-02-01", "68.00", "0.00"]]);
  });

  it("the CLI's import_bank_csv takes a statement of the locked period as needs_review; confirming its lines is refused", async () => {
    const t = await createTenant(h);
    const acc = await accountsOf(h, t);
    const lock = "2025-12-31";
    await setLock(t, lock);
    const run = await cli("import_bank_csv", "data/samples/bank/td_chequing_sample.csv", "--org-name", t.name, "--payment-account", "Chequing", "--json");
    expect(run).toMatchObject({ code: 0, json: { importedCount: 25, skippedCount: 0 } });
    const { rows: events } = await h.owner.query(
      "select id, status, transaction_date::text as day from app_public.ledger_events where organization_id = $1 and direction = 'out' order by transaction_date, id", [t.organizationId]);
    expect(events.length).toBeGreaterThan(0);
    expect(events.every((e) => e.status === "needs_review" && e.day <= lock)).toBe(true);
    expect((await books(t.organizationId)).lines).toBe(0);
    expect(await call(h, t, CLASSIFY, { eventId: events[0].id, categoryId: acc["Cost of Goods Sold"] }, "updateStagedEntry")).toMatchObject({ success: true });
    const before = await books(t.organizationId);
    expect(await confirm(t, events[0].id)).toMatchObject({ success: false, error: `The books are locked through ${lock}.` });
    expect(await books(t.organizationId)).toEqual(before);
    expect(await confirm(t, events[0].id, "2026-01-01")).toMatchObject({ success: true });
  });
});

describe("processor imports (the CLI, a child process)", () => {
  it("import_processor_balance of rows in the locked period is refused, nothing imported; accepted after unlocking", async () => {
    const t = await createTenant(h);
    const file = processorFile("january.csv", JANUARY_ROWS);
    await setLock(t, LOCK);
    const before = await books(t.organizationId);
    expect(before).toMatchObject({ events: 0, lines: 0, batches: 0 });
    const refused = await cli("import_processor_balance", file, "--org-name", t.name);
    expect(refused.code).toBe(1);
    expect(lastLine(refused.stderr)).toBe(LOCKED);
    expect(await books(t.organizationId)).toEqual(before);
    // For review (needs_review, nothing posted), the same period is open to an import.
    const client = await h.owner.connect();
    try {
      const review = await importProcessorBalance(client, createReadStream(processorFile("january-review.csv",
        [["txn_review_1", "charge", "12.00", "0.50", "2026-01-12 10:00"]])), { organizationId: t.organizationId, fileName: "january-review.csv", review: true });
      expect(review).toMatchObject({ created: 2, status: "needs_review" });
    } finally {
      client.release();
    }
    expect(await books(t.organizationId)).toMatchObject({ events: 2, entries: 0, lines: 0, batches: 1 });

    await setLock(t, null);
    const ok = await cli("import_processor_balance", file, "--org-name", t.name, "--json");
    expect(ok).toMatchObject({ code: 0, json: { created: 5, createdRows: 3, status: "confirmed" } });
    expect(await books(t.organizationId)).toMatchObject({ events: 7, entries: 5, lines: 10, batches: 2 });
    await expectTotalsMatchLines(t.organizationId);
  });

  it("delete_processor_imports of a batch with lines in the period locked after importing is refused; a batch after the lock is deleted; all of it after unlocking", async () => {
    const t = await createTenant(h);
    // Imported as the CLI imports (its function, in this process).
    const client = await h.owner.connect();
    let first: { batchId: string; created: number };
    let second: { batchId: string; created: number };
    try {
      first = await importProcessorBalance(client, createReadStream(processorFile("january-2.csv", JANUARY_ROWS)), { organizationId: t.organizationId, fileName: "january-2.csv" });
      second = await importProcessorBalance(client, createReadStream(processorFile("march.csv", [["txn_mar_1", "charge", "30.00", "1.20", "2026-03-03 10:00"]])),
        { organizationId: t.organizationId, fileName: "march.csv" });
    } finally {
      client.release();
    }
    expect([first.created, second.created]).toEqual([5, 2]);
    await setLock(t, LOCK);
    const before = await books(t.organizationId);

    const refused = await cli("delete_processor_imports", "--org-name", t.name, "--batch-id", first.batchId);
    expect(refused.code).toBe(1);
    expect(lastLine(refused.stderr)).toBe(LOCKED);
    // The function the command runs, in one statement as it does.
    const del = (batchKey: string | null, dryRun = false) =>
      h.owner.query("select app_private.delete_processor_imports($1, $2, $3) as r", [t.organizationId, batchKey, dryRun]).then((x) => x.rows[0].r);
    // All of them at once includes January: refused too. A dry run only counts.
    await expect(del(null)).rejects.toThrow(LOCKED);
    expect(await del(first.batchId, true)).toMatchObject({ events: 5, journalEntries: 5, journalLines: 10, dryRun: true });
    expect(await books(t.organizationId)).toEqual(before);

    // The lock is by date: March's batch goes while January is locked.
    expect(await del(second.batchId)).toMatchObject({ events: 2, journalLines: 4 });
    await setLock(t, null);
    expect(await del(first.batchId)).toMatchObject({ events: 5, journalEntries: 5, journalLines: 10, dryRun: false });
    expect(await books(t.organizationId)).toMatchObject({ events: 0, entries: 0, lines: 0, batches: 0 });
    expect(await dailyTotals(t.organizationId)).toEqual([]);
  });
});

describe("the worker's import of a stored processor export", () => {
  const resultOf = (jobId: string) => until(`job ${jobId}'s result`, async () =>
    (await h.owner.query("select status, attempt, error, result from app_private.job_results where job_id = $1 order by id", [jobId])).rows
      .find(() => true));
  const queued = async (jobId: string) => (await h.owner.query("select 1 from graphile_worker.jobs where id = $1", [jobId])).rowCount;

  it("fails with the lock's message and writes nothing, queued by `--enqueue` or by the operator's `enqueue`; runs after unlocking", async () => {
    const t = await createTenant(h);
    const file = processorFile("january-3.csv", JANUARY_ROWS);
    await setLock(t, LOCK);
    const before = await books(t.organizationId);

    const key = `processor-imports/${t.organizationId}/operator-january.csv`;
    await storage.put(key, readFileSync(file));
    const [viaFlag, viaOperator] = await Promise.all([
      cli("import_processor_balance", file, "--org-name", t.name, "--enqueue", "--json"),
      cli("enqueue", "import_processor_balance", "--org-name", t.name, "--payload", JSON.stringify({ objectKey: key }), "--json")]);
    expect(viaFlag).toMatchObject({ code: 0, json: { enqueued: true } });
    expect(viaOperator).toMatchObject({ code: 0, json: { task: "import_processor_balance", organizationId: t.organizationId } });

    await runJobs(h, 2);
    for (const jobId of [viaFlag.json.jobId, viaOperator.json.jobId]) {
      // A refusal retrying cannot mend: recorded once as failed, and out of the queue.
      expect(await resultOf(jobId)).toEqual({ status: "failed", attempt: 1, error: LOCKED, result: null });
      await until(`job ${jobId} to leave the queue`, async () => (await queued(jobId)) === 0);
    }
    expect(await books(t.organizationId)).toEqual(before);

    await setLock(t, null);
    // Queued again as the CLI's `enqueue` queues it (its function).
    const { rows: [again] } = await h.owner.query("select app_private.enqueue_operator_job('import_processor_balance', $1, $2)::text as id",
      [t.organizationId, JSON.stringify({ objectKey: key })]);
    await runJobs(h, 1);
    expect(await resultOf(again.id)).toMatchObject({ status: "succeeded", error: null, result: { created: 5, status: "confirmed" } });
    expect(await books(t.organizationId)).toMatchObject({ events: 5, lines: 10, batches: 1 });
  });
});

describe("the owner's own SQL", () => {
  it("is refused a journal entry with lines in the locked period, and voiding or removing lines there: the trigger is the rule", async () => {
    const t = await createTenant(h);
    const acc = await accountsOf(h, t);
    const booked = await bookEvent(h, t, { amount: "11.00", transactionDate: "2026-01-08" }, { categoryId: acc["Cost of Goods Sold"], paymentId: acc["Chequing"] });
    const open = await staged(t, acc, "2026-01-15", "10.00");
    await setLock(t, LOCK);
    const { journal_entry_id: entry } = await eventRow(h, booked);
    const before = await books(t.organizationId);

    // Voiding the entry itself (what the general ledger reads), not only its lines.
    await expect(h.owner.query("update app_public.journal_entries set voided_at = now() where id = $1", [entry])).rejects.toThrow(LOCKED);

    /** An entry of 10.00 with its two lines, all dated `day`, in one transaction of the owner's (no organization in scope); rolled back. */
    const post = async (day: string) => {
      const c = await h.owner.connect();
      try {
        await c.query("begin");
        const { rows: [e] } = await c.query(
          "insert into app_public.journal_entries (organization_id, event_id, txn_date, total_amount) values ($1, $2, $3, 10) returning id",
          [t.organizationId, open, day]);
        await c.query(`insert into app_public.journal_lines (organization_id, entry_id, account_id, txn_date, debit, credit)
          values ($1, $2, $3, $5, 10, 0), ($1, $2, $4, $5, 0, 10)`, [t.organizationId, e.id, acc["Cost of Goods Sold"], acc["Chequing"], day]);
        await c.query("set constraints all immediate");
        return "accepted";
      } catch (err) {
        return err as Error & { code?: string };
      } finally {
        await c.query("rollback");
        c.release();
      }
    };
    expect(await post("2026-01-15")).toMatchObject({ message: LOCKED, code: "AP400" });
    expect(await post(LOCK)).toMatchObject({ message: LOCKED });
    // The same statement a day later is accepted: it is the date that is refused.
    expect(await post("2026-02-01")).toBe("accepted");

    const refusals: [string, string, string][] = [
      ["post through the function", "select app_private.post_journal_entries(array[$1::uuid])", open],
      ["void the lines", "update app_public.journal_lines set voided = true where entry_id = $1", entry],
      ["delete the lines", "delete from app_public.journal_lines where entry_id = $1", entry],
      ["delete the entry (its lines go with it)", "delete from app_public.journal_entries where id = $1", entry],
      ["delete the event (its entry goes with it)", "delete from app_public.ledger_events where id = $1", booked],
    ];
    for (const [what, text, id] of refusals) await expect(h.owner.query(text, [id]), what).rejects.toThrow(LOCKED);
    expect(await books(t.organizationId)).toEqual(before);

    // An organization deleted takes its locked books with it.
    await h.owner.query("delete from app_public.organizations where id = $1", [t.organizationId]);
    expect(await books(t.organizationId)).toMatchObject({ events: 0, entries: 0, lines: 0, totals: [] });
  });
});

/** A connection as the API's role with a user's identity (as a request by `userId` has it), in an open transaction. */
async function callerClient(userId: string): Promise<{ c: pg.PoolClient; pid: number }> {
  const c = await h.auth.connect();
  await c.query("begin");
  await c.query("select set_config('role', 'accounting_visitor', true), set_config('app.user_id', $1, true)", [userId]);
  const { rows: [{ pid }] } = await c.query("select pg_backend_pid() as pid");
  return { c, pid };
}

/** Rolls back what is still open (a failed test's) and gives the connections back. */
async function endClients(...clients: { c: pg.PoolClient }[]): Promise<void> {
  for (const { c } of clients) {
    await c.query("rollback").catch(() => undefined);
    c.release();
  }
}

/** Waits until backend `waiter` is blocked by backend `holder` (pg_blocking_pids). */
const blockedBy = (waiter: number, holder: number) => until(`backend ${waiter} to wait for ${holder}`, async () =>
  (await h.owner.query("select $2::int = any (pg_blocking_pids($1)) as blocked", [waiter, holder])).rows[0].blocked);

/** A query's outcome without throwing, and whether it has settled yet. */
function pending<T>(p: Promise<T>) {
  const state = { settled: false, promise: p.then((value) => ({ value, error: undefined }), (error: Error & { code?: string }) => ({ value: undefined, error })) };
  state.promise.finally(() => { state.settled = true; });
  return state;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("a confirm racing a change of the lock date", () => {
  it("a confirm in flight holds the lock change back, and lands before it", async () => {
    const t = await createTenant(h);
    const acc = await accountsOf(h, t);
    const id = await staged(t, acc, "2026-01-15");
    const a = await callerClient(t.ownerId);
    const b = await callerClient(t.ownerId);
    try {
      const { rows: [{ r }] } = await a.c.query("select app_public.confirm_ledger_event($1, $2) as r", [t.organizationId, id]);
      expect(r).toMatchObject({ success: true });
      const change = pending(b.c.query("select app_public.update_organization_settings($1, lock_date => to_jsonb($2::text)) as r", [t.organizationId, LOCK]));
      await blockedBy(b.pid, a.pid);
      await sleep(100);
      expect(change.settled).toBe(false);
      await a.c.query("commit");
      const { value, error } = await change.promise;
      expect(error).toBeUndefined();
      expect(value!.rows[0].r).toMatchObject({ success: true, organization: { lockDate: LOCK } });
      await b.c.query("commit");
    } finally {
      await endClients(a, b);
    }
    expect(await lockDateOf(t.organizationId)).toBe(LOCK);
    // Committed before the lock: it stays, in the period now locked.
    expect(await eventRow(h, id)).toMatchObject({ status: "confirmed" });
    expect((await linesOf((await eventRow(h, id)).journal_entry_id)).map((l) => l.day)).toEqual(["2026-01-15", "2026-01-15"]);
  });

  it("a lock change in flight holds the confirm back, which then reads the new date and is refused", async () => {
    const t = await createTenant(h);
    const acc = await accountsOf(h, t);
    const id = await staged(t, acc, "2026-01-15");
    const before = await books(t.organizationId);
    const a = await callerClient(t.ownerId);
    const b = await callerClient(t.ownerId);
    try {
      const { rows: [{ r }] } = await b.c.query("select app_public.update_organization_settings($1, lock_date => to_jsonb($2::text)) as r", [t.organizationId, LOCK]);
      expect(r).toMatchObject({ success: true, organization: { lockDate: LOCK } });
      // The confirm's own check reads the committed (unlocked) settings and passes; the journal's trigger waits.
      const posting = pending(a.c.query("select app_public.confirm_ledger_event($1, $2) as r", [t.organizationId, id]));
      await blockedBy(a.pid, b.pid);
      await sleep(100);
      expect(posting.settled).toBe(false);
      await b.c.query("commit");
      const { error } = await posting.promise;
      expect(error).toMatchObject({ message: LOCKED, code: "AP400" });
      await a.c.query("rollback");
    } finally {
      await endClients(a, b);
    }
    expect(await books(t.organizationId)).toEqual(before);
    expect(await eventRow(h, id)).toMatchObject({ status: "needs_review", journal_entry_id: null });
  });

  it("through GraphQL, confirms fired with a lock change land before it or are refused, never after it (repeated, random timing)", async () => {
    const t = await createTenant(h);
    const acc = await accountsOf(h, t);
    const seen = { landed: 0, refused: 0 };
    for (let month = 2; month <= 6; month++) {
      const m = String(month).padStart(2, "0");
      const lock = `2026-${m}-25`;
      const refusal = `The books are locked through ${lock}.`;
      // One confirmed before the race: stays. Three lanes of three confirms each, one after the other,
      // dated in the month; two confirms posted after the lock date; one issued once the lock change answered.
      const first = await staged(t, acc, `2026-${m}-01`, "1.00");
      expect(await confirm(t, first)).toMatchObject({ success: true });
      const lanes: string[][] = [];
      for (let lane = 0; lane < 3; lane++) {
        lanes.push(await Promise.all([0, 1, 2].map((k) => staged(t, acc, `2026-${m}-${String(2 + lane * 3 + k).padStart(2, "0")}`, "2.00"))));
      }
      const afterLock = await Promise.all([0, 1].map(() => staged(t, acc, `2026-${m}-20`, "3.00")));
      const late = await staged(t, acc, `2026-${m}-21`, "4.00");

      type Outcome = { id: string; issued: number; settled: number; r: { success: boolean; error: string | null } };
      const timed = async (id: string, postingDate?: string): Promise<Outcome> => {
        const issued = performance.now();
        const r = await confirm(t, id, postingDate);
        return { id, issued, settled: performance.now(), r };
      };
      const delay = Math.floor(Math.random() * 60);
      const lockRun = (async () => {
        await sleep(delay);
        const r = dataOf(await settings(t, { lockDate: lock }), "updateOrganizationSettings");
        return { settled: performance.now(), r };
      })();
      const [changed, laneOutcomes, afterOutcomes, lateOutcome] = await Promise.all([
        lockRun,
        Promise.all(lanes.map(async (ids) => { const out: Outcome[] = []; for (const id of ids) out.push(await timed(id)); return out; })),
        Promise.all(afterLock.map((id) => timed(id, `2026-${m}-26`))),
        lockRun.then(() => timed(late)),
      ]);
      expect(changed.r).toMatchObject({ success: true, organization: { lockDate: lock } });
      const inPeriod = [...laneOutcomes.flat(), lateOutcome];
      // Each either landed or was refused with the lock's message, nothing else.
      for (const o of inPeriod) expect(o.r.success ? null : o.r.error).toBe(o.r.success ? null : refusal);
      // Posting dates after the lock are never refused.
      for (const o of afterOutcomes) expect(o.r).toMatchObject({ success: true });
      // Issued after the lock change answered (it committed), or after some confirm was refused
      // (the lock was committed then): refused. Whatever landed was issued before both.
      const firstRefusalSeen = Math.min(...inPeriod.filter((o) => !o.r.success).map((o) => o.settled));
      expect(lateOutcome.r).toMatchObject({ success: false, error: refusal });
      for (const o of inPeriod.filter((x) => x.r.success)) {
        expect(o.issued).toBeLessThan(changed.settled);
        expect(o.issued).toBeLessThan(firstRefusalSeen);
      }
      // Within a lane, once refused, refused from then on.
      for (const lane of laneOutcomes) {
        const k = lane.findIndex((o) => !o.r.success);
        if (k >= 0) expect(lane.slice(k).every((o) => !o.r.success)).toBe(true);
      }
      // The journal is what the answers said: the landed ones posted on their dates, the refused nothing.
      for (const o of inPeriod) {
        const e = await eventRow(h, o.id);
        if (o.r.success) {
          expect(e.status).toBe("confirmed");
          expect((await linesOf(e.journal_entry_id)).map((l) => l.day)).toEqual([e.transaction_date, e.transaction_date].map(isoDay));
        } else {
          expect(e).toMatchObject({ status: "needs_review", journal_entry_id: null });
        }
      }
      const { rows: [{ n }] } = await h.owner.query(
        "select count(*)::int as n from app_public.journal_lines where organization_id = $1 and not voided and txn_date between $2 and $3",
        [t.organizationId, `2026-${m}-01`, lock]);
      expect(n).toBe(2 * (1 + inPeriod.filter((o) => o.r.success).length));
      expect(await confirm(t, await staged(t, acc, lock, "5.00"))).toMatchObject({ success: false, error: refusal });
      seen.landed += inPeriod.filter((o) => o.r.success).length;
      seen.refused += inPeriod.filter((o) => !o.r.success).length;
    }
    await expectTotalsMatchLines(t.organizationId);
    // At least the late ones were refused each time.
    expect(seen.refused).toBeGreaterThanOrEqual(5);
    console.log(`lock races: ${seen.landed} confirms landed before the lock, ${seen.refused} refused`);
  });
});

/** A date column's value as YYYY-MM-DD (pg gives a Date at local midnight). */
function isoDay(d: Date | string): string {
  if (typeof d === "string") return d;
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, "0")}-${String(d.getDate()).padStart(2, "0")}`;
}

describe("who may change the lock date, and what it takes", () => {
  it("an owner or admin only: a member and an API key are refused, and nothing changes", async () => {
    const t = await createTenant(h);
    await setLock(t, LOCK);
    const memberEmail = `member-${Date.now()}@example.test`;
    const adminEmail = `admin-${Date.now()}@example.test`;
    const member = await createUser(h, memberEmail);
    const admin = await createUser(h, adminEmail);
    await h.owner.query("select app_private.add_member($1, $2, 'member'), app_private.add_member($1, $3, 'admin')", [t.organizationId, memberEmail, adminEmail]);

    expect(errorOf(await settings(t, { lockDate: null }, jwtFor(h, member)))).toEqual({ message: "Must Be Owner Or Admin.", code: "FORBIDDEN" });
    expect(errorOf(await settings(t, { lockDate: "2026-06-30" }, t.apiKey))).toEqual({ message: "API Keys Cannot Perform Admin Operations.", code: "FORBIDDEN" });
    const stranger = await createTenant(h);
    expect(errorOf(await settings(t, { lockDate: null }, stranger.ownerJwt)).code).toBe("FORBIDDEN");
    expect(await lockDateOf(t.organizationId)).toBe(LOCK);

    const byAdmin = dataOf(await settings(t, { lockDate: "2026-03-31" }, jwtFor(h, admin)), "updateOrganizationSettings");
    expect(byAdmin).toMatchObject({ success: true, organization: { lockDate: "2026-03-31" } });
    expect(await lockDateOf(t.organizationId)).toBe("2026-03-31");
  });

  it("a malformed lockDate or fiscalYearStart is refused and changes nothing; left out, the lock date is kept; null unlocks", async () => {
    const t = await createTenant(h);
    await setLock(t, LOCK);
    for (const lockDate of ["2026-02-30", "2026/01/31", "31-01-2026", "2026-1-31", "", "yesterday", "2026-01-31T00:00:00Z", "keep", "null"]) {
      const r = dataOf(await settings(t, { lockDate }), "updateOrganizationSettings");
      expect(r, lockDate).toEqual({ success: false, error: "lockDate must be a date in YYYY-MM-DD format.", organization: null });
    }
    const fiscal = "fiscalYearStart must be a day of the year in MM-DD format, such as 01-01 or 04-01.";
    for (const fiscalYearStart of ["02-30", "02-29", "04-31", "13-01", "00-10", "4-01", "04/01"]) {
      const r = dataOf(await settings(t, { fiscalYearStart, lockDate: "2026-12-31" }), "updateOrganizationSettings");
      expect(r, fiscalYearStart).toEqual({ success: false, error: fiscal, organization: null });
    }
    const { rows: [o] } = await h.owner.query("select to_char(lock_date, 'YYYY-MM-DD') as lock, fiscal_year_start, date_order from app_public.organizations where id = $1", [t.organizationId]);
    expect(o).toEqual({ lock: LOCK, fiscal_year_start: "01-01", date_order: "auto" });

    // Left out (or a declared variable not given): kept.
    const other = dataOf(await settings(t, { fiscalYearStart: "04-01", dateOrder: "DMY" }), "updateOrganizationSettings");
    expect(other).toMatchObject({ success: true, organization: { lockDate: LOCK, fiscalYearStart: "04-01", dateOrder: "DMY" } });
    const inline = dataOf(await h.gql(`mutation($org: UUID!) { updateOrganizationSettings(organizationId: $org, dateOrder: "MDY") {
      success organization { lockDate dateOrder } } }`, { org: t.organizationId }, t.ownerJwt), "updateOrganizationSettings");
    expect(inline).toMatchObject({ success: true, organization: { lockDate: LOCK, dateOrder: "MDY" } });
    // An explicit null, inline too, unlocks.
    const unlocked = dataOf(await h.gql(`mutation($org: UUID!) { updateOrganizationSettings(organizationId: $org, lockDate: null) {
      success organization { lockDate fiscalYearStart } } }`, { org: t.organizationId }, t.ownerJwt), "updateOrganizationSettings");
    expect(unlocked).toMatchObject({ success: true, organization: { lockDate: null, fiscalYearStart: "04-01" } });
    expect(await lockDateOf(t.organizationId)).toBeNull();
  });
});
