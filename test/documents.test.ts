import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTenant, dataOf, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { accountsOf, call, tenantWithAccounts, type Accounts } from "./ledger-fixtures.js";

let h: Harness;
let t: Tenant;
let acc: Accounts;
let customer: string;
let vendor: string;
beforeAll(async () => {
  h = await startHarness();
  ({ t, acc } = await tenantWithAccounts(h, { "Service Revenue": ["income", "revenue"], "Office Supplies": ["expense", "expense"] }));
  customer = await contact(t, "customer", "Laval Print");
  vendor = await contact(t, "vendor", "Paper Co");
});
afterAll(() => h?.close());

async function contact(tenant: Tenant, contactType: string, displayName: string) {
  const r = await call(h, tenant, `mutation($org: UUID!, $t: String!, $n: String!) { createContact(organizationId: $org, contactType: $t, displayName: $n) { success contact { id } } }`,
    { t: contactType, n: displayName }, "createContact");
  return r.contact.id as string;
}

const DOC = "id kind contact { id displayName } number issueDate dueDate status subtotal taxTotal total amountPaid amountDue journalEntryId voidEntryId lines { description quantity unitPrice amount category { name } taxCode taxAmount }";
const CREATE = (kind: "Invoice" | "Bill") => `mutation($org: UUID!, $c: UUID!, $n: String!, $i: String!, $d: String!, $lines: [DocumentLineInput!]!) {
  create${kind}(organizationId: $org, contactId: $c, number: $n, issueDate: $i, dueDate: $d, lines: $lines) { success error document { ${DOC} } } }`;
const APPROVE_INVOICE = `mutation($org: UUID!, $id: UUID!) { approveInvoice(organizationId: $org, invoiceId: $id) { success error document { ${DOC} } } }`;
const APPROVE_BILL = `mutation($org: UUID!, $id: UUID!) { approveBill(organizationId: $org, billId: $id) { success error document { ${DOC} } } }`;
const VOID_INVOICE = `mutation($org: UUID!, $id: UUID!, $p: String) { voidInvoice(organizationId: $org, invoiceId: $id, postingDate: $p) { success error document { ${DOC} } } }`;
const INVOICES = `query($org: UUID!, $status: [String!], $search: String, $dueBefore: String, $c: UUID) {
  listInvoices(organizationId: $org, status: $status, search: $search, dueBefore: $dueBefore, contactId: $c) { items { number status amountDue } totalCount } }`;
const CONTACTS = `query($org: UUID!) { listContacts(organizationId: $org, sortBy: "balance", sortDir: "desc") { items { displayName balance } } }`;

async function invoice(number: string, lines: Record<string, unknown>[], opts: { issueDate?: string; dueDate?: string; tenant?: Tenant; c?: string } = {}) {
  return call(h, opts.tenant ?? t, CREATE("Invoice"), { c: opts.c ?? customer, n: number, i: opts.issueDate ?? "2026-02-02", d: opts.dueDate ?? "2026-03-04", lines }, "createInvoice");
}

/** An entry's lines: [account, debit, credit, tax type]. */
async function legs(entryId: string) {
  const { rows } = await h.owner.query(`select a.name, l.debit::text, l.credit::text, l.tax_type from app_public.journal_lines l
    join app_public.accounts a on a.id = l.account_id where l.entry_id = $1 order by a.name`, [entryId]);
  return rows.map((r) => [r.name, r.debit, r.credit, r.tax_type]);
}

