import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTenant, dataOf, errorOf, startHarness, type Harness, type Tenant } from "./helpers/harness.js";

let h: Harness;
let a: Tenant;
let b: Tenant;
let fees: string;
let cogs: string;
let bFees: string;
beforeAll(async () => {
  h = await startHarness();
  a = await createTenant(h);
  b = await createTenant(h);
  const id = async (t: Tenant, name: string) =>
    (await h.owner.query("select id from app_public.accounts where organization_id = $1 and name = $2", [t.organizationId, name])).rows[0].id as string;
  fees = await id(a, "Bank Fees & Charges");
  cogs = await id(a, "Cost of Goods Sold");
  bFees = await id(b, "Bank Fees & Charges");
});
afterAll(() => h?.close());

const RULE = "id vendorPattern account { id name accountType active } matchCount created updated";
const CREATE = `mutation($o: UUID!, $p: String!, $c: UUID!) { createCategoryRule(organizationId: $o, vendorPattern: $p, categoryId: $c) { success error categoryRule { ${RULE} } } }`;
const UPDATE = `mutation($o: UUID!, $id: UUID!, $p: String, $c: UUID) { updateCategoryRule(organizationId: $o, categoryRuleId: $id, vendorPattern: $p, categoryId: $c) { success error categoryRule { ${RULE} } } }`;
const DELETE = `mutation($o: UUID!, $id: UUID!) { deleteCategoryRule(organizationId: $o, categoryRuleId: $id) { success error } }`;
const LIST = `query($o: UUID!, $limit: Int, $offset: Int, $search: String, $sortBy: String, $sortDir: String) {
  listCategoryRules(organizationId: $o, limit: $limit, offset: $offset, search: $search, sortBy: $sortBy, sortDir: $sortDir) { totalCount pageSize offset items { ${RULE} } } }`;

const create = async (t: Tenant, p: string, c: string) => dataOf(await h.gql(CREATE, { o: t.organizationId, p, c }, t.apiKey), "createCategoryRule");
const list = async (t: Tenant, vars: Record<string, unknown> = {}) => dataOf(await h.gql(LIST, { o: t.organizationId, ...vars }, t.apiKey), "listCategoryRules");

interface Subject { merchant: string; direction?: "in" | "out"; amount?: string; paymentAccountId?: string | null; eventType?: string }

/** The rule app_private.rule_classifications chooses for one event, as the API role with t's identity. */
async function chosen(t: Tenant, e: Subject | string): Promise<string | null> {
  const s: Subject = typeof e === "string" ? { merchant: e } : e;
  const c = await h.auth.connect();
  try {
    await c.query("begin");
    await c.query("select set_config('role', 'accounting_visitor', true), set_config('app.api_key_id', $1, true), set_config('app.organization_id', $2, true)",
      [t.apiKeyId, t.organizationId]);
    const { rows } = await c.query(`select c.rule_id from app_private.rule_classifications($1, array[row(gen_random_uuid(), $2, $3, $4::numeric,
        $5::uuid, $6, date '2026-03-01', null)::app_private.rule_subject]) c`,
      [t.organizationId, s.merchant, s.direction ?? (s.eventType === "income" ? "in" : "out"), s.amount ?? "10.00", s.paymentAccountId ?? null,
       s.eventType ?? "expense"]);
    return rows[0]?.rule_id ?? null;
  } finally {
    await c.query("rollback");
    c.release();
  }
}

