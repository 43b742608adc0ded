import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTenant, dataOf, startHarness, type Harness, type Tenant } from "./helpers/harness.js";

let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(() => h?.close());

const FEED = `query($o: UUID!, $after: String, $limit: Int) { ledgerChanges(organizationId: $o, after: $after, limit: $limit) {
  nextCursor hasMore changes { cursor eventId kind at event { id status memo } } } }`;
const feed = async (t: Tenant, after: string | null, limit = 200) => {
  const res = await h.gql(FEED, { o: t.organizationId, after, limit }, t.apiKey);
  return res.body.errors ? { error: res.body.errors[0] } : dataOf(res, "ledgerChanges");
};
/**
 * The feed from the start once it holds n changes: a change shows once every transaction older
 * than it has ended, and other test files' transactions run on this database at the same time.
 */
const caughtUp = async (t: Tenant, n: number) => {
  for (let i = 0; ; i++) {
    const page: any = await feed(t, null);
    if (page.changes.length >= n || i === 100) return page;
    await new Promise((r) => setTimeout(r, 50));
  }
};
/** A mutation of the tenant's organization (`$o`), its result; a business failure throws. */
const mutateAs = (t: Tenant) => async (doc: string, vars: Record<string, unknown>, field: string) => {
  const r = dataOf(await h.gql(doc, { o: t.organizationId, ...vars }, t.apiKey), field);
  if (r.success === false) throw new Error(r.error);
  return r;
};
const account = async (t: Tenant, name: string) =>
  (await h.owner.query("select id from app_public.accounts where organization_id = $1 and name = $2", [t.organizationId, name])).rows[0].id as string;