describe("invoices", () => {
  it("an invoice with two lines and HST: a draft, then approved it posts the exact legs and the customer owes it", async () => {
    const created = await invoice("INV-1001", [
      { description: "Design work", quantity: "10", unitPrice: "85.00", categoryId: acc["Service Revenue"], taxCode: "HST_ON" },
      { description: "Printing", quantity: "3", unitPrice: "33.3333", categoryId: acc["Sales Revenue"], taxCode: "HST_ON" },
    ]);
    expect(created).toMatchObject({ success: true, error: null, document: {
      kind: "invoice", number: "INV-1001", status: "draft", subtotal: "950.00", taxTotal: "123.50", total: "1073.50", amountDue: "0.00", journalEntryId: null,
      lines: [
        { description: "Design work", quantity: "10", unitPrice: "85", amount: "850.00", category: { name: "Service Revenue" }, taxCode: "HST_ON", taxAmount: "110.50" },
        { description: "Printing", quantity: "3", unitPrice: "33.3333", amount: "100.00", category: { name: "Sales Revenue" }, taxCode: "HST_ON", taxAmount: "13.00" },
      ] } });
    // A draft posts nothing and is owed by no one.
    expect((dataOf(await h.gql(CONTACTS, { org: t.organizationId }, t.apiKey), "listContacts")).items).toContainEqual({ displayName: "Laval Print", balance: 0 });

    const approved = await call(h, t, APPROVE_INVOICE, { id: created.document.id }, "approveInvoice");
    expect(approved).toMatchObject({ success: true, document: { status: "open", amountDue: "1073.50", amountPaid: "0.00" } });
    expect(await legs(approved.document.journalEntryId)).toEqual([
      ["Accounts Receivable", "1073.50", "0.00", null],
      ["GST/HST Payable", "0.00", "123.50", "GST_HST"],
      ["Sales Revenue", "0.00", "100.00", null],
      ["Service Revenue", "0.00", "850.00", null],
    ]);
    expect(await call(h, t, APPROVE_INVOICE, { id: created.document.id }, "approveInvoice")).toMatchObject({ success: false, error: "Only a draft can be approved." });
    // The customer's balance is AR's: the trial balance's Accounts Receivable.
    const tb = dataOf(await h.gql(`query($org: UUID!) { trialBalance(organizationId: $org) { rows { accountName debit credit } } }`, { org: t.organizationId }, t.apiKey), "trialBalance");
    expect(tb.rows).toContainEqual({ accountName: "Accounts Receivable", debit: "1073.50", credit: "0.00" });
    expect((dataOf(await h.gql(CONTACTS, { org: t.organizationId }, t.apiKey), "listContacts")).items[0]).toEqual({ displayName: "Laval Print", balance: 1073.5 });
    // Its HST is in the quarter's return (tax collected when invoiced).
    const ret = dataOf(await h.gql(`query($org: UUID!) { salesTaxReturn(organizationId: $org, startDate: "2026-01-01", endDate: "2026-03-31", taxType: "GST_HST") { salesAndRevenue taxCollected events } }`,
      { org: t.organizationId }, t.apiKey), "salesTaxReturn");
    expect(ret).toEqual({ salesAndRevenue: "950.00", taxCollected: "123.50", events: 1 });
  });

  it("refuses a number already taken, whatever its case, and writes nothing", async () => {
    const before = await h.owner.query("select count(*)::int n from app_public.documents where organization_id = $1", [t.organizationId]);
    expect(await invoice("inv-1001", [{ description: "Again", quantity: "1", unitPrice: "10.00", categoryId: acc["Sales Revenue"] }]))
      .toEqual({ success: false, error: "Invoice number already exists.", document: null });
    expect((await h.owner.query("select count(*)::int n from app_public.documents where organization_id = $1", [t.organizationId])).rows).toEqual(before.rows);
    // Another organization has numbers of its own.
    const other = await createTenant(h);
    const a = await accountsOf(h, other);
    const c = await contact(other, "customer", "Someone");
    expect(await invoice("INV-1001", [{ description: "Mine", quantity: "1", unitPrice: "10.00", categoryId: a["Sales Revenue"] }], { tenant: other, c }))
      .toMatchObject({ success: true });
  });

  it("refuses bad input with a clear error", async () => {
    const line = { description: "Work", quantity: "1", unitPrice: "10.00", categoryId: acc["Sales Revenue"] };
    const cases: [Record<string, unknown>, string][] = [
      [{ c: vendor }, "An invoice is to a customer."],
      [{ d: "2026-01-01" }, "dueDate must not be before issueDate."],
      [{ i: "2026-02-30" }, "issueDate must be a date in YYYY-MM-DD format."],
      [{ lines: [] }, "An invoice needs at least one line."],
      [{ lines: [{ ...line, quantity: "0" }] }, "A line's quantity must be a positive decimal string with at most 4 decimals."],
      [{ lines: [{ ...line, unitPrice: "-1" }] }, "A line's unitPrice must be a decimal string of at least 0 with at most 4 decimals."],
      [{ lines: [{ ...line, unitPrice: "0" }] }, "An invoice must total more than 0.00."],
      [{ lines: [{ ...line, categoryId: acc["Office Supplies"] }] }, "Category must be a revenue account for an income event."],
      [{ lines: [{ ...line, taxCode: "NOPE" }] }, "Unknown tax code."],
      [{ n: " " }, "Number is required."],
    ];
    for (const [vars, error] of cases) {
      expect(await call(h, t, CREATE("Invoice"), { c: customer, n: "INV-BAD", i: "2026-02-02", d: "2026-03-04", lines: [line], ...vars }, "createInvoice"), error)
        .toMatchObject({ success: false, error });
    }
  });

  it("void reverses the posting, the customer owes nothing more, and the number stays taken", async () => {
    const created = await invoice("INV-1002", [{ description: "Consulting", quantity: "2", unitPrice: "500.00", categoryId: acc["Service Revenue"], taxCode: "HST_ON" }]);
    const approved = await call(h, t, APPROVE_INVOICE, { id: created.document.id }, "approveInvoice");
    const voided = await call(h, t, VOID_INVOICE, { id: created.document.id, p: "2026-02-20" }, "voidInvoice");
    expect(voided).toMatchObject({ success: true, document: { status: "void", amountDue: "0.00" } });
    expect(await legs(voided.document.voidEntryId)).toEqual([
      ["Accounts Receivable", "0.00", "1130.00", null],
      ["GST/HST Payable", "130.00", "0.00", "GST_HST"],
      ["Service Revenue", "1000.00", "0.00", null],
    ]);
    expect(approved.document.journalEntryId).not.toBe(voided.document.voidEntryId);
    expect(await call(h, t, VOID_INVOICE, { id: created.document.id }, "voidInvoice")).toMatchObject({ success: false, error: "Already void." });
    expect(await invoice("INV-1002", [{ description: "Again", quantity: "1", unitPrice: "1.00", categoryId: acc["Sales Revenue"] }]))
      .toMatchObject({ success: false, error: "Invoice number already exists." });
    expect((dataOf(await h.gql(CONTACTS, { org: t.organizationId }, t.apiKey), "listContacts")).items[0]).toEqual({ displayName: "Laval Print", balance: 1073.5 });
  });

  it("lists by status, contact, due date and search", async () => {
    const list = async (vars: Record<string, unknown>) => dataOf(await h.gql(INVOICES, { org: t.organizationId, ...vars }, t.apiKey), "listInvoices");
    expect(await list({ status: ["open"] })).toEqual({ items: [{ number: "INV-1001", status: "open", amountDue: "1073.50" }], totalCount: 1 });
    expect((await list({ status: ["void"] })).items.map((d: any) => d.number)).toEqual(["INV-1002"]);
    expect((await list({ search: "laval" })).totalCount).toBe(2);
    expect((await list({ search: "1002" })).totalCount).toBe(1);
    expect((await list({ dueBefore: "2026-03-04" })).totalCount).toBe(0);
    expect((await list({ dueBefore: "2026-03-05" })).totalCount).toBe(2);
    expect((await list({ c: vendor })).totalCount).toBe(0);
    expect((await h.gql(INVOICES, { org: t.organizationId, status: ["late"] }, t.apiKey)).body.errors[0].message)
      .toBe("status must be any of: draft, open, partially_paid, paid, void.");
  });

  it("is refused in a locked period, and nothing is posted", async () => {
    const tenant = await createTenant(h);
    const a = await accountsOf(h, tenant);
    const c = await contact(tenant, "customer", "Early Bird");
    const created = await invoice("INV-1", [{ description: "Old work", quantity: "1", unitPrice: "100.00", categoryId: a["Sales Revenue"] }], { tenant, c, issueDate: "2026-01-15", dueDate: "2026-02-14" });
    const locked = await h.gql(`mutation($org: UUID!) { updateOrganizationSettings(organizationId: $org, lockDate: "2026-01-31") { success } }`,
      { org: tenant.organizationId }, tenant.ownerJwt);
    expect(dataOf(locked, "updateOrganizationSettings")).toEqual({ success: true });
    expect(await call(h, tenant, APPROVE_INVOICE, { id: created.document.id }, "approveInvoice"))
      .toEqual({ success: false, error: "The books are locked through 2026-01-31.", document: null });
    const { rows } = await h.owner.query("select status, journal_entry_id from app_public.documents where id = $1", [created.document.id]);
    expect(rows).toEqual([{ status: "draft", journal_entry_id: null }]);
  });
});

