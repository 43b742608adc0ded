import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTenant, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { accountsOf, addAccount, bookEvent, call, CLASSIFY, eventRow, REJECT, UPDATE, type Accounts } from "./ledger-fixtures.js";

/**
 * A month of a chequing account reconciled to a known statement (docs/api.md, Closing a period):
 *
 *   statement for March 2026: opening 0.00, closing 4,335.45
 *   03-02 deposit     in   5,000.00   cleared
 *   03-09 rent        out    700.00   cleared
 *   03-15 bank fee    out     14.55   cleared
 *   03-28 cheque 104  out     50.00   not on the statement (outstanding)
 *   04-03 supplies    out     20.00   after the statement date: not listed
 *
 * cleared: 0.00 + 5,000.00 - 700.00 - 14.55 = 4,285.45; the statement says 4,335.45 until the
 * deposit of 50.00 on 03-30, which the bookkeeper adds and ticks.
 */
let h: Harness;
let t: Tenant;
let acc: Accounts;
const ev: Record<string, string> = {};

const RECONCILIATION = `id paymentAccount { id name } statementDate openingBalance closingBalance clearedBalance difference clearedCount status`;
const START = `mutation($org: UUID!, $account: UUID!, $date: String!, $closing: String!) {
  startReconciliation(organizationId: $org, paymentAccountId: $account, statementDate: $date, closingBalance: $closing) {
    success error reconciliation { ${RECONCILIATION} } } }`;
const SET_CLEARED = `mutation($org: UUID!, $id: UUID!, $events: [UUID!]!, $cleared: Boolean!) {
  setCleared(organizationId: $org, reconciliationId: $id, eventIds: $events, cleared: $cleared) {
    success error reconciliation { ${RECONCILIATION} } } }`;
const COMPLETE = `mutation($org: UUID!, $id: UUID!) {
  completeReconciliation(organizationId: $org, reconciliationId: $id) { success error reconciliation { ${RECONCILIATION} } } }`;
const UNDO = `mutation($org: UUID!, $id: UUID!) {
  undoReconciliation(organizationId: $org, reconciliationId: $id) { success error reconciliation { ${RECONCILIATION} } } }`;
const LIST = `query($org: UUID!, $account: UUID!) {
  listReconciliations(organizationId: $org, paymentAccountId: $account) { totalCount items { ${RECONCILIATION} } } }`;
const EVENTS = `query($org: UUID!, $id: UUID!) {
  listLedgerEvents(organizationId: $org, reconciliationId: $id, sortDir: "asc") { totalCount items { id merchantName status cleared } } }`;

const book = (merchantName: string, amount: string, transactionDate: string, eventType: string, category: string) =>
  bookEvent(h, t, { merchantName, amount, transactionDate, eventType }, { categoryId: acc[category], paymentId: acc["Chequing"] });

beforeAll(async () => {
  h = await startHarness();
  t = await createTenant(h);
  acc = await accountsOf(h, t);
  acc["Rent"] = await addAccount(h, t, "Rent", "expense", "expense");
  acc["Visa"] = await addAccount(h, t, "Visa", "credit_card", "liability");
  ev.deposit = await book("Customer deposit", "5000.00", "2026-03-02", "income", "Sales Revenue");
  ev.rent = await book("Landlord", "700.00", "2026-03-09", "expense", "Rent");
  ev.fee = await book("Bank", "14.55", "2026-03-15", "expense", "Bank Fees & Charges");
  ev.cheque = await book("Cheque 104", "50.00", "2026-03-28", "expense", "Rent");
  ev.april = await book("Supplies", "20.00", "2026-04-03", "expense", "Rent");
});
afterAll(() => h?.close());

const run = (doc: string, vars: Record<string, unknown>, field: string, tenant = t) =>
  call(h, tenant, doc, { account: acc["Chequing"], ...vars }, field);

