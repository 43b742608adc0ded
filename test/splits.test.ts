import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTenant, dataOf, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { accountsOf, addAccount, call, CONFIRM, createEvent, eventRow, tenantWithAccounts, UPDATE, type Accounts } from "./ledger-fixtures.js";

let h: Harness;
let t: Tenant;
let acc: Accounts;
beforeAll(async () => {
  h = await startHarness();
  ({ t, acc } = await tenantWithAccounts(h, { "Office Supplies": ["expense", "expense"], "Meals": ["expense", "expense"],
    "Equipment": ["fixed_asset", "asset"], "Service Revenue": ["income", "revenue"] }));
  acc["PST Payable"] = await taxAccount(t, "PST Payable", "PST");
});
afterAll(() => h?.close());

/** A tax account marked for one tax by its subType (GST_HST, QST or PST). */
async function taxAccount(tenant: Tenant, name: string, subType: string) {
  const { rows: [a] } = await h.owner.query(`insert into app_public.accounts (organization_id, name, account_type, classification, sub_type)
    values ($1, $2, 'tax_payable', 'liability', $3) returning id`, [tenant.organizationId, name, subType]);
  return a.id as string;
}

const SPLIT = `mutation($org: UUID!, $eventId: UUID!, $splits: [LedgerEventSplitInput!], $categoryId: UUID, $paymentId: UUID, $taxCode: String) {
  updateStagedEntry(organizationId: $org, eventId: $eventId, splits: $splits, categoryId: $categoryId, paymentId: $paymentId, taxCode: $taxCode) {
    success error event { id category { id name } taxAmount taxCode taxAccount { id }
      splits { category { id name } amount taxCode taxAmount memo } } } }`;
const SPLITS_OF = `query($org: UUID!, $eventId: UUID!) { getLedgerEvent(organizationId: $org, eventId: $eventId) {
  functionalAmount category { id } taxAmount splits { category { id name } amount taxCode taxAmount memo } } }`;
const RETURN = `query($org: UUID!, $s: Date!, $e: Date!, $type: String!) { salesTaxReturn(organizationId: $org, startDate: $s, endDate: $e, taxType: $type) {
  taxType startDate endDate salesAndRevenue taxCollected adjustments totalTaxCollected inputTaxCredits totalItcs netTax events } }`;
const REVERSE = `mutation($org: UUID!, $eventId: UUID!, $postingDate: String) { reverseLedgerEvent(organizationId: $org, eventId: $eventId, postingDate: $postingDate) { success error } }`;
const REJECT = `mutation($org: UUID!, $eventId: UUID!) { rejectLedgerEvent(organizationId: $org, eventId: $eventId) { success error } }`;

type Split = { categoryId: string; amount: string; taxCode?: string; taxAmount?: string; memo?: string };

/** An event of `amount`, split and (unless told not to) confirmed, for `tenant`. */
async function splitEvent(tenant: Tenant, a: Accounts, amount: string, eventType: string, splits: Split[], opts: { transactionDate?: string; confirm?: boolean } = {}) {
  const eventId = await createEvent(h, tenant, { amount, eventType, transactionDate: opts.transactionDate ?? "2026-02-10" });
  const r = await call(h, tenant, SPLIT, { eventId, splits, paymentId: a["Chequing"] }, "updateStagedEntry");
  expect(r).toMatchObject({ success: true, error: null });
  if (opts.confirm !== false) expect(await call(h, tenant, CONFIRM, { eventId }, "confirmLedgerEvent")).toMatchObject({ success: true });
  return eventId;
}

/** The live lines of an event's entry by account name: [account, debit, credit, tax type, on a sale]. */
async function legsOf(eventId: string) {
  const { rows } = await h.owner.query(`select a.name, l.debit::text, l.credit::text, l.tax_type, l.tax_on_sale
      from app_public.journal_lines l join app_public.journal_entries j on j.id = l.entry_id join app_public.accounts a on a.id = l.account_id
     where j.event_id = $1 and not l.voided order by a.name, l.tax_type`, [eventId]);
  return rows.map((r) => [r.name, r.debit, r.credit, r.tax_type, r.tax_on_sale]);
}

