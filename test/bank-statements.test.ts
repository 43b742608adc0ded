import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTenant, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { accountsOf, addAccount, bookEvent, call, count, createEvent, REJECT, type Accounts } from "./ledger-fixtures.js";

export const CHECK = `mutation($org: UUID!, $paymentAccountId: UUID!, $rows: [BankStatementRowInput!]!) {
  checkBankStatementDups(organizationId: $org, paymentAccountId: $paymentAccountId, rows: $rows) {
    success error results { rowIndex isDuplicate isPossibleDuplicate matchingEventId } } }`;
export const IMPORT = `mutation($org: UUID!, $paymentAccountId: UUID!, $rows: [BankStatementRowInput!]!, $currency: String) {
  importBankStatement(organizationId: $org, paymentAccountId: $paymentAccountId, rows: $rows, currency: $currency) {
    success error importedCount skippedCount batchId } }`;

interface Row { transactionDate: string; description: string; amount: string; eventType: string; memo?: string; reference?: string }
const row = (description: string, amount: string, transactionDate = "2025-09-03", extra: Partial<Row> = {}): Row =>
  ({ transactionDate, description, amount, eventType: amount.startsWith("-") ? "expense" : "income", ...extra });

let h: Harness;
let t: Tenant;
let other: Tenant;
let acc: Accounts;
beforeAll(async () => {
  h = await startHarness();
  t = await createTenant(h);
  other = await createTenant(h);
  acc = await accountsOf(h, t);
  acc["Office Supplies"] = await addAccount(h, t, "Office Supplies", "expense", "expense");
  acc["Meals"] = await addAccount(h, t, "Meals", "expense", "expense");
  acc["Visa"] = await addAccount(h, t, "Visa", "credit_card", "liability");
});
afterAll(() => h?.close());

/** A fresh bank account, so that each test starts from empty books on it. */
const freshAccount = () => addAccount(h, t, `Bank ${Math.random().toString(36).slice(2, 8)}`, "bank", "asset");
const importRows = (paymentAccountId: string, rows: Row[], tenant = t) =>
  call(h, tenant, IMPORT, { paymentAccountId, rows }, "importBankStatement");
const checkRows = (paymentAccountId: string, rows: Row[]) =>
  call(h, t, CHECK, { paymentAccountId, rows }, "checkBankStatementDups");
const eventsOn = (account: string) => count(h, "select 1 from app_public.ledger_events where payment_account_id = $1", [account]);

