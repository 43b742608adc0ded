import { execFile, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { promisify } from "node:util";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { importProcessorBalance } from "../src/imports/processor-balance/import.js";
import { parseAmount, parseDay } from "../src/imports/processor-balance/values.js";
import { generateProcessorExport } from "../scripts/generate-processor-export.js";
import { runCli, type CliRun } from "./helpers/cli.js";
import { startHarness, type Harness } from "./helpers/harness.js";

const run = promisify(execFile);
const SAMPLE_A = path.resolve("data/samples/processor/processor_balance_sample.csv");
const SAMPLE_B = path.resolve("data/samples/processor/processor_balance_sample_itemized.csv");
const tmp = mkdtempSync(path.join(os.tmpdir(), "processor-import-"));

let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(async () => {
  await h?.close();
  rmSync(tmp, { recursive: true, force: true });
});

const cli = (...args: string[]): Promise<CliRun> => runCli(h.databaseUrl, ...args);

let orgCount = 0;
async function organization(): Promise<{ id: string; name: string }> {
  const name = `Processor Co ${++orgCount} ${Date.now()}`;
  const { rows: [o] } = await h.owner.query("select id, name from app_private.create_organization($1)", [name]);
  return o;
}

/** Each account's balance in the journal (debit-positive), accounts with no lines left out. */
async function books(orgId: string): Promise<Record<string, string>> {
  const { rows } = await h.owner.query(
    `select a.name, sum(l.debit - l.credit)::text as balance from app_public.journal_lines l
       join app_public.accounts a on a.id = l.account_id
      where l.organization_id = $1 and not l.voided group by a.name having sum(l.debit - l.credit) <> 0 order by a.name`, [orgId]);
  return Object.fromEntries(rows.map((r) => [r.name, r.balance]));
}

/** The same balances as the reports read them: per-account daily totals. */
async function dailyTotals(orgId: string): Promise<Record<string, string>> {
  const { rows } = await h.owner.query(
    `select a.name, sum(t.debit - t.credit)::text as balance from app_public.account_daily_totals t
       join app_public.accounts a on a.id = t.account_id
      where t.organization_id = $1 group by a.name having sum(t.debit - t.credit) <> 0 order by a.name`, [orgId]);
  return Object.fromEntries(rows.map((r) => [r.name, r.balance]));
}

async function trialBalance(orgId: string): Promise<{ debit: string; credit: string }> {
  const { rows: [r] } = await h.owner.query(
    "select coalesce(sum(debit), 0)::text as debit, coalesce(sum(credit), 0)::text as credit from app_public.journal_lines where organization_id = $1 and not voided", [orgId]);
  return r;
}

async function counts(orgId: string) {
  const { rows: [r] } = await h.owner.query(`select
      (select count(*)::int from app_public.ledger_events where organization_id = $1) as events,
      (select count(*)::int from app_public.journal_entries where organization_id = $1) as entries,
      (select count(*)::int from app_public.journal_lines where organization_id = $1) as lines,
      (select count(*)::int from app_public.import_batches where organization_id = $1) as batches,
      (select count(*)::int from app_public.ledger_event_audit where organization_id = $1) as audit`, [orgId]);
  return r as { events: number; entries: number; lines: number; batches: number; audit: number };
}

/**
 * The books the shared sample must produce (debit-positive; docs/api.md, Processor imports): Sales
 * Revenue is 4,288.35 gross less 124.30 of refunds, and the clearing account differs from the
 * processor's own balance by the application fees, which are skipped.
 */
const SAMPLE_BOOKS = {
  "Bank Fees & Charges": "150.12",
  Chequing: "2797.77",
  "Cost of Goods Sold": "350.00",
  "Processor Clearing": "866.16",
  "Sales Revenue": "-4164.05",
};

function writeTmp(name: string, text: string): string {
  const file = path.join(tmp, name);
  writeFileSync(file, text);
  return file;
}

describe("import_processor_balance: layout A, the shared sample", () => {
  let org: { id: string; name: string };
  let first: CliRun;
  beforeAll(async () => {
    org = await organization();
    first = await cli("import_processor_balance", SAMPLE_A, "--org-name", org.name, "--json");
  });

  it("creates 59 events (34 rows and 25 charge fees), skips the 5 application fees, and names its batch", async () => {
    expect(first.code).toBe(0);
    expect(first.json).toMatchObject({
      layout: "A", rows: 39, created: 59, createdRows: 34, skippedApplicationFee: 5, skippedDuplicate: 0,
      skippedUnsupported: 0, unsupported: [], status: "confirmed", dryRun: false,
    });
    expect(first.json.batchId).toMatch(/^processor:\d{8}T\d{9}Z$/);
    const { rows: [batch] } = await h.owner.query("select * from app_public.import_batches where organization_id = $1", [org.id]);
    expect(batch).toMatchObject({ source: "processor_import", batch_key: first.json.batchId, file_name: "processor_balance_sample.csv" });
  });

  it("maps each row type to its event type, category and direction, all on the clearing account, confirmed", async () => {
    const { rows } = await h.owner.query(
      `select e.event_type, c.name as category, e.direction, count(*)::int as n
         from app_public.ledger_events e join app_public.accounts c on c.id = e.category_id
        where e.organization_id = $1 group by 1, 2, 3 order by 1, 2, 3`, [org.id]);
    expect(rows).toEqual([
      { event_type: "expense", category: "Bank Fees & Charges", direction: "out", n: 28 }, // 25 charge fees + 3 processor fees
      { event_type: "expense", category: "Cost of Goods Sold", direction: "out", n: 1 },
      { event_type: "income", category: "Sales Revenue", direction: "in", n: 25 },
      { event_type: "refund", category: "Sales Revenue", direction: "out", n: 2 },
      { event_type: "transfer", category: "Chequing", direction: "out", n: 3 },
    ]);
    const { rows: [e] } = await h.owner.query(
      `select count(*) filter (where p.name = 'Processor Clearing' and p.account_type = 'clearing')::int as on_clearing,
              count(*) filter (where e.status = 'confirmed' and e.journal_entry_id is not null)::int as confirmed,
              count(*) filter (where e.source = 'processor_import' and e.import_batch_id is not null)::int as imported,
              count(*) filter (where e.backfill_id = $2 || ':' || e.source_id)::int as backfill
         from app_public.ledger_events e join app_public.accounts p on p.id = e.payment_account_id where e.organization_id = $1`,
      [org.id, first.json.batchId]);
    expect(e).toEqual({ on_clearing: 59, confirmed: 59, imported: 59, backfill: 59 });
    // A charge and its fee: the gross amount as income, the fee as a second event.
    const { rows: pair } = await h.owner.query(
      `select source_id, event_type, functional_amount::text, transaction_date::text, merchant_name from app_public.ledger_events
        where organization_id = $1 and source_id like 'txn_3Bi6ppwMI2jMVVCSksO68feb%' order by source_id`, [org.id]);
    expect(pair).toEqual([
      { source_id: "txn_3Bi6ppwMI2jMVVCSksO68feb", event_type: "income", functional_amount: "113.00", transaction_date: "2025-09-02", merchant_name: "Invoice INV-1001" },
      { source_id: "txn_3Bi6ppwMI2jMVVCSksO68feb:fee", event_type: "expense", functional_amount: "3.58", transaction_date: "2025-09-02", merchant_name: "Processor fee" },
    ]);
    // The import run is recorded once (its batch), and each event's history begins with it.
    const { rows: [audit] } = await h.owner.query(
      `select count(*)::int as rows, (select count(distinct import_batch_id)::int from app_public.ledger_events where organization_id = $1) as batches
         from app_public.ledger_event_audit where organization_id = $1`, [org.id]);
    expect(audit).toEqual({ rows: 0, batches: 1 });
    const c = await h.owner.connect();
    let history;
    try {
      await c.query("begin");
      const { rows: [{ key }] } = await c.query("select app_private.create_api_key($1, 'history') as key", [org.id]);
      await c.query("select set_config('app.api_key_id', $1, true)", [key.apiKey.id]);
      ({ rows: [{ history }] } = await c.query(
        `select app_public.ledger_event_history($1, e.id) as history from app_public.ledger_events e
          where e.organization_id = $1 and e.source_id = 'txn_3Bi6ppwMI2jMVVCSksO68feb'`, [org.id]));
    } finally {
      await c.query("rollback");
      c.release();
    }
    expect(history).toMatchObject([{ action: "import", actorType: "system", changes: [
      { field: "import_batch_id" }, { field: "source", newValue: "processor_import" }] }]);
  });

  it("gives exactly the books of the sample, and a trial balance of zero", async () => {
    expect(await books(org.id)).toEqual(SAMPLE_BOOKS);
    expect(await dailyTotals(org.id)).toEqual(SAMPLE_BOOKS);
    const tb = await trialBalance(org.id);
    expect(tb.debit).toBe(tb.credit);
  });

  it("re-running creates 0 and skips every row as a duplicate", async () => {
    const again = await cli("import_processor_balance", SAMPLE_A, "--org-name", org.name, "--json");
    expect(again.json).toMatchObject({ created: 0, createdRows: 0, skippedDuplicate: 34, skippedApplicationFee: 5, skippedUnsupported: 0 });
    expect(again.json.batchId).not.toBe(first.json.batchId);
    expect((await counts(org.id)).events).toBe(59);
    expect(await books(org.id)).toEqual(SAMPLE_BOOKS);
  });

  it("prints the counts and the batch id without --json", async () => {
    const plain = await cli("import_processor_balance", SAMPLE_A, "--org-name", org.name);
    expect(plain.code).toBe(0);
    expect(plain.stdout).toContain("created: 0 events");
    expect(plain.stdout).toContain("skipped (application fee): 5");
    expect(plain.stdout).toContain("skipped (duplicate): 34");
    expect(plain.stdout).toContain("skipped (unsupported): 0");
    expect(plain.stdout).toMatch(/batch id: processor:\d{8}T\d{9}Z/);
    // Not a terminal: no progress line.
    expect(plain.stderr).not.toContain("Reading");
  });
});

describe("import_processor_balance: options and layouts", () => {
  it("--dry-run gives the counts of a real run and writes nothing", async () => {
    const org = await organization();
    const before = await counts(org.id);
    const dry = await cli("import_processor_balance", SAMPLE_A, "--org-name", org.name, "--dry-run", "--json");
    expect(dry.json).toMatchObject({ created: 59, skippedApplicationFee: 5, skippedDuplicate: 0, dryRun: true });
    expect(await counts(org.id)).toEqual(before);
    expect(await books(org.id)).toEqual({});
    const plain = await cli("import_processor_balance", SAMPLE_A, "--org-name", org.name, "--dry-run");
    expect(plain.stdout).toMatch(/^Dry run \(nothing written\)/);
    expect(await counts(org.id)).toEqual(before);
  });

  it("--review leaves the events classified in needs_review, with no journal entries", async () => {
    const org = await organization();
    const r = await cli("import_processor_balance", SAMPLE_A, "--org-name", org.name, "--review", "--json");
    expect(r.json).toMatchObject({ created: 59, status: "needs_review" });
    const { rows: [e] } = await h.owner.query(
      `select count(*) filter (where status = 'needs_review' and category_id is not null and payment_account_id is not null and journal_entry_id is null)::int as staged
         from app_public.ledger_events where organization_id = $1`, [org.id]);
    expect(e.staged).toBe(59);
    expect((await counts(org.id)).entries).toBe(0);
  });

  it("layout B (itemized, no payouts) gives the same books less the payouts", async () => {
    const org = await organization();
    const r = await cli("import_processor_balance", SAMPLE_B, "--org-name", org.name, "--json");
    expect(r.json).toMatchObject({ layout: "B", rows: 36, created: 56, skippedApplicationFee: 5, skippedDuplicate: 0, skippedUnsupported: 0 });
    expect(await books(org.id)).toEqual({
      "Bank Fees & Charges": "150.12",
      "Cost of Goods Sold": "350.00",
      "Processor Clearing": "3663.93", // 866.16 + 2,797.77 never paid out
      "Sales Revenue": "-4164.05",
    });
    const tb = await trialBalance(org.id);
    expect(tb.debit).toBe(tb.credit);
  });

  it("reads real exports' names (payment, payment_refund, stripe_fee), BOM, CRLF and quoted commas; lists unsupported rows by id", async () => {
    const org = await organization();
    const file = writeTmp("real-names.csv", "\uFEFF" + [
      "id,Type,Source,Amount,Fee,Net,Currency,Created (UTC),Available On (UTC),Description",
      'txn_p1,payment,py_1,"1,000.00",29.30,970.70,cad,2025-09-02 14:03,2025-09-04 00:00,"Order 1, ""rush"""',
      "txn_p2,payment_refund,re_1,-100.00,0.00,-100.00,cad,2025-09-03 10:00,2025-09-03 10:00,Refund",
      "txn_p3,stripe_fee,,-2.00,0.00,-2.00,cad,2025-09-04 10:00,2025-09-04 10:00,Billing fee",
      "txn_p4,adjustment,du_1,-15.00,15.00,-30.00,cad,2025-09-05 10:00,2025-09-05 10:00,Dispute",
      "txn_p5,refund,re_2,-249.00,-7.52,-241.48,cad,9/6/2025 10:00,9/6/2025 10:00,Old refund with its fee given back",
      "txn_p6,topup,tu_1,50.00,0.00,50.00,cad,2025-09-07 10:00,2025-09-07 10:00,Top-up",
    ].join("\r\n") + "\r\n");
    const r = await cli("import_processor_balance", file, "--org-name", org.name, "--json");
    expect(r.json).toMatchObject({
      rows: 6, created: 6, createdRows: 4, skippedUnsupported: 2,
      unsupported: [{ line: 5, id: "txn_p4", type: "adjustment" }, { line: 7, id: "txn_p6", type: "topup" }],
    });
    const { rows } = await h.owner.query(
      `select e.source_id, e.event_type, e.direction, e.functional_amount::text, c.name, e.merchant_name, e.transaction_date::text
         from app_public.ledger_events e join app_public.accounts c on c.id = e.category_id where e.organization_id = $1 order by e.source_id`, [org.id]);
    expect(rows).toEqual([
      { source_id: "txn_p1", event_type: "income", direction: "in", functional_amount: "1000.00", name: "Sales Revenue", merchant_name: 'Order 1, "rush"', transaction_date: "2025-09-02" },
      { source_id: "txn_p1:fee", event_type: "expense", direction: "out", functional_amount: "29.30", name: "Bank Fees & Charges", merchant_name: "Processor fee", transaction_date: "2025-09-02" },
      { source_id: "txn_p2", event_type: "refund", direction: "out", functional_amount: "100.00", name: "Sales Revenue", merchant_name: "Refund", transaction_date: "2025-09-03" },
      { source_id: "txn_p3", event_type: "expense", direction: "out", functional_amount: "2.00", name: "Bank Fees & Charges", merchant_name: "Billing fee", transaction_date: "2025-09-04" },
      { source_id: "txn_p5", event_type: "refund", direction: "out", functional_amount: "249.00", name: "Sales Revenue", merchant_name: "Old refund with its fee given back", transaction_date: "2025-09-06" },
      { source_id: "txn_p5:fee", event_type: "expense", direction: "in", functional_amount: "7.52", name: "Bank Fees & Charges", merchant_name: "Processor fee", transaction_date: "2025-09-06" },
    ]);
    // The clearing account moves by the net of the imported rows.
    expect((await books(org.id))["Processor Clearing"]).toBe((970.70 - 100 - 2 - 241.48).toFixed(2));
  });

  it("creates the accounts it needs when the chart lacks them", async () => {
    const org = await organization();
    // Rename the starter chart's accounts out of the way; no clearing account is left either.
    await h.owner.query(`update app_public.accounts set name = name || ' (old)', account_type = case when account_type = 'clearing' then 'cash' else account_type end
                          where organization_id = $1`, [org.id]);
    const r = await cli("import_processor_balance", SAMPLE_A, "--org-name", org.name, "--json");
    expect(r.json).toMatchObject({ created: 59 });
    expect(await books(org.id)).toEqual(SAMPLE_BOOKS);
    const { rows } = await h.owner.query(
      "select name, account_type, classification from app_public.accounts where organization_id = $1 and name not like '%(old)' order by name", [org.id]);
    expect(rows).toEqual([
      { name: "Bank Fees & Charges", account_type: "expense", classification: "expense" },
      { name: "Chequing", account_type: "bank", classification: "asset" },
      { name: "Cost of Goods Sold", account_type: "cost_of_goods_sold", classification: "expense" },
      { name: "Processor Clearing", account_type: "clearing", classification: "asset" },
      { name: "Sales Revenue", account_type: "income", classification: "revenue" },
    ]);
  });
});

describe("import_processor_balance: a bad file is refused whole", () => {
  const sample = readFileSync(SAMPLE_A, "utf8").split("\n");
  let org: { id: string; name: string };
  beforeAll(async () => { org = await organization(); });

  async function refused(file: string, message: string) {
    const r = await cli("import_processor_balance", file, "--org-name", org.name);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split("\n").pop()).toBe(message);
    const json = await cli("import_processor_balance", file, "--org-name", org.name, "--json");
    expect(json).toMatchObject({ code: 1, json: { error: message } });
    expect(await counts(org.id)).toEqual({ events: 0, entries: 0, lines: 0, batches: 0, audit: 0 });
  }

  it("a missing column: the header's line and the column", async () => {
    const cells = sample.map((l) => l.split(","));
    const file = writeTmp("no-amount.csv", cells.map((c) => [...c.slice(0, 3), ...c.slice(4)].join(",")).join("\n"));
    await refused(file, "Line 1, column Amount: the column is missing (balance history export).");
  });

  it("an unparsable amount: its line and column", async () => {
    const lines = [...sample];
    lines[11] = lines[11].replace(/^([^,]*,[^,]*,[^,]*),[^,]*,/, '$1,"12,x",');
    await refused(writeTmp("bad-amount.csv", lines.join("\n")), 'Line 12, column Amount: "12,x" is not an amount.');
  });

  it("an unparsable date: its line and column", async () => {
    const lines = [...sample];
    lines[29] = lines[29].replace(/,2025-\d\d-\d\d \d\d:\d\d,/, ",2025-02-30 10:00,");
    await refused(writeTmp("bad-date.csv", lines.join("\n")), 'Line 30, column Created (UTC): "2025-02-30 10:00" is not a date and time (YYYY-MM-DD HH:MM, or M/D/YYYY H:MM as a spreadsheet re-saves it).');
  });

  it("a row in another currency, a file that is no export, a broken CSV, a missing file", async () => {
    const lines = [...sample];
    lines[4] = lines[4].replace(",cad,", ",usd,");
    await refused(writeTmp("usd.csv", lines.join("\n")), `Line 5, column Currency: "usd" is not the organization's currency (CAD).`);
    await refused(writeTmp("other.csv", "Date,Description,Debit,Credit\n2025-01-01,x,1.00,\n"),
      "Line 1: the header is neither a balance history export (id, Type, Amount, Fee, Currency, Created (UTC), …) nor an itemized balance change report (balance_transaction_id, reporting_category, gross, fee, currency, created_utc, …).");
    const broken = [...sample];
    broken[7] = broken[7] + ",extra";
    await refused(writeTmp("broken.csv", broken.join("\n")), "Line 8: Invalid Record Length: expect 17, got 18.");
    const missing = await cli("import_processor_balance", path.join(tmp, "nope.csv"), "--org-name", org.name);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`No file "${path.join(tmp, "nope.csv")}".`);
  });

  it("parses amounts and dates as the exports write them", () => {
    expect(["12.5", "-1,234.56", "+3", "0.00", "999999999.99"].map(parseAmount)).toEqual(["12.50", "-1234.56", "3.00", "0.00", "999999999.99"]);
    expect(["12,x", "1.234", "", "1e3", "1000000000.00", "12,34"].map(parseAmount)).toEqual([undefined, undefined, undefined, undefined, undefined, undefined]);
    expect(["2025-10-30 09:20", "2025-09-02 14:03:00", "9/6/2025 10:00", "2024-02-29", "2025-10-30T09:20:00Z"].map(parseDay))
      .toEqual(["2025-10-30", "2025-09-02", "2025-09-06", "2024-02-29", "2025-10-30"]);
    expect(["2025-02-30 10:00", "2025-13-01 00:00", "30/10/2025 10:00", "yesterday", "1899-12-31"].map(parseDay))
      .toEqual([undefined, undefined, undefined, undefined, undefined]);
  });
});

