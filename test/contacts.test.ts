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

const CONTACT = "id contactType displayName email phone balance active created updated";
const CREATE = `mutation($o: UUID!, $contactType: String!, $displayName: String!, $email: String, $phone: String) {
  createContact(organizationId: $o, contactType: $contactType, displayName: $displayName, email: $email, phone: $phone) { success error contact { ${CONTACT} } } }`;
const UPDATE = `mutation($o: UUID!, $id: UUID!, $contactType: String, $displayName: String, $email: String, $phone: String) {
  updateContact(organizationId: $o, contactId: $id, contactType: $contactType, displayName: $displayName, email: $email, phone: $phone) { success error contact { ${CONTACT} } } }`;
const LIST = `query($o: UUID!, $limit: Int, $offset: Int, $search: String, $sortBy: String, $sortDir: String, $contactType: String, $active: Boolean) {
  listContacts(organizationId: $o, limit: $limit, offset: $offset, search: $search, sortBy: $sortBy, sortDir: $sortDir, contactType: $contactType, active: $active) {
    totalCount pageSize offset items { ${CONTACT} } } }`;
const BATCH = `mutation($o: UUID!, $items: [ContactInput!]!) { batchCreateContacts(organizationId: $o, items: $items) { created errors { index error } } }`;

const create = async (t: Tenant, vars: Record<string, unknown>) => dataOf(await h.gql(CREATE, { o: t.organizationId, ...vars }, t.apiKey), "createContact");
const update = async (t: Tenant, vars: Record<string, unknown>) => dataOf(await h.gql(UPDATE, { o: t.organizationId, ...vars }, t.apiKey), "updateContact");
const list = async (t: Tenant, vars: Record<string, unknown> = {}) => dataOf(await h.gql(LIST, { o: t.organizationId, ...vars }, t.apiKey), "listContacts");
const contactCount = async (t: Tenant) =>
  (await h.owner.query("select count(*)::int as n from app_public.contacts where organization_id = $1", [t.organizationId])).rows[0].n as number;

describe("createContact", () => {
  it("creates a vendor; email and phone are empty strings when absent and balance is a number", async () => {
    const r = await create(a, { contactType: "vendor", displayName: "  Staples  " });
    expect(r).toMatchObject({ success: true, error: null, contact: { contactType: "vendor", displayName: "Staples", email: "", phone: "", balance: 0, active: true } });
    expect(r.contact.created).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const c = await create(a, { contactType: "customer", displayName: "Acme Corp", email: "billing@acme.example", phone: "+1 (416) 555-0100" });
    expect(c.contact).toMatchObject({ email: "billing@acme.example", phone: "+1 (416) 555-0100" });
  });

  it("names are unique per organization and type, case-insensitively", async () => {
    expect(await create(a, { contactType: "vendor", displayName: "STAPLES" })).toEqual({ success: false, error: "Contact with this name already exists.", contact: null });
    expect((await create(a, { contactType: "customer", displayName: "Staples" })).success).toBe(true);
    expect((await create(b, { contactType: "vendor", displayName: "Staples" })).success).toBe(true);
  });

  it("concurrent creates of one name: exactly one succeeds", async () => {
    const rs = await Promise.all([create(a, { contactType: "vendor", displayName: "Racer" }), create(a, { contactType: "vendor", displayName: "racer" })]);
    expect(rs.filter((r) => r.success)).toHaveLength(1);
    expect(rs.find((r) => !r.success)?.error).toBe("Contact with this name already exists.");
  });

  it.each([
    [{ contactType: "supplier", displayName: "X" }, "Contact type must be vendor or customer."],
    [{ contactType: "vendor", displayName: "   " }, "Display name is required."],
    [{ contactType: "vendor", displayName: "Bad Mail", email: "not-an-email" }, "Email must look like an email address."],
    [{ contactType: "vendor", displayName: "Bad Phone", phone: "call me" }, "Phone must be 3 to 30 characters: digits, spaces, a leading + and ( ) - . only."],
  ])("refuses %j", async (vars, error) => {
    expect(await create(a, vars)).toEqual({ success: false, error, contact: null });
  });
});

describe("updateContact, deactivateContact", () => {
  it("changes fields, clears email with an empty string, refuses duplicates and other organizations' contacts", async () => {
    const c = (await create(a, { contactType: "vendor", displayName: "Old Vendor", email: "old@v.example" })).contact;
    const r = await update(a, { id: c.id, displayName: "New Vendor", phone: "555-0101" });
    expect(r.contact).toMatchObject({ displayName: "New Vendor", email: "old@v.example", phone: "555-0101" });
    expect((await update(a, { id: c.id, email: "" })).contact.email).toBe("");
    expect((await update(a, { id: c.id, displayName: "staples" })).error).toBe("Contact with this name already exists.");
    expect((await update(a, { id: c.id, contactType: "customer" })).contact.contactType).toBe("customer");
    expect((await update(a, { id: c.id, email: "nope" })).error).toBe("Email must look like an email address.");
    expect(await update(b, { id: c.id, displayName: "Mine" })).toEqual({ success: false, error: "Contact not found.", contact: null });
  });

  it("deactivates and reactivates", async () => {
    const c = (await create(a, { contactType: "customer", displayName: "Gone Customer" })).contact;
    const M = (op: string) => `mutation($o: UUID!, $id: UUID!) { ${op}(organizationId: $o, contactId: $id) { success error contact { id active } } }`;
    expect(dataOf(await h.gql(M("deactivateContact"), { o: a.organizationId, id: c.id }, a.apiKey), "deactivateContact"))
      .toEqual({ success: true, error: null, contact: { id: c.id, active: false } });
    expect((await list(a, { active: false })).items.map((x: any) => x.id)).toEqual([c.id]);
    expect(dataOf(await h.gql(M("reactivateContact"), { o: a.organizationId, id: c.id }, a.apiKey), "reactivateContact").contact.active).toBe(true);
    expect(dataOf(await h.gql(M("deactivateContact"), { o: b.organizationId, id: c.id }, b.apiKey), "deactivateContact").error).toBe("Contact not found.");
  });
});

