import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTenant, dataOf, errorOf, startHarness, type Harness, type Tenant } from "./helpers/harness.js";

let h: Harness;
let a: Tenant;
let b: Tenant;
beforeAll(async () => {
  h = await startHarness();
  a = await createTenant(h);
  b = await createTenant(h);
});
afterAll(() => h?.close());

const ACCOUNT = "id name accountType classification subType lastFour parentId currentBalance active taxCode { id code name } created updated";
const CREATE = `mutation($o: UUID!, $name: String!, $taxCodeId: UUID, $accountType: String, $classification: String, $subType: String, $lastFour: String, $parentId: UUID) {
  createAccount(organizationId: $o, name: $name, taxCodeId: $taxCodeId, accountType: $accountType, classification: $classification,
    subType: $subType, lastFour: $lastFour, parentId: $parentId) { success error account { ${ACCOUNT} } } }`;
const UPDATE = `mutation($o: UUID!, $id: UUID!, $name: String, $lastFour: String, $parentId: UUID, $clearParent: Boolean, $taxCodeId: UUID, $subType: String) {
  updateAccount(organizationId: $o, accountId: $id, name: $name, lastFour: $lastFour, parentId: $parentId, clearParent: $clearParent,
    taxCodeId: $taxCodeId, subType: $subType) { success error account { ${ACCOUNT} } } }`;
const LIST = `query($o: UUID!, $limit: Int, $offset: Int, $search: String, $sortBy: String, $sortDir: String, $active: Boolean, $classification: String) {
  listAccounts(organizationId: $o, limit: $limit, offset: $offset, search: $search, sortBy: $sortBy, sortDir: $sortDir, active: $active,
    classification: $classification) { totalCount pageSize offset items { ${ACCOUNT} } } }`;
const BATCH = `mutation($o: UUID!, $items: [AccountInput!]!) { batchCreateAccounts(organizationId: $o, items: $items) { created errors { index error } } }`;

const create = async (t: Tenant, vars: Record<string, unknown>) => dataOf(await h.gql(CREATE, { o: t.organizationId, ...vars }, t.apiKey), "createAccount");
const update = async (t: Tenant, vars: Record<string, unknown>) => dataOf(await h.gql(UPDATE, { o: t.organizationId, ...vars }, t.apiKey), "updateAccount");
const list = async (t: Tenant, vars: Record<string, unknown> = {}) => dataOf(await h.gql(LIST, { o: t.organizationId, ...vars }, t.apiKey), "listAccounts");
const taxCodeId = async (code: string) => (await h.owner.query("select id from app_public.tax_codes where code = $1", [code])).rows[0].id as string;
const accountCount = async (t: Tenant) =>
  (await h.owner.query("select count(*)::int as n from app_public.accounts where organization_id = $1", [t.organizationId])).rows[0].n as number;

describe("starter chart", () => {
  it("a new organization has the eight starter accounts, each tied to its GIFI code", async () => {
    const t = await createTenant(h);
    const page = await list(t, { sortBy: "created" });
    expect(page.totalCount).toBe(8);
    const rows = page.items.map((x: any) => [x.name, x.accountType, x.classification, x.taxCode?.code, x.currentBalance, x.active]).sort();
    expect(rows).toEqual([
      ["Bank Fees & Charges", "expense", "expense", "8715", 0, true],
      ["Chequing", "bank", "asset", "1002", 0, true],
      ["Cost of Goods Sold", "cost_of_goods_sold", "expense", "8320", 0, true],
      ["GST/HST Payable", "tax_payable", "liability", "2680", 0, true],
      ["Owner's Equity", "equity", "equity", "3540", 0, true],
      ["Processor Clearing", "clearing", "asset", "1007", 0, true],
      ["Retained Earnings", "retained_earnings", "equity", "3600", 0, true],
      ["Sales Revenue", "income", "revenue", "8000", 0, true],
    ]);
    for (const x of page.items) {
      expect(x.created).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(x.taxCode.name.length).toBeGreaterThan(0);
    }
  });
});