describe("createCategoryRule", () => {
  it("creates a rule on an active account of the organization", async () => {
    const r = await create(a, "%stripe%", fees);
    expect(r).toMatchObject({ success: true, error: null, categoryRule: {
      vendorPattern: "%stripe%", account: { id: fees, name: "Bank Fees & Charges", accountType: "expense", active: true }, matchCount: 0 } });
  });

  it("refuses other organizations' and inactive accounts, duplicate and invalid patterns", async () => {
    expect(await create(a, "%other%", bFees)).toEqual({ success: false, error: "Category account not found.", categoryRule: null });
    const inactive = (await h.owner.query(`insert into app_public.accounts (organization_id, name, account_type, classification, active)
      values ($1, 'Old Category', 'expense', 'expense', false) returning id`, [a.organizationId])).rows[0].id;
    expect(await create(a, "%old%", inactive)).toEqual({ success: false, error: "Category account is inactive.", categoryRule: null });
    expect((await create(a, "%STRIPE%", fees)).error).toBe("A category rule with this pattern and these conditions already exists.");
    expect((await create(a, "  ", fees)).error).toBe("Vendor pattern is required.");
    expect((await create(a, "abc\\", fees)).error).toBe("Vendor pattern is not a valid ILIKE pattern.");
    expect((await create(a, "abc\\\\", fees)).success).toBe(true); // an escaped backslash is fine
    expect((await create(b, "%stripe%", bFees)).success).toBe(true);
  });
});

describe("updateCategoryRule and deleteCategoryRule", () => {
  it("changes pattern and account; deletes; other organizations see not found", async () => {
    const r = (await create(a, "uber%", fees)).categoryRule;
    const u = dataOf(await h.gql(UPDATE, { o: a.organizationId, id: r.id, p: "uber eats%", c: cogs }, a.apiKey), "updateCategoryRule");
    expect(u).toMatchObject({ success: true, categoryRule: { id: r.id, vendorPattern: "uber eats%", account: { id: cogs } } });
    expect(dataOf(await h.gql(UPDATE, { o: a.organizationId, id: r.id, p: "%Stripe%" }, a.apiKey), "updateCategoryRule").error)
      .toBe("A category rule with this pattern and these conditions already exists.");
    expect(dataOf(await h.gql(UPDATE, { o: b.organizationId, id: r.id, p: "x" }, b.apiKey), "updateCategoryRule"))
      .toEqual({ success: false, error: "Category rule not found.", categoryRule: null });
    expect(dataOf(await h.gql(DELETE, { o: b.organizationId, id: r.id }, b.apiKey), "deleteCategoryRule")).toEqual({ success: false, error: "Category rule not found." });
    expect(dataOf(await h.gql(DELETE, { o: a.organizationId, id: r.id }, a.apiKey), "deleteCategoryRule")).toEqual({ success: true, error: null });
    expect(dataOf(await h.gql(DELETE, { o: a.organizationId, id: r.id }, a.apiKey), "deleteCategoryRule").success).toBe(false);
  });
});

describe("listCategoryRules", () => {
  let t: Tenant;
  let account: string;
  beforeAll(async () => {
    t = await createTenant(h);
    account = (await h.owner.query("select id from app_public.accounts where organization_id = $1 and name = 'Cost of Goods Sold'", [t.organizationId])).rows[0].id;
    for (const [p, n] of [["Beta%", 3], ["alpha%", 1], ["%gamma%", 3], ["100!%_off", 0], ["Delta", 1]] as const) {
      const r = (await create(t, p, account)).categoryRule;
      await h.owner.query("update app_public.category_rules set match_count = $2 where id = $1", [r.id, n]);
    }
  });

  it("sorts by vendorPattern (default, case-insensitive) and by matchCount; search is literal", async () => {
    expect((await list(t)).items.map((x: any) => x.vendorPattern)).toEqual(["%gamma%", "100!%_off", "alpha%", "Beta%", "Delta"]);
    const byCount = await list(t, { sortBy: "matchCount", sortDir: "desc" });
    expect(byCount.items.map((x: any) => [x.vendorPattern, x.matchCount])).toEqual([["Delta", 1], ["alpha%", 1], ["Beta%", 3], ["%gamma%", 3], ["100!%_off", 0]].sort((p: any, q: any) => q[1] - p[1] || q[0].toLowerCase().localeCompare(p[0].toLowerCase())));
    expect((await list(t, { search: "%_" })).items.map((x: any) => x.vendorPattern)).toEqual(["100!%_off"]);
    expect((await list(t, { search: "ALPHA" })).totalCount).toBe(1);
    const seen: string[] = [];
    for (let offset = 0; offset < 6; offset += 2) seen.push(...(await list(t, { limit: 2, offset, sortBy: "matchCount" })).items.map((x: any) => x.id));
    expect(new Set(seen).size).toBe(5);
    expect(errorOf(await h.gql(LIST, { o: t.organizationId, sortBy: "pattern" }, t.apiKey)).message).toBe("sortBy must be one of: vendorPattern, matchCount, created, updated, priority.");
  });
});