describe("bills", () => {
  it("a bill in BC: the expense takes the PST, the GST is an input tax credit, Accounts Payable the total; the vendor is owed it", async () => {
    const created = await call(h, t, CREATE("Bill"), { c: vendor, n: "PC-77", i: "2026-02-05", d: "2026-03-07",
      lines: [{ description: "Paper, 40 boxes", quantity: "40", unitPrice: "5.00", categoryId: acc["Office Supplies"], taxCode: "GST_PST_BC" }] }, "createBill");
    expect(created).toMatchObject({ success: true, document: { kind: "bill", subtotal: "200.00", taxTotal: "24.00", total: "224.00" } });
    const approved = await call(h, t, APPROVE_BILL, { id: created.document.id }, "approveBill");
    expect(await legs(approved.document.journalEntryId)).toEqual([
      ["Accounts Payable", "0.00", "224.00", null],
      ["GST/HST Payable", "10.00", "0.00", "GST_HST"],
      ["Office Supplies", "214.00", "0.00", null],
    ]);
    expect((dataOf(await h.gql(CONTACTS, { org: t.organizationId }, t.apiKey), "listContacts")).items).toContainEqual({ displayName: "Paper Co", balance: 224 });
    // A bill's number is its vendor's: another vendor may use it, this one may not again.
    const other = await contact(t, "vendor", "Ink Ltd");
    const line = [{ description: "Ink", quantity: "1", unitPrice: "10.00", categoryId: acc["Office Supplies"] }];
    expect(await call(h, t, CREATE("Bill"), { c: other, n: "PC-77", i: "2026-02-05", d: "2026-03-07", lines: line }, "createBill")).toMatchObject({ success: true });
    expect(await call(h, t, CREATE("Bill"), { c: vendor, n: "pc-77", i: "2026-02-05", d: "2026-03-07", lines: line }, "createBill"))
      .toMatchObject({ success: false, error: "Bill number already exists for this vendor." });
    expect(await call(h, t, CREATE("Bill"), { c: customer, n: "X", i: "2026-02-05", d: "2026-03-07", lines: line }, "createBill"))
      .toMatchObject({ success: false, error: "A bill is from a vendor." });
  });
});