describe("createAccount", () => {
  it("from a GIFI tax code: type and classification follow from the code", async () => {
    const r = await create(a, { name: "Office Expenses", taxCodeId: await taxCodeId("8810"), lastFour: "1234" });
    expect(r).toMatchObject({ success: true, error: null, account: {
      name: "Office Expenses", accountType: "expense", classification: "expense", subType: "", lastFour: "1234",
      parentId: null, currentBalance: 0, active: true, taxCode: { code: "8810" } } });
  });

  it("from accountType + classification, and with a tax code of the same classification", async () => {
    const r = await create(a, { name: "Business Visa", accountType: "credit_card", classification: "liability", subType: "card" });
    expect(r).toMatchObject({ success: true, account: { accountType: "credit_card", classification: "liability", subType: "card", taxCode: null } });
    const both = await create(a, { name: "Amex", accountType: "credit_card", classification: "liability", taxCodeId: await taxCodeId("2620") });
    expect(both).toMatchObject({ success: true, account: { accountType: "credit_card", taxCode: { code: "2620" } } });
  });

  it.each([
    [{ name: "No Shape" }, "Give either taxCodeId, or accountType and classification."],
    [{ name: "Half Shape", accountType: "expense" }, "Give either taxCodeId, or accountType and classification."],
    [{ name: "  ", accountType: "expense", classification: "expense" }, "Name is required."],
    [{ name: "Bad Class", accountType: "expense", classification: "costs" }, "Classification must be one of: asset, liability, equity, revenue, expense."],
    [{ name: "Bad Four", accountType: "bank", classification: "asset", lastFour: "12a4" }, "lastFour must be exactly 4 digits."],
    [{ name: "Unknown Parent", accountType: "bank", classification: "asset", parentId: "00000000-0000-4000-8000-000000000000" }, "Parent account not found."],
    [{ name: "Unknown Code", taxCodeId: "00000000-0000-4000-8000-000000000000" }, "Tax code not found."],
  ])("refuses %j", async (vars, error) => {
    expect(await create(a, vars)).toEqual({ success: false, error, account: null });
  });

  it("refuses an unknown account type, listing the allowed ones, and a total tax code", async () => {
    const r = await create(a, { name: "Bad Type", accountType: "total", classification: "asset" });
    expect(r.success).toBe(false);
    expect(r.error).toMatch(/^Account type "total" is not allowed\. Allowed types: accounts_payable, .*bank.*clearing.*credit_card.*\.$/);
    expect((await create(a, { name: "Total", taxCodeId: await taxCodeId("1599") })).error)
      .toBe("Tax code 1599 is a computed total and cannot be used for an account.");
    expect((await create(a, { name: "Mismatch", accountType: "bank", classification: "asset", taxCodeId: await taxCodeId("8715") })).error)
      .toBe("Tax code 8715 is for expense accounts, not asset.");
  });

  it("names are unique per organization, case-insensitively; another organization may reuse one", async () => {
    expect(await create(a, { name: "chequing", accountType: "bank", classification: "asset" }))
      .toEqual({ success: false, error: "Account with this name already exists.", account: null });
    expect((await create(b, { name: "Office Expenses", accountType: "expense", classification: "expense" })).success).toBe(true);
  });

  it("two concurrent creates of the same name in different case: one succeeds, the other gets the contract's message", async () => {
    for (let round = 0; round < 5; round++) {
      const name = `Concurrent ${round}`;
      const results = await Promise.all([
        create(a, { name, accountType: "expense", classification: "expense" }),
        create(a, { name: name.toUpperCase(), accountType: "expense", classification: "expense" }),
      ]);
      expect(results.filter((r) => r.success)).toHaveLength(1);
      expect(results.filter((r) => !r.success)).toEqual([{ success: false, error: "Account with this name already exists.", account: null }]);
      const { rows } = await h.owner.query("select count(*)::int as n from app_public.accounts where organization_id = $1 and lower(name) = lower($2)",
        [a.organizationId, name]);
      expect(rows[0].n).toBe(1);
    }
  });
});