describe("rule_classifications: which rule applies", () => {
  it("longest matching pattern wins, then the oldest; inactive accounts' rules never match; other organizations' rules never", async () => {
    const t = await createTenant(h);
    const acct = async (name: string) =>
      (await h.owner.query("select id from app_public.accounts where organization_id = $1 and name = $2", [t.organizationId, name])).rows[0].id as string;
    const s = (await h.owner.query(`insert into app_public.accounts (organization_id, name, account_type, classification)
      values ($1, 'Office Supplies', 'expense', 'expense') returning id`, [t.organizationId])).rows[0].id as string;
    const [f, c] = [await acct("Bank Fees & Charges"), await acct("Cost of Goods Sold")];
    const r1 = (await create(t, "%coffee%", f)).categoryRule;
    const r2 = (await create(t, "%tim hortons%", c)).categoryRule;
    const r3 = (await create(t, "tim hortons %", s)).categoryRule; // as long as r2, created later
    expect(await chosen(t, "Starbucks Coffee #12")).toBe(r1.id);
    expect(await chosen(t, "TIM HORTONS COFFEE")).toBe(r2.id);
    expect(await chosen(t, "Nothing Here")).toBeNull();
    await h.owner.query("update app_public.accounts set active = false where id = $1", [c]);
    expect(await chosen(t, "TIM HORTONS COFFEE")).toBe(r3.id);
    await h.owner.query("update app_public.accounts set active = false where id = $1", [s]);
    expect(await chosen(t, "TIM HORTONS COFFEE")).toBe(r1.id);
    expect(await chosen(a, "TIM HORTONS COFFEE")).toBeNull();
  });
});


