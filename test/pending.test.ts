import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTenant, dataOf, startHarness, type Harness, type Tenant } from "./helpers/harness.js";

let h: Harness;
let t: Tenant;
let chequing: string;
beforeAll(async () => {
  h = await startHarness();
  t = await createTenant(h);
  chequing = (await h.owner.query("select id from app_public.accounts where organization_id = $1 and name = 'Chequing'", [t.organizationId])).rows[0].id;
});
afterAll(() => h?.close());

type Row = { transactionDate: string; description: string; amount: string; reference?: string; pending?: boolean };
const IMPORT = `mutation($o: UUID!, $p: UUID!, $rows: [BankStatementRowInput!]!) { importBankStatement(organizationId: $o, paymentAccountId: $p, rows: $rows) {
  success error importedCount skippedCount settledCount } }`;
const CHECK = `mutation($o: UUID!, $p: UUID!, $rows: [BankStatementRowInput!]!) { checkBankStatementDups(organizationId: $o, paymentAccountId: $p, rows: $rows) {
  results { rowIndex isDuplicate isPossibleDuplicate matchingEventId settlesPendingEvent } } }`;
const rows = (rs: Row[]) => rs.map((r) => ({ eventType: "expense", ...r }));
const importRows = async (rs: Row[]) => dataOf(await h.gql(IMPORT, { o: t.organizationId, p: chequing, rows: rows(rs) }, t.apiKey), "importBankStatement");
const events = async (merchant: string) => (await h.owner.query(`select id, status, to_char(transaction_date, 'YYYY-MM-DD') d, functional_amount::text amount, reference
  from app_public.ledger_events where organization_id = $1 and merchant_name = $2 order by created`, [t.organizationId, merchant])).rows;