describe("updateStagedEntry with splits", () => {
  it("refuses splits that do not add up to the amount, and writes nothing", async () => {
    const eventId = await createEvent(h, t, { amount: "100.00" });
    const before = await eventRow(h, eventId);
    const history = await h.owner.query("select count(*)::int n from app_public.ledger_event_audit where event_id = $1", [eventId]);
    for (const splits of [
      [{ categoryId: acc["Office Supplies"], amount: "60.00" }, { categoryId: acc["Meals"], amount: "30.00" }],
      [{ categoryId: acc["Office Supplies"], amount: "60.00" }, { categoryId: acc["Meals"], amount: "40.01" }],
    ]) {
      expect(await call(h, t, SPLIT, { eventId, splits, paymentId: acc["Chequing"] }, "updateStagedEntry"))
        .toEqual({ success: false, error: "Splits must add up to the amount.", event: null });
    }
    expect(await eventRow(h, eventId)).toEqual(before);
    expect((await h.owner.query("select count(*)::int n from app_public.ledger_event_audit where event_id = $1", [eventId])).rows).toEqual(history.rows);
  });

  it("refuses bad lines with a clear error", async () => {
    const eventId = await createEvent(h, t, { amount: "100.00" });
    const cases: [unknown, string][] = [
      [[], "Splits must be a list of at least one line."],
      [[{ categoryId: acc["Office Supplies"], amount: "100.00", taxCode: "NOPE" }], "Unknown tax code."],
      [[{ categoryId: acc["Office Supplies"], amount: "100.00", taxAmount: "100.00" }], "A split's tax amount must be less than its amount."],
      [[{ categoryId: acc["Office Supplies"], amount: "-5.00" }, { categoryId: acc["Meals"], amount: "105.00" }], "A split's amount must be a positive decimal string."],
      [[{ categoryId: acc["Sales Revenue"], amount: "100.00" }], "Category must be an expense or asset account for an expense event."],
      [[{ categoryId: acc["Chequing"], amount: "100.00" }], "Category and payment account must differ."],
    ];
    for (const [splits, error] of cases) {
      expect(await call(h, t, SPLIT, { eventId, splits, paymentId: acc["Chequing"] }, "updateStagedEntry")).toMatchObject({ success: false, error });
    }
    expect(await call(h, t, SPLIT, { eventId, splits: [{ categoryId: acc["Meals"], amount: "100.00" }], categoryId: acc["Meals"] }, "updateStagedEntry"))
      .toMatchObject({ success: false, error: "Give splits, or categoryId with taxAmount and taxCode, not both: each split has its own tax." });
  });

  it("a 3-way purchase in BC: GST to the tax account, PST in the expense; the event shows the largest line and every split", async () => {
    const eventId = await splitEvent(t, acc, "199.50", "expense", [
      { categoryId: acc["Office Supplies"], amount: "112.00", taxCode: "GST_PST_BC", memo: "paper, toner" },
      { categoryId: acc["Meals"], amount: "52.50", taxCode: "GST" },
      { categoryId: acc["Equipment"], amount: "35.00" },
    ]);
    expect(await legsOf(eventId)).toEqual([
      ["Chequing", "0.00", "199.50", null, null],
      ["Equipment", "35.00", "0.00", null, null],
      ["GST/HST Payable", "7.50", "0.00", "GST_HST", false],
      ["Meals", "50.00", "0.00", null, null],
      ["Office Supplies", "107.00", "0.00", null, null],
    ]);
    expect(dataOf(await h.gql(SPLITS_OF, { org: t.organizationId, eventId }, t.apiKey), "getLedgerEvent")).toEqual({
      functionalAmount: "199.50", category: { id: acc["Office Supplies"] }, taxAmount: "7.50",
      splits: [
        { category: { id: acc["Office Supplies"], name: "Office Supplies" }, amount: "112.00", taxCode: "GST_PST_BC", taxAmount: "5.00", memo: "paper, toner" },
        { category: { id: acc["Meals"], name: "Meals" }, amount: "52.50", taxCode: "GST", taxAmount: "2.50", memo: "" },
        { category: { id: acc["Equipment"], name: "Equipment" }, amount: "35.00", taxCode: null, taxAmount: "0.00", memo: "" },
      ],
    });
  });

  it("a 3-way sale in BC: one line per category (two splits of one category make one line), GST and PST each to its account", async () => {
    const eventId = await splitEvent(t, acc, "372.00", "income", [
      { categoryId: acc["Sales Revenue"], amount: "112.00", taxCode: "GST_PST_BC" },
      { categoryId: acc["Service Revenue"], amount: "210.00", taxCode: "GST" },
      { categoryId: acc["Sales Revenue"], amount: "50.00", taxCode: "ZERO" },
    ]);
    expect(await legsOf(eventId)).toEqual([
      ["Chequing", "372.00", "0.00", null, null],
      ["GST/HST Payable", "0.00", "15.00", "GST_HST", true],
      ["PST Payable", "0.00", "7.00", "PST", true],
      ["Sales Revenue", "0.00", "150.00", null, null],
      ["Service Revenue", "0.00", "200.00", null, null],
    ]);
  });

  it("a typed tax on a combined code is shared between its taxes in proportion, the last taking the rounding cent", async () => {
    const { rows } = await h.owner.query("select tax_type, portion::text from app_private.tax_legs(114.98, 14.99, 'GST_QST', false, '2026-02-10')");
    expect(rows).toEqual([{ tax_type: "GST_HST", portion: "5.00" }, { tax_type: "QST", portion: "9.99" }]);
  });

  it("a typed tax only where the code puts tax in a tax account: never PST paid, nor an exempt sale's", async () => {
    const purchase = await createEvent(h, t, { amount: "107.00" });
    const pst = "Tax code PST_BC puts no tax in a tax account on a purchase: leave taxAmount out, or give it without the code.";
    expect(await call(h, t, SPLIT, { eventId: purchase, splits: [{ categoryId: acc["Office Supplies"], amount: "107.00", taxCode: "PST_BC", taxAmount: "7.00" }] },
      "updateStagedEntry")).toMatchObject({ success: false, error: pst });
    expect(await call(h, t, `mutation($org: UUID!, $e: UUID!, $c: UUID!) { updateStagedEntry(organizationId: $org, eventId: $e, categoryId: $c, taxCode: "PST_BC", taxAmount: "7.00") { success error } }`,
      { e: purchase, c: acc["Office Supplies"] }, "updateStagedEntry")).toEqual({ success: false, error: pst });
    const sale = await createEvent(h, t, { amount: "100.00", eventType: "income" });
    expect(await call(h, t, SPLIT, { eventId: sale, splits: [{ categoryId: acc["Sales Revenue"], amount: "100.00", taxCode: "EXEMPT", taxAmount: "5.00" }] },
      "updateStagedEntry")).toMatchObject({ success: false, error: "Tax code EXEMPT puts no tax in a tax account on a sale: leave taxAmount out, or give it without the code." });
    // Typed under GST_PST_BC on a purchase, it is the GST: all of it an input tax credit.
    const gst = await splitEvent(t, acc, "112.00", "expense", [{ categoryId: acc["Office Supplies"], amount: "112.00", taxCode: "GST_PST_BC", taxAmount: "5.01" }]);
    expect(await legsOf(gst)).toEqual([
      ["Chequing", "0.00", "112.00", null, null],
      ["GST/HST Payable", "5.01", "0.00", "GST_HST", false],
      ["Office Supplies", "106.99", "0.00", null, null],
    ]);
  });

  it("a loan payment: principal to the loan (a liability), interest to an expense", async () => {
    const loan = await addAccount(h, t, "Bank Loan", "loan", "liability");
    const interest = await addAccount(h, t, "Interest Expense", "expense", "expense");
    const eventId = await splitEvent(t, acc, "1250.00", "expense", [{ categoryId: loan, amount: "1100.00" }, { categoryId: interest, amount: "150.00" }]);
    expect(await legsOf(eventId)).toEqual([
      ["Bank Loan", "1100.00", "0.00", null, null],
      ["Chequing", "0.00", "1250.00", null, null],
      ["Interest Expense", "150.00", "0.00", null, null],
    ]);
  });

  it("finds each tax's account in the event's own organization, even when the worker posts as the owner", async () => {
    const other = await createTenant(h);
    await taxAccount(other, "QST Payable (other)", "QST");
    const mine = await createTenant(h);
    const a = await accountsOf(h, mine);
    const eventId = await createEvent(h, mine, { amount: "114.98", eventType: "income", transactionDate: "2026-02-10" });
    expect(await call(h, mine, SPLIT, { eventId, splits: [{ categoryId: a["Sales Revenue"], amount: "114.98", taxCode: "GST_QST" }], paymentId: a["Chequing"] },
      "updateStagedEntry")).toMatchObject({ success: true });
    // As the owner (row-level security does not apply to it), as an import's posting runs.
    await h.owner.query("select app_private.post_journal_entries(array[$1::uuid])", [eventId]);
    // This organization has no QST account: its QST goes with the GST, not to the other's.
    expect(await legsOf(eventId)).toEqual([
      ["Chequing", "114.98", "0.00", null, null],
      ["GST/HST Payable", "0.00", "5.00", "GST_HST", true],
      ["GST/HST Payable", "0.00", "9.98", "QST", true],
      ["Sales Revenue", "0.00", "100.00", null, null],
    ]);
  });

  it("keeps the splits through edits: the amount cannot change under them, a computed tax follows the date, a categoryId makes one line again", async () => {
    const eventId = await splitEvent(t, acc, "230.00", "expense", [
      { categoryId: acc["Office Supplies"], amount: "115.00", taxCode: "HST_NS" },
      { categoryId: acc["Meals"], amount: "115.00", taxCode: "HST_NS", taxAmount: "15.00" },
    ], { transactionDate: "2025-04-15", confirm: false });
    const splitsNow = async () => dataOf(await h.gql(SPLITS_OF, { org: t.organizationId, eventId }, t.apiKey), "getLedgerEvent");
    expect((await splitsNow()).splits.map((s: any) => s.taxAmount)).toEqual(["14.12", "15.00"]);
    expect(await call(h, t, UPDATE, { eventId, amount: "231.00" }, "updateLedgerEvent")).toMatchObject({ success: false, error: "Splits must add up to the amount." });
    expect(await call(h, t, UPDATE, { eventId, transactionDate: "2025-03-15" }, "updateLedgerEvent")).toMatchObject({ success: true });
    expect(await splitsNow()).toMatchObject({ taxAmount: "30.00", splits: [{ taxAmount: "15.00" }, { taxAmount: "15.00" }] });
    const history = dataOf(await h.gql(`query($org: UUID!, $eventId: UUID!) { ledgerEventHistory(organizationId: $org, eventId: $eventId) { action changes { field } } }`,
      { org: t.organizationId, eventId }, t.apiKey), "ledgerEventHistory");
    expect(history.at(-1)).toMatchObject({ action: "update", changes: expect.arrayContaining([{ field: "splits" }]) });
    expect(await call(h, t, SPLIT, { eventId, categoryId: acc["Meals"] }, "updateStagedEntry"))
      .toMatchObject({ success: true, event: { category: { id: acc["Meals"] }, taxAmount: null, taxCode: null, splits: [] } });
    expect((await eventRow(h, eventId)).splits).toBeNull();
  });

  it("100 random tax-included splits: the journal's lines always add up to the event's amount exactly", async () => {
    let seed = 28;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const codes = [undefined, "HST_ON", "HST_NS", "GST_QST", "GST_PST_BC", "GST_RST_MB", "GST", "QST", "PST_BC", "ZERO"];
    await taxAccount(t, "QST Payable", "QST");
    for (let i = 0; i < 100; i++) {
      const sale = random() < 0.4;
      const n = 2 + Math.floor(random() * 4);
      const cents = Array.from({ length: n }, () => 1 + Math.floor(random() * 50_000));
      const splits = cents.map((c) => ({
        categoryId: sale ? (random() < 0.5 ? acc["Sales Revenue"] : acc["Service Revenue"]) : (random() < 0.5 ? acc["Office Supplies"] : acc["Meals"]),
        amount: (c / 100).toFixed(2), taxCode: codes[Math.floor(random() * codes.length)],
      }));
      const total = (cents.reduce((a, b) => a + b, 0) / 100).toFixed(2);
      const eventId = await splitEvent(t, acc, total, sale ? "income" : "expense", splits, { transactionDate: `2026-0${1 + (i % 3)}-15` });
      const { rows: [sums] } = await h.owner.query(`select sum(l.debit)::text d, sum(l.credit)::text c,
          sum(case when l.account_id = e.payment_account_id then l.debit + l.credit end)::text paid,
          sum(case when l.account_id <> e.payment_account_id then l.debit + l.credit end)::text lines
        from app_public.journal_lines l join app_public.journal_entries j on j.id = l.entry_id join app_public.ledger_events e on e.id = j.event_id
       where j.event_id = $1`, [eventId]);
      expect(sums, `event ${i}: ${JSON.stringify(splits)}`).toEqual({ d: total, c: total, paid: total, lines: total });
    }
  });
});