describe("reconciling a month of a chequing account", () => {
  let march: string;

  it("starts with the opening balance 0.00 and lists the account's confirmed events up to the statement date", async () => {
    const r = await run(START, { date: "2026-03-31", closing: "4335.45" }, "startReconciliation");
    expect(r).toMatchObject({ success: true, reconciliation: { openingBalance: "0.00", closingBalance: "4335.45",
      clearedBalance: "0.00", difference: "4335.45", status: "open", statementDate: "2026-03-31",
      paymentAccount: { id: acc["Chequing"], name: "Chequing" } } });
    march = r.reconciliation.id;
    const page = await run(EVENTS, { id: march }, "listLedgerEvents");
    expect(page.items.map((e: any) => e.merchantName)).toEqual(["Customer deposit", "Landlord", "Bank", "Cheque 104"]);
    expect(page.totalCount).toBe(4);
    expect(page.items.every((e: any) => e.cleared === false)).toBe(true);
  });

  it("refuses a second open reconciliation of the account", async () => {
    const r = await run(START, { date: "2026-04-30", closing: "1.00" }, "startReconciliation");
    expect(r).toEqual({ success: false, error: "This account already has an open reconciliation.", reconciliation: null });
  });

  it("ticks lines, and refuses to complete with a difference of 0.01", async () => {
    const r = await run(SET_CLEARED, { id: march, events: [ev.deposit, ev.rent, ev.fee], cleared: true }, "setCleared");
    expect(r.reconciliation).toMatchObject({ clearedBalance: "4285.45", difference: "50.00", clearedCount: 3 });
    // Off by one cent: 50.01 instead of 50.00.
    const near = await book("Late deposit", "50.01", "2026-03-30", "income", "Sales Revenue");
    const ticked = await run(SET_CLEARED, { id: march, events: [near], cleared: true }, "setCleared");
    expect(ticked.reconciliation).toMatchObject({ clearedBalance: "4335.46", difference: "-0.01" });
    const refused = await run(COMPLETE, { id: march }, "completeReconciliation");
    expect(refused).toEqual({ success: false, reconciliation: null,
      error: "The difference must be 0.00 to complete the reconciliation; it is -0.01." });
    expect((await eventRow(h, ev.deposit)).status).toBe("confirmed");
    // The bookkeeper unticks and rejects the wrong line, and books the real one.
    await run(SET_CLEARED, { id: march, events: [near], cleared: false }, "setCleared");
    expect((await call(h, t, REJECT, { eventId: near }, "rejectLedgerEvent")).success).toBe(true);
    ev.late = await book("Late deposit", "50.00", "2026-03-30", "income", "Sales Revenue");
    const exact = await run(SET_CLEARED, { id: march, events: [ev.late], cleared: true }, "setCleared");
    expect(exact.reconciliation).toMatchObject({ clearedBalance: "4335.45", difference: "0.00", clearedCount: 4 });
  });

  it("refuses to tick an event after the statement date or of another account", async () => {
    const after = await run(SET_CLEARED, { id: march, events: [ev.april], cleared: true }, "setCleared");
    expect(after).toMatchObject({ success: false, error: `Event ${ev.april} is dated after the statement date.` });
    const other = await bookEvent(h, t, { merchantName: "Card", amount: "5.00", transactionDate: "2026-03-03" },
      { categoryId: acc["Rent"], paymentId: acc["Visa"] });
    const wrong = await run(SET_CLEARED, { id: march, events: [other], cleared: true }, "setCleared");
    expect(wrong).toMatchObject({ success: false, error: `Event ${other} is not on the account being reconciled.` });
  });

  it("completes at a difference of exactly 0.00, the cleared events reconciled and the outstanding cheque not", async () => {
    const r = await run(COMPLETE, { id: march }, "completeReconciliation");
    expect(r).toMatchObject({ success: true, reconciliation: { status: "completed", difference: "0.00", clearedBalance: "4335.45" } });
    for (const id of [ev.deposit, ev.rent, ev.fee, ev.late]) expect((await eventRow(h, id)).status).toBe("reconciled");
    expect((await eventRow(h, ev.cheque)).status).toBe("confirmed");
    const page = await run(EVENTS, { id: march }, "listLedgerEvents");
    expect(page.items.map((e: any) => [e.merchantName, e.status, e.cleared])).toEqual([
      ["Customer deposit", "reconciled", true], ["Landlord", "reconciled", true], ["Bank", "reconciled", true],
      ["Late deposit", "reconciled", true]]);
    const again = await run(COMPLETE, { id: march }, "completeReconciliation");
    expect(again).toMatchObject({ success: false, error: "Reconciliation is already completed." });
  });

  it("a reconciled event refuses update, reject and re-classification, and keeps its row", async () => {
    const before = await eventRow(h, ev.rent);
    const upd = await call(h, t, UPDATE, { eventId: ev.rent, memo: "changed" }, "updateLedgerEvent");
    const cls = await call(h, t, CLASSIFY, { eventId: ev.rent, categoryId: acc["Bank Fees & Charges"] }, "updateStagedEntry");
    const rej = await call(h, t, REJECT, { eventId: ev.rent }, "rejectLedgerEvent");
    for (const r of [upd, cls, rej]) expect(r).toMatchObject({ success: false, error: "Event is reconciled." });
    expect(await eventRow(h, ev.rent)).toEqual(before);
    // Not even the owner's own SQL changes it.
    await expect(h.owner.query("update app_public.ledger_events set memo = 'x' where id = $1", [ev.rent]))
      .rejects.toThrow("Event is reconciled.");
  });

  it("the next reconciliation opens at the previous closing balance; an older one cannot be undone", async () => {
    const r = await run(START, { date: "2026-04-30", closing: "4265.45" }, "startReconciliation");
    expect(r.reconciliation).toMatchObject({ openingBalance: "4335.45", clearedBalance: "4335.45", difference: "-70.00" });
    const april = r.reconciliation.id;
    const page = await run(EVENTS, { id: april }, "listLedgerEvents");
    expect(page.items.map((e: any) => e.merchantName)).toEqual(["Cheque 104", "Supplies"]);
    const ticked = await run(SET_CLEARED, { id: april, events: [ev.cheque, ev.april], cleared: true }, "setCleared");
    expect(ticked.reconciliation.difference).toBe("0.00");
    expect((await run(COMPLETE, { id: april }, "completeReconciliation")).success).toBe(true);

    const older = await call(h, { ...t, apiKey: t.ownerJwt }, UNDO, { id: march }, "undoReconciliation");
    expect(older).toMatchObject({ success: false, error: "Only the account's latest reconciliation can be undone." });
    const list = await run(LIST, {}, "listReconciliations");
    expect(list.items.map((x: any) => [x.statementDate, x.status])).toEqual([["2026-04-30", "completed"], ["2026-03-31", "completed"]]);
    expect(list.totalCount).toBe(2);

    // An API key is not an owner or admin.
    const byKey = await run(UNDO, { id: april }, "undoReconciliation").catch((e: Error) => e.message);
    expect(String(byKey)).toContain("API Keys Cannot Perform Admin Operations.");
    const undone = await call(h, { ...t, apiKey: t.ownerJwt }, UNDO, { id: april }, "undoReconciliation");
    expect(undone).toMatchObject({ success: true, reconciliation: { status: "undone" } });
    expect((await eventRow(h, ev.cheque)).status).toBe("confirmed");
    expect((await eventRow(h, ev.rent)).status).toBe("reconciled");
    // The account's latest is March's again, and the next starts from its closing balance.
    const restart = await run(START, { date: "2026-04-30", closing: "4265.45" }, "startReconciliation");
    expect(restart.reconciliation.openingBalance).toBe("4335.45");
  });

  it("two completions at once complete it once", async () => {
    const other = await createTenant(h);
    const o = await accountsOf(h, other);
    const id = await bookEvent(h, other, { amount: "10.00", transactionDate: "2026-05-01", eventType: "income" },
      { categoryId: o["Sales Revenue"], paymentId: o["Chequing"] });
    const s = await call(h, other, START, { account: o["Chequing"], date: "2026-05-31", closing: "10.00" }, "startReconciliation");
    await call(h, other, SET_CLEARED, { id: s.reconciliation.id, events: [id], cleared: true }, "setCleared");
    const results = await Promise.all([1, 2, 3].map(() => call(h, other, COMPLETE, { id: s.reconciliation.id }, "completeReconciliation")));
    expect(results.filter((r) => r.success)).toHaveLength(1);
    expect(results.filter((r) => !r.success).map((r) => r.error)).toEqual(["Reconciliation is already completed.", "Reconciliation is already completed."]);
    const { rows } = await h.owner.query("select status from app_public.reconciliations where organization_id = $1", [other.organizationId]);
    expect(rows).toEqual([{ status: "completed" }]);
  });

  it("another organization sees none of it", async () => {
    const other = await createTenant(h);
    const r = await call(h, other, LIST, { account: acc["Chequing"] }, "listReconciliations");
    expect(r.totalCount).toBe(0);
    const start = await call(h, other, START, { account: acc["Chequing"], date: "2026-03-31", closing: "1.00" }, "startReconciliation");
    expect(start).toMatchObject({ success: false, error: "Payment account not found." });
  });
});