describe("sub-accounts and updateAccount", () => {
  it("a sub-account has its parent's classification; parents never form a cycle", async () => {
    const top = (await create(a, { name: "Vehicles", accountType: "expense", classification: "expense" })).account;
    const mid = (await create(a, { name: "Fuel", accountType: "expense", classification: "expense", parentId: top.id })).account;
    const leaf = (await create(a, { name: "Diesel", accountType: "expense", classification: "expense", parentId: mid.id })).account;
    expect(mid.parentId).toBe(top.id);
    expect((await create(a, { name: "Car Loan", accountType: "long_term_liability", classification: "liability", parentId: top.id })).error)
      .toBe("A sub-account must have the classification of its parent (expense).");
    const cycle = "An account cannot be placed under itself or one of its own sub-accounts.";
    expect(await update(a, { id: top.id, parentId: leaf.id })).toEqual({ success: false, error: cycle, account: null });
    expect(await update(a, { id: top.id, parentId: top.id })).toEqual({ success: false, error: cycle, account: null });
    // Moving the leaf to the top and clearing a parent are fine.
    expect((await update(a, { id: leaf.id, parentId: top.id })).account.parentId).toBe(top.id);
    expect((await update(a, { id: mid.id, clearParent: true })).account.parentId).toBeNull();
    expect((await update(a, { id: top.id, parentId: mid.id })).account.parentId).toBe(mid.id);
  });

  it("concurrent moves cannot close a loop", async () => {
    const x = (await create(a, { name: "Loop X", accountType: "expense", classification: "expense" })).account;
    const y = (await create(a, { name: "Loop Y", accountType: "expense", classification: "expense" })).account;
    const results = await Promise.all([update(a, { id: x.id, parentId: y.id }), update(a, { id: y.id, parentId: x.id })]);
    expect(results.filter((r) => r.success)).toHaveLength(1);
    const { rows } = await h.owner.query("select count(*)::int as n from app_public.accounts where id = any($1) and parent_id is not null", [[x.id, y.id]]);
    expect(rows[0].n).toBe(1);
  });

  it("changes name, lastFour, tax code and subType; refuses duplicates and other organizations' accounts", async () => {
    const acct = (await create(a, { name: "Old Name", accountType: "bank", classification: "asset", lastFour: "1111" })).account;
    const r = await update(a, { id: acct.id, name: "New Name", lastFour: "", taxCodeId: await taxCodeId("1002"), subType: "savings" });
    expect(r).toMatchObject({ success: true, account: { name: "New Name", lastFour: null, subType: "savings", taxCode: { code: "1002" }, accountType: "bank" } });
    expect(r.account.updated >= acct.updated).toBe(true);
    expect((await update(a, { id: acct.id, name: "CHEQUING" })).error).toBe("Account with this name already exists.");
    expect((await update(a, { id: acct.id, taxCodeId: await taxCodeId("8715") })).error).toBe("Tax code 8715 is for expense accounts, not asset.");
    expect((await update(a, { id: acct.id, lastFour: "12345" })).error).toBe("lastFour must be exactly 4 digits.");
    expect(await update(b, { id: acct.id, name: "Stolen" })).toEqual({ success: false, error: "Account not found.", account: null });
    expect((await update(a, { id: acct.id })).account.name).toBe("New Name");
  });

  it("deactivates and reactivates; the list can filter on active", async () => {
    const acct = (await create(a, { name: "Seasonal", accountType: "expense", classification: "expense" })).account;
    const M = (op: string) => `mutation($o: UUID!, $id: UUID!) { ${op}(organizationId: $o, accountId: $id) { success error account { id active } } }`;
    expect(dataOf(await h.gql(M("deactivateAccount"), { o: a.organizationId, id: acct.id }, a.apiKey), "deactivateAccount"))
      .toEqual({ success: true, error: null, account: { id: acct.id, active: false } });
    expect((await list(a, { active: false, limit: 200 })).items.map((x: any) => x.id)).toContain(acct.id);
    expect((await list(a, { active: true, limit: 200 })).items.map((x: any) => x.id)).not.toContain(acct.id);
    expect(dataOf(await h.gql(M("reactivateAccount"), { o: a.organizationId, id: acct.id }, a.apiKey), "reactivateAccount").account.active).toBe(true);
    expect(dataOf(await h.gql(M("deactivateAccount"), { o: b.organizationId, id: acct.id }, b.apiKey), "deactivateAccount"))
      .toEqual({ success: false, error: "Account not found.", account: null });
  });
});