describe("batchCreateContacts", () => {
  it("500 items with some bad ones: exactly the good ones are created and errors name exactly the bad indexes", async () => {
    const t = await createTenant(h);
    const items: Record<string, unknown>[] = Array.from({ length: 500 }, (_, i) => ({
      contactType: i % 2 ? "vendor" : "customer", displayName: `Batch Contact ${i}`, ...(i % 5 === 0 ? { email: `c${i}@example.test` } : {}),
    }));
    const bad: Record<number, string> = {
      10: "Contact with this name already exists.", 11: "Contact type must be vendor or customer.", 200: "Email must look like an email address.",
      321: "Display name is required.", 498: "Contact with this name already exists.",
    };
    items[10] = { contactType: "customer", displayName: "batch contact 0" };  // same type and name as item 0
    items[11] = { contactType: "partner", displayName: "Partner" };
    items[200] = { contactType: "vendor", displayName: "Bad Email", email: "x@" };
    items[321] = { contactType: "vendor", displayName: "" };
    items[498] = { contactType: "vendor", displayName: "BATCH CONTACT 497" }; // same type (vendor) as item 497
    items[499] = { contactType: "customer", displayName: "Batch Contact 497" }; // other type: fine
    const r = dataOf(await h.gql(BATCH, { o: t.organizationId, items }, t.apiKey), "batchCreateContacts");
    expect(r.created).toBe(495);
    expect(r.errors).toEqual(Object.entries(bad).map(([index, error]) => ({ index: Number(index), error })));
    expect(await contactCount(t)).toBe(495);
    const { rows } = await h.owner.query("select display_name from app_public.contacts where organization_id = $1", [t.organizationId]);
    expect(rows.map((x) => x.display_name).sort()).toEqual(items.filter((_, i) => !(i in bad)).map((x) => x.displayName).sort());
  });

  it("501 items: a BAD_USER_INPUT error and nothing is created", async () => {
    const t = await createTenant(h);
    const items = Array.from({ length: 501 }, (_, i) => ({ contactType: "vendor", displayName: `V ${i}` }));
    const res = await h.gql(BATCH, { o: t.organizationId, items }, t.apiKey);
    expect(res.body.data).toBeNull();
    expect(errorOf(res)).toEqual({ message: "A batch holds at most 500 items (got 501); nothing was created.", code: "BAD_USER_INPUT" });
    expect(await contactCount(t)).toBe(0);
  });
});

describe("listContacts", () => {
  let t: Tenant;
  beforeAll(async () => {
    t = await createTenant(h);
    const items = Array.from({ length: 9 }, (_, i) => ({
      contactType: i % 3 ? "vendor" : "customer", displayName: `Person ${String.fromCharCode(107 - i)}`, ...(i % 2 ? { email: `p${i % 4}@x.example` } : {}),
    }));
    items.push({ contactType: "vendor", displayName: "100%_Real Vendor" });
    expect(dataOf(await h.gql(BATCH, { o: t.organizationId, items }, t.apiKey), "batchCreateContacts").created).toBe(10);
  });

  it("defaults to displayName asc with the envelope", async () => {
    const page = await list(t);
    expect(page).toMatchObject({ totalCount: 10, pageSize: 25, offset: 0 });
    expect(page.items.map((x: any) => x.displayName)).toEqual(["100%_Real Vendor", ...["c", "d", "e", "f", "g", "h", "i", "j", "k"].map((c) => `Person ${c}`)]);
  });

  it.each(["displayName", "contactType", "email", "balance", "created", "updated"].flatMap((s) => [[s, "asc"], [s, "desc"]]))(
    "paging with limit 2 by %s %s returns every contact exactly once", async (sortBy, sortDir) => {
      const seen: string[] = [];
      for (let offset = 0; offset < 20; offset += 2) seen.push(...(await list(t, { limit: 2, offset, sortBy, sortDir })).items.map((x: any) => x.id));
      expect(seen).toHaveLength(10);
      expect(new Set(seen).size).toBe(10);
    });

  it("search (name and email, literal % and _), filters, errors", async () => {
    expect((await list(t, { search: "person J" })).items.map((x: any) => x.displayName)).toEqual(["Person j"]);
    expect((await list(t, { search: "p3@" })).totalCount).toBe(2);
    expect((await list(t, { search: "0%_r" })).items.map((x: any) => x.displayName)).toEqual(["100%_Real Vendor"]);
    expect((await list(t, { search: "%" })).totalCount).toBe(1);
    expect((await list(t, { contactType: "customer" })).totalCount).toBe(3);
    expect(errorOf(await h.gql(LIST, { o: t.organizationId, sortBy: "name" }, t.apiKey)).message)
      .toBe("sortBy must be one of: displayName, contactType, email, balance, created, updated.");
    expect(errorOf(await h.gql(LIST, { o: t.organizationId, contactType: "x" }, t.apiKey)).code).toBe("BAD_USER_INPUT");
    expect((await list(b)).items.every((x: any) => x.displayName === "Staples")).toBe(true);
  });
});
