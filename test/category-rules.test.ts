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

/** app_private.best_category_rule as the API role with t's identity. */
async function best(t: Tenant, merchant: string): Promise<string | null> {
  const c = await h.auth.connect();
  try {
    await c.query("begin");
    await c.query("select set_config('role', 'accounting_visitor', true), set_config('app.api_key_id', $1, true), set_config('app.organization_id', $2, true)",
      [t.apiKeyId, t.organizationId]);
    return (await c.query("select app_private.best_category_rule($1, $2) as id", [t.organizationId, merchant])).rows[0].id;
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
    expect((await create(a, "%STRIPE%", fees)).error).toBe("A category rule with this pattern already exists.");
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
      .toBe("A category rule with this pattern already exists.");
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
    expect(errorOf(await h.gql(LIST, { o: t.organizationId, sortBy: "pattern" }, t.apiKey)).message).toBe("sortBy must be one of: vendorPattern, matchCount, created, updated.");
  });
});

describe("best_category_rule", () => {
  it("longest matching pattern wins, then the oldest; inactive accounts' rules never match; other organizations' rules never", async () => {
    const t = await createTenant(h);
    const acct = async (name: string) =>
      (await h.owner.query("select id from app_public.accounts where organization_id = $1 and name = $2", [t.organizationId, name])).rows[0].id as string;
    const [f, c, s] = [await acct("Bank Fees & Charges"), await acct("Cost of Goods Sold"), await acct("Sales Revenue")];
    const r1 = (await create(t, "%coffee%", f)).categoryRule;
    const r2 = (await create(t, "%tim hortons%", c)).categoryRule;
    const r3 = (await create(t, "tim hortons %", s)).categoryRule; // as long as r2, created later
    expect(await best(t, "Starbucks Coffee #12")).toBe(r1.id);
    expect(await best(t, "TIM HORTONS COFFEE")).toBe(r2.id);
    expect(await best(t, "Nothing Here")).toBeNull();
    await h.owner.query("update app_public.accounts set active = false where id = $1", [c]);
    expect(await best(t, "TIM HORTONS COFFEE")).toBe(r3.id);
    await h.owner.query("update app_public.accounts set active = false where id = $1", [s]);
    expect(await best(t, "TIM HORTONS COFFEE")).toBe(r1.id);
    expect(await best(a, "TIM HORTONS COFFEE")).toBeNull();
    // As A's API role, naming T's organization finds nothing (RLS).
    const c2 = await h.auth.connect();
    try {
      await c2.query("begin");
      await c2.query("select set_config('role', 'accounting_visitor', true), set_config('app.organization_id', $1, true)", [a.organizationId]);
      expect((await c2.query("select app_private.best_category_rule($1, 'Starbucks Coffee') as id", [t.organizationId])).rows[0].id).toBeNull();
    } finally {
      await c2.query("rollback");
      c2.release();
    }
  });
});