describe("importBankStatement", () => {
  it("imports each row in needs_review on the payment account, direction from the sign, reference and memo kept", async () => {
    const bank = await freshAccount();
    const r = await importRows(bank, [
      row("Staples  Store", "-42.50", "2025-09-03", { memo: "pens", reference: "FIT-1" }),
      row("Client deposit", "1250.00", "2025-09-04"),
      row("Refund from vendor", "15.00", "2025-09-05", { eventType: "expense" }),
    ]);
    expect(r).toMatchObject({ success: true, error: null, importedCount: 3, skippedCount: 0 });
    const { rows } = await h.owner.query(
      `select merchant_name, functional_amount::text, direction, event_type, status, memo, reference, source, import_batch_id
         from app_public.ledger_events where payment_account_id = $1 order by transaction_date`, [bank]);
    expect(rows).toEqual([
      { merchant_name: "Staples  Store", functional_amount: "42.50", direction: "out", event_type: "expense", status: "needs_review", memo: "pens", reference: "FIT-1", source: "bank_import", import_batch_id: r.batchId },
      { merchant_name: "Client deposit", functional_amount: "1250.00", direction: "in", event_type: "income", status: "needs_review", memo: "", reference: null, source: "bank_import", import_batch_id: r.batchId },
      { merchant_name: "Refund from vendor", functional_amount: "15.00", direction: "in", event_type: "expense", status: "needs_review", memo: "", reference: null, source: "bank_import", import_batch_id: r.batchId },
    ]);
    // The audit trail says where each event came from: its import run, recorded once.
    const { rows: events } = await h.owner.query("select id from app_public.ledger_events where payment_account_id = $1", [bank]);
    for (const e of events) {
      const history = await call(h, t, `query($org: UUID!, $id: UUID!) { ledgerEventHistory(organizationId: $org, eventId: $id) {
        action actorType actorId changes { field oldValue newValue } } }`, { id: e.id }, "ledgerEventHistory");
      expect(history).toEqual([{ action: "import", actorType: "api_key", actorId: t.apiKeyId, changes: [
        { field: "import_batch_id", oldValue: null, newValue: r.batchId }, { field: "source", oldValue: null, newValue: "bank_import" }] }]);
    }
    const { rows: [first] } = await h.owner.query("select id from app_public.ledger_events where reference = 'FIT-1' and payment_account_id = $1", [bank]);
    expect(await call(h, t, `query($org: UUID!, $id: UUID!) { getLedgerEvent(organizationId: $org, eventId: $id) { source importBatchId reference } }`,
      { id: first.id }, "getLedgerEvent")).toEqual({ source: "bank_import", importBatchId: r.batchId, reference: "FIT-1" });
    const { rows: [batch] } = await h.owner.query("select source, payment_account_id from app_public.import_batches where id = $1", [r.batchId]);
    expect(batch).toEqual({ source: "bank_import", payment_account_id: bank });
  });

  it("skips every row of a statement imported again", async () => {
    const bank = await freshAccount();
    const statement = [row("Coffee Shop", "-4.75"), row("Hardware", "-120.00", "2025-09-04"), row("Deposit", "300.00", "2025-09-05")];
    expect(await importRows(bank, statement)).toMatchObject({ success: true, importedCount: 3, skippedCount: 0 });
    expect(await importRows(bank, statement)).toMatchObject({ success: true, importedCount: 0, skippedCount: 3 });
    // The merchant compares trimmed, with spaces collapsed and case ignored.
    expect(await importRows(bank, [row("  coffee   SHOP ", "-4.75")])).toMatchObject({ importedCount: 0, skippedCount: 1 });
    expect(await eventsOn(bank)).toBe(3);
  });

  it("keeps two genuine identical rows, skips both on re-import, and imports a third copy once", async () => {
    const bank = await freshAccount();
    const coffee = row("Coffee Shop", "-4.75");
    expect(await importRows(bank, [coffee, coffee])).toMatchObject({ importedCount: 2, skippedCount: 0 });
    expect(await importRows(bank, [coffee, coffee])).toMatchObject({ importedCount: 0, skippedCount: 2 });
    expect((await checkRows(bank, [coffee, coffee, coffee])).results.map((r: any) => [r.isDuplicate, r.isPossibleDuplicate]))
      .toEqual([[true, false], [true, false], [false, false]]);
    expect(await importRows(bank, [coffee, coffee, coffee])).toMatchObject({ importedCount: 1, skippedCount: 2 });
    expect(await eventsOn(bank)).toBe(3);
  });

  it("flags same date and amount with another vendor as a possible duplicate, and imports it", async () => {
    const bank = await freshAccount();
    await importRows(bank, [row("Coffee Shop", "-4.75")]);
    const { rows: [existing] } = await h.owner.query("select id from app_public.ledger_events where payment_account_id = $1", [bank]);
    const check = await checkRows(bank, [row("Bakery", "-4.75"), row("Coffee Shop", "-4.75"), row("Bakery", "-4.75", "2025-09-04")]);
    expect(check).toEqual({
      success: true, error: null, results: [
        { rowIndex: 0, isDuplicate: false, isPossibleDuplicate: true, matchingEventId: existing.id },
        { rowIndex: 1, isDuplicate: true, isPossibleDuplicate: false, matchingEventId: existing.id },
        { rowIndex: 2, isDuplicate: false, isPossibleDuplicate: false, matchingEventId: null },
      ],
    });
    expect(await eventsOn(bank)).toBe(1); // the check wrote nothing
    expect(await importRows(bank, [row("Bakery", "-4.75")])).toMatchObject({ importedCount: 1, skippedCount: 0 });
  });

  it("does not take money in for a duplicate of money out", async () => {
    const bank = await freshAccount();
    await importRows(bank, [row("Transfer", "-50.00")]);
    expect(await importRows(bank, [row("Transfer", "50.00")])).toMatchObject({ importedCount: 1, skippedCount: 0 });
  });

  it("lets a rejected event still block its duplicate", async () => {
    const bank = await freshAccount();
    await importRows(bank, [row("Gym", "-60.00")]);
    const { rows: [e] } = await h.owner.query("select id from app_public.ledger_events where payment_account_id = $1", [bank]);
    expect((await call(h, t, REJECT, { eventId: e.id }, "rejectLedgerEvent")).success).toBe(true);
    expect(await importRows(bank, [row("Gym", "-60.00")])).toMatchObject({ importedCount: 0, skippedCount: 1 });
  });

  it("compares with events that have no payment account, and not with other accounts' events", async () => {
    const bank = await freshAccount();
    await createEvent(h, t, { merchantName: "Printer Ink", amount: "33.10", transactionDate: "2025-09-06" });
    await createEvent(h, t, { merchantName: "Toner", amount: "33.20", transactionDate: "2025-09-06", paymentAccountId: acc["Chequing"] });
    expect(await importRows(bank, [row("Printer Ink", "-33.10", "2025-09-06"), row("Toner", "-33.20", "2025-09-06")]))
      .toMatchObject({ importedCount: 1, skippedCount: 1 });
  });

  it("matches equal references whatever else differs, and never two different references", async () => {
    const bank = await freshAccount();
    await importRows(bank, [row("POS 123", "-10.00", "2025-09-03", { reference: "A1" }), row("Lunch", "-12.00", "2025-09-03", { reference: "B1" })]);
    expect(await checkRows(bank, [
      row("Renamed by the bank", "-10.00", "2025-09-04", { reference: "A1" }),
      row("Lunch", "-12.00", "2025-09-03", { reference: "B2" }),
      row("Lunch", "-12.00", "2025-09-03"),
    ])).toMatchObject({ results: [
      { rowIndex: 0, isDuplicate: true }, { rowIndex: 1, isDuplicate: false, isPossibleDuplicate: false, matchingEventId: null },
      { rowIndex: 2, isDuplicate: true },
    ] });
  });

  it("skips a deposit that a transfer already booked into this account 0 to 5 days earlier", async () => {
    const bank = await freshAccount();
    // A processor payout: a transfer out of the clearing account into this bank account.
    for (const [amount, date] of [["1056.54", "2025-09-15"], ["684.22", "2025-09-25"]]) {
      await bookEvent(h, t, { merchantName: "PROCESSOR PAYOUT", amount, transactionDate: date, eventType: "transfer" },
        { categoryId: bank, paymentId: acc["Processor Clearing"] });
    }
    const r = await checkRows(bank, [
      row("PROCESSOR PAYOUT", "1056.54", "2025-09-16"),
      row("PROCESSOR PAYOUT", "1056.54", "2025-09-17"), // the one payout is taken by the row above
      row("PROCESSOR PAYOUT", "684.22", "2025-10-01"), // six days later: another transaction
      row("PROCESSOR PAYOUT", "-1056.54", "2025-09-16"), // money out: not this transfer
    ]);
    expect(r.results.map((x: any) => x.isDuplicate)).toEqual([true, false, false, false]);
    expect(await importRows(bank, [row("PROCESSOR PAYOUT", "1056.54", "2025-09-16")])).toMatchObject({ importedCount: 0, skippedCount: 1 });
  });

  it("fills the category from the best category rule and counts its match", async () => {
    const bank = await freshAccount();
    const { rows: [short] } = await h.owner.query(
      "insert into app_public.category_rules (organization_id, vendor_pattern, account_id) values ($1, '%CAFE%', $2) returning id",
      [t.organizationId, acc["Office Supplies"]]);
    const { rows: [long] } = await h.owner.query(
      "insert into app_public.category_rules (organization_id, vendor_pattern, account_id) values ($1, '%CAFE NOIR%', $2) returning id",
      [t.organizationId, acc["Meals"]]);
    await importRows(bank, [row("Cafe Noir Montreal", "-8.00"), row("Cafe Noir Laval", "-9.00"), row("Cafe Bleu", "-7.00"), row("Cafe payment", "7.00")]);
    const { rows } = await h.owner.query(
      "select merchant_name, category_id from app_public.ledger_events where payment_account_id = $1 order by merchant_name", [bank]);
    expect(rows).toEqual([
      { merchant_name: "Cafe Bleu", category_id: acc["Office Supplies"] },
      { merchant_name: "Cafe Noir Laval", category_id: acc["Meals"] },
      { merchant_name: "Cafe Noir Montreal", category_id: acc["Meals"] },
      { merchant_name: "Cafe payment", category_id: null }, // income: an expense account does not fit
    ]);
    const { rows: counts } = await h.owner.query("select id, match_count from app_public.category_rules where id in ($1, $2)", [short.id, long.id]);
    expect(Object.fromEntries(counts.map((c) => [c.id, c.match_count]))).toEqual({ [short.id]: 1, [long.id]: 2 });
  });

  it.each([
    [{ transactionDate: "2025-02-30" }, "Row 1: transactionDate must be a date in YYYY-MM-DD format."],
    [{ amount: "0.00" }, "Row 1: amount must be a non-zero decimal string with at most 2 decimals (negative for money out)."],
    [{ amount: "-1.234" }, "Row 1: amount must be a non-zero decimal string with at most 2 decimals (negative for money out)."],
    [{ amount: "-1000000000.00" }, "Row 1: amount must be at most 999,999,999.99."],
    [{ description: "   " }, "Row 1: description is required."],
    [{ eventType: "gift" }, "Row 1: eventType must be one of: expense, income, transfer."],
  ])("refuses a bad row (%o) and writes nothing", async (bad, message) => {
    const bank = await freshAccount();
    const r = await importRows(bank, [row("Good", "-1.00"), { ...row("Bad", "-2.00"), ...bad }, row("Good too", "-3.00")]);
    expect(r).toEqual({ success: false, error: message, importedCount: null, skippedCount: null, batchId: null });
    expect(await eventsOn(bank)).toBe(0);
    expect((await checkRows(bank, [{ ...row("Bad", "-2.00"), ...bad }])).error).toBe(message.replace("Row 1", "Row 0"));
  });

  it("refuses more than 5,000 rows, another organization's account, and another currency", async () => {
    const bank = await freshAccount();
    const many = Array.from({ length: 5001 }, (_, i) => row(`Row ${i}`, "-1.00"));
    expect(await importRows(bank, many)).toMatchObject({ success: false, error: "At most 5,000 rows per call." });
    expect(await importRows(acc["Chequing"], [row("X", "-1.00")], other)).toMatchObject({ success: false, error: "Payment account not found." });
    expect(await importRows(acc["Sales Revenue"], [row("X", "-1.00")])).toMatchObject({
      success: false, error: "Payment account must be a bank, credit card or clearing account." });
    expect(await call(h, t, IMPORT, { paymentAccountId: bank, rows: [row("X", "-1.00")], currency: "USD" }, "importBankStatement"))
      .toMatchObject({ success: false, error: "currency must be the organization's currency (CAD)." });
    expect(await eventsOn(bank)).toBe(0);
  });

  it("admits a 5,000-row statement with long descriptions (a larger body than other operations may send)", async () => {
    const bank = await freshAccount();
    const long = "x".repeat(480);
    const statement = Array.from({ length: 5000 }, (_, i) => row(`${long} ${i}`, "-1.00", "2025-09-01", { memo: "m".repeat(100) }));
    const res = await h.gql(IMPORT, { org: t.organizationId, paymentAccountId: bank, rows: statement }, t.apiKey);
    expect(JSON.stringify({ rows: statement }).length).toBeGreaterThan(2_500_000);
    expect(res.body.data.importBankStatement).toMatchObject({ success: true, importedCount: 5000, skippedCount: 0 });
    // Any other operation keeps the ordinary limit.
    const big = await h.gql(`mutation($org: UUID!, $e: UUID!, $memo: String) { updateLedgerEvent(organizationId: $org, eventId: $e, memo: $memo) { success } }`,
      { org: t.organizationId, e: "00000000-0000-0000-0000-000000000000", memo: "m".repeat(1_100_000) }, t.apiKey);
    expect(big.status).toBe(413);
    expect(big.body.errors[0].message).toBe("Request body is too large.");
  });

  it("keeps the larger body to one bulk field of an authenticated caller", async () => {
    const bank = await freshAccount();
    const rows = Array.from({ length: 2500 }, (_, i) => row(`${"y".repeat(400)} ${i}`, "-1.00"));
    const doc = `mutation($org: UUID!, $p: UUID!, $rows: [BankStatementRowInput!]!) {
      a: checkBankStatementDups(organizationId: $org, paymentAccountId: $p, rows: $rows) { success }
      b: checkBankStatementDups(organizationId: $org, paymentAccountId: $p, rows: $rows) { success } }`;
    const twice = await h.gql(doc, { org: t.organizationId, p: bank, rows }, t.apiKey);
    expect(twice.status).toBe(413); // aliases must not multiply the rows of a call
    const anonymous = await h.gql(CHECK, { org: t.organizationId, paymentAccountId: bank, rows });
    expect(anonymous.status).toBe(413);
  });

  it("compares merchants with tabs and no-break spaces collapsed, and refuses a space after the sign", async () => {
    const bank = await freshAccount();
    await importRows(bank, [row("Cafe Bar", "-3.00")]);
    expect(await importRows(bank, [row("\tcafe\u00a0 BAR ", "-3.00")])).toMatchObject({ importedCount: 0, skippedCount: 1 });
    expect(await importRows(bank, [row("X", "- 5.00")])).toMatchObject({
      success: false, error: "Row 0: amount must be a non-zero decimal string with at most 2 decimals (negative for money out)." });
  });

  it("reads no other organization's events, whatever the arguments of its helper functions", async () => {
    await createEvent(h, other, { merchantName: "Secret", amount: "77.77", transactionDate: "2025-09-09" });
    const c = await h.owner.connect();
    try {
      await c.query("begin");
      await c.query("select set_config('role', 'accounting_visitor', true), set_config('app.organization_id', $1, true)", [t.organizationId]);
      const { rows } = await c.query("select * from app_private.statement_candidates($1, null, array['2025-09-09'::date], array[77.77])", [other.organizationId]);
      expect(rows).toEqual([]);
      await expect(c.query("select * from app_private.bank_statement_matches($1, null, '[]')", [other.organizationId])).rejects.toThrow("Organization Not Found.");
    } finally {
      await c.query("rollback");
      c.release();
    }
  });

  it("gives two concurrent imports of one 1,000-row statement exactly 1,000 events", async () => {
    const bank = await freshAccount();
    const statement = Array.from({ length: 1000 }, (_, i) =>
      row(`Vendor ${i % 37}`, `-${(i % 50) + 1}.00`, `2025-09-${String((i % 28) + 1).padStart(2, "0")}`));
    const [a, b] = await Promise.all([importRows(bank, statement), importRows(bank, statement)]);
    expect([a.importedCount + b.importedCount, a.skippedCount + b.skippedCount]).toEqual([1000, 1000]);
    expect(await eventsOn(bank)).toBe(1000);
  });
});

