import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTenant, dataOf, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { accountsOf, addAccount, call, type Accounts } from "./ledger-fixtures.js";

let h: Harness;
let t: Tenant;
let acc: Accounts;
let customer: string;
let vendor: string;
beforeAll(async () => {
  h = await startHarness();
  t = await createTenant(h);
  acc = await accountsOf(h, t);
  acc["Service Revenue"] = await addAccount(h, t, "Service Revenue", "income", "revenue");
  acc["Office Supplies"] = await addAccount(h, t, "Office Supplies", "expense", "expense");
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