describe("ledgerChanges", () => {
  it("returns every change exactly once across pages while 4 writers commit at once, some late", async () => {
    const t = await createTenant(h);
    const writers = 4;
    const perWriter = 12;
    // Each writer's transactions create an event, wait a random moment (so transactions that began
    // earlier commit later), then change its memo: the reader pages all the while.
    const write = async (w: number) => {
      const c = new pg.Client({ connectionString: h.databaseUrl });
      await c.connect();
      try {
        for (let i = 0; i < perWriter; i++) {
          await c.query("begin");
          const { rows: [e] } = await c.query(`insert into app_public.ledger_events (organization_id, event_type, direction, merchant_name,
              functional_amount, functional_currency, transaction_date) values ($1, 'expense', 'out', $2, 1, 'CAD', '2026-06-01') returning id`,
            [t.organizationId, `Writer ${w} #${i}`]);
          await c.query("select pg_sleep(random() * 0.03)");
          await c.query("update app_public.ledger_events set memo = 'edited' where id = $1", [e.id]);
          await c.query("commit");
        }
      } finally {
        await c.end();
      }
    };
    const seen: { cursor: string; eventId: string; kind: string }[] = [];
    let cursor: string | null = null;
    let done = false;
    const writing = Promise.all(Array.from({ length: writers }, (_, w) => write(w))).then(() => { done = true; });
    const read = async () => {
      for (;;) {
        const finished = done;
        const page: any = await feed(t, cursor, 5);
        seen.push(...page.changes);
        cursor = page.nextCursor;
        if (!page.hasMore && finished) {
          // Everything committed before this read is visible unless an older transaction elsewhere still runs.
          const { rows: [{ n }] } = await h.owner.query("select count(*)::int n from app_public.ledger_change_feed where organization_id = $1", [t.organizationId]);
          if (seen.length >= n) return;
          await new Promise((r) => setTimeout(r, 50));
        }
      }
    };
    await Promise.all([writing, read()]);
    expect(seen.length).toBe(writers * perWriter * 2);
    expect(new Set(seen.map((c) => c.cursor)).size).toBe(seen.length);
    const kinds = new Map<string, string[]>();
    for (const c of seen) kinds.set(c.eventId, [...(kinds.get(c.eventId) ?? []), c.kind]);
    expect(kinds.size).toBe(writers * perWriter);
    expect([...kinds.values()].every((k) => k.join() === "created,updated")).toBe(true);
    // The stored feed, in (transaction, change) order, is what was read, in the same order.
    const { rows } = await h.owner.query("select txid::text || '.' || id::text c from app_public.ledger_change_feed where organization_id = $1 order by txid, id",
      [t.organizationId]);
    expect(seen.map((c) => c.cursor)).toEqual(rows.map((r: any) => r.c));
    // Caught up: the last cursor gives nothing new and keeps itself.
    const last: any = await feed(t, cursor);
    expect(last).toMatchObject({ changes: [], hasMore: false, nextCursor: cursor });
  });

  it("names each kind of change, shows the event as it is now, and refuses an unknown or expired cursor naming the oldest", async () => {
    const t = await createTenant(h);
    const other = await createTenant(h);
    const [chequing, fees] = [await account(t, "Chequing"), await account(t, "Bank Fees & Charges")];
    const m = mutateAs(t);
    const id = (await m(`mutation($o: UUID!) { createLedgerEvent(organizationId: $o, merchantName: "Bank fee", amount: "4.00", transactionDate: "2026-06-02") { success error eventId } }`,
      {}, "createLedgerEvent")).eventId;
    await m(`mutation($o: UUID!, $e: UUID!) { updateLedgerEvent(organizationId: $o, eventId: $e, memo: "monthly") { success error } }`, { e: id }, "updateLedgerEvent");
    await m(`mutation($o: UUID!, $e: UUID!, $c: UUID, $p: UUID) { updateStagedEntry(organizationId: $o, eventId: $e, categoryId: $c, paymentId: $p) { success error } }`,
      { e: id, c: fees, p: chequing }, "updateStagedEntry");
    await m(`mutation($o: UUID!, $e: UUID!) { confirmLedgerEvent(organizationId: $o, eventId: $e) { success error } }`, { e: id }, "confirmLedgerEvent");
    const synced = await m(`mutation($o: UUID!, $ids: [UUID!]!) { markLedgerEventsSynced(organizationId: $o, eventIds: $ids, externalSystem: "quickbooks",
      externalIds: ["QB-77"]) { success error syncedCount events { status externalRefs { externalSystem externalId syncedAt } } } }`, { ids: [id] }, "markLedgerEventsSynced");
    expect(synced).toMatchObject({ success: true, syncedCount: 1, events: [{ status: "synced", externalRefs: [{ externalSystem: "quickbooks", externalId: "QB-77" }] }] });
    await m(`mutation($o: UUID!, $e: UUID!) { reverseLedgerEvent(organizationId: $o, eventId: $e) { success error } }`, { e: id }, "reverseLedgerEvent");

    const page: any = await caughtUp(t, 6);
    expect(page.changes.map((c: any) => c.kind)).toEqual(["created", "updated", "classified", "confirmed", "synced", "reversed"]);
    expect(page.changes.every((c: any) => c.eventId === id && c.event.status === "ignored" && c.event.memo === "monthly")).toBe(true);
    expect(page.hasMore).toBe(false);
    const two: any = await feed(t, null, 2);
    expect(two).toMatchObject({ hasMore: true, nextCursor: page.changes[1].cursor });
    expect((await feed(t, two.nextCursor, 10) as any).changes.map((c: any) => c.kind)).toEqual(["classified", "confirmed", "synced", "reversed"]);
    // Another organization's cursor is unknown here, and its feed is its own.
    expect((await feed(other, null) as any).changes).toEqual([]);
    expect(((await feed(other, page.changes[0].cursor)) as any).error.message).toMatch(/^The cursor is unknown or has expired/);

    // The first change is past the 30 days: its cursor is refused, naming the oldest valid one.
    const [txid, changeId] = page.changes[0].cursor.split(".");
    await h.owner.query("update app_public.ledger_change_feed set at = now() - interval '31 days' where txid = $1 and id = $2", [txid, changeId]);
    await h.owner.query("select app_private.purge_expired()");
    const expired: any = await feed(t, page.changes[0].cursor);
    expect(expired.error).toMatchObject({ extensions: { code: "BAD_USER_INPUT" },
      message: `The cursor is unknown or has expired (changes are kept 30 days). The oldest valid cursor is ${page.changes[1].cursor}; read again without after to start from the oldest change kept.` });
    expect(((await feed(t, "not-a-cursor")) as any).error.message).toContain(`The oldest valid cursor is ${page.changes[1].cursor}`);
    expect((await caughtUp(t, 5)).changes.length).toBe(5);
  });
});

describe("ledgerChanges and reconciliations", () => {
  it("a tick and an untick are changes of the event (its cleared), and completing it reconciles", async () => {
    const t = await createTenant(h);
    const [chequing, fees] = [await account(t, "Chequing"), await account(t, "Bank Fees & Charges")];
    const m = mutateAs(t);
    const id = (await m(`mutation($o: UUID!, $c: UUID, $p: UUID) { createLedgerEvent(organizationId: $o, merchantName: "Bank fee", amount: "4.00",
      transactionDate: "2026-06-02", categoryId: $c, paymentAccountId: $p) { success error eventId } }`, { c: fees, p: chequing }, "createLedgerEvent")).eventId;
    await m(`mutation($o: UUID!, $e: UUID!) { confirmLedgerEvent(organizationId: $o, eventId: $e) { success error } }`, { e: id }, "confirmLedgerEvent");
    const rec = (await m(`mutation($o: UUID!, $p: UUID!) { startReconciliation(organizationId: $o, paymentAccountId: $p, statementDate: "2026-06-30",
      closingBalance: "-4.00") { success error reconciliation { id } } }`, { p: chequing }, "startReconciliation")).reconciliation.id;
    const SET = `mutation($o: UUID!, $r: UUID!, $ids: [UUID!]!, $c: Boolean!) { setCleared(organizationId: $o, reconciliationId: $r, eventIds: $ids, cleared: $c) { success error } }`;
    await m(SET, { r: rec, ids: [id], c: true }, "setCleared");
    await m(SET, { r: rec, ids: [id], c: false }, "setCleared");
    await m(SET, { r: rec, ids: [id], c: true }, "setCleared");
    await m(`mutation($o: UUID!, $r: UUID!) { completeReconciliation(organizationId: $o, reconciliationId: $r) { success error } }`, { r: rec }, "completeReconciliation");
    const page: any = await caughtUp(t, 6);
    expect(page.changes.map((c: any) => c.kind)).toEqual(["created", "confirmed", "updated", "updated", "updated", "reconciled"]);
    const cleared = dataOf(await h.gql(`query($o: UUID!) { ledgerChanges(organizationId: $o) { changes { event { cleared status } } } }`,
      { o: t.organizationId }, t.apiKey), "ledgerChanges");
    expect(cleared.changes[5].event).toEqual({ cleared: true, status: "reconciled" });
  });
});