describe("payments", () => {
  const PAY = `mutation($org: UUID!, $c: UUID!, $p: UUID!, $a: String!, $d: String!, $al: [AllocationInput!]!) {
    recordPayment(organizationId: $org, contactId: $c, paymentAccountId: $p, amount: $a, date: $d, allocations: $al) {
      success error eventId journalEntryId documents { number status amountPaid amountDue } } }`;
  const APPLY = `mutation($org: UUID!, $e: UUID!, $al: [AllocationInput!]!) { applyLedgerEventToDocuments(organizationId: $org, eventId: $e, allocations: $al) {
    success error eventId documents { number status amountDue } } }`;
  const SUGGEST = `query($org: UUID!, $e: UUID!) { documentMatchSuggestions(organizationId: $org, eventId: $e) { reason document { number amountDue } } }`;
  const AGING = `query($org: UUID!, $asOf: Date, $kind: String) { agingReport(organizationId: $org, asOf: $asOf, kind: $kind) { asOf kind
    rows { contact { displayName } current days1to30 days31to60 days61to90 over90 total } totals { current days1to30 days31to60 days61to90 over90 total } } }`;

  /** A tenant with a customer and approved invoices of the given totals (no tax), due on the given days. */
  async function books(invoices: [number: string, total: string, dueDate?: string][]) {
    const tenant = await createTenant(h);
    const a = await accountsOf(h, tenant);
    const c = await contact(tenant, "customer", "Laval Print");
    const ids: Record<string, string> = {};
    for (const [number, total, dueDate] of invoices) {
      const created = await invoice(number, [{ description: "Work", quantity: "1", unitPrice: total, categoryId: a["Sales Revenue"] }],
        { tenant, c, issueDate: "2026-01-05", dueDate: dueDate ?? "2026-02-04" });
      ids[number] = (await call(h, tenant, APPROVE_INVOICE, { id: created.document.id }, "approveInvoice")).document.id;
    }
    const pay = (amount: string, allocations: { documentId: string; amount: string }[], date = "2026-02-01") =>
      call(h, tenant, PAY, { c, p: a["Chequing"], a: amount, d: date, al: allocations }, "recordPayment");
    const balance = async () => (dataOf(await h.gql(CONTACTS, { org: tenant.organizationId }, tenant.apiKey), "listContacts")).items[0].balance;
    return { tenant, a, c, ids, pay, balance };
  }

  it("a partial payment then the rest: open, partially paid, paid with nothing due; each payment posts bank against Accounts Receivable", async () => {
    const { tenant, ids, pay, balance } = await books([["INV-1", "1130.00"]]);
    // An endpoint subscribed to the documents' events (its URL is never called here).
    await h.owner.query(`insert into app_public.webhook_endpoints (organization_id, url, events, secret_sealed)
      values ($1, 'https://hooks.example.com/in', '{invoice.approved,invoice.paid}', 'v1:sealed')`, [tenant.organizationId]);
    const first = await pay("500.00", [{ documentId: ids["INV-1"], amount: "500.00" }]);
    expect(first).toMatchObject({ success: true, documents: [{ number: "INV-1", status: "partially_paid", amountPaid: "500.00", amountDue: "630.00" }] });
    expect(await legs(first.journalEntryId)).toEqual([["Accounts Receivable", "0.00", "500.00", null], ["Chequing", "500.00", "0.00", null]]);
    expect(await balance()).toBe(630);
    const rest = await pay("630.00", [{ documentId: ids["INV-1"], amount: "630.00" }]);
    expect(rest).toMatchObject({ success: true, documents: [{ status: "paid", amountPaid: "1130.00", amountDue: "0.00" }] });
    expect(await balance()).toBe(0);
    const { rows } = await h.owner.query("select type, object->>'number' as number, object->>'status' as status from app_public.webhook_events where organization_id = $1",
      [tenant.organizationId]);
    expect(rows).toEqual([{ type: "invoice.paid", number: "INV-1", status: "paid" }]);
    // For analysts: the documents with what is due.
    const c = await h.owner.connect();
    try {
      await c.query("begin");
      await c.query("set local role reporting_reader");
      await c.query("select set_config('app.organization_id', $1, true)", [tenant.organizationId]);
      expect((await c.query("select kind, number, status, total::text, amount_due::text from reporting.documents")).rows)
        .toEqual([{ kind: "invoice", number: "INV-1", status: "paid", total: "1130.00", amount_due: "0.00" }]);
    } finally {
      await c.query("rollback");
      c.release();
    }
  });

  it("refuses over-allocation, allocations that do not add up, and a paid invoice, writing nothing", async () => {
    const { tenant, ids, pay } = await books([["INV-1", "100.00"], ["INV-2", "50.00"]]);
    const before = async () => ({
      docs: (await h.owner.query("select id, status, amount_paid from app_public.documents where organization_id = $1 order by id", [tenant.organizationId])).rows,
      events: (await h.owner.query("select count(*)::int n from app_public.ledger_events where organization_id = $1", [tenant.organizationId])).rows,
    });
    const start = await before();
    expect(await pay("150.00", [{ documentId: ids["INV-1"], amount: "150.00" }])).toMatchObject({ success: false, error: "150.00 exceeds the 100.00 due on INV-1." });
    expect(await pay("150.00", [{ documentId: ids["INV-1"], amount: "100.00" }])).toMatchObject({ success: false, error: "Allocations must add up to the amount." });
    expect(await pay("100.00", [{ documentId: ids["INV-1"], amount: "60.00" }, { documentId: ids["INV-1"], amount: "40.00" }]))
      .toMatchObject({ success: false, error: "Each document at most once in allocations." });
    expect(await before()).toEqual(start);
    expect(await pay("100.00", [{ documentId: ids["INV-1"], amount: "100.00" }])).toMatchObject({ success: true });
    expect(await pay("1.00", [{ documentId: ids["INV-1"], amount: "1.00" }])).toMatchObject({ success: false, error: "INV-1 is paid: only an open invoice takes a payment." });
    // A paid invoice cannot be voided.
    expect(await call(h, tenant, VOID_INVOICE, { id: ids["INV-1"] }, "voidInvoice")).toMatchObject({ success: false, error: "A document with payments cannot be voided." });
  });

  it("one payment split across two invoices; rejecting it makes them owed again", async () => {
    const { tenant, ids, pay, balance } = await books([["INV-1", "100.00"], ["INV-2", "50.00"]]);
    const paid = await pay("120.00", [{ documentId: ids["INV-1"], amount: "100.00" }, { documentId: ids["INV-2"], amount: "20.00" }]);
    expect(paid).toMatchObject({ success: true, documents: [
      { number: "INV-1", status: "paid", amountDue: "0.00" }, { number: "INV-2", status: "partially_paid", amountDue: "30.00" }] });
    expect(await balance()).toBe(30);
    expect(await call(h, tenant, `mutation($org: UUID!, $e: UUID!) { rejectLedgerEvent(organizationId: $org, eventId: $e) { success error } }`, { e: paid.eventId }, "rejectLedgerEvent"))
      .toMatchObject({ success: true });
    expect(await balance()).toBe(150);
    const { rows } = await h.owner.query("select number, status, amount_paid::text from app_public.documents where organization_id = $1 order by number", [tenant.organizationId]);
    expect(rows).toEqual([{ number: "INV-1", status: "open", amount_paid: "0.00" }, { number: "INV-2", status: "open", amount_paid: "0.00" }]);
  });

  it("a bank deposit applied to an invoice from documentMatchSuggestions: the customer owes nothing, and balances equal Accounts Receivable", async () => {
    const { tenant, a, c, ids, balance } = await books([["INV-7001", "565.00"], ["INV-7002", "200.00"]]);
    const imported = await call(h, tenant, `mutation($org: UUID!, $p: UUID!) { importBankStatement(organizationId: $org, paymentAccountId: $p, rows: [
      { transactionDate: "2026-02-03", description: "E-TRANSFER LAVAL PRINT INV-7001", amount: "565.00", eventType: "income" },
      { transactionDate: "2026-02-04", description: "DEPOSIT", amount: "200.00", eventType: "income" }]) { success importedCount } }`,
    { p: a["Chequing"] }, "importBankStatement");
    expect(imported).toMatchObject({ success: true, importedCount: 2 });
    const { rows: events } = await h.owner.query("select id, merchant_name from app_public.ledger_events where organization_id = $1 order by transaction_date", [tenant.organizationId]);
    const suggested = dataOf(await h.gql(SUGGEST, { org: tenant.organizationId, e: events[0].id }, tenant.apiKey), "documentMatchSuggestions");
    expect(suggested).toEqual([{ reason: "number", document: { number: "INV-7001", amountDue: "565.00" } }]);
    expect(dataOf(await h.gql(SUGGEST, { org: tenant.organizationId, e: events[1].id }, tenant.apiKey), "documentMatchSuggestions"))
      .toEqual([{ reason: "amount", document: { number: "INV-7002", amountDue: "200.00" } }]);
    const applied = await call(h, tenant, APPLY, { e: events[0].id, al: [{ documentId: ids["INV-7001"], amount: "565.00" }] }, "applyLedgerEventToDocuments");
    expect(applied).toMatchObject({ success: true, documents: [{ number: "INV-7001", status: "paid", amountDue: "0.00" }] });
    const event = dataOf(await h.gql(`query($org: UUID!, $e: UUID!) { getLedgerEvent(organizationId: $org, eventId: $e) { status eventType category { name } contact { id displayName } } }`,
      { org: tenant.organizationId, e: events[0].id }, tenant.apiKey), "getLedgerEvent");
    expect(event).toEqual({ status: "confirmed", eventType: "transfer", category: { name: "Accounts Receivable" }, contact: { id: c, displayName: "Laval Print" } });
    expect(await balance()).toBe(200);
    // The customer's balance is Accounts Receivable's in the trial balance.
    const tb = dataOf(await h.gql(`query($org: UUID!) { trialBalance(organizationId: $org) { rows { accountName debit credit } } }`, { org: tenant.organizationId }, tenant.apiKey), "trialBalance");
    expect(tb.rows).toContainEqual({ accountName: "Accounts Receivable", debit: "200.00", credit: "0.00" });
    // The event is the contact's: listLedgerEvents(contactIds:) finds it.
    const listed = dataOf(await h.gql(`query($org: UUID!, $c: [UUID!]) { listLedgerEvents(organizationId: $org, contactIds: $c) { items { id } totalCount } }`,
      { org: tenant.organizationId, c: [c] }, tenant.apiKey), "listLedgerEvents");
    expect(listed).toEqual({ items: [{ id: events[0].id }], totalCount: 1 });
    expect(await call(h, tenant, APPLY, { e: events[0].id, al: [{ documentId: ids["INV-7002"], amount: "565.00" }] }, "applyLedgerEventToDocuments"))
      .toMatchObject({ success: false, error: "Only an event in needs_review can pay documents." });
  });

  it("two payments of one invoice's last dollar at once: exactly one succeeds", async () => {
    const { ids, pay, balance } = await books([["INV-1", "100.00"]]);
    await pay("99.00", [{ documentId: ids["INV-1"], amount: "99.00" }]);
    const results = await Promise.all([1, 2].map(() => pay("1.00", [{ documentId: ids["INV-1"], amount: "1.00" }])));
    expect(results.filter((r) => r.success)).toHaveLength(1);
    expect(results.find((r) => !r.success)).toMatchObject({ error: "INV-1 is paid: only an open invoice takes a payment." });
    expect(await balance()).toBe(0);
  });

  it("ages what is owed on a fixed day: due 0, 15, 45, 75 and 120 days earlier, a payment dated after it added back", async () => {
    const asOf = "2026-06-30";
    const day = (n: number) => new Date(Date.parse(asOf) - n * 86400_000).toISOString().slice(0, 10);
    const { tenant, ids, pay } = await books([["A", "10.00", day(0)], ["B", "20.00", day(15)], ["C", "30.00", day(45)], ["D", "40.00", day(75)], ["E", "50.00", day(120)]]);
    await pay("5.00", [{ documentId: ids["C"], amount: "5.00" }], "2026-06-01"); // before asOf: C owes 25.00
    await pay("40.00", [{ documentId: ids["D"], amount: "40.00" }], "2026-07-02"); // after: D still owed 40.00 on asOf
    const report = dataOf(await h.gql(AGING, { org: tenant.organizationId, asOf }, tenant.apiKey), "agingReport");
    const expected = { current: "10.00", days1to30: "20.00", days31to60: "25.00", days61to90: "40.00", over90: "50.00", total: "145.00" };
    expect(report).toEqual({ asOf, kind: "receivable", rows: [{ contact: { displayName: "Laval Print" }, ...expected }], totals: expected });
    expect(dataOf(await h.gql(AGING, { org: tenant.organizationId, asOf, kind: "payable" }, tenant.apiKey), "agingReport"))
      .toMatchObject({ rows: [], totals: { total: "0.00" } });
    expect((await h.gql(AGING, { org: tenant.organizationId, kind: "overdue" }, tenant.apiKey)).body.errors[0].message).toBe("kind must be receivable or payable.");
  });
});

