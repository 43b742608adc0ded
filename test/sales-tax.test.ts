import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { call, CLASSIFY, CONFIRM, createEvent, GET, tenantWithAccounts, UPDATE, type Accounts } from "./ledger-fixtures.js";

let h: Harness;
let t: Tenant;
let acc: Accounts;
beforeAll(async () => {
  h = await startHarness();
  ({ t, acc } = await tenantWithAccounts(h, { "Office Supplies": ["expense", "expense"] }));
});
afterAll(() => h?.close());

const sql = async (text: string, values: unknown[] = []) => (await h.owner.query(text, values)).rows;

/** The tax updateStagedEntry puts in the tax account for a tax-included amount under a code. */
async function taxOf(amount: string, taxCode: string, eventType = "expense", transactionDate = "2026-03-01") {
  const eventId = await createEvent(h, t, { amount, eventType, transactionDate });
  const categoryId = eventType === "income" ? acc["Sales Revenue"] : acc["Office Supplies"];
  const r = await call(h, t, CLASSIFY, { eventId, categoryId, paymentId: acc["Chequing"], taxCode }, "updateStagedEntry");
  expect(r).toMatchObject({ success: true });
  return { eventId, taxAmount: (await call(h, t, GET, { eventId }, "getLedgerEvent")).taxAmount as string };
}

describe("rounding half to even", () => {
  it("sends an exact half cent to the even cent, either sign; anything else to the nearest", async () => {
    const cases: [string, string][] = [["0.045", "0.04"], ["0.015", "0.02"], ["-0.015", "-0.02"], ["-0.025", "-0.02"],
      ["0.0451", "0.05"], ["2.675", "2.68"], ["1.005", "1.00"], ["10", "10.00"], ["0.004999", "0.00"]];
    const rows = await sql("select v::text, app_private.round_half_even(v::numeric)::text as r from unnest($1::text[]) v", [cases.map((c) => c[0])]);
    expect(rows.map((r) => [r.v, r.r])).toEqual(cases);
  });
});

describe("the taxes inside a tax-included amount", () => {
  it("a combined code's taxes each on the price before tax: GST_QST on 114.98 is GST 5.00 and QST 9.98", async () => {
    const rows = await sql("select part, tax_type, recoverable, portion::text from app_private.tax_included_parts(114.98, 'GST_QST', '2026-03-01')");
    expect(rows).toEqual([
      { part: "GST", tax_type: "GST_HST", recoverable: true, portion: "5.00" },
      { part: "QST", tax_type: "QST", recoverable: true, portion: "9.98" },
    ]);
    expect(await sql("select count(*)::int n from app_private.tax_included_parts(100, 'ZERO', '2026-03-01')")).toEqual([{ n: 0 }]);
    expect(await sql("select count(*)::int n from app_private.tax_included_parts(100, 'EXEMPT', '2026-03-01')")).toEqual([{ n: 0 }]);
  });

  it("Nova Scotia's HST is 15% before 2025-04-01 and 14% from that day", async () => {
    const rows = await sql(`select d, (select portion::text from app_private.tax_included_parts(115.00, 'HST_NS', d::date)) p
      from unnest(array['2025-03-31', '2025-04-01']) d`);
    expect(rows).toEqual([{ d: "2025-03-31", p: "15.00" }, { d: "2025-04-01", p: "14.12" }]);
  });
});

describe("a tax code given to updateStagedEntry", () => {
  it("on a purchase, PST and RST stay in the expense: only GST/HST and QST go to the tax account", async () => {
    expect((await taxOf("107.00", "PST_BC")).taxAmount).toBe("0.00");
    expect((await taxOf("112.00", "GST_PST_BC")).taxAmount).toBe("5.00");
    expect((await taxOf("112.00", "GST_RST_MB")).taxAmount).toBe("5.00");
    expect((await taxOf("111.00", "GST_PST_SK")).taxAmount).toBe("5.00");
    expect((await taxOf("114.98", "GST_QST")).taxAmount).toBe("14.98");
    expect((await taxOf("113.00", "HST_ON")).taxAmount).toBe("13.00");
  });

  it("on a sale, all the tax collected goes to the tax account", async () => {
    expect((await taxOf("112.00", "GST_PST_BC", "income")).taxAmount).toBe("12.00");
    expect((await taxOf("107.00", "PST_BC", "income")).taxAmount).toBe("7.00");
  });

  it("rounds each tax half to even: GST on 0.56 under GST_PST_BC is exactly 0.025, booked 0.02", async () => {
    expect((await taxOf("0.56", "GST_PST_BC")).taxAmount).toBe("0.02");
  });

  it("follows the event's amount, type and date when they change", async () => {
    const { eventId } = await taxOf("115.00", "HST_NS", "expense", "2025-04-15");
    const get = async () => (await call(h, t, GET, { eventId }, "getLedgerEvent")).taxAmount;
    expect(await get()).toBe("14.12");
    await call(h, t, UPDATE, { eventId, transactionDate: "2025-03-15" }, "updateLedgerEvent");
    expect(await get()).toBe("15.00");
    await call(h, t, UPDATE, { eventId, amount: "230.00" }, "updateLedgerEvent");
    expect(await get()).toBe("30.00");
    // A purchase of PST_BC puts nothing in the tax account; made a sale, it collects 7.00, and the
    // tax account it now needs is given, so that it can be confirmed.
    const pst = (await taxOf("107.00", "PST_BC")).eventId;
    await call(h, t, UPDATE, { eventId: pst, eventType: "income" }, "updateLedgerEvent");
    await call(h, t, CLASSIFY, { eventId: pst, categoryId: acc["Sales Revenue"] }, "updateStagedEntry");
    expect(await call(h, t, GET, { eventId: pst }, "getLedgerEvent")).toMatchObject({ taxAmount: "7.00", taxAccount: { id: acc["GST/HST Payable"] } });
    expect(await call(h, t, CONFIRM, { eventId: pst }, "confirmLedgerEvent")).toMatchObject({ success: true });
  });

  it("a typed tax amount stays through an edit of anything else", async () => {
    const eventId = await createEvent(h, t, { amount: "113.00" });
    await call(h, t, CLASSIFY, { eventId, categoryId: acc["Office Supplies"], paymentId: acc["Chequing"], taxCode: "HST_ON", taxAmount: "12.50" }, "updateStagedEntry");
    await call(h, t, UPDATE, { eventId, memo: "printer paper" }, "updateLedgerEvent");
    expect(await call(h, t, GET, { eventId }, "getLedgerEvent")).toMatchObject({ taxAmount: "12.50", taxCode: "HST_ON" });
  });

  it("sale or purchase follows the category, not the way the money moved: a supplier's refund comes in", async () => {
    const eventId = await createEvent(h, t, { amount: "112.00" });
    // As a bank import writes it: an expense whose money came in.
    await h.owner.query("update app_public.ledger_events set direction = 'in' where id = $1", [eventId]);
    await call(h, t, CLASSIFY, { eventId, categoryId: acc["Office Supplies"], paymentId: acc["Chequing"], taxCode: "GST_PST_BC" }, "updateStagedEntry");
    expect((await call(h, t, GET, { eventId }, "getLedgerEvent")).taxAmount).toBe("5.00");
  });
});