describe("rules with conditions, outcomes and an order", () => {
  let t: Tenant;
  const acc: Record<string, string> = {};
  const rule = async (vars: Record<string, unknown>) => {
    const r = dataOf(await h.gql(`mutation($o: UUID!, $p: String!, $c: UUID, $priority: Int, $direction: String, $min: String, $max: String,
        $pay: UUID, $contact: UUID, $tax: String, $splits: [CategoryRuleSplitInput!]) {
      createCategoryRule(organizationId: $o, vendorPattern: $p, categoryId: $c, priority: $priority, direction: $direction,
        amountMin: $min, amountMax: $max, paymentAccountId: $pay, contactId: $contact, taxCode: $tax, splits: $splits) {
        success error categoryRule { ${RULE} priority direction amountMin amountMax paymentAccount { id } contact { id } taxCode
          splits { category { id } percent taxCode memo } } } }`, { o: t.organizationId, ...vars }, t.apiKey), "createCategoryRule");
    if (!r.success) throw new Error(r.error);
    return r.categoryRule;
  };
  beforeAll(async () => {
    t = await createTenant(h);
    for (const name of ["Meals", "Office", "Travel"]) {
      acc[name] = (await h.owner.query(`insert into app_public.accounts (organization_id, name, account_type, classification)
        values ($1, $2, 'expense', 'expense') returning id`, [t.organizationId, name])).rows[0].id;
    }
    for (const name of ["Chequing", "Sales Revenue", "Cost of Goods Sold"]) {
      acc[name] = (await h.owner.query("select id from app_public.accounts where organization_id = $1 and name = $2", [t.organizationId, name])).rows[0].id;
    }
  });

  it("priority first, then the longest pattern, then the oldest; amount, direction and payment account conditions", async () => {
    const r: Record<string, string> = {};
    r.A = (await rule({ p: "%coffee%", c: acc.Meals })).id;
    r.B = (await rule({ p: "%coffee%", c: acc.Office, priority: 50, min: "100" })).id;
    r.C = (await rule({ p: "starbucks coffee%", c: acc.Travel })).id;
    r.D = (await rule({ p: "%coffee%", c: acc["Sales Revenue"], direction: "in" })).id;
    r.E = (await rule({ p: "%tea%", c: acc.Meals })).id;
    r.F = (await rule({ p: "%te_%", c: acc.Office })).id;
    r.G = (await rule({ p: "%hardware%", c: acc.Office, max: "50.00" })).id;
    r.H = (await rule({ p: "%fuel%", c: acc.Travel, pay: acc.Chequing })).id;
    const cases: [Subject, string | null][] = [
      [{ merchant: "Joe's Coffee", amount: "12.00" }, "A"],
      [{ merchant: "Joe's Coffee", amount: "100.00" }, "B"], // priority 50 before 100; amountMin inclusive
      [{ merchant: "Joe's Coffee", amount: "99.99" }, "A"],
      [{ merchant: "STARBUCKS COFFEE #9", amount: "12.00" }, "C"], // same priority as A, longer pattern
      [{ merchant: "Starbucks Coffee #9", amount: "150.00" }, "B"], // priority before length
      [{ merchant: "Coffee Refund", amount: "5.00", eventType: "income" }, "D"], // money in
      [{ merchant: "Coffee Beans", amount: "5.00", direction: "in", eventType: "transfer" }, null], // D's revenue fits no transfer
      [{ merchant: "Green Tea House" }, "E"], // as long as F, older
      [{ merchant: "Hardware Store", amount: "50.00" }, "G"], // amountMax inclusive
      [{ merchant: "Hardware Store", amount: "50.01" }, null],
      [{ merchant: "Shell Fuel", paymentAccountId: acc.Chequing }, "H"],
      [{ merchant: "Shell Fuel" }, null],
      [{ merchant: "Nothing" }, null],
    ];
    const got = await Promise.all(cases.map(([s]) => chosen(t, s)));
    expect(got.map((id) => id && Object.keys(r).find((k) => r[k] === id))).toEqual(cases.map(([, want]) => want));
  });

  it("an import and createLedgerEvent apply the same rule, with its contact, tax code and splits", async () => {
    const u = await createTenant(h);
    const meals = (await h.owner.query(`insert into app_public.accounts (organization_id, name, account_type, classification)
      values ($1, 'Meals', 'expense', 'expense') returning id`, [u.organizationId])).rows[0].id;
    const cogs = (await h.owner.query("select id from app_public.accounts where organization_id = $1 and name = 'Cost of Goods Sold'", [u.organizationId])).rows[0].id;
    const chequing = (await h.owner.query("select id from app_public.accounts where organization_id = $1 and name = 'Chequing'", [u.organizationId])).rows[0].id;
    const contact = (await h.owner.query(`insert into app_public.contacts (organization_id, display_name, contact_type)
      values ($1, 'Sysco', 'vendor') returning id`, [u.organizationId])).rows[0].id;
    const mk = (vars: Record<string, unknown>) => h.gql(`mutation($o: UUID!, $p: String!, $c: UUID, $tax: String, $contact: UUID, $splits: [CategoryRuleSplitInput!], $min: String) {
      createCategoryRule(organizationId: $o, vendorPattern: $p, categoryId: $c, taxCode: $tax, contactId: $contact, splits: $splits, amountMin: $min) { success error } }`,
      { o: u.organizationId, ...vars }, u.apiKey);
    expect(dataOf(await mk({ p: "sysco%", c: cogs, tax: "HST_ON", contact }), "createCategoryRule").success).toBe(true);
    expect(dataOf(await mk({ p: "%restaurant%", splits: [{ categoryId: meals, percent: "60" }, { categoryId: cogs, percent: "40", taxCode: "HST_ON" }] }),
      "createCategoryRule").success).toBe(true);
    expect(dataOf(await mk({ p: "%bad%", splits: [{ categoryId: meals, percent: "60" }, { categoryId: cogs, percent: "30" }] }), "createCategoryRule").error)
      .toBe("Split percentages must add up to 100.");
    expect(dataOf(await mk({ p: "%bad%", c: meals, splits: [{ categoryId: meals, percent: "100" }] }), "createCategoryRule").error)
      .toBe("Give categoryId or splits, not both.");
    expect(dataOf(await mk({ p: "%bad%", c: meals, min: "-5" }), "createCategoryRule").error).toBe("amountMin must be a decimal string of at least 0.");
    // Four quarters of 0.02: the lines still add up to the amount (two of 0.01; the lines of 0.00 left out).
    expect(dataOf(await mk({ p: "tiny%", splits: [1, 2, 3, 4].map(() => ({ categoryId: meals, percent: "25" })) }), "createCategoryRule").success).toBe(true);
    const tiny = dataOf(await h.gql(`mutation($o: UUID!) { createLedgerEvent(organizationId: $o, merchantName: "Tiny", amount: "0.02",
      transactionDate: "2026-03-01") { success error eventId } }`, { o: u.organizationId }, u.apiKey), "createLedgerEvent");
    expect(tiny.success).toBe(true);
    expect((await h.owner.query("select splits from app_public.ledger_events where id = $1", [tiny.eventId])).rows[0].splits.map((l: any) => l.amount)).toEqual([0.01, 0.01]);
    const imported = dataOf(await h.gql(`mutation($o: UUID!, $p: UUID!, $rows: [BankStatementRowInput!]!) {
      importBankStatement(organizationId: $o, paymentAccountId: $p, rows: $rows) { success error importedCount } }`, { o: u.organizationId, p: chequing, rows: [
        { transactionDate: "2026-03-02", description: "SYSCO FOODS 0042", amount: "-113.00", eventType: "expense" },
        { transactionDate: "2026-03-03", description: "Luigi's Restaurant", amount: "-10.01", eventType: "expense" },
      ] }, u.apiKey), "importBankStatement");
    expect(imported).toMatchObject({ success: true, importedCount: 2 });
    const created = dataOf(await h.gql(`mutation($o: UUID!) { createLedgerEvent(organizationId: $o, merchantName: "Sysco Foods", amount: "226.00",
      transactionDate: "2026-03-04") { success eventId } }`, { o: u.organizationId }, u.apiKey), "createLedgerEvent");
    const { rows } = await h.owner.query(`select merchant_name, category_id, contact_id, tax_code, tax_amount::text, splits
      from app_public.ledger_events where organization_id = $1 and merchant_name <> 'Tiny' order by transaction_date`, [u.organizationId]);
    expect(rows[0]).toMatchObject({ category_id: cogs, contact_id: contact, tax_code: "HST_ON", tax_amount: "13.00" });
    expect(rows[1].splits.map((s: any) => [s.category_id, s.amount, s.tax_amount])).toEqual([[meals, 6.01, 0], [cogs, 4, 0.46]]);
    expect(rows[1].category_id).toBe(meals);
    expect(rows[2]).toMatchObject({ merchant_name: "Sysco Foods", category_id: cogs, contact_id: contact, tax_code: "HST_ON", tax_amount: "26.00" });
    expect(created.success).toBe(true);
    const { rows: counts } = await h.owner.query("select vendor_pattern, match_count from app_public.category_rules where organization_id = $1 order by 1", [u.organizationId]);
    expect(counts).toEqual([{ vendor_pattern: "%restaurant%", match_count: 1 }, { vendor_pattern: "sysco%", match_count: 2 }, { vendor_pattern: "tiny%", match_count: 1 }]);
  });

  it("a preview writes nothing and lists exactly what applyCategoryRule changes; confirmed events are never touched", async () => {
    const ev = async (merchant: string, amount: string, category?: string, confirm = false) => {
      const id = dataOf(await h.gql(`mutation($o: UUID!, $m: String!, $a: String!) { createLedgerEvent(organizationId: $o, merchantName: $m, amount: $a,
        transactionDate: "2026-04-01") { eventId } }`, { o: t.organizationId, m: merchant, a: amount }, t.apiKey), "createLedgerEvent").eventId;
      if (category) {
        expect(dataOf(await h.gql(`mutation($o: UUID!, $e: UUID!, $c: UUID, $p: UUID) { updateStagedEntry(organizationId: $o, eventId: $e, categoryId: $c, paymentId: $p) { success } }`,
          { o: t.organizationId, e: id, c: category, p: acc.Chequing }, t.apiKey), "updateStagedEntry").success).toBe(true);
      }
      if (confirm) {
        expect(dataOf(await h.gql(`mutation($o: UUID!, $e: UUID!) { confirmLedgerEvent(organizationId: $o, eventId: $e) { success } }`,
          { o: t.organizationId, e: id }, t.apiKey), "confirmLedgerEvent").success).toBe(true);
      }
      return id as string;
    };
    const waiting = await ev("UBER *TRIP 1", "20.00");
    const classified = await ev("UBER *TRIP 2", "35.00", acc["Cost of Goods Sold"]);
    const confirmed = await ev("UBER *TRIP 3", "15.00", acc["Cost of Goods Sold"], true);
    const other = await ev("Lyft", "10.00");
    const PREVIEW = `query($o: UUID!, $id: UUID, $p: String, $c: UUID) { previewCategoryRule(organizationId: $o, categoryRuleId: $id, vendorPattern: $p, categoryId: $c) {
      totalCount changes { event { id status category { id } } after { category { id name } taxCode contact { id } } } } }`;
    const snapshot = async () => (await h.owner.query(`select (select jsonb_agg(e order by e.id) from app_public.ledger_events e where e.organization_id = $1) events,
      (select count(*) from app_public.ledger_event_audit a where a.organization_id = $1) audit,
      (select count(*) from app_public.category_rules r where r.organization_id = $1) rules`, [t.organizationId])).rows[0];
    const before = await snapshot();
    const preview = dataOf(await h.gql(PREVIEW, { o: t.organizationId, p: "uber%", c: acc.Travel }, t.apiKey), "previewCategoryRule");
    expect(await snapshot()).toEqual(before);
    expect(preview.totalCount).toBe(2);
    expect(preview.changes.map((c: any) => c.event.id).sort()).toEqual([waiting, classified].sort());
    expect(preview.changes.every((c: any) => c.after.category.id === acc.Travel && c.after.category.name === "Travel")).toBe(true);

    // Created: the rule classifies what waits with no category (the waiting one) at once.
    const created = await rule({ p: "uber%", c: acc.Travel });
    expect(created.matchCount).toBe(1);
    const again = dataOf(await h.gql(PREVIEW, { o: t.organizationId, id: created.id }, t.apiKey), "previewCategoryRule");
    expect(again.changes.map((c: any) => [c.event.id, c.event.category.id])).toEqual([[classified, acc["Cost of Goods Sold"]]]);
    const applied = dataOf(await h.gql(`mutation($o: UUID!, $id: UUID!) { applyCategoryRule(organizationId: $o, categoryRuleId: $id) {
      success error appliedCount categoryRule { matchCount } } }`, { o: t.organizationId, id: created.id }, t.apiKey), "applyCategoryRule");
    expect(applied).toMatchObject({ success: true, appliedCount: again.totalCount, categoryRule: { matchCount: 2 } });
    const { rows } = await h.owner.query("select id, status, category_id from app_public.ledger_events where id = any ($1)", [[waiting, classified, confirmed, other]]);
    const by = Object.fromEntries(rows.map((r: any) => [r.id, r]));
    expect(by[waiting].category_id).toBe(acc.Travel);
    expect(by[classified].category_id).toBe(acc.Travel);
    expect(by[confirmed]).toMatchObject({ status: "confirmed", category_id: acc["Cost of Goods Sold"] });
    expect(by[other].category_id).toBeNull();
    // Nothing left to change: the preview of the applied rule is empty, and applying again changes nothing.
    expect(dataOf(await h.gql(PREVIEW, { o: t.organizationId, id: created.id }, t.apiKey), "previewCategoryRule").totalCount).toBe(0);
  });
});