describe("batchCreateAccounts", () => {
  it("500 items with some bad ones: exactly the good ones are created and errors name exactly the bad indexes", async () => {
    const t = await createTenant(h);
    const parent = (await create(t, { name: "Parent Expense", accountType: "expense", classification: "expense" })).account;
    const items: Record<string, unknown>[] = Array.from({ length: 500 }, (_, i) => ({
      name: `Batch Account ${i}`, accountType: "expense", classification: "expense", ...(i % 7 === 0 ? { parentId: parent.id } : {}),
    }));
    const bad: Record<number, string> = {
      3: "Account with this name already exists.", 42: "Account with this name already exists.",
      77: "Parent account not found.", 150: "not allowed", 333: "Classification must be one of", 499: "Name is required.",
      250: "Account with this name already exists.",
    };
    items[3] = { name: "batch account 0", accountType: "expense", classification: "expense" }; // duplicate of item 0, other case
    items[42] = { name: "CHEQUING", accountType: "bank", classification: "asset" };           // duplicate of a starter account
    items[77] = { name: "Orphan", accountType: "expense", classification: "expense", parentId: "00000000-0000-4000-8000-000000000000" };
    items[150] = { name: "Bad Type", accountType: "nonsense", classification: "expense" };
    items[333] = { name: "Bad Class", accountType: "expense", classification: "nonsense" };
    items[499] = { name: " ", accountType: "expense", classification: "expense" };
    items[250] = { name: "Batch Account 249", accountType: "expense", classification: "expense" }; // duplicate of an earlier item
    const before = await accountCount(t);
    const r = dataOf(await h.gql(BATCH, { o: t.organizationId, items }, t.apiKey), "batchCreateAccounts");
    expect(r.created).toBe(493);
    expect(r.errors.map((e: any) => e.index)).toEqual([3, 42, 77, 150, 250, 333, 499]);
    for (const e of r.errors) expect(e.error).toContain(bad[e.index]);
    expect(await accountCount(t)).toBe(before + 493);
    const { rows } = await h.owner.query("select name from app_public.accounts where organization_id = $1 and name like 'Batch Account %'", [t.organizationId]);
    const expected = items.filter((_, i) => !(i in bad)).map((x) => x.name);
    expect(rows.map((x) => x.name).sort()).toEqual([...expected].sort());
    const { rows: kids } = await h.owner.query("select count(*)::int as n from app_public.accounts where parent_id = $1", [parent.id]);
    expect(kids[0].n).toBe(items.filter((x, i) => !(i in bad) && x.parentId === parent.id).length);
  });

  it("501 items: a BAD_USER_INPUT error and nothing is created", async () => {
    const t = await createTenant(h);
    const before = await accountCount(t);
    const items = Array.from({ length: 501 }, (_, i) => ({ name: `Too Many ${i}`, accountType: "expense", classification: "expense" }));
    const res = await h.gql(BATCH, { o: t.organizationId, items }, t.apiKey);
    expect(res.status).toBe(200);
    expect(res.body.data).toBeNull();
    expect(errorOf(res)).toEqual({ message: "A batch holds at most 500 items (got 501); nothing was created.", code: "BAD_USER_INPUT" });
    expect(await accountCount(t)).toBe(before);
  });

  it("an empty batch creates nothing; another organization's id as parent is unknown", async () => {
    expect(dataOf(await h.gql(BATCH, { o: a.organizationId, items: [] }, a.apiKey), "batchCreateAccounts")).toEqual({ created: 0, errors: [] });
    const bParent = (await list(b, { search: "chequing" })).items[0].id;
    expect(dataOf(await h.gql(BATCH, { o: a.organizationId, items: [{ name: "Sneaky", accountType: "bank", classification: "asset", parentId: bParent }] }, a.apiKey),
      "batchCreateAccounts")).toEqual({ created: 0, errors: [{ index: 0, error: "Parent account not found." }] });
  });
});