describe("a credit card's balance is what is owed", () => {
  it("purchases (money out) add to it and money in takes from it", async () => {
    const card = acc["Visa"];
    const purchase = await bookEvent(h, t, { merchantName: "Shop", amount: "120.00", transactionDate: "2026-06-02" },
      { categoryId: acc["Rent"], paymentId: card });
    const cashback = await bookEvent(h, t, { merchantName: "Card cashback", amount: "20.00", transactionDate: "2026-06-20", eventType: "income" },
      { categoryId: acc["Sales Revenue"], paymentId: card });
    const s = await call(h, t, START, { account: card, date: "2026-06-30", closing: "100.00" }, "startReconciliation");
    const r = await call(h, t, SET_CLEARED, { id: s.reconciliation.id, events: [purchase, cashback], cleared: true }, "setCleared");
    expect(r.reconciliation).toMatchObject({ openingBalance: "0.00", clearedBalance: "100.00", difference: "0.00" });
  });
});

describe("a transfer is on two statements", () => {
  it("a card payment from chequing is cleared on the card and on chequing, once each, with each account's sign", async () => {
    const o = await createTenant(h);
    const a = await accountsOf(h, o);
    const visa = await addAccount(h, o, "Visa", "credit_card", "liability");
    const rent = await addAccount(h, o, "Rent", "expense", "expense");
    const deposit = await bookEvent(h, o, { merchantName: "Deposit", amount: "500.00", transactionDate: "2026-03-01", eventType: "income" },
      { categoryId: a["Sales Revenue"], paymentId: a["Chequing"] });
    const bought = await bookEvent(h, o, { merchantName: "Shop", amount: "120.00", transactionDate: "2026-03-03" }, { categoryId: rent, paymentId: visa });
    const paid = await bookEvent(h, o, { merchantName: "Visa payment", amount: "120.00", transactionDate: "2026-03-20", eventType: "transfer" },
      { categoryId: visa, paymentId: a["Chequing"] });
    const visaRec = (await call(h, o, START, { account: visa, date: "2026-03-31", closing: "0.00" }, "startReconciliation")).reconciliation.id;
    const listed = await call(h, o, EVENTS, { id: visaRec }, "listLedgerEvents");
    expect(listed.items.map((e: any) => e.merchantName)).toEqual(["Shop", "Visa payment"]);
    // The purchase adds 120.00 to what is owed, the payment takes it away.
    const card = await call(h, o, SET_CLEARED, { id: visaRec, events: [bought, paid], cleared: true }, "setCleared");
    expect(card.reconciliation).toMatchObject({ clearedBalance: "0.00", difference: "0.00" });
    expect((await call(h, o, COMPLETE, { id: visaRec }, "completeReconciliation")).success).toBe(true);
    expect((await eventRow(h, paid)).status).toBe("reconciled");

    // Still on chequing's statement, where it is money out; not yet cleared there.
    const chqRec = (await call(h, o, START, { account: a["Chequing"], date: "2026-03-31", closing: "380.00" }, "startReconciliation")).reconciliation.id;
    const chq = await call(h, o, EVENTS, { id: chqRec }, "listLedgerEvents");
    expect(chq.items.map((e: any) => [e.merchantName, e.status, e.cleared])).toEqual([["Deposit", "confirmed", false], ["Visa payment", "reconciled", false]]);
    const ticked = await call(h, o, SET_CLEARED, { id: chqRec, events: [deposit, paid], cleared: true }, "setCleared");
    expect(ticked.reconciliation).toMatchObject({ clearedBalance: "380.00", difference: "0.00" });
    expect((await call(h, o, COMPLETE, { id: chqRec }, "completeReconciliation")).success).toBe(true);

    // Undoing chequing's leaves the payment reconciled: the card's reconciliation still clears it.
    const undone = await call(h, { ...o, apiKey: o.ownerJwt }, UNDO, { id: chqRec }, "undoReconciliation");
    expect(undone.success).toBe(true);
    expect((await eventRow(h, deposit)).status).toBe("confirmed");
    expect((await eventRow(h, paid)).status).toBe("reconciled");
    // And the card's, cleared once, cannot tick it again.
    const again = (await call(h, o, START, { account: visa, date: "2026-04-30", closing: "0.00" }, "startReconciliation")).reconciliation.id;
    expect((await call(h, o, EVENTS, { id: again }, "listLedgerEvents")).items).toEqual([]);
    expect(await call(h, o, SET_CLEARED, { id: again, events: [paid], cleared: true }, "setCleared"))
      .toMatchObject({ success: false, error: "Event is reconciled." });
  });
});

