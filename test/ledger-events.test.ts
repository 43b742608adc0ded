import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authenticatorUrl } from "../src/db/pools.js";
import { createTenant, dataOf, errorOf, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import {
  accountsOf, addAccount, bookEvent, call, CLASSIFY, CONFIRM, count, CREATE, createEvent, eventRow, GET, REJECT, UPDATE,
  type Accounts,
} from "./ledger-fixtures.js";

let h: Harness;
let t: Tenant;
let other: Tenant;
let acc: Accounts;
let otherAcc: Accounts;
beforeAll(async () => {
  h = await startHarness();
  t = await createTenant(h);
  other = await createTenant(h);
  acc = await accountsOf(h, t);
  otherAcc = await accountsOf(h, other);
  acc["Office Supplies"] = await addAccount(h, t, "Office Supplies", "expense", "expense");
  acc["Old Expenses"] = await addAccount(h, t, "Old Expenses", "expense", "expense", false);
  acc["Old Card"] = await addAccount(h, t, "Old Card", "credit_card", "liability", false);
  acc["Visa"] = await addAccount(h, t, "Visa", "credit_card", "liability");
});
afterAll(() => h?.close());

const classifyOffice = () => ({ categoryId: acc["Office Supplies"], paymentId: acc["Chequing"] });
const eventsOf = (tenant: Tenant) => count(h, "select 1 from app_public.ledger_events where organization_id = $1", [tenant.organizationId]);
const entriesOf = (eventId: string) => count(h, "select 1 from app_public.journal_entries where event_id = $1", [eventId]);

describe("createLedgerEvent", () => {
  it("creates an event in needs_review with the contract's fields", async () => {
    const id = await createEvent(h, t, { merchantName: "  Staples ", amount: "42.5", transactionDate: "2026-03-04" });
    const e = await call(h, t, GET, { eventId: id }, "getLedgerEvent");
    expect(e).toMatchObject({
      id, eventType: "expense", direction: "out", merchantName: "Staples", functionalAmount: "42.50", functionalCurrency: "CAD",
      transactionDate: "2026-03-04", status: "needs_review", memo: "", hasDocument: false, account: null, category: null,
      paymentAccount: null, journalEntry: null, receipts: [], taxAmount: null,
    });
    expect(e.created).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it.each([["income", "in"], ["transfer", "out"], ["expense", "out"]])("%s moves money %s", async (eventType, direction) => {
    const category = eventType === "income" ? acc["Sales Revenue"] : eventType === "transfer" ? acc["Visa"] : acc["Office Supplies"];
    const id = await createEvent(h, t, { eventType, categoryId: category, paymentAccountId: acc["Chequing"] });
    const e = await call(h, t, GET, { eventId: id }, "getLedgerEvent");
    expect(e).toMatchObject({ eventType, direction, category: { id: category }, paymentAccount: { id: acc["Chequing"], name: "Chequing" } });
  });

  const refusals: [string, () => Record<string, unknown>, string][] = [
    ["a zero amount", () => ({ amount: "0" }), "Amount must be a positive decimal string."],
    ["a negative amount", () => ({ amount: "-5.00" }), "Amount must be a positive decimal string."],
    ["three decimals", () => ({ amount: "1.234" }), "Amount must be a positive decimal string."],
    ["a word", () => ({ amount: "abc" }), "Amount must be a positive decimal string."],
    ["a date that does not exist", () => ({ transactionDate: "2026-02-30" }), "Transaction date must be a date in YYYY-MM-DD format."],
    ["another date format", () => ({ transactionDate: "03/01/2026" }), "Transaction date must be a date in YYYY-MM-DD format."],
    ["an unknown event type", () => ({ eventType: "gift" }), "Event type must be one of: expense, income, transfer."],
    ["a blank merchant", () => ({ merchantName: "   " }), "Merchant name is required."],
    ["another organization's category", () => ({ categoryId: otherAcc["Cost of Goods Sold"] }), "Category account not found."],
    ["an inactive category", () => ({ categoryId: acc["Old Expenses"] }), "Category account is inactive."],
    ["a revenue category for an expense", () => ({ categoryId: acc["Sales Revenue"] }), "Category must be an expense or asset account for an expense event."],
    ["an expense category for income", () => ({ eventType: "income", categoryId: acc["Office Supplies"] }), "Category must be a revenue account for an income event."],
    ["a payment account that is not bank, card or clearing", () => ({ paymentAccountId: acc["Sales Revenue"] }), "Payment account must be a bank, credit card or clearing account."],
    ["another organization's payment account", () => ({ paymentAccountId: otherAcc["Chequing"] }), "Payment account not found."],
    ["an inactive payment account", () => ({ paymentAccountId: acc["Old Card"] }), "Payment account is inactive."],
  ];
  it.each(refusals)("refuses %s and writes nothing", async (_name, vars, message) => {
    const before = await eventsOf(t);
    const r = await call(h, t, CREATE, { merchantName: "Vendor", amount: "10.00", transactionDate: "2026-03-01", ...vars() }, "createLedgerEvent");
    expect(r).toEqual({ success: false, error: message, eventId: null });
    expect(await eventsOf(t)).toBe(before);
  });

  it("refuses another organization's id for an API key", async () => {
    const res = await h.gql(CREATE, { org: other.organizationId, merchantName: "X", amount: "1.00", transactionDate: "2026-03-01" }, t.apiKey);
    expect(errorOf(res)).toEqual({ message: "API Key Not Authorized For This Organization.", code: "FORBIDDEN" });
  });
});

describe("updateLedgerEvent", () => {
  it("changes the mutable fields of an event in needs_review", async () => {
    const id = await createEvent(h, t, { amount: "10.00" });
    const r = await call(h, t, UPDATE, { eventId: id, memo: "100% paper_clips", amount: "12.30", transactionDate: "2026-03-09", eventType: "income" }, "updateLedgerEvent");
    expect(r.success).toBe(true);
    expect(r.event).toMatchObject({ id, memo: "100% paper_clips", functionalAmount: "12.30", transactionDate: "2026-03-09", eventType: "income", direction: "in", status: "needs_review" });
  });

  it("changes an event in pending", async () => {
    const id = await createEvent(h, t, {});
    await h.owner.query("update app_public.ledger_events set status = 'pending' where id = $1", [id]);
    const r = await call(h, t, UPDATE, { eventId: id, memo: "waiting" }, "updateLedgerEvent");
    expect(r.event).toMatchObject({ memo: "waiting", status: "pending" });
  });

  it("clears a category that no longer fits a new event type", async () => {
    const id = await createEvent(h, t, { categoryId: acc["Office Supplies"] });
    const r = await call(h, t, UPDATE, { eventId: id, eventType: "income" }, "updateLedgerEvent");
    expect(r.event).toMatchObject({ eventType: "income", category: null, account: null });
  });

  it.each(["confirmed", "ignored", "synced", "reconciled"])("refuses an event in %s and changes nothing", async (status) => {
    const id = await bookEvent(h, t, {}, classifyOffice());
    if (status === "ignored") await call(h, t, REJECT, { eventId: id }, "rejectLedgerEvent");
    else await h.owner.query("update app_public.ledger_events set status = $2 where id = $1", [id, status]);
    const before = await eventRow(h, id);
    const r = await call(h, t, UPDATE, { eventId: id, memo: "late change", amount: "99.00" }, "updateLedgerEvent");
    const error = status === "reconciled" ? "Event is reconciled." : "Only events in needs_review or pending can be updated.";
    expect(r).toEqual({ success: false, error, event: null });
    expect(await eventRow(h, id)).toEqual(before);
  });

  it.each([
    [{ amount: "0.00" }, "Amount must be a positive decimal string."],
    [{ transactionDate: "2026-13-01" }, "Transaction date must be a date in YYYY-MM-DD format."],
    [{ eventType: "refund" }, "Event type must be one of: expense, income, transfer."],
  ])("refuses %j and changes nothing", async (vars, message) => {
    const id = await createEvent(h, t, {});
    const before = await eventRow(h, id);
    const r = await call(h, t, UPDATE, { eventId: id, memo: "x", ...vars }, "updateLedgerEvent");
    expect(r).toMatchObject({ success: false, error: message });
    expect(await eventRow(h, id)).toEqual(before);
  });

  it("does not find another organization's event", async () => {
    const id = await createEvent(h, other, {});
    const r = await call(h, t, UPDATE, { eventId: id, memo: "x" }, "updateLedgerEvent");
    expect(r).toMatchObject({ success: false, error: "Ledger event not found." });
    const res = await h.gql(GET, { org: t.organizationId, eventId: id }, t.apiKey);
    expect(errorOf(res)).toEqual({ message: "Ledger event not found.", code: "NOT_FOUND" });
  });
});

describe("updateStagedEntry", () => {
  it("sets category, payment account and a tax portion from a sales tax code", async () => {
    const id = await createEvent(h, t, { amount: "113.00" });
    const r = await call(h, t, CLASSIFY, { eventId: id, ...classifyOffice(), taxCode: "HST_ON" }, "updateStagedEntry");
    expect(r).toEqual({ success: true, error: null });
    const e = await call(h, t, GET, { eventId: id }, "getLedgerEvent");
    expect(e).toMatchObject({
      status: "needs_review", category: { id: acc["Office Supplies"], name: "Office Supplies" },
      account: { id: acc["Office Supplies"], name: "Office Supplies", accountType: "expense" },
      paymentAccount: { id: acc["Chequing"] }, taxAmount: "13.00", taxCode: "HST_ON", taxAccount: { id: acc["GST/HST Payable"] },
    });
  });

  it("takes an explicit tax amount and account", async () => {
    const id = await createEvent(h, t, { amount: "50.00" });
    await call(h, t, CLASSIFY, { eventId: id, ...classifyOffice(), taxAmount: "2.38", taxAccountId: acc["GST/HST Payable"] }, "updateStagedEntry");
    expect((await call(h, t, GET, { eventId: id }, "getLedgerEvent")).taxAmount).toBe("2.38");
  });

  const refusals: [string, () => Record<string, unknown>, string][] = [
    ["another organization's category", () => ({ categoryId: otherAcc["Bank Fees & Charges"] }), "Category account not found."],
    ["an inactive category", () => ({ categoryId: acc["Old Expenses"] }), "Category account is inactive."],
    ["a category that does not fit", () => ({ categoryId: acc["Sales Revenue"] }), "Category must be an expense or asset account for an expense event."],
    ["another organization's payment account", () => ({ paymentId: otherAcc["Chequing"] }), "Payment account not found."],
    ["an inactive payment account", () => ({ paymentId: acc["Old Card"] }), "Payment account is inactive."],
    ["an expense account as payment account", () => ({ paymentId: acc["Office Supplies"] }), "Payment account must be a bank, credit card or clearing account."],
    ["a tax amount equal to the amount", () => ({ taxAmount: "20.00" }), "Tax amount must be less than the amount."],
    ["a negative tax amount", () => ({ taxAmount: "-1.00" }), "Tax amount must be a decimal string of at least 0."],
    ["an unknown tax code", () => ({ taxCode: "NOPE" }), "Unknown tax code."],
  ];
  it.each(refusals)("refuses %s and changes nothing", async (_name, vars, message) => {
    const id = await createEvent(h, t, { amount: "20.00" });
    const before = await eventRow(h, id);
    const r = await call(h, t, CLASSIFY, { eventId: id, ...vars() }, "updateStagedEntry");
    expect(r).toEqual({ success: false, error: message });
    expect(await eventRow(h, id)).toEqual(before);
  });

  it("refuses a confirmed event", async () => {
    const id = await bookEvent(h, t, {}, classifyOffice());
    const before = await eventRow(h, id);
    const r = await call(h, t, CLASSIFY, { eventId: id, categoryId: acc["Bank Fees & Charges"] }, "updateStagedEntry");
    expect(r).toEqual({ success: false, error: "Event is already confirmed." });
    expect(await eventRow(h, id)).toEqual(before);
  });
});

describe("confirmLedgerEvent", () => {
  it("posts a balanced entry: out debits the category and tax, credits the payment account", async () => {
    const id = await createEvent(h, t, { amount: "113.00", transactionDate: "2026-03-05" });
    await call(h, t, CLASSIFY, { eventId: id, ...classifyOffice(), taxCode: "HST_ON" }, "updateStagedEntry");
    const r = await call(h, t, CONFIRM, { eventId: id }, "confirmLedgerEvent");
    expect(r).toMatchObject({ success: true, error: null, eventId: id });
    const { rows } = await h.owner.query(
      "select a.name, l.debit::text, l.credit::text, l.txn_date::text from app_public.journal_lines l join app_public.accounts a on a.id = l.account_id where l.entry_id = $1 order by a.name",
      [r.journalEntryId]);
    expect(rows).toEqual([
      { name: "Chequing", debit: "0.00", credit: "113.00", txn_date: "2026-03-05" },
      { name: "GST/HST Payable", debit: "13.00", credit: "0.00", txn_date: "2026-03-05" },
      { name: "Office Supplies", debit: "100.00", credit: "0.00", txn_date: "2026-03-05" },
    ]);
    const e = await call(h, t, GET, { eventId: id }, "getLedgerEvent");
    expect(e).toMatchObject({ status: "confirmed", journalEntry: { id: r.journalEntryId, txnDate: "2026-03-05", totalAmount: "113.00", voidedAt: null } });
  });

  it("in debits the payment account and credits the category", async () => {
    const id = await bookEvent(h, t, { eventType: "income", amount: "80.00" }, { categoryId: acc["Sales Revenue"], paymentId: acc["Visa"] });
    const { rows } = await h.owner.query(
      "select a.name, l.debit::text, l.credit::text from app_public.journal_lines l join app_public.journal_entries j on j.id = l.entry_id join app_public.accounts a on a.id = l.account_id where j.event_id = $1 order by a.name", [id]);
    expect(rows).toEqual([{ name: "Sales Revenue", debit: "0.00", credit: "80.00" }, { name: "Visa", debit: "80.00", credit: "0.00" }]);
  });

  it("refuses a classified event in pending: its bank has not posted it", async () => {
    const id = await createEvent(h, t, {});
    await call(h, t, CLASSIFY, { eventId: id, ...classifyOffice() }, "updateStagedEntry");
    await h.owner.query("update app_public.ledger_events set status = 'pending' where id = $1", [id]);
    const before = await eventRow(h, id);
    expect(await call(h, t, CONFIRM, { eventId: id }, "confirmLedgerEvent")).toMatchObject({ success: false,
      error: "A pending event cannot be confirmed: it is settled when the bank posts it." });
    expect(await eventRow(h, id)).toEqual(before);
    expect(await entriesOf(id)).toBe(0);
  });

  it.each([
    ["without category or payment account", {}],
    ["with only a category", { categoryId: "Office Supplies" }],
    ["with only a payment account", { paymentId: "Chequing" }],
  ])("refuses an event %s and posts nothing", async (_n, cls: Record<string, string>) => {
    const id = await createEvent(h, t, {});
    if (Object.keys(cls).length) await call(h, t, CLASSIFY, { eventId: id, ...Object.fromEntries(Object.entries(cls).map(([k, v]) => [k, acc[v]])) }, "updateStagedEntry");
    const before = await eventRow(h, id);
    const r = await call(h, t, CONFIRM, { eventId: id }, "confirmLedgerEvent");
    expect(r).toEqual({ success: false, error: "Category and payment account are required to confirm.", eventId: null, journalEntryId: null });
    expect(await eventRow(h, id)).toEqual(before);
    expect(await entriesOf(id)).toBe(0);
  });

  it("refuses a confirmed event, and a rejected one", async () => {
    const id = await bookEvent(h, t, {}, classifyOffice());
    expect(await call(h, t, CONFIRM, { eventId: id }, "confirmLedgerEvent")).toMatchObject({ success: false, error: "Event is already confirmed." });
    await call(h, t, REJECT, { eventId: id }, "rejectLedgerEvent");
    const before = await eventRow(h, id);
    expect(await call(h, t, CONFIRM, { eventId: id }, "confirmLedgerEvent")).toMatchObject({ success: false, error: "Only events in needs_review can be confirmed." });
    expect(await eventRow(h, id)).toEqual(before);
    expect(await entriesOf(id)).toBe(1);
  });

  it("refuses when the category was deactivated since classification", async () => {
    const temp = await addAccount(h, t, "Temporary Expense", "expense", "expense");
    const id = await createEvent(h, t, {});
    await call(h, t, CLASSIFY, { eventId: id, categoryId: temp, paymentId: acc["Chequing"] }, "updateStagedEntry");
    await h.owner.query("update app_public.accounts set active = false where id = $1", [temp]);
    expect(await call(h, t, CONFIRM, { eventId: id }, "confirmLedgerEvent")).toMatchObject({ success: false, error: "Category account is inactive." });
    expect(await entriesOf(id)).toBe(0);
  });

  it("does not find an unknown event", async () => {
    expect(await call(h, t, CONFIRM, { eventId: "00000000-0000-4000-8000-000000000000" }, "confirmLedgerEvent"))
      .toMatchObject({ success: false, error: "Ledger event not found." });
  });

  it("ten concurrent confirms of one event make exactly one journal entry", async () => {
    const id = await createEvent(h, t, { amount: "77.77" });
    await call(h, t, CLASSIFY, { eventId: id, ...classifyOffice() }, "updateStagedEntry");
    const results = await Promise.all(Array.from({ length: 10 }, () => h.gql(CONFIRM, { org: t.organizationId, eventId: id }, t.apiKey)));
    const data = results.map((r) => dataOf(r, "confirmLedgerEvent"));
    expect(data.filter((d) => d.success)).toHaveLength(1);
    expect(data.filter((d) => !d.success).map((d) => d.error)).toEqual(Array(9).fill("Event is already confirmed."));
    expect(await entriesOf(id)).toBe(1);
    expect(await count(h, "select 1 from app_public.journal_lines l join app_public.journal_entries j on j.id = l.entry_id where j.event_id = $1", [id])).toBe(2);
  });
});

describe("rejectLedgerEvent", () => {
  it("moves an event in review to ignored, with nothing posted", async () => {
    const id = await createEvent(h, t, {});
    expect(await call(h, t, REJECT, { eventId: id }, "rejectLedgerEvent")).toEqual({ success: true, error: null, eventId: id });
    expect((await eventRow(h, id)).status).toBe("ignored");
    expect(await entriesOf(id)).toBe(0);
  });

  it("voids the entry of a confirmed event: kept for audit, out of the balances", async () => {
    const chequingBefore = await balanceOf(acc["Chequing"]);
    const id = await bookEvent(h, t, { amount: "500.00", eventType: "income" }, { categoryId: acc["Sales Revenue"], paymentId: acc["Chequing"] });
    expect(await balanceOf(acc["Chequing"])).toBe((Number(chequingBefore) + 500).toFixed(2));
    await call(h, t, REJECT, { eventId: id }, "rejectLedgerEvent");
    expect(await balanceOf(acc["Chequing"])).toBe(chequingBefore);
    const e = await call(h, t, GET, { eventId: id }, "getLedgerEvent");
    expect(e.status).toBe("ignored");
    expect(e.journalEntry.voidedAt).not.toBeNull();
    expect(await count(h, "select 1 from app_public.journal_lines l join app_public.journal_entries j on j.id = l.entry_id where j.event_id = $1 and l.voided", [id])).toBe(2);
  });

  it("rejects an event in pending", async () => {
    const id = await bookEvent(h, t, {}, classifyOffice());
    await h.owner.query("update app_public.ledger_events set status = 'pending' where id = $1", [id]);
    expect((await call(h, t, REJECT, { eventId: id }, "rejectLedgerEvent")).success).toBe(true);
    expect((await eventRow(h, id)).status).toBe("ignored");
  });

  it("refuses a synced event: it is changed only by reversal", async () => {
    const id = await bookEvent(h, t, {}, classifyOffice());
    await h.owner.query("update app_public.ledger_events set status = 'synced' where id = $1", [id]);
    const before = await eventRow(h, id);
    expect(await call(h, t, REJECT, { eventId: id }, "rejectLedgerEvent"))
      .toEqual({ success: false, error: "Event is synced: a synced event is changed only by reversal.", eventId: null });
    expect(await eventRow(h, id)).toEqual(before);
  });

  it("refuses a reconciled event (test/reconciliation.test.ts reconciles them)", async () => {
    const id = await bookEvent(h, t, {}, classifyOffice());
    await h.owner.query("update app_public.ledger_events set status = 'reconciled' where id = $1", [id]);
    const before = await eventRow(h, id);
    expect(await call(h, t, REJECT, { eventId: id }, "rejectLedgerEvent")).toEqual({ success: false, error: "Event is reconciled.", eventId: null });
    expect(await eventRow(h, id)).toEqual(before);
  });

  it("refuses an event already rejected", async () => {
    const id = await createEvent(h, t, {});
    await call(h, t, REJECT, { eventId: id }, "rejectLedgerEvent");
    const before = await eventRow(h, id);
    expect(await call(h, t, REJECT, { eventId: id }, "rejectLedgerEvent")).toEqual({ success: false, error: "Event is already rejected.", eventId: null });
    expect(await eventRow(h, id)).toEqual(before);
  });
});

async function balanceOf(accountId: string): Promise<string> {
  const res = await h.gql("query($org: UUID!) { accountBalances(organizationId: $org) { accountId balance } }", { org: t.organizationId }, t.apiKey);
  return dataOf(res, "accountBalances").find((b: { accountId: string }) => b.accountId === accountId).balance;
}

describe("category rules", () => {
  const RULE = "mutation($org: UUID!, $p: String!, $c: UUID!) { createCategoryRule(organizationId: $org, vendorPattern: $p, categoryId: $c) { success error categoryRule { id } } }";
  const matchCount = async (id: string) => (await h.owner.query("select match_count from app_public.category_rules where id = $1", [id])).rows[0].match_count;

  it("classifies a new event without category and counts the match (longest pattern wins)", async () => {
    const tenant = await createTenant(h);
    const a = await accountsOf(h, tenant);
    const short = dataOf(await h.gql(RULE, { org: tenant.organizationId, p: "%coffee%", c: a["Cost of Goods Sold"] }, tenant.apiKey), "createCategoryRule").categoryRule.id;
    const long = dataOf(await h.gql(RULE, { org: tenant.organizationId, p: "%bank coffee%", c: a["Bank Fees & Charges"] }, tenant.apiKey), "createCategoryRule").categoryRule.id;
    const id = await createEvent(h, tenant, { merchantName: "Big Bank Coffee Co" });
    expect((await call(h, tenant, GET, { eventId: id }, "getLedgerEvent")).category).toEqual({ id: a["Bank Fees & Charges"], name: "Bank Fees & Charges" });
    expect(await matchCount(long)).toBe(1);
    expect(await matchCount(short)).toBe(0);
    // An explicit category wins over the rules.
    const explicit = await createEvent(h, tenant, { merchantName: "Bank Coffee", categoryId: a["Cost of Goods Sold"] });
    expect((await eventRow(h, explicit)).category_id).toBe(a["Cost of Goods Sold"]);
    expect(await matchCount(long)).toBe(1);
  });

  it("a new rule classifies the uncategorized events in review, and only those", async () => {
    const tenant = await createTenant(h);
    const a = await accountsOf(h, tenant);
    const open1 = await createEvent(h, tenant, { merchantName: "ACME Widgets" });
    const open2 = await createEvent(h, tenant, { merchantName: "acme widgets ltd" });
    const categorized = await createEvent(h, tenant, { merchantName: "ACME Widgets", categoryId: a["Bank Fees & Charges"] });
    const rejected = await createEvent(h, tenant, { merchantName: "ACME Widgets" });
    await call(h, tenant, REJECT, { eventId: rejected }, "rejectLedgerEvent");
    const income = await createEvent(h, tenant, { merchantName: "ACME Widgets", eventType: "income" });
    const unrelated = await createEvent(h, tenant, { merchantName: "Other" });
    const rule = dataOf(await h.gql(RULE, { org: tenant.organizationId, p: "acme%", c: a["Cost of Goods Sold"] }, tenant.apiKey), "createCategoryRule").categoryRule.id;
    for (const id of [open1, open2]) expect((await eventRow(h, id)).category_id).toBe(a["Cost of Goods Sold"]);
    expect((await eventRow(h, categorized)).category_id).toBe(a["Bank Fees & Charges"]);
    for (const id of [rejected, income, unrelated]) expect((await eventRow(h, id)).category_id).toBeNull();
    expect(await matchCount(rule)).toBe(2);
  });
});

describe("audit trail", () => {
  const HISTORY = "query($org: UUID!, $eventId: UUID!) { ledgerEventHistory(organizationId: $org, eventId: $eventId) { action actorType actorId occurredAt changes { field oldValue newValue } } }";

  it("records who changed what, old and new values, for every transition", async () => {
    const id = await createEvent(h, t, { amount: "10.00" });
    await call(h, t, UPDATE, { eventId: id, amount: "11.00" }, "updateLedgerEvent");
    await h.gql(CLASSIFY, { org: t.organizationId, eventId: id, ...classifyOffice() }, t.ownerJwt);
    await call(h, t, CONFIRM, { eventId: id }, "confirmLedgerEvent");
    await call(h, t, REJECT, { eventId: id }, "rejectLedgerEvent");
    // A refused change leaves no trace.
    await call(h, t, UPDATE, { eventId: id, memo: "nope" }, "updateLedgerEvent");
    const history = dataOf(await h.gql(HISTORY, { org: t.organizationId, eventId: id }, t.apiKey), "ledgerEventHistory");
    expect(history.map((x: { action: string }) => x.action)).toEqual(["create", "update", "classify", "confirm", "reject"]);
    expect(history[0]).toMatchObject({ actorType: "api_key", actorId: t.apiKeyId });
    expect(history[1].changes).toEqual([{ field: "functional_amount", oldValue: "10.00", newValue: "11.00" }]);
    expect(history[2]).toMatchObject({ actorType: "user", actorId: t.ownerId });
    expect(history[3].changes).toEqual(expect.arrayContaining([{ field: "status", oldValue: "needs_review", newValue: "confirmed" }]));
    expect(history[4].changes).toEqual([{ field: "status", oldValue: "confirmed", newValue: "ignored" }]);
  });

  it("no role can change or delete the trail, not even the owner", async () => {
    const id = await createEvent(h, t, {});
    await expect(h.owner.query("update app_public.ledger_event_audit set action = 'x' where event_id = $1", [id])).rejects.toThrow(/append-only/);
    await expect(h.owner.query("delete from app_public.ledger_event_audit where event_id = $1", [id])).rejects.toThrow(/append-only/);
    await expect(h.owner.query("truncate app_public.ledger_event_audit")).rejects.toThrow(/append-only/);
    const { rows } = await h.owner.query(
      "select has_table_privilege('accounting_visitor', 'app_public.ledger_event_audit', 'UPDATE') u, has_table_privilege('accounting_visitor', 'app_public.ledger_event_audit', 'DELETE') d, has_table_privilege('accounting_visitor', 'app_public.ledger_event_audit', 'INSERT') i");
    expect(rows[0]).toEqual({ u: false, d: false, i: false });
  });

  it("another organization sees no history", async () => {
    const id = await createEvent(h, t, {});
    const res = await h.gql(HISTORY, { org: other.organizationId, eventId: id }, other.apiKey);
    expect(errorOf(res)).toEqual({ message: "Ledger event not found.", code: "NOT_FOUND" });
  });
});

describe("the journal's own guarantees", () => {
  it("refuses an unbalanced entry at commit", async () => {
    const id = await createEvent(h, t, {});
    const c = await h.owner.connect();
    try {
      await c.query("begin");
      const { rows: [j] } = await c.query(
        "insert into app_public.journal_entries (organization_id, event_id, txn_date, total_amount) values ($1, $2, '2026-03-01', 10) returning id", [t.organizationId, id]);
      await c.query("insert into app_public.journal_lines (organization_id, entry_id, account_id, txn_date, debit) values ($1, $2, $3, '2026-03-01', 10)", [t.organizationId, j.id, acc["Office Supplies"]]);
      await c.query("insert into app_public.journal_lines (organization_id, entry_id, account_id, txn_date, credit) values ($1, $2, $3, '2026-03-01', 9.99)", [t.organizationId, j.id, acc["Chequing"]]);
      await expect(c.query("commit")).rejects.toThrow(/does not balance/);
    } finally {
      await c.query("rollback").catch(() => undefined);
      c.release();
    }
    expect(await entriesOf(id)).toBe(0);
  });

  it("refuses adding a line to an entry posted in an earlier transaction", async () => {
    const id = await bookEvent(h, t, {}, classifyOffice());
    const { rows: [j] } = await h.owner.query("select id from app_public.journal_entries where event_id = $1", [id]);
    await expect(h.owner.query(
      "insert into app_public.journal_lines (organization_id, entry_id, account_id, txn_date, debit) values ($1, $2, $3, '2026-03-01', 1)",
      [t.organizationId, j.id, acc["Office Supplies"]])).rejects.toThrow(/only be added to a journal entry in the transaction that posts it/);
  });

  it("refuses changing a posted line", async () => {
    const id = await bookEvent(h, t, {}, classifyOffice());
    await expect(h.owner.query(
      "update app_public.journal_lines l set debit = debit + 1 from app_public.journal_entries j where j.id = l.entry_id and j.event_id = $1 and l.debit > 0", [id]))
      .rejects.toThrow(/cannot be changed/);
  });

  it("RLS hides another organization's events, entries and lines from the API role", async () => {
    await bookEvent(h, other, {}, { categoryId: otherAcc["Bank Fees & Charges"], paymentId: otherAcc["Chequing"] });
    const c = new pg.Client({ connectionString: authenticatorUrl(h.databaseUrl, h.config.authenticatorPassword) });
    await c.connect();
    try {
      await c.query("begin");
      await c.query("select set_config('role', 'accounting_visitor', true), set_config('app.organization_id', $1, true)", [t.organizationId]);
      for (const table of ["ledger_events", "journal_entries", "journal_lines", "account_daily_totals", "ledger_event_audit", "ledger_event_daily_counts"]) {
        const { rows } = await c.query(`select count(*)::int n from app_public.${table} where organization_id = $1`, [other.organizationId]);
        expect(rows[0].n, table).toBe(0);
      }
      await c.query("rollback");
    } finally {
      await c.end();
    }
  });
});