describe("listAccounts", () => {
  const SORTS = ["name", "accountType", "classification", "subType", "currentBalance", "active", "created", "updated"];
  let t: Tenant;
  beforeAll(async () => {
    t = await createTenant(h);
    // Ties on every key: same types, classifications, subTypes and balances across several accounts.
    const items = Array.from({ length: 13 }, (_, i) => ({
      name: `Paging ${String.fromCharCode(97 + (i % 5))} ${i}`, accountType: i % 2 ? "expense" : "bank",
      classification: i % 2 ? "expense" : "asset", subType: i % 3 ? "x" : "",
    }));
    expect(dataOf(await h.gql(BATCH, { o: t.organizationId, items }, t.apiKey), "batchCreateAccounts").created).toBe(13);
    const ids = (await list(t, { limit: 200 })).items.map((x: any) => x.id);
    await h.owner.query("update app_public.accounts set active = false where id = any($1)", [ids.slice(0, 4)]);
    // Posted balances come from the ledger's app_private.account_balances; stand one in for this database.
    await h.owner.query(`create or replace function app_private.account_balances(org uuid, as_of date default current_date)
      returns table (account_id uuid, balance numeric) language sql stable as
      $$ select a.id, (case when a.name like 'Paging a %' then 12.50 when a.name like 'Paging b %' then -3.25 else 0 end)::numeric
           from app_public.accounts a where a.organization_id = org and a.name like 'Paging%' $$`);
  });

  it.each(SORTS.flatMap((s) => [[s, "asc"], [s, "desc"]]))("paging with limit 2 by %s %s returns every account exactly once", async (sortBy, sortDir) => {
    const all = await list(t, { limit: 200, sortBy, sortDir });
    expect(all.totalCount).toBe(21);
    const seen: string[] = [];
    for (let offset = 0; ; offset += 2) {
      const page = await list(t, { limit: 2, offset, sortBy, sortDir });
      expect(page).toMatchObject({ totalCount: 21, pageSize: 2, offset });
      if (page.items.length === 0) break;
      seen.push(...page.items.map((x: any) => x.id));
    }
    expect(seen).toHaveLength(21);
    expect(new Set(seen).size).toBe(21);
    expect(seen).toEqual(all.items.map((x: any) => x.id));
    // The opposite direction is the exact reverse: ties are broken in the same direction.
    const reverse = await list(t, { limit: 200, sortBy, sortDir: sortDir === "asc" ? "desc" : "asc" });
    expect(reverse.items.map((x: any) => x.id)).toEqual([...seen].reverse());
  });

  it("sorts by currentBalance as a number from the posted balances", async () => {
    const page = await list(t, { limit: 200, sortBy: "currentBalance", sortDir: "desc" });
    const balances = page.items.map((x: any) => x.currentBalance);
    expect(balances.slice(0, 3)).toEqual([12.5, 12.5, 12.5]);
    expect(balances.at(-1)).toBe(-3.25);
    expect(balances.every((v: unknown) => typeof v === "number")).toBe(true);
  });

  it("defaults to name asc; search is a case-insensitive substring with literal % and _", async () => {
    const page = await list(t);
    expect(page.pageSize).toBe(25);
    expect(page.offset).toBe(0);
    const names = page.items.map((x: any) => x.name);
    expect(names).toEqual([...names].sort((p: string, q: string) => p.toLowerCase().localeCompare(q.toLowerCase())));
    expect((await list(t, { search: "PAGING A" })).totalCount).toBe(3);
    expect((await list(t, { search: "%" })).totalCount).toBe(0);
    expect((await list(t, { search: "_" })).totalCount).toBe(0);
    const pct = await create(t, { name: "100% Owner_Draw", accountType: "equity", classification: "equity" });
    expect((await list(t, { search: "0% owner_" })).items.map((x: any) => x.id)).toEqual([pct.account.id]);
    expect((await list(t, { classification: "equity" })).totalCount).toBe(3);
  });

  it("list arguments: limit clamp, errors for bad values, past the end is empty", async () => {
    expect((await list(t, { limit: 1000 })).pageSize).toBe(200);
    expect(await list(t, { offset: 500 })).toMatchObject({ items: [], totalCount: 22, offset: 500 });
    expect(errorOf(await h.gql(LIST, { o: t.organizationId, limit: 0 }, t.apiKey))).toEqual({ message: "limit must be at least 1.", code: "BAD_USER_INPUT" });
    expect(errorOf(await h.gql(LIST, { o: t.organizationId, offset: -1 }, t.apiKey))).toEqual({ message: "offset must not be negative.", code: "BAD_USER_INPUT" });
    expect(errorOf(await h.gql(LIST, { o: t.organizationId, sortDir: "up" }, t.apiKey))).toEqual({ message: "sortDir must be one of: asc, desc.", code: "BAD_USER_INPUT" });
    expect(errorOf(await h.gql(LIST, { o: t.organizationId, sortBy: "balance" }, t.apiKey))).toEqual({
      message: "sortBy must be one of: name, accountType, classification, subType, currentBalance, active, created, updated.", code: "BAD_USER_INPUT" });
  });

  it("shows only the caller's organization; another organization's id is refused", async () => {
    const ids = new Set((await list(a, { limit: 200 })).items.map((x: any) => x.id));
    for (const x of (await list(t, { limit: 200 })).items) expect(ids.has(x.id)).toBe(false);
    expect(errorOf(await h.gql(LIST, { o: t.organizationId }, a.apiKey))).toEqual({ message: "API Key Not Authorized For This Organization.", code: "FORBIDDEN" });
  });
});