describe("markLedgerEventsSynced", () => {
  it("moves confirmed events to synced with their external ids, all or none; a synced event changes only by reversal", async () => {
    const t = await createTenant(h);
    const [chequing, fees] = [await account(t, "Chequing"), await account(t, "Bank Fees & Charges")];
    const event = async (confirm: boolean) => {
      const id = dataOf(await h.gql(`mutation($o: UUID!, $c: UUID, $p: UUID) { createLedgerEvent(organizationId: $o, merchantName: "Fee", amount: "2.00",
        transactionDate: "2026-06-03", categoryId: $c, paymentAccountId: $p) { eventId } }`, { o: t.organizationId, c: fees, p: chequing }, t.apiKey), "createLedgerEvent").eventId;
      if (confirm) await h.gql(`mutation($o: UUID!, $e: UUID!) { confirmLedgerEvent(organizationId: $o, eventId: $e) { success } }`, { o: t.organizationId, e: id }, t.apiKey);
      return id as string;
    };
    const SYNC = `mutation($o: UUID!, $ids: [UUID!]!, $s: String!, $x: [String!]!) { markLedgerEventsSynced(organizationId: $o, eventIds: $ids,
      externalSystem: $s, externalIds: $x) { success error syncedCount } }`;
    const sync = async (ids: string[], x: string[], s = "xero") => dataOf(await h.gql(SYNC, { o: t.organizationId, ids, s, x }, t.apiKey), "markLedgerEventsSynced");
    const [a, b, waiting] = [await event(true), await event(true), await event(false)];
    const statuses = async () => (await h.owner.query("select id, status from app_public.ledger_events where id = any ($1) order by id", [[a, b, waiting]])).rows;
    const before = await statuses();
    expect(await sync([a, b, waiting], ["X1", "X2", "X3"])).toEqual({ success: false, syncedCount: null,
      error: `Event ${waiting} is needs review: only confirmed events can be marked synced.` });
    expect(await sync([a, b], ["X1"])).toMatchObject({ success: false, error: "eventIds and externalIds must have the same length: the i-th id is the i-th event's." });
    expect(await statuses()).toEqual(before);
    expect(await sync([a, b], ["X1", "X2"])).toEqual({ success: true, error: null, syncedCount: 2 });
    expect(await sync([b], ["X1"])).toMatchObject({ success: false, error: `External id X1 of xero is already on event ${a}.` });
    // Synced again into another system: both ids are kept; still synced.
    expect(await sync([a], ["QB-1"], "quickbooks")).toMatchObject({ success: true });
    const { rows } = await h.owner.query("select external_system, external_id from app_public.ledger_event_external_refs where event_id = $1 order by 1", [a]);
    expect(rows).toEqual([{ external_system: "quickbooks", external_id: "QB-1" }, { external_system: "xero", external_id: "X1" }]);
    const staged = dataOf(await h.gql(`mutation($o: UUID!, $e: UUID!) { updateStagedEntry(organizationId: $o, eventId: $e, taxAmount: "0.10") { success error } }`,
      { o: t.organizationId, e: a }, t.apiKey), "updateStagedEntry");
    expect(staged).toEqual({ success: false, error: "Event is already confirmed." });
    const reversed = dataOf(await h.gql(`mutation($o: UUID!, $e: UUID!) { reverseLedgerEvent(organizationId: $o, eventId: $e) { success error } }`,
      { o: t.organizationId, e: a }, t.apiKey), "reverseLedgerEvent");
    expect(reversed).toEqual({ success: true, error: null });
    // Synced counts in the books as confirmed: b's fee is in the trial of the journal.
    const { rows: [{ n }] } = await h.owner.query("select count(*)::int n from app_public.journal_lines l join app_public.journal_entries j on j.id = l.entry_id where j.event_id = $1 and not l.voided", [b]);
    expect(n).toBe(2);
  });
});
