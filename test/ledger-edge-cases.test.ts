import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTenant, dataOf, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { accountsOf, bookEvent, call, createEvent, tenantWithAccounts, UPDATE, type Accounts } from "./ledger-fixtures.js";

/** Ledger behaviours at the edges: each, got wrong, would corrupt the books or mislead a client. */
let h: Harness;
let t: Tenant;
let acc: Accounts;
beforeAll(async () => {
  h = await startHarness();
  ({ t, acc } = await tenantWithAccounts(h));
});
afterAll(() => h?.close());

const LIST = "query($org: UUID!, $status: [String!]) { listLedgerEvents(organizationId: $org, status: $status) { totalCount items { id } } }";

describe("ledger edge cases", () => {
  it("editing an event keeps the direction its money moved, unless the type changes", async () => {
    const id = await createEvent(h, t, { merchantName: "Refund from vendor", amount: "12.00" });
    // A bank import sets the direction from the sign, whatever the type: an expense can come in.
    await h.owner.query("update app_public.ledger_events set direction = 'in' where id = $1", [id]);
    const edited = await call(h, t, UPDATE, { eventId: id, memo: "refund" }, "updateLedgerEvent");
    expect(edited.event.direction).toBe("in");
    const retyped = await call(h, t, UPDATE, { eventId: id, eventType: "expense" }, "updateLedgerEvent");
    expect(retyped.event.direction).toBe("out");
  });

  it("an empty status list matches nothing, in the page and in the total", async () => {
    await createEvent(h, t, { merchantName: "Anything" });
    const res = dataOf(await h.gql(LIST, { org: t.organizationId, status: [] }, t.apiKey), "listLedgerEvents");
    expect(res).toEqual({ totalCount: 0, items: [] });
  });

  it("a new category rule reports the events it classified at once", async () => {
    await createEvent(h, t, { merchantName: "Zeta Corp 1" });
    await createEvent(h, t, { merchantName: "Zeta Corp 2" });
    const rule = dataOf(await h.gql(
      "mutation($o: UUID!, $c: UUID!) { createCategoryRule(organizationId: $o, vendorPattern: \"zeta%\", categoryId: $c) { success categoryRule { matchCount } } }",
      { o: t.organizationId, c: acc["Bank Fees & Charges"] }, t.apiKey), "createCategoryRule");
    expect(rule).toEqual({ success: true, categoryRule: { matchCount: 2 } });
  });

  it("a deleted event leaves its last values in the audit trail", async () => {
    const id = await createEvent(h, t, { merchantName: "Imported by mistake", amount: "7.25" });
    await h.owner.query("delete from app_public.ledger_events where id = $1", [id]);
    const { rows } = await h.owner.query("select action, changes from app_public.ledger_event_audit where event_id = $1 order by id", [id]);
    expect(rows.map((r) => r.action)).toEqual(["create", "delete"]);
    // Nulls are not stored: a deleted field has an old value and no new one.
    expect(rows[1].changes.merchant_name).toEqual({ old: "Imported by mistake" });
    expect(rows[1].changes.functional_amount).toEqual({ old: 7.25 });
    expect(rows[1].changes.category_id).toBeUndefined();
  });

  it("the operator can delete an organization that has books", async () => {
    const gone = await createTenant(h);
    const a = await accountsOf(h, gone);
    await bookEvent(h, gone, { merchantName: "Paper", amount: "30.00" }, { categoryId: a["Bank Fees & Charges"], paymentId: a["Chequing"] });
    await h.owner.query("delete from app_public.organizations where id = $1", [gone.organizationId]);
    const { rows } = await h.owner.query(`select
      (select count(*) from app_public.ledger_events where organization_id = $1)::int as events,
      (select count(*) from app_public.account_daily_totals where organization_id = $1)::int as totals`, [gone.organizationId]);
    expect(rows[0]).toEqual({ events: 0, totals: 0 });
  });
});
