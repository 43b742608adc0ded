import { createHash, randomUUID } from "node:crypto";
import pg from "pg";
import { runOnce } from "graphile-worker";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createStorage } from "../src/storage/index.js";
import { taskList } from "../worker/tasks.js";
import { closeSandbox } from "../src/receipts/sandbox/index.js";
import { createTenant, dataOf, errorOf, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { accountsOf, call, CREATE, GET, UPDATE, type Accounts } from "./ledger-fixtures.js";
import { dispatchJobs } from "./helpers/worker.js";

/**
 * Receipts as records (docs/api.md, Records and lifecycle): the lifecycle operations, hasDocument,
 * and matching to ledger events, with extraction's outcome written as the worker writes it. The
 * transports (uploads, intake) and the extraction itself have their own tests.
 */
let h: Harness;
let t: Tenant;
let other: Tenant;
let accounts: Accounts;

const RECEIPT_FIELDS = `id vendorName amount currency receiptDate dateReadings status source matchStatus filename contentType size objectKey
  uploadedAt imageUrl linkedBy event { id merchantName status } extraction { vendorConfidence amountConfidence dateConfidence }`;
const CREATE_RECEIPT = `mutation($org: UUID!, $key: String!, $filename: String) {
  createReceipt(organizationId: $org, objectKey: $key, filename: $filename) { success error receiptId duplicate receipt { ${RECEIPT_FIELDS} } } }`;
const ATTACH = `mutation($org: UUID!, $eventId: UUID!, $key: String!, $filename: String) {
  attachReceiptToEvent(organizationId: $org, eventId: $eventId, objectKey: $key, filename: $filename) { success error receiptId } }`;
const GET_RECEIPT = `query($org: UUID!, $id: UUID!) { getReceipt(organizationId: $org, receiptId: $id) { ${RECEIPT_FIELDS} extractedText } }`;
const LINK = `mutation($org: UUID!, $id: UUID!, $eventId: UUID!) { linkReceiptToEvent(organizationId: $org, receiptId: $id, eventId: $eventId) { success error receipt { ${RECEIPT_FIELDS} } } }`;
const UNLINK = `mutation($org: UUID!, $id: UUID!) { unlinkReceipt(organizationId: $org, receiptId: $id) { success error receipt { ${RECEIPT_FIELDS} } } }`;
const REJECT = `mutation($org: UUID!, $id: UUID!) { rejectReceipt(organizationId: $org, receiptId: $id) { success error receipt { ${RECEIPT_FIELDS} } } }`;
const SUGGEST = `query($org: UUID!, $id: UUID!) { receiptMatchSuggestions(organizationId: $org, receiptId: $id) {
  event { id merchantName transactionDate functionalAmount status } vendorSimilarity dayDistance receiptDate } }`;
const LIST = `query($org: UUID!, $status: String, $source: String, $search: String, $matchStatus: String, $eventId: UUID, $limit: Int, $offset: Int) {
  listReceipts(organizationId: $org, status: $status, source: $source, search: $search, matchStatus: $matchStatus, eventId: $eventId, limit: $limit, offset: $offset) {
    items { id vendorName amount status matchStatus } totalCount pageSize offset } }`;

beforeAll(async () => {
  h = await startHarness();
  t = await createTenant(h);
  other = await createTenant(h);
  accounts = await accountsOf(h, t);
});
afterAll(async () => {
  await closeSandbox();
  await h?.close();
});

/** A file as POST /uploads records it (the route itself is tested in uploads.test.ts). */
async function upload(tenant: Tenant, content: string = randomUUID(), filename = "receipt.txt"): Promise<string> {
  const key = `${tenant.organizationId}/uploads/${randomUUID()}/${filename}`;
  await createStorage(h.config).put(key, content);
  await h.owner.query(`insert into app_public.uploads (organization_id, object_key, filename, content_type, size, sha256)
    values ($1, $2, $3, 'text/plain', $4, $5)`,
  [tenant.organizationId, key, filename, Buffer.byteLength(content), createHash("sha256").update(content).digest("hex")]);
  return key;
}

interface Read {
  vendorName?: string | null; amount?: string | null; dateReadings?: string[]; currency?: string | null;
  vendorConfidence?: string; amountConfidence?: string; dateConfidence?: string;
}

/** A receipt stored and read, as extraction leaves it (processed; matching not run yet). */
async function readReceipt(read: Read, tenant = t): Promise<string> {
  const created = await call(h, tenant, CREATE_RECEIPT, { key: await upload(tenant) }, "createReceipt");
  await h.owner.query("select app_private.record_receipt_extraction($1, $2)", [created.receiptId, JSON.stringify({
    text: "…", method: "text", vendorName: null, amount: null, currency: null, dateReadings: [],
    // Read with confidence unless a test says otherwise: the usual thresholds apply.
    vendorConfidence: "medium", amountConfidence: "high", dateConfidence: "medium", ...read })]);
  return created.receiptId;
}

async function match(tenant = t, receiptIds?: string[]) {
  const { rows: [r] } = await h.owner.query("select app_private.match_receipts($1, $2::uuid[]) as result", [tenant.organizationId, receiptIds ?? null]);
  return r.result as { matched: number; unmatched: number };
}

async function event(merchantName: string, amount: string, transactionDate: string, tenant = t): Promise<string> {
  const res = await call(h, tenant, CREATE, { merchantName, amount, transactionDate, paymentAccountId: accounts.Chequing }, "createLedgerEvent");
  expect(res).toMatchObject({ success: true });
  return res.eventId;
}

const receipt = (id: string, tenant = t) => call(h, tenant, GET_RECEIPT, { id }, "getReceipt");
const ledgerEvent = (eventId: string) => call(h, t, GET, { eventId }, "getLedgerEvent");

describe("receipts from uploads", () => {
  it("createReceipt makes a draft web_upload receipt queued for extraction; the same file again gives it back", async () => {
    const content = `receipt ${randomUUID()}`;
    const key = await upload(t, content, "coffee.txt");
    const first = await call(h, t, CREATE_RECEIPT, { key }, "createReceipt");
    expect(first).toMatchObject({ success: true, duplicate: false, receipt: {
      status: "draft", source: "web_upload", matchStatus: "pending", filename: "coffee.txt", contentType: "text/plain",
      objectKey: key, vendorName: null, amount: null, event: null } });
    expect(first.receipt.imageUrl).toMatch(/^https?:\/\/.+\/files\//);
    await dispatchJobs(h);
    const { rows: jobs } = await h.owner.query(
      "select j.id from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id where t.identifier = 'extract_receipt' and j.payload->>'receiptId' = $1", [first.receiptId]);
    expect(jobs).toHaveLength(1);

    const again = await call(h, t, CREATE_RECEIPT, { key: await upload(t, content, "copy.txt") }, "createReceipt");
    expect(again).toMatchObject({ success: true, duplicate: true, receiptId: first.receiptId });
  });

  it("another organization's key is not found, and nothing is created", async () => {
    const key = await upload(other);
    const res = await call(h, t, CREATE_RECEIPT, { key }, "createReceipt");
    expect(res).toMatchObject({ success: false, error: "Upload not found: upload the file with POST /uploads first." });
    const { rows } = await h.owner.query("select count(*)::int n from app_public.receipts where object_key = $1", [key]);
    expect(rows[0].n).toBe(0);
  });

  it("attachReceiptToEvent links at once: the event has its document and the receipt is reviewed, and extraction keeps it so", async () => {
    const eventId = await event("Paper Depot", "42.00", "2026-03-02");
    const key = await upload(t, randomUUID(), "paper.txt");
    const attached = await call(h, t, ATTACH, { eventId, key, filename: "Paper receipt.txt" }, "attachReceiptToEvent");
    expect(attached).toMatchObject({ success: true });
    const e = await ledgerEvent(eventId);
    expect(e.hasDocument).toBe(true);
    expect(e.receipts).toEqual([{ id: attached.receiptId, filename: "Paper receipt.txt", objectKey: key, uploadedAt: expect.stringMatching(/Z$/) }]);
    await h.owner.query("select app_private.record_receipt_extraction($1, $2)", [attached.receiptId,
      JSON.stringify({ text: "PAPER DEPOT TOTAL 42.00", method: "text", vendorName: "Paper Depot", amount: "42.00", dateReadings: ["2026-03-02"] })]);
    expect(await receipt(attached.receiptId)).toMatchObject({ status: "reviewed", matchStatus: "matched", linkedBy: "person",
      vendorName: "Paper Depot", amount: 42, receiptDate: "2026-03-02", event: { id: eventId } });
  });

  it("an unknown event or receipt is a clear error", async () => {
    const missing = randomUUID();
    expect(await call(h, t, ATTACH, { eventId: missing, key: await upload(t) }, "attachReceiptToEvent"))
      .toMatchObject({ success: false, error: "Ledger event not found." });
    expect(errorOf(await h.gql(GET_RECEIPT, { org: t.organizationId, id: missing }, t.apiKey)).message).toBe("Receipt not found.");
  });
});

describe("matching", () => {
  it("of two events with the same amount and date, links the receipt to its vendor's", async () => {
    const staples = await event("STAPLES #1234 TORONTO ON", "18.75", "2026-04-10");
    const decoy = await event("CANADIAN TIRE #0099", "18.75", "2026-04-10");
    const id = await readReceipt({ vendorName: "Staples", amount: "18.75", dateReadings: ["2026-04-09"] });
    expect(await match(t, [id])).toEqual({ matched: 1, unmatched: 0 });
    expect(await receipt(id)).toMatchObject({ status: "processed", matchStatus: "matched", linkedBy: "matching",
      receiptDate: "2026-04-09", event: { id: staples } });
    expect((await ledgerEvent(staples)).hasDocument).toBe(true);
    expect((await ledgerEvent(decoy)).hasDocument).toBe(false);
  });

  it("links none of two same-vendor candidates on adjacent days, and suggests both", async () => {
    const a = await event("BLUE BOTTLE COFFEE", "6.50", "2026-05-01");
    const b = await event("BLUE BOTTLE COFFEE", "6.50", "2026-05-02");
    const id = await readReceipt({ vendorName: "Blue Bottle Coffee", amount: "6.50", dateReadings: ["2026-05-01"] });
    expect(await match(t, [id])).toEqual({ matched: 0, unmatched: 1 });
    expect(await receipt(id)).toMatchObject({ status: "processed", matchStatus: "unmatched", event: null });
    const suggestions = await call(h, t, SUGGEST, { id }, "receiptMatchSuggestions");
    expect(suggestions.map((s: { event: { id: string } }) => s.event.id)).toEqual([a, b]);
    expect(suggestions[0]).toMatchObject({ vendorSimilarity: 1, dayDistance: 0, receiptDate: "2026-05-01",
      event: { merchantName: "BLUE BOTTLE COFFEE", functionalAmount: "6.50", transactionDate: "2026-05-01" } });
  });

  it("a sole weak candidate, another amount, or a date four days off links nothing", async () => {
    await event("HOME HARDWARE", "99.10", "2026-06-01");
    await event("LUMBER LIQUIDATORS", "23.00", "2026-06-01");
    await event("SUNRISE BAKERY", "12.00", "2026-06-05");
    const weak = await readReceipt({ vendorName: "Zed's Diner", amount: "99.10", dateReadings: ["2026-06-01"] });
    const otherAmount = await readReceipt({ vendorName: "Lumber Liquidators", amount: "23.01", dateReadings: ["2026-06-01"] });
    const farDate = await readReceipt({ vendorName: "Sunrise Bakery", amount: "12.00", dateReadings: ["2026-06-01"] });
    const unread = await readReceipt({});
    expect(await match(t, [weak, otherAmount, farDate, unread])).toEqual({ matched: 0, unmatched: 4 });
    expect(await call(h, t, SUGGEST, { id: weak }, "receiptMatchSuggestions")).toHaveLength(1);
    expect(await call(h, t, SUGGEST, { id: otherAmount }, "receiptMatchSuggestions")).toEqual([]);
  });

  it("a receipt with a low-confidence field asks more: a guessed total or a doubtful date a nearer name, a vendor from the sender the event within a day", async () => {
    const conf = (low: string[]) => ({ vendorConfidence: low.includes("vendor") ? "low" : "medium",
      amountConfidence: low.includes("amount") ? "low" : "high", dateConfidence: low.includes("date") ? "low" : "medium" });
    // "Green Leaf Market" against "GREENLEAF MKT 22": similarity 0.47, enough for a receipt read with confidence.
    const sure = await event("GREENLEAF MKT 22", "41.10", "2026-08-10");
    const sureId = await readReceipt({ vendorName: "Green Leaf Market", amount: "41.10", dateReadings: ["2026-08-10"], ...conf([]) });
    await event("GREENLEAF MKT 22", "41.20", "2026-08-10");
    const guessedAmount = await readReceipt({ vendorName: "Green Leaf Market", amount: "41.20", dateReadings: ["2026-08-10"], ...conf(["amount"]) });
    await event("GREENLEAF MKT 22", "41.30", "2026-08-10");
    const doubtfulDate = await readReceipt({ vendorName: "Green Leaf Market", amount: "41.30", dateReadings: ["2026-08-10"], ...conf(["date"]) });
    // The exact name two days off: enough for a name the receipt prints, not for one from the sender.
    await event("PINE HARDWARE", "17.00", "2026-08-12");
    const fromSender = await readReceipt({ vendorName: "Pine Hardware", amount: "17.00", dateReadings: ["2026-08-10"], ...conf(["vendor"]) });
    const near = await event("PINE HARDWARE", "18.00", "2026-08-11");
    const fromSenderNear = await readReceipt({ vendorName: "Pine Hardware", amount: "18.00", dateReadings: ["2026-08-10"], ...conf(["vendor"]) });
    const printed = await event("PINE HARDWARE", "19.00", "2026-08-12");
    const printedFar = await readReceipt({ vendorName: "Pine Hardware", amount: "19.00", dateReadings: ["2026-08-10"], ...conf(["date"]) });
    expect(await match(t, [sureId, guessedAmount, doubtfulDate, fromSender, fromSenderNear, printedFar])).toEqual({ matched: 3, unmatched: 3 });
    expect(await receipt(sureId)).toMatchObject({ matchStatus: "matched", event: { id: sure },
      extraction: { vendorConfidence: "medium", amountConfidence: "high", dateConfidence: "medium" } });
    expect(await receipt(guessedAmount)).toMatchObject({ matchStatus: "unmatched", extraction: { amountConfidence: "low" } });
    expect(await receipt(doubtfulDate)).toMatchObject({ matchStatus: "unmatched" });
    expect(await receipt(fromSender)).toMatchObject({ matchStatus: "unmatched" });
    expect(await receipt(fromSenderNear)).toMatchObject({ matchStatus: "matched", event: { id: near } });
    expect(await receipt(printedFar)).toMatchObject({ matchStatus: "matched", event: { id: printed } });
    const { rows } = await h.owner.query("select id, match_details->'lowConfidence' low from app_public.receipts where id = any ($1::uuid[])",
      [[sureId, guessedAmount, fromSender]]);
    expect(Object.fromEntries(rows.map((r) => [r.id, r.low]))).toEqual({ [sureId]: [], [guessedAmount]: ["amount"], [fromSender]: ["vendor"] });
  });

  it("a field's confidence is kept only beside its value, and an unknown one counts as low", async () => {
    const id = await readReceipt({ vendorName: "Acme", amount: null, dateReadings: [], vendorConfidence: "certain",
      amountConfidence: "high", dateConfidence: "high" });
    expect((await receipt(id)).extraction).toEqual({ vendorConfidence: "low", amountConfidence: null, dateConfidence: null });
    // Nothing can store a value without its confidence, or a confidence without its value.
    await expect(h.owner.query("update app_public.receipts set amount = 5 where id = $1", [id])).rejects.toThrow(/receipts_confidence_with_value_check/);
    await expect(h.owner.query("update app_public.receipts set vendor_confidence = null where id = $1", [id])).rejects.toThrow(/receipts_confidence_with_value_check/);
  });

  it("an ambiguous date under auto tries both readings, and receiptDate shows the one that matched", async () => {
    const eventId = await event("CORNER GROCER", "31.40", "2026-04-04");
    const id = await readReceipt({ vendorName: "Corner Grocer", amount: "31.40", dateReadings: ["2026-03-04", "2026-04-03"] });
    expect((await receipt(id)).dateReadings).toEqual(["2026-03-04", "2026-04-03"]);
    await match(t, [id]);
    expect(await receipt(id)).toMatchObject({ matchStatus: "matched", receiptDate: "2026-04-03", event: { id: eventId } });
  });

  it("a person's unlink is remembered: matching never links that pair again; reject unlinks and leaves the count", async () => {
    const eventId = await event("MAPLE PHARMACY", "14.20", "2026-07-01");
    const id = await readReceipt({ vendorName: "Maple Pharmacy", amount: "14.20", dateReadings: ["2026-07-01"] });
    await match(t, [id]);
    expect((await receipt(id)).event).toMatchObject({ id: eventId });
    const unlinked = await call(h, t, UNLINK, { id }, "unlinkReceipt");
    expect(unlinked).toMatchObject({ success: true, receipt: { status: "processed", matchStatus: "unmatched", event: null, linkedBy: null } });
    expect((await ledgerEvent(eventId)).hasDocument).toBe(false);
    await match(t, [id]);
    expect(await receipt(id)).toMatchObject({ matchStatus: "unmatched", event: null });
    expect(await call(h, t, SUGGEST, { id }, "receiptMatchSuggestions")).toEqual([]);

    // A person may still link it; then nothing automatic lowers it.
    const linked = await call(h, t, LINK, { id, eventId }, "linkReceiptToEvent");
    expect(linked).toMatchObject({ success: true, receipt: { status: "reviewed", matchStatus: "matched", linkedBy: "person", event: { id: eventId } } });
    await match(t);
    expect(await receipt(id)).toMatchObject({ status: "reviewed", event: { id: eventId } });

    const before = await dashboardReceipts();
    const rejected = await call(h, t, REJECT, { id }, "rejectReceipt");
    expect(rejected).toMatchObject({ success: true, receipt: { status: "rejected", event: null } });
    expect((await ledgerEvent(eventId)).hasDocument).toBe(false);
    expect(await dashboardReceipts()).toBe(before - 1);
    expect(await call(h, t, LINK, { id, eventId }, "linkReceiptToEvent")).toMatchObject({ success: false, error: "A rejected receipt cannot be linked." });
  });

  it("a new event, or one whose amount or date changes, queues matching for the organization's waiting receipts", async () => {
    const org = await createTenant(h);
    const orgAccounts = await accountsOf(h, org);
    const queued = async () => (await dispatchJobs(h), await h.owner.query(`select j.payload from graphile_worker._private_jobs j
      join graphile_worker._private_tasks t on t.id = j.task_id
      where t.identifier = 'match_receipts' and j.payload->>'organizationId' = $1 and j.payload::jsonb->'receiptIds' = 'null'::jsonb order by j.id`,
      [org.organizationId])).rows.map((r) => r.payload);
    const newEvent = async (amount: string) => (await call(h, org, CREATE, { merchantName: "ORCHARD FLORIST", amount,
      transactionDate: "2026-08-01", paymentAccountId: orgAccounts.Chequing }, "createLedgerEvent")).eventId;
    // Nothing waits: nothing is queued.
    const eventId = await newEvent("55.00");
    expect(await queued()).toEqual([]);
    // A draft waits (its extraction's own matching may run before this event commits): queued, by amount.
    const { receiptId } = await call(h, org, CREATE_RECEIPT, { key: await upload(org) }, "createReceipt");
    await newEvent("12.34");
    expect(await queued()).toEqual([{ organizationId: org.organizationId, receiptIds: null, amounts: ["12.34"] }]);
    await h.owner.query("select app_private.record_receipt_extraction($1, $2)", [receiptId, JSON.stringify({
      text: "x", method: "text", vendorName: "Orchard Florist", amount: "57.50", dateReadings: ["2026-08-01"] })]);
    await match(org);
    const before = (await queued()).length;
    expect(await call(h, org, UPDATE, { eventId, memo: "flowers" }, "updateLedgerEvent")).toMatchObject({ success: true });
    expect(await queued()).toHaveLength(before);
    expect(await call(h, org, UPDATE, { eventId, amount: "57.50" }, "updateLedgerEvent")).toMatchObject({ success: true });
    expect((await queued()).at(-1)).toEqual({ organizationId: org.organizationId, receiptIds: null, amounts: ["57.50"] });
    await match(org);
    expect(await receipt(receiptId, org)).toMatchObject({ matchStatus: "matched", event: { id: eventId } });
  });

  it("concurrent matching never links two receipts to one event", async () => {
    const eventId = await event("NORTHERN OUTFITTERS", "77.70", "2026-09-09");
    const ids = [
      await readReceipt({ vendorName: "Northern Outfitters", amount: "77.70", dateReadings: ["2026-09-09"] }),
      await readReceipt({ vendorName: "Northern Outfitters", amount: "77.70", dateReadings: ["2026-09-08"] }),
    ];
    const clients = [new pg.Client({ connectionString: h.databaseUrl }), new pg.Client({ connectionString: h.databaseUrl })];
    await Promise.all(clients.map((c) => c.connect()));
    try {
      // Two runs at once, each for its own receipt, both wanting the one event.
      const results = await Promise.all(clients.map((c, i) =>
        c.query("select app_private.match_receipts($1, $2::uuid[]) as result", [t.organizationId, [ids[i]]])));
      expect(results.map((r) => r.rows[0].result.matched).sort()).toEqual([0, 1]);
    } finally {
      await Promise.all(clients.map((c) => c.end()));
    }
    const { rows } = await h.owner.query("select id from app_public.receipts where event_id = $1", [eventId]);
    expect(rows).toHaveLength(1);
  });
});

describe("matching rules, under concurrency and at the edges", () => {
  it("hasDocument stays true while a receipt is linked, whatever two people do at once", async () => {
    const eventId = await event("DUO DELI", "9.10", "2026-09-01");
    const [first, second] = [await readReceipt({ vendorName: "Duo Deli" }), await readReceipt({ vendorName: "Duo Deli" })];
    await call(h, t, LINK, { id: first, eventId }, "linkReceiptToEvent");
    const clients = [new pg.Client({ connectionString: h.databaseUrl }), new pg.Client({ connectionString: h.databaseUrl })];
    await Promise.all(clients.map((c) => c.connect()));
    try {
      const asTenant = (c: pg.Client) => c.query("select set_config('app.organization_id', $1, false)", [t.organizationId]);
      await Promise.all(clients.map(asTenant));
      // One links the second receipt and holds its transaction; the other unlinks the first meanwhile.
      await clients[0].query("begin");
      await clients[0].query("update app_public.receipts set event_id = $1, linked_by = 'person', status = 'reviewed' where id = $2", [eventId, second]);
      const unlinking = clients[1].query("update app_public.receipts set event_id = null where id = $1", [first]);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await clients[0].query("commit");
      await unlinking;
    } finally {
      await Promise.all(clients.map((c) => c.end()));
    }
    expect((await ledgerEvent(eventId)).hasDocument).toBe(true);
    await call(h, t, UNLINK, { id: second }, "unlinkReceipt");
    expect((await ledgerEvent(eventId)).hasDocument).toBe(false);
  });

  it("names are compared by their words: accents, legal suffixes and store words aside; fragments are no name", async () => {
    const { rows } = await h.owner.query(`select app_private.vendor_key('The Co Store') a, app_private.vendor_key('Café Dépôt Inc.') b,
      app_private.vendor_key('M') c, app_private.vendor_similarity('Staples', 'STARBUCKS #1234') d,
      app_private.vendor_similarity('Canadian Tire', 'CANADA POST') e, app_private.vendor_similarity('Cafe Depot', 'CAFÉ DÉPÔT MONTREAL QC') f`);
    expect(rows[0]).toMatchObject({ a: "", b: "cafe depot", c: "", f: 1 });
    const { rows: [{ min_similarity }] } = await h.owner.query("select * from app_private.receipt_match_thresholds()");
    expect(rows[0].d).toBeLessThan(min_similarity);
    expect(rows[0].e).toBeLessThan(min_similarity);
  });

  it("an impossible date from the extractor is ignored, the rest recorded", async () => {
    const id = await readReceipt({ vendorName: "Leap Bakery", amount: "3.00", dateReadings: ["2026-02-30", "2026-03-01"] });
    expect(await receipt(id)).toMatchObject({ status: "processed", dateReadings: ["2026-03-01"], receiptDate: "2026-03-01" });
  });

  it("a receipt a person linked goes back to review when its event is removed", async () => {
    const eventId = await event("GONE GARAGE", "70.00", "2026-09-20");
    const id = await readReceipt({ vendorName: "Gone Garage", amount: "70.00", dateReadings: ["2026-09-20"] });
    await call(h, t, LINK, { id, eventId }, "linkReceiptToEvent");
    await h.owner.query("delete from app_public.ledger_events where id = $1", [eventId]);
    expect(await receipt(id)).toMatchObject({ status: "processed", matchStatus: "unmatched", event: null, linkedBy: null });
  });
});

describe("lists and settings", () => {
  it("listReceipts filters by status, source, vendor, match status and event, newest first, in the envelope", async () => {
    const org = await createTenant(h);
    const ids = [];
    for (const vendorName of ["Alpha Books", "Beta Bikes", "Alpha Audio"]) ids.push(await readReceipt({ vendorName }, org));
    const list = (vars: Record<string, unknown>) => call(h, org, LIST, vars, "listReceipts");
    expect(await list({})).toMatchObject({ totalCount: 3, pageSize: 25, offset: 0, items: [{ id: ids[2] }, { id: ids[1] }, { id: ids[0] }] });
    expect(await list({ search: "alpha", limit: 1 })).toMatchObject({ totalCount: 2, pageSize: 1, items: [{ vendorName: "Alpha Audio" }] });
    expect((await list({ status: "processed", source: "web_upload", matchStatus: "pending" })).totalCount).toBe(3);
    expect((await list({ status: "reviewed" })).totalCount).toBe(0);
    expect((await list({ source: "email" })).totalCount).toBe(0);
    expect(errorOf(await h.gql(LIST, { org: org.organizationId, status: "lost" }, org.apiKey)).message)
      .toBe("status must be one of: draft, processed, reviewed, rejected.");
  });

  it("updateOrganizationSettings sets dateOrder for an owner, not for an API key, and checks the value", async () => {
    const doc = `mutation($org: UUID!, $d: String) { updateOrganizationSettings(organizationId: $org, dateOrder: $d) { success error organization { id dateOrder } } }`;
    expect(errorOf(await h.gql(doc, { org: other.organizationId, d: "DMY" }, other.apiKey)))
      .toEqual({ message: "API Keys Cannot Perform Admin Operations.", code: "FORBIDDEN" });
    expect(dataOf(await h.gql(doc, { org: other.organizationId, d: "YMD" }, other.ownerJwt), "updateOrganizationSettings"))
      .toMatchObject({ success: false, error: "dateOrder must be one of: auto, DMY, MDY." });
    expect(dataOf(await h.gql(doc, { org: other.organizationId, d: "DMY" }, other.ownerJwt), "updateOrganizationSettings"))
      .toMatchObject({ success: true, organization: { id: other.organizationId, dateOrder: "DMY" } });
  });
});

describe("the worker", () => {
  it("extracts a stored text receipt and matches it to the bank event, as jobs queued by the database", async () => {
    const org = await createTenant(h);
    const orgAccounts = await accountsOf(h, org);
    const res = await call(h, org, CREATE, { merchantName: "RIVERSIDE CAFE #12", amount: "23.45", transactionDate: "2026-02-15",
      paymentAccountId: orgAccounts.Chequing }, "createLedgerEvent");
    const text = "Riverside Cafe\n123 Main St\nDate: 2026-02-14\nLatte 4.50\nSandwich 16.25\nSUBTOTAL 20.75\nGST 2.70\nTOTAL $23.45\nThank you!";
    const key = await upload(org, text, "email.txt");
    const created = await call(h, org, CREATE_RECEIPT, { key }, "createReceipt");
    for (let i = 0; i < 3; i++) await dispatchJobs(h).then(() => runOnce({ pgPool: h.owner, taskList, noHandleSignals: true }));
    expect(await receipt(created.receiptId, org)).toMatchObject({ status: "processed", matchStatus: "matched", vendorName: "Riverside Cafe",
      amount: 23.45, receiptDate: "2026-02-14", event: { id: res.eventId } });
    const { rows } = await h.owner.query("select job_name, status from app_private.job_results where organization_id = $1 order by id", [org.organizationId]);
    expect(rows).toEqual([{ job_name: "extract_receipt", status: "succeeded" }, { job_name: "match_receipts", status: "succeeded" }]);
  });

  it("a receipt that cannot be read ends processed with empty fields and the error", async () => {
    const org = await createTenant(h);
    const key = `${org.organizationId}/uploads/${randomUUID()}/scan.pdf`;
    await createStorage(h.config).put(key, "%PDF-1.7 this is not really a PDF");
    await h.owner.query(`insert into app_public.uploads (organization_id, object_key, filename, content_type, size, sha256)
      values ($1, $2, 'scan.pdf', 'application/pdf', 10, $3)`, [org.organizationId, key, "a".repeat(64)]);
    const created = await call(h, org, CREATE_RECEIPT, { key }, "createReceipt");
    for (let i = 0; i < 2; i++) await dispatchJobs(h).then(() => runOnce({ pgPool: h.owner, taskList, noHandleSignals: true }));
    const r = await call(h, org, GET_RECEIPT, { id: created.receiptId }, "getReceipt");
    expect(r).toMatchObject({ status: "processed", matchStatus: "unmatched", vendorName: null, amount: null, receiptDate: null });
  });
});

async function dashboardReceipts(): Promise<number> {
  const res = await call(h, t, `query($org: UUID!) { dashboardSummary(organizationId: $org, startDate: "2000-01-01", endDate: "2100-01-01") { receiptCount } }`, {}, "dashboardSummary");
  return res.receiptCount;
}