describe("races and the rule's home", () => {
  it("a tick waits for a reject in flight, then refuses the rejected event", async () => {
    const o = await createTenant(h);
    const a = await accountsOf(h, o);
    const id = await bookEvent(h, o, { amount: "10.00", transactionDate: "2026-03-05", eventType: "income" },
      { categoryId: a["Sales Revenue"], paymentId: a["Chequing"] });
    const rec = (await call(h, o, START, { account: a["Chequing"], date: "2026-03-31", closing: "10.00" }, "startReconciliation")).reconciliation.id;
    const c = await h.owner.connect();
    try {
      await c.query("begin");
      await c.query("select 1 from app_public.ledger_events where id = $1 for update", [id]);
      await c.query("update app_public.ledger_events set status = 'ignored' where id = $1", [id]);
      const tick = call(h, o, SET_CLEARED, { id: rec, events: [id], cleared: true }, "setCleared");
      await new Promise((r) => setTimeout(r, 300));
      await c.query("commit");
      expect(await tick).toMatchObject({ success: false, error: `Event ${id} is not confirmed.` });
    } finally {
      c.release();
    }
    expect(await h.owner.query("select 1 from app_public.reconciliation_clearings where event_id = $1", [id]).then((r) => r.rowCount)).toBe(0);
  });

  it("a reconciled event is ignored only by a reversal, even by the owner's SQL", async () => {
    await expect(h.owner.query("update app_public.ledger_events set status = 'ignored' where id = $1", [ev.deposit]))
      .rejects.toThrow("Event is reconciled.");
    expect((await eventRow(h, ev.deposit)).status).toBe("reconciled");
  });
});