describe("salesTaxReturn", () => {
  const Q1 = { s: "2026-01-01", e: "2026-03-31" };
  const returnOf = async (tenant: Tenant, type: string, period = Q1) =>
    dataOf(await h.gql(RETURN, { org: tenant.organizationId, ...period, type }, tenant.apiKey), "salesTaxReturn");
  /** A tenant with the accounts a quarter needs, and a booked event helper. */
  async function province() {
    const tenant = await createTenant(h);
    const a = await accountsOf(h, tenant);
    a["Supplies"] = await addAccount(h, tenant, "Supplies", "expense", "expense");
    const book = async (amount: string, eventType: string, taxCode: string | undefined, transactionDate = "2026-02-10") =>
      splitEvent(tenant, a, amount, eventType, [{ categoryId: eventType === "income" ? a["Sales Revenue"] : a["Supplies"], amount, taxCode }], { transactionDate });
    return { tenant, a, book };
  }

  it("Ontario: HST collected on sales, input tax credits on purchases, only the quarter's", async () => {
    const { tenant, a, book } = await province();
    await book("1130.00", "income", "HST_ON", "2026-01-05");
    await book("565.00", "income", "HST_ON", "2026-03-31");
    await book("226.00", "expense", "HST_ON");
    await book("50.00", "expense", undefined);
    await book("113.00", "income", "HST_ON", "2026-04-01"); // the next quarter
    await book("113.00", "income", "HST_ON", "2025-12-31"); // the last one
    await splitEvent(tenant, a, "339.00", "expense", [{ categoryId: a["Supplies"], amount: "226.00", taxCode: "HST_ON" }, { categoryId: a["Supplies"], amount: "113.00" }]);
    // One line, classified the single-category way, counts alike.
    const one = await createEvent(h, tenant, { amount: "56.50", transactionDate: "2026-03-01" });
    await call(h, tenant, `mutation($org: UUID!, $eventId: UUID!, $c: UUID, $p: UUID) { updateStagedEntry(organizationId: $org, eventId: $eventId, categoryId: $c, paymentId: $p, taxCode: "HST_ON") { success } }`,
      { eventId: one, c: a["Supplies"], p: a["Chequing"] }, "updateStagedEntry");
    await call(h, tenant, CONFIRM, { eventId: one }, "confirmLedgerEvent");
    const expected = { taxType: "GST_HST", startDate: "2026-01-01", endDate: "2026-03-31", salesAndRevenue: "1500.00", taxCollected: "195.00",
      adjustments: "0.00", totalTaxCollected: "195.00", inputTaxCredits: "58.50", totalItcs: "58.50", netTax: "136.50", events: 5 };
    expect(await returnOf(tenant, "GST_HST")).toEqual(expected);

    // A reversed sale and a rejected purchase drop out; the figures are as before.
    const reversed = await book("113.00", "income", "HST_ON", "2026-02-01");
    const rejected = await book("226.00", "expense", "HST_ON", "2026-02-01");
    expect(await returnOf(tenant, "GST_HST")).toMatchObject({ taxCollected: "208.00", inputTaxCredits: "84.50", events: 7 });
    expect(await call(h, tenant, REVERSE, { eventId: reversed, postingDate: "2026-03-15" }, "reverseLedgerEvent")).toMatchObject({ success: true });
    expect(await call(h, tenant, REJECT, { eventId: rejected }, "rejectLedgerEvent")).toMatchObject({ success: true });
    expect(await returnOf(tenant, "GST_HST")).toEqual(expected);
    // Reversed in the next quarter, it stays in this one (a filed period does not change) and comes off the next.
    const late = await book("113.00", "income", "HST_ON", "2026-02-02");
    await call(h, tenant, REVERSE, { eventId: late, postingDate: "2026-04-02" }, "reverseLedgerEvent");
    expect(await returnOf(tenant, "GST_HST")).toMatchObject({ taxCollected: "208.00", events: 6 });
    // The next quarter: its sale of 2026-04-01 (+13.00 HST, +1 event) less the reversal (-13.00, -1).
    expect(await returnOf(tenant, "GST_HST", { s: "2026-04-01", e: "2026-06-30" })).toMatchObject({ salesAndRevenue: "0.00", taxCollected: "0.00", events: 0 });
    expect(await returnOf(tenant, "GST_HST", { s: "2026-04-02", e: "2026-06-30" })).toMatchObject({ salesAndRevenue: "-100.00", taxCollected: "-13.00", events: -1 });
  });

  it("Quebec: GST and QST each in its own return, QST to its own account", async () => {
    const { tenant, a, book } = await province();
    const qst = await taxAccount(tenant, "QST Payable", "QST");
    const sale = await book("1149.75", "income", "GST_QST");
    await book("229.95", "expense", "GST_QST");
    await book("114.98", "expense", "GST_QST");
    expect(await legsOf(sale)).toEqual([
      ["Chequing", "1149.75", "0.00", null, null],
      ["GST/HST Payable", "0.00", "50.00", "GST_HST", true],
      ["QST Payable", "0.00", "99.75", "QST", true],
      ["Sales Revenue", "0.00", "1000.00", null, null],
    ]);
    expect(qst).toBeTruthy();
    expect(await returnOf(tenant, "GST_HST")).toMatchObject({ salesAndRevenue: "1000.00", taxCollected: "50.00", inputTaxCredits: "15.00", netTax: "35.00", events: 3 });
    expect(await returnOf(tenant, "QST")).toMatchObject({ salesAndRevenue: "1000.00", taxCollected: "99.75", inputTaxCredits: "29.93", netTax: "69.82", events: 3 });
    // The same figures for analysts, month by month.
    const c = await h.owner.connect();
    try {
      await c.query("begin");
      await c.query("select set_config('app.organization_id', $1, true)", [tenant.organizationId]);
      await c.query("set local role reporting_reader");
      const { rows } = await c.query(`select month::text, tax_type, sales_and_revenue::text, tax_collected::text, input_tax_credits::text, net_tax::text, events::int
        from reporting.sales_tax_return_monthly order by tax_type`);
      expect(rows).toEqual([
        { month: "2026-02-01", tax_type: "GST_HST", sales_and_revenue: "1000.00", tax_collected: "50.00", input_tax_credits: "15.00", net_tax: "35.00", events: 3 },
        { month: "2026-02-01", tax_type: "QST", sales_and_revenue: "1000.00", tax_collected: "99.75", input_tax_credits: "29.93", net_tax: "69.82", events: 3 },
      ]);
    } finally {
      await c.query("rollback");
      c.release();
    }
    void a;
  });

  it("British Columbia: GST in the return, PST on purchases in the expense, a refund when ITCs exceed the tax collected", async () => {
    const { tenant, book } = await province();
    await book("1120.00", "income", "GST_PST_BC");
    await book("560.00", "expense", "GST_PST_BC");
    await book("2240.00", "expense", "GST_PST_BC");
    expect(await returnOf(tenant, "GST_HST")).toEqual({ taxType: "GST_HST", startDate: "2026-01-01", endDate: "2026-03-31", salesAndRevenue: "1000.00",
      taxCollected: "50.00", adjustments: "0.00", totalTaxCollected: "50.00", inputTaxCredits: "125.00", totalItcs: "125.00", netTax: "-75.00", events: 3 });
    expect(await returnOf(tenant, "QST")).toMatchObject({ salesAndRevenue: "1000.00", taxCollected: "0.00", inputTaxCredits: "0.00", netTax: "0.00", events: 0 });
  });

  it("refuses a bad tax type or period, and another organization's books", async () => {
    const bad = async (vars: Record<string, unknown>) => (await h.gql(RETURN, { org: t.organizationId, ...Q1, type: "GST_HST", ...vars }, t.apiKey)).body.errors?.[0]?.message;
    expect(await bad({ type: "PST" })).toBe("taxType must be one of: GST_HST, QST.");
    expect(await bad({ s: "2026-04-01" })).toBe("startDate must not be after endDate.");
    const other = await createTenant(h);
    expect(await bad({ org: other.organizationId })).toBe("API Key Not Authorized For This Organization.");
  });
});