describe("delete_processor_imports", () => {
  it("deletes one batch exactly (its events, entries and lines), then all, the balances going back each time", async () => {
    const org = await organization();
    const a = await cli("import_processor_balance", SAMPLE_A, "--org-name", org.name, "--json");
    const afterA = await counts(org.id);
    // A second batch: other ids, same accounts.
    const other = path.join(tmp, "other-batch.csv");
    const generated = await generateProcessorExport(other, 300, 7);
    const b = await cli("import_processor_balance", other, "--org-name", org.name, "--json");
    expect(b.json).toMatchObject(generated.expected);
    expect(await books(org.id)).not.toEqual(SAMPLE_BOOKS);

    const dry = await cli("delete_processor_imports", "--org-name", org.name, "--batch-id", b.json.batchId, "--dry-run", "--json");
    expect(dry.json).toMatchObject({ batches: 1, events: generated.expected.created, journalEntries: generated.expected.created, dryRun: true });
    const del = await cli("delete_processor_imports", "--org-name", org.name, "--batch-id", b.json.batchId, "--json");
    expect(del.json).toMatchObject({ batches: 1, batchIds: [b.json.batchId], events: generated.expected.created,
      journalEntries: generated.expected.created, journalLines: generated.expected.created * 2, dryRun: false });
    expect(await books(org.id)).toEqual(SAMPLE_BOOKS);
    expect(await dailyTotals(org.id)).toEqual(SAMPLE_BOOKS);
    const left = await counts(org.id);
    expect({ ...left, audit: 0 }).toEqual({ ...afterA, audit: 0 });
    const { rows: [{ deleted }] } = await h.owner.query(
      "select count(*)::int as deleted from app_public.ledger_event_audit where organization_id = $1 and action = 'delete_import'", [org.id]);
    expect(deleted).toBe(generated.expected.created);

    const unknown = await cli("delete_processor_imports", "--org-name", org.name, "--batch-id", b.json.batchId);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain(`No processor import batch "${b.json.batchId}".`);

    const all = await cli("delete_processor_imports", "--org-name", org.name);
    expect(all.code).toBe(0);
    expect(all.stdout).toBe(`Deleted 59 events, 59 journal entries and 118 lines of all processor imports (1 batch) of "${org.name}".\n`);
    expect(await counts(org.id)).toMatchObject({ events: 0, entries: 0, lines: 0, batches: 0 });
    expect(await books(org.id)).toEqual({});
    expect(await dailyTotals(org.id)).toEqual({});
    // And it can be imported again.
    const again = await cli("import_processor_balance", SAMPLE_A, "--org-name", org.name, "--json");
    expect(again.json).toMatchObject({ created: 59 });
    expect(a.json.created).toBe(59);
  });
});