describe("duplicate counting (property)", () => {
  it("leaves one event per distinct (row, occurrence) over random statements and re-imports", async () => {
    const vendors = ["Coffee", "Gas", "Books"];
    const rowArb = fc.record({
      v: fc.constantFrom(...vendors), a: fc.constantFrom("-4.75", "-10.00", "25.00"), d: fc.constantFrom("2025-09-01", "2025-09-02"),
    });
    await fc.assert(fc.asyncProperty(fc.array(fc.array(rowArb, { maxLength: 8 }), { minLength: 1, maxLength: 5 }), async (statements) => {
      const bank = await freshAccount();
      // Expected: for each distinct row, the most copies any one statement holds.
      const most = new Map<string, number>();
      for (const s of statements) {
        const here = new Map<string, number>();
        for (const r of s) { const k = `${r.v}|${r.a}|${r.d}`; here.set(k, (here.get(k) ?? 0) + 1); }
        for (const [k, n] of here) most.set(k, Math.max(most.get(k) ?? 0, n));
      }
      for (const s of statements) {
        const r = await importRows(bank, s.map((x) => row(x.v, x.a, x.d)));
        expect(r.success).toBe(true);
      }
      expect(await eventsOn(bank)).toBe([...most.values()].reduce((x, y) => x + y, 0));
    }), { numRuns: 25, seed: 20261123 });
  });
});

describe("the shared import functions", () => {
  it("keep an API caller in its own organization, while the operator (no caller identity) names any", async () => {
    const c = await h.owner.connect();
    try {
      await c.query("begin");
      await c.query("select set_config('app.api_key_id', $1, true), set_config('app.organization_id', $2, true)", [t.apiKeyId, t.organizationId]);
      await expect(c.query("select app_private.import_bank_statement($1, $2, null, '[]')", [other.organizationId, acc["Chequing"]]))
        .rejects.toThrow("Organization Not Found.");
      await c.query("rollback");
      await c.query("begin");
      const { rows: [{ r }] } = await c.query("select app_private.check_bank_statement_dups($1, $2, '[]') r",
        [other.organizationId, (await accountsOf(h, other))["Chequing"]]);
      expect(r).toEqual([]);
    } finally {
      await c.query("rollback");
      c.release();
    }
  });
});