describe("what keeps contact balances those of the books", () => {
  it("only documents and their payments post to Accounts Receivable and Payable", async () => {
    const ar = (await h.owner.query("select id from app_public.accounts where organization_id = $1 and account_type = 'accounts_receivable'", [t.organizationId])).rows[0].id;
    const refused = "Accounts Receivable and Payable take only invoices, bills and their payments.";
    expect(await call(h, t, `mutation($org: UUID!, $c: UUID!) { createLedgerEvent(organizationId: $org, merchantName: "X", amount: "30.00",
      transactionDate: "2026-02-10", eventType: "transfer", categoryId: $c) { success error } }`, { c: ar }, "createLedgerEvent"))
      .toEqual({ success: false, error: refused });
    expect(await call(h, t, CREATE("Bill"), { c: vendor, n: "AR-LINE", i: "2026-02-05", d: "2026-03-07",
      lines: [{ description: "x", quantity: "1", unitPrice: "50.00", categoryId: ar }] }, "createBill")).toMatchObject({ success: false, error: refused });
    expect(await call(h, t, `mutation($org: UUID!, $c: UUID!) { createCategoryRule(organizationId: $org, vendorPattern: "%x%", categoryId: $c) { success error } }`,
      { c: ar }, "createCategoryRule")).toMatchObject({ success: false, error: refused });
  });

  it("a contact with invoices keeps its type; a payment names the wrong kind clearly; an inactive control account is refused", async () => {
    expect(await call(h, t, `mutation($org: UUID!, $c: UUID!) { updateContact(organizationId: $org, contactId: $c, contactType: "vendor") { success error } }`,
      { c: customer }, "updateContact")).toMatchObject({ success: false, error: "A contact with invoices or bills keeps its type." });
    const tenant = await createTenant(h);
    const a = await accountsOf(h, tenant);
    const c = await contact(tenant, "customer", "Someone");
    const v = await contact(tenant, "vendor", "Supplier");
    const bill = await call(h, tenant, CREATE("Bill"), { c: v, n: "S-1", i: "2026-02-05", d: "2026-03-07",
      lines: [{ description: "x", quantity: "1", unitPrice: "50.00", categoryId: a["Bank Fees & Charges"] }] }, "createBill");
    await call(h, tenant, APPROVE_BILL, { id: bill.document.id }, "approveBill");
    expect(await call(h, tenant, `mutation($org: UUID!, $c: UUID!, $p: UUID!, $al: [AllocationInput!]!) { recordPayment(organizationId: $org, contactId: $c,
      paymentAccountId: $p, amount: "50.00", date: "2026-02-10", allocations: $al) { success error } }`,
    { c, p: a["Chequing"], al: [{ documentId: bill.document.id, amount: "50.00" }] }, "recordPayment"))
      .toEqual({ success: false, error: "S-1 is a bill: money in pays invoices." });
    await h.owner.query("update app_public.accounts set active = false where organization_id = $1 and account_type = 'accounts_payable'", [tenant.organizationId]);
    const next = await call(h, tenant, CREATE("Bill"), { c: v, n: "S-2", i: "2026-02-05", d: "2026-03-07",
      lines: [{ description: "x", quantity: "1", unitPrice: "50.00", categoryId: a["Bank Fees & Charges"] }] }, "createBill");
    expect(await call(h, tenant, APPROVE_BILL, { id: next.document.id }, "approveBill")).toMatchObject({ success: false, error: "Accounts Payable is inactive: reactivate it." });
  });

  it("suggests by number only as a word: INV-1 is not in INV-10", async () => {
    const tenant = await createTenant(h);
    const a = await accountsOf(h, tenant);
    const c = await contact(tenant, "customer", "Someone");
    for (const n of ["INV-1", "INV-10"]) {
      const d = await invoice(n, [{ description: "x", quantity: "1", unitPrice: n === "INV-1" ? "10.00" : "20.00", categoryId: a["Sales Revenue"] }], { tenant, c });
      await call(h, tenant, APPROVE_INVOICE, { id: d.document.id }, "approveInvoice");
    }
    await call(h, tenant, `mutation($org: UUID!, $p: UUID!) { importBankStatement(organizationId: $org, paymentAccountId: $p, rows: [
      { transactionDate: "2026-02-03", description: "PAYMENT INV-10 THANKS", amount: "99.00", eventType: "income" }]) { success } }`, { p: a["Chequing"] }, "importBankStatement");
    const { rows: [e] } = await h.owner.query("select id from app_public.ledger_events where organization_id = $1", [tenant.organizationId]);
    expect(dataOf(await h.gql(`query($org: UUID!, $e: UUID!) { documentMatchSuggestions(organizationId: $org, eventId: $e) { reason document { number } } }`,
      { org: tenant.organizationId, e: e.id }, tenant.apiKey), "documentMatchSuggestions")).toEqual([{ reason: "number", document: { number: "INV-10" } }]);
  });
});