describe("two imports at once", () => {
  it("two CLI runs of the same file: each row is imported exactly once", async () => {
    const org = await organization();
    const file = path.join(tmp, "concurrent.csv");
    const generated = await generateProcessorExport(file, 3000, 11);
    const [x, y] = await Promise.all([
      cli("import_processor_balance", file, "--org-name", org.name, "--json"),
      cli("import_processor_balance", file, "--org-name", org.name, "--json"),
    ]);
    expect([x.code, y.code]).toEqual([0, 0]);
    expect(x.json.created + y.json.created).toBe(generated.expected.created);
    expect(x.json.createdRows + y.json.createdRows).toBe(generated.expected.createdRows);
    expect(x.json.skippedDuplicate + y.json.skippedDuplicate).toBe(generated.expected.createdRows);
    const { rows: [e] } = await h.owner.query(
      "select count(*)::int as n, count(distinct source_id)::int as ids from app_public.ledger_events where organization_id = $1", [org.id]);
    expect(e).toEqual({ n: generated.expected.created, ids: generated.expected.created });
  });

  it("an import running while another holds the same rows waits for it, then skips them all", async () => {
    const org = await organization();
    const sample = readFileSync(SAMPLE_A);
    const first = new pg.Client({ connectionString: h.databaseUrl });
    const second = new pg.Client({ connectionString: h.databaseUrl });
    await first.connect();
    await second.connect();
    try {
      // The first import has posted but not committed yet.
      await first.query("begin");
      await first.query("select app_private.processor_import_begin($1)", [org.id]);
      await first.query("select app_private.processor_import_stage($1::integer[], $2::text[], $3::text[], $4::numeric[], $5::numeric[], $6::date[], $7::text[], $8::text[], $9::text[])",
        [[2], ["txn_3Bi6ppwMI2jMVVCSksO68feb"], ["charge"], ["113.00"], ["3.58"], ["2025-09-02"], ["Invoice INV-1001"], ["ch_x"], ["cad"]]);
      const held = (await first.query("select app_private.processor_import_post($1, 'A', 'held.csv') as r", [org.id])).rows[0].r;
      expect(held.created).toBe(2);
      const pid = (await second.query("select pg_backend_pid() as pid")).rows[0].pid;
      const waiting = importProcessorBalance(second, Readable.from([sample]), { organizationId: org.id, fileName: "sample.csv" });
      // The second waits on the first's uncommitted rows (the unique source index)...
      for (let i = 0; ; i++) {
        const { rows: [s] } = await h.owner.query("select wait_event_type from pg_stat_activity where pid = $1", [pid]);
        if (s?.wait_event_type === "Lock") break;
        if (i > 200) throw new Error("the second import never waited");
        await new Promise((r) => setTimeout(r, 50));
      }
      await first.query("commit");
      // ...then skips that row as a duplicate and imports the rest.
      const r = await waiting;
      expect(r).toMatchObject({ created: 57, createdRows: 33, skippedDuplicate: 1 });
      const { rows: [e] } = await h.owner.query("select count(*)::int as n from app_public.ledger_events where organization_id = $1", [org.id]);
      expect(e.n).toBe(59);
    } finally {
      await first.end();
      await second.end();
    }
  });
});