describe("pending bank rows", () => {
  it("a pending row waits, cannot be confirmed, and its posted row settles it in place: no duplicate", async () => {
    expect(await importRows([{ transactionDate: "2026-07-01", description: "CORNER BAKERY", amount: "-12.50", pending: true }]))
      .toMatchObject({ success: true, importedCount: 1, settledCount: 0 });
    const [pending] = await events("CORNER BAKERY");
    expect(pending).toMatchObject({ status: "pending", d: "2026-07-01" });
    await h.gql(`mutation($o: UUID!, $e: UUID!, $c: UUID) { updateStagedEntry(organizationId: $o, eventId: $e, categoryId: $c) { success } }`,
      { o: t.organizationId, e: pending.id, c: (await h.owner.query("select id from app_public.accounts where organization_id = $1 and name = 'Bank Fees & Charges'", [t.organizationId])).rows[0].id }, t.apiKey);
    expect(dataOf(await h.gql(`mutation($o: UUID!, $e: UUID!) { confirmLedgerEvent(organizationId: $o, eventId: $e) { success error } }`,
      { o: t.organizationId, e: pending.id }, t.apiKey), "confirmLedgerEvent"))
      .toEqual({ success: false, error: "A pending event cannot be confirmed: it is settled when the bank posts it." });
    // The same pending row again is a duplicate of itself.
    expect(await importRows([{ transactionDate: "2026-07-01", description: "CORNER BAKERY", amount: "-12.50", pending: true }]))
      .toMatchObject({ importedCount: 0, skippedCount: 1, settledCount: 0 });
    const posted = [{ transactionDate: "2026-07-03", description: "Corner  Bakery", amount: "-12.50" }];
    const check = dataOf(await h.gql(CHECK, { o: t.organizationId, p: chequing, rows: rows(posted) }, t.apiKey), "checkBankStatementDups");
    expect(check.results).toEqual([{ rowIndex: 0, isDuplicate: false, isPossibleDuplicate: false, matchingEventId: pending.id, settlesPendingEvent: true }]);
    expect(await importRows(posted)).toMatchObject({ success: true, importedCount: 0, skippedCount: 0, settledCount: 1 });
    expect(await events("CORNER BAKERY")).toEqual([{ ...pending, status: "needs_review", d: "2026-07-03" }]);
    expect(await events("Corner  Bakery")).toEqual([]);
    // The posted statement again: now a plain duplicate.
    expect(await importRows(posted)).toMatchObject({ importedCount: 0, skippedCount: 1, settledCount: 0 });
    const { rows: feed } = await h.owner.query("select kind from app_public.ledger_change_feed where event_id = $1 order by txid, id", [pending.id]);
    expect(feed.map((r: any) => r.kind)).toEqual(["created", "classified", "updated"]);
  });

  it("the same reference settles it with the posted amount (a tip added); more than 5 days apart and another merchant do not", async () => {
    await importRows([
      { transactionDate: "2026-07-10", description: "BISTRO 9", amount: "-40.00", reference: "AUTH-1", pending: true },
      { transactionDate: "2026-07-10", description: "HARDWARE", amount: "-25.00", pending: true },
    ]);
    const r = await importRows([
      { transactionDate: "2026-07-12", description: "BISTRO 9 TORONTO", amount: "-46.00", reference: "AUTH-1" },
      { transactionDate: "2026-07-16", description: "HARDWARE", amount: "-25.00" },
    ]);
    expect(r).toMatchObject({ importedCount: 1, settledCount: 1 });
    expect((await events("BISTRO 9")).map((e: any) => [e.status, e.d, e.amount, e.reference])).toEqual([["needs_review", "2026-07-12", "46.00", "AUTH-1"]]);
    expect((await events("HARDWARE")).map((e: any) => [e.status, e.d])).toEqual([["pending", "2026-07-10"], ["needs_review", "2026-07-16"]]);
  });

  it("a settled event whose amount changed is classified again by the rules, as a new one would be", async () => {
    const account = async (name: string) => (await h.owner.query("select id from app_public.accounts where organization_id = $1 and name = $2", [t.organizationId, name])).rows[0].id;
    const [fees, cogs] = [await account("Bank Fees & Charges"), await account("Cost of Goods Sold")];
    const contact = async (name: string) => dataOf(await h.gql(`mutation($o: UUID!, $n: String!) { createContact(organizationId: $o, contactType: "vendor",
      displayName: $n) { success error contact { id } } }`, { o: t.organizationId, n: name }, t.apiKey), "createContact").contact.id;
    const [small, big] = [await contact("Small Lot Co"), await contact("Big Lot Co")];
    const RULE = `mutation($o: UUID!, $p: String!, $c: UUID!, $min: String, $max: String, $k: UUID) {
      createCategoryRule(organizationId: $o, vendorPattern: $p, categoryId: $c, amountMin: $min, amountMax: $max, contactId: $k) { success error categoryRule { id } } }`;
    const rules: string[] = [];
    for (const [c, min, max, k] of [[fees, null, "20.00", small], [cogs, "20.01", null, big]]) {
      const r = dataOf(await h.gql(RULE, { o: t.organizationId, p: "PARKING%", c, min, max, k }, t.apiKey), "createCategoryRule");
      expect(r).toMatchObject({ success: true });
      rules.push(r.categoryRule.id);
    }
    const category = async (merchant: string) => (await h.owner.query(`select status, category_id, contact_id from app_public.ledger_events
      where organization_id = $1 and merchant_name = $2`, [t.organizationId, merchant])).rows;
    await importRows([
      { transactionDate: "2026-07-20", description: "PARKING LOT A", amount: "-15.00", reference: "P-1", pending: true },
      { transactionDate: "2026-07-20", description: "PARKING LOT B", amount: "-12.00", reference: "P-2", pending: true },
    ]);
    expect(await category("PARKING LOT A")).toEqual([{ status: "pending", category_id: fees, contact_id: small }]);
    expect(await importRows([
      { transactionDate: "2026-07-21", description: "PARKING LOT A", amount: "-25.00", reference: "P-1" },
      { transactionDate: "2026-07-21", description: "PARKING LOT B", amount: "-12.00", reference: "P-2" },
    ])).toMatchObject({ importedCount: 0, settledCount: 2 });
    // 25.00 is past the first rule's range: the second one's category and contact; the same amount keeps its own.
    expect(await category("PARKING LOT A")).toEqual([{ status: "needs_review", category_id: cogs, contact_id: big }]);
    expect(await category("PARKING LOT B")).toEqual([{ status: "needs_review", category_id: fees, contact_id: small }]);
    // Each rule counts the events it classified: the first two, the second one.
    const { rows: counts } = await h.owner.query("select id, match_count from app_public.category_rules where id = any ($1)", [rules]);
    expect(Object.fromEntries(counts.map((r: any) => [r.id, r.match_count]))).toEqual({ [rules[0]]: 2, [rules[1]]: 1 });
  });

  it("a pending row not posted within 14 days is ignored by the hourly task", async () => {
    const day = (ago: number) => new Date(Date.now() - ago * 86_400_000).toISOString().slice(0, 10);
    await importRows([
      { transactionDate: day(15), description: "STALE PENDING", amount: "-3.00", pending: true },
      { transactionDate: day(14), description: "FRESH PENDING", amount: "-3.00", pending: true },
    ]);
    await h.owner.query("select app_private.purge_expired()");
    expect((await events("STALE PENDING")).map((e: any) => e.status)).toEqual(["ignored"]);
    expect((await events("FRESH PENDING")).map((e: any) => e.status)).toEqual(["pending"]);
    expect(dataOf(await h.gql(IMPORT, { o: t.organizationId, p: chequing, rows: [{ transactionDate: "2026-07-01", description: "X", amount: "-1.00",
      eventType: "expense", pending: null }] }, t.apiKey), "importBankStatement")).toMatchObject({ success: true });
  });

  it("a re-imported posted row stays a duplicate and settles nothing; a late reference settles whatever the days; an expired one's posted row is new", async () => {
    await importRows([{ transactionDate: "2026-08-01", description: "COFFEE HUT", amount: "-4.50", reference: "R1" }]);
    await importRows([{ transactionDate: "2026-08-02", description: "COFFEE HUT", amount: "-4.50", pending: true }]);
    // The overlapping download: yesterday's posted coffee again, and today's now posted.
    expect(await importRows([
      { transactionDate: "2026-08-01", description: "COFFEE HUT", amount: "-4.50", reference: "R1" },
      { transactionDate: "2026-08-03", description: "COFFEE HUT", amount: "-4.50", reference: "R2" },
    ])).toMatchObject({ importedCount: 0, skippedCount: 1, settledCount: 1 });
    expect((await events("COFFEE HUT")).map((e: any) => [e.status, e.d, e.reference])).toEqual([
      ["needs_review", "2026-08-01", "R1"], ["needs_review", "2026-08-03", "R2"]]);
    // The bank's posting id replaces the authorization's: the next download is a plain duplicate.
    expect(await importRows([{ transactionDate: "2026-08-03", description: "COFFEE HUT", amount: "-4.50", reference: "R2" }]))
      .toMatchObject({ importedCount: 0, skippedCount: 1, settledCount: 0 });

    await importRows([{ transactionDate: "2026-08-01", description: "HOTEL", amount: "-300.00", reference: "AUTH-7", pending: true }]);
    expect(await importRows([{ transactionDate: "2026-08-09", description: "HOTEL MONTREAL", amount: "-310.00", reference: "AUTH-7" }]))
      .toMatchObject({ importedCount: 0, skippedCount: 0, settledCount: 1 });
    expect((await events("HOTEL")).map((e: any) => [e.status, e.d, e.amount])).toEqual([["needs_review", "2026-08-09", "310.00"]]);

    const old = new Date(Date.now() - 20 * 86_400_000).toISOString().slice(0, 10);
    await importRows([{ transactionDate: old, description: "HOTEL HOLD", amount: "-200.00", pending: true }]);
    await h.owner.query("select app_private.purge_expired()");
    expect(await importRows([{ transactionDate: old, description: "HOTEL HOLD", amount: "-200.00" }]))
      .toMatchObject({ importedCount: 1, skippedCount: 0, settledCount: 0 });
    expect((await events("HOTEL HOLD")).map((e: any) => e.status)).toEqual(["ignored", "needs_review"]);
  });

  it("a pending event pays no invoice or bill until it is posted", async () => {
    await importRows([{ transactionDate: "2026-08-05", description: "PAPER CO", amount: "-50.00", pending: true }]);
    const [e] = await events("PAPER CO");
    const res = dataOf(await h.gql(`mutation($o: UUID!, $e: UUID!) { applyLedgerEventToDocuments(organizationId: $o, eventId: $e,
      allocations: [{ documentId: "00000000-0000-0000-0000-000000000000", amount: "50.00" }]) { success error } }`, { o: t.organizationId, e: e.id }, t.apiKey),
      "applyLedgerEventToDocuments");
    expect(res.success).toBe(false);
    expect((await events("PAPER CO"))[0].status).toBe("pending");
  });

  it("a pending event takes one row: the still-pending row is its duplicate and a posted row of the same day is a purchase of its own", async () => {
    await importRows([{ transactionDate: "2026-09-03", description: "DELI", amount: "-4.50", pending: true }]);
    expect(await importRows([
      { transactionDate: "2026-09-03", description: "DELI", amount: "-4.50", pending: true },
      { transactionDate: "2026-09-03", description: "DELI", amount: "-4.50" },
    ])).toMatchObject({ importedCount: 1, skippedCount: 1, settledCount: 0 });
    expect((await events("DELI")).map((e: any) => e.status)).toEqual(["pending", "needs_review"]);
  });

  it("a pending event rejected stays its pending row's duplicate; a refund with the same reference is not the purchase", async () => {
    await importRows([{ transactionDate: "2026-09-10", description: "HOLD", amount: "-80.00", pending: true }]);
    const [hold] = await events("HOLD");
    expect(dataOf(await h.gql(`mutation($o: UUID!, $e: UUID!) { rejectLedgerEvent(organizationId: $o, eventId: $e) { success } }`,
      { o: t.organizationId, e: hold.id }, t.apiKey), "rejectLedgerEvent").success).toBe(true);
    expect(await importRows([{ transactionDate: "2026-09-10", description: "HOLD", amount: "-80.00", pending: true }]))
      .toMatchObject({ importedCount: 0, skippedCount: 1 });

    await importRows([{ transactionDate: "2026-09-11", description: "SHOP", amount: "-20.00", reference: "R7", pending: true }]);
    expect(await importRows([{ transactionDate: "2026-09-12", description: "SHOP", amount: "20.00", reference: "R7" }]))
      .toMatchObject({ importedCount: 1, settledCount: 0 });
    expect(await importRows([{ transactionDate: "2026-09-13", description: "SHOP", amount: "-20.00", reference: "R7" }]))
      .toMatchObject({ importedCount: 0, skippedCount: 0, settledCount: 1 });
    expect((await events("SHOP")).map((e: any) => [e.status, e.d])).toEqual([["needs_review", "2026-09-13"], ["needs_review", "2026-09-12"]]);
  });

  it("a posted row with a reference settles the pending event of that reference before a nearer one without a reference", async () => {
    await importRows([
      { transactionDate: "2026-10-01", description: "GAS STOP", amount: "-30.00", pending: true },
      { transactionDate: "2026-09-28", description: "GAS STOP", amount: "-30.00", reference: "G-9", pending: true },
    ]);
    expect(await importRows([{ transactionDate: "2026-10-01", description: "GAS STOP", amount: "-30.00", reference: "G-9" }]))
      .toMatchObject({ success: true, importedCount: 0, settledCount: 1 });
    // One import made both: compared as a set, not in the order of their equal creation times.
    expect((await events("GAS STOP")).map((e: any) => [e.status, e.d, e.reference]).sort()).toEqual([
      ["needs_review", "2026-10-01", "G-9"], ["pending", "2026-10-01", null]]);
  });
});