describe("suggestedCategory from confirmed history", () => {
  it("3 confirmations of one merchant give its category with its share; 2 give nothing; never applied", async () => {
    const u = await createTenant(h);
    const meals = (await h.owner.query(`insert into app_public.accounts (organization_id, name, account_type, classification)
      values ($1, 'Meals', 'expense', 'expense') returning id`, [u.organizationId])).rows[0].id;
    const office = (await h.owner.query(`insert into app_public.accounts (organization_id, name, account_type, classification)
      values ($1, 'Office', 'expense', 'expense') returning id`, [u.organizationId])).rows[0].id;
    const chequing = (await h.owner.query("select id from app_public.accounts where organization_id = $1 and name = 'Chequing'", [u.organizationId])).rows[0].id;
    const create = async (m: string) => dataOf(await h.gql(`mutation($o: UUID!, $m: String!) { createLedgerEvent(organizationId: $o, merchantName: $m, amount: "5.00",
      transactionDate: "2026-05-01") { eventId } }`, { o: u.organizationId, m }, u.apiKey), "createLedgerEvent").eventId as string;
    const book = async (m: string, category: string) => {
      const id = await create(m);
      await h.gql(`mutation($o: UUID!, $e: UUID!, $c: UUID, $p: UUID) { updateStagedEntry(organizationId: $o, eventId: $e, categoryId: $c, paymentId: $p) { success } }`,
        { o: u.organizationId, e: id, c: category, p: chequing }, u.apiKey);
      expect(dataOf(await h.gql(`mutation($o: UUID!, $e: UUID!) { confirmLedgerEvent(organizationId: $o, eventId: $e) { success error } }`,
        { o: u.organizationId, e: id }, u.apiKey), "confirmLedgerEvent").success).toBe(true);
    };
    const suggestion = async (id: string) => dataOf(await h.gql(`query($o: UUID!, $e: UUID!) { getLedgerEvent(organizationId: $o, eventId: $e) {
      category { id } suggestedCategory { account { id name } confidence basis } } }`, { o: u.organizationId, e: id }, u.apiKey), "getLedgerEvent");
    const target = await create("STARBUCKS #789");
    await book("STARBUCKS #123", meals);
    await book("Starbucks 456", meals);
    expect((await suggestion(target)).suggestedCategory).toBeNull();
    await book("starbucks   #123", meals);
    expect(await suggestion(target)).toEqual({ category: null, suggestedCategory: { account: { id: meals, name: "Meals" }, confidence: 1, basis: 3 } });
    await book("Starbucks Store 12", office);
    expect((await suggestion(target)).suggestedCategory).toEqual({ account: { id: meals, name: "Meals" }, confidence: 0.75, basis: 4 });
    // Payments of invoices (Accounts Receivable) are no category to suggest, nor part of the share.
    const ar = (await h.owner.query(`insert into app_public.accounts (organization_id, name, account_type, classification)
      values ($1, 'Accounts Receivable', 'accounts_receivable', 'asset') returning id`, [u.organizationId])).rows[0].id;
    await h.owner.query("insert into app_public.merchant_category_counts (organization_id, merchant, category_id, confirmations) values ($1, 'starbucks', $2, 10)", [u.organizationId, ar]);
    expect((await suggestion(target)).suggestedCategory).toEqual({ account: { id: meals, name: "Meals" }, confidence: 0.75, basis: 4 });
    await h.owner.query("delete from app_public.merchant_category_counts where category_id = $1", [ar]);
    // Another merchant and a classified event get none.
    expect((await suggestion(await create("Tim Hortons #1"))).suggestedCategory).toBeNull();
    const b2 = await create("Starbucks 999");
    await h.gql(`mutation($o: UUID!, $e: UUID!, $c: UUID) { updateStagedEntry(organizationId: $o, eventId: $e, categoryId: $c) { success } }`,
      { o: u.organizationId, e: b2, c: office }, u.apiKey);
    expect((await suggestion(b2)).suggestedCategory).toBeNull();
    // The counts as kept: Meals 3, Office 1.
    const { rows } = await h.owner.query(`select sum(confirmations)::int as confirmations from app_public.merchant_category_counts
      where organization_id = $1 group by category_id order by 1`, [u.organizationId]);
    expect(rows.map((r: any) => r.confirmations)).toEqual([1, 3]);
  });
});