describe("progress on a terminal", () => {
  it("shows a progress line on stderr only when stderr is a TTY (script(1) gives the CLI a terminal)", async () => {
    const org = await organization();
    const file = path.join(tmp, "progress.csv");
    await generateProcessorExport(file, 20_000, 3);
    const which = await run("sh", ["-c", "command -v script || true"]);
    if (!which.stdout.trim()) return; // util-linux's script is not installed
    const command = `${path.resolve("node_modules/.bin/tsx")} src/cli/main.ts import_processor_balance ${file} --org-name '${org.name}' >/dev/null`;
    const out = await new Promise<string>((resolve, reject) => {
      const child = spawn("script", ["-qec", command, "/dev/null"], { env: { ...process.env, DATABASE_URL: h.databaseUrl, LOG_LEVEL: "silent" } });
      let text = "";
      child.stdout.on("data", (d) => { text += d; });
      child.on("error", reject);
      child.on("exit", () => resolve(text));
    });
    expect(out).toMatch(/\r(Reading: [\d,]+ rows \(\d+%\)|Posting [\d,]+ rows…)/);
  }, 180_000);
});

describe("storage keys", () => {
  it("refuses a key outside the store for good (a job that meets it is not retried)", async () => {
    const { checkKey } = await import("../src/storage/storage.js");
    for (const key of ["../../etc/passwd", "/etc/passwd", "a//b", "a/./b", ""]) {
      expect(() => checkKey(key)).toThrow(expect.objectContaining({ permanent: true }));
    }
    expect(checkKey("processor-imports/x/file.csv")).toBe("processor-imports/x/file.csv");
  });
});
