import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createUser, dataOf, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { call, CREATE as CREATE_EVENT, createEvent, GET, tenantWithAccounts, UPDATE as UPDATE_EVENT, type Accounts } from "./ledger-fixtures.js";

/**
 * Human-entered text is stored in Unicode NFC: "Café" with a composed é (U+00E9) and with e + a
 * combining acute accent (U+0065 U+0301) is one name, whoever writes it (the API, the operator's
 * SQL functions, a raw insert), and a search in either form finds it.
 */
const composed = (s: string) => s.normalize("NFC");
const decomposed = (s: string) => s.normalize("NFD");
const CAFE = "Caf\u00e9 Supplies";
const CAFE_NFD = "Cafe\u0301 Supplies";

let h: Harness;
let t: Tenant;
let acc: Accounts;
beforeAll(async () => {
  h = await startHarness();
  ({ t, acc } = await tenantWithAccounts(h));
  expect(CAFE).not.toBe(CAFE_NFD);
  expect(composed(CAFE_NFD)).toBe(CAFE);
});
afterAll(() => h?.close());

const gql = async (doc: string, vars: Record<string, unknown>, field: string, credential = t.apiKey) =>
  dataOf(await h.gql(doc, { o: t.organizationId, ...vars }, credential), field);
const sqlError = (p: Promise<unknown>) => p.then(() => null, (e) => ({ code: e.code as string, message: e.message as string }));

const CREATE_ACCOUNT = `mutation($o: UUID!, $name: String!, $subType: String) {
  createAccount(organizationId: $o, name: $name, accountType: "expense", classification: "expense", subType: $subType) { success error account { id name subType } } }`;
const UPDATE_ACCOUNT = `mutation($o: UUID!, $id: UUID!, $name: String) { updateAccount(organizationId: $o, accountId: $id, name: $name) { success error account { id name } } }`;
const LIST_ACCOUNTS = `query($o: UUID!, $search: String) { listAccounts(organizationId: $o, search: $search) { totalCount items { id name } } }`;
const BATCH_ACCOUNTS = `mutation($o: UUID!, $items: [AccountInput!]!) { batchCreateAccounts(organizationId: $o, items: $items) { created errors { index error } } }`;
const CREATE_CONTACT = `mutation($o: UUID!, $name: String!, $email: String) {
  createContact(organizationId: $o, contactType: "vendor", displayName: $name, email: $email) { success error contact { id displayName email } } }`;
const UPDATE_CONTACT = `mutation($o: UUID!, $id: UUID!, $name: String) { updateContact(organizationId: $o, contactId: $id, displayName: $name) { success error contact { id displayName } } }`;
const LIST_CONTACTS = `query($o: UUID!, $search: String) { listContacts(organizationId: $o, search: $search) { totalCount items { id displayName } } }`;
const BATCH_CONTACTS = `mutation($o: UUID!, $items: [ContactInput!]!) { batchCreateContacts(organizationId: $o, items: $items) { created errors { index error } } }`;
const CREATE_RULE = `mutation($o: UUID!, $p: String!, $c: UUID!) { createCategoryRule(organizationId: $o, vendorPattern: $p, categoryId: $c) { success error categoryRule { id vendorPattern } } }`;
const UPDATE_RULE = `mutation($o: UUID!, $id: UUID!, $p: String) { updateCategoryRule(organizationId: $o, categoryRuleId: $id, vendorPattern: $p) { success error categoryRule { id vendorPattern } } }`;
const LIST_RULES = `query($o: UUID!, $search: String) { listCategoryRules(organizationId: $o, search: $search) { totalCount items { id vendorPattern } } }`;
const LIST_EVENTS = `query($o: UUID!, $search: String) { listLedgerEvents(organizationId: $o, search: $search) { totalCount items { id merchantName memo } } }`;
const CREATE_INTAKE = `mutation($o: UUID!, $a: String!, $l: String) {
  createIntakeAddress(organizationId: $o, addressType: "email", address: $a, label: $l) { success error intakeAddress { id address label } } }`;
const CREATE_KEY = `mutation($o: UUID!, $l: String) { createApiKey(organizationId: $o, label: $l) { success error apiKey { id label } } }`;
const ADD_MEMBER = `mutation($o: UUID!, $e: String!) { addMember(organizationId: $o, email: $e, role: "member") { success error member { userId email } } }`;

describe("accounts", () => {
  it("a decomposed look-alike of an account name is the same name", async () => {
    const first = await gql(CREATE_ACCOUNT, { name: CAFE }, "createAccount");
    expect(first).toMatchObject({ success: true, account: { name: CAFE } });
    expect(await gql(CREATE_ACCOUNT, { name: CAFE_NFD }, "createAccount"))
      .toEqual({ success: false, error: "Account with this name already exists.", account: null });
    expect(await gql(CREATE_ACCOUNT, { name: "caf" + "E\u0301 supplies" }, "createAccount"))
      .toEqual({ success: false, error: "Account with this name already exists.", account: null });
    const other = await gql(CREATE_ACCOUNT, { name: "Other Supplies", subType: decomposed("Fourniture de bureau \u00e9t\u00e9") }, "createAccount");
    expect(other.account.subType).toBe("Fourniture de bureau \u00e9t\u00e9");
    expect(await gql(UPDATE_ACCOUNT, { id: other.account.id, name: CAFE_NFD }, "updateAccount"))
      .toEqual({ success: false, error: "Account with this name already exists.", account: null });
    expect(await gql(BATCH_ACCOUNTS, { items: [{ name: CAFE_NFD, accountType: "expense", classification: "expense" }] }, "batchCreateAccounts"))
      .toEqual({ created: 0, errors: [{ index: 0, error: "Account with this name already exists." }] });
  });

  it("a decomposed search finds the composed name, and the reverse", async () => {
    const page = await gql(LIST_ACCOUNTS, { search: decomposed("caf\u00e9 sup") }, "listAccounts");
    expect(page.items.map((a: { name: string }) => a.name)).toEqual([CAFE]);
    await gql(CREATE_ACCOUNT, { name: decomposed("Cr\u00e8me Br\u00fbl\u00e9e") }, "createAccount");
    expect((await gql(LIST_ACCOUNTS, { search: "Cr\u00e8me" }, "listAccounts")).items.map((a: { name: string }) => a.name))
      .toEqual(["Cr\u00e8me Br\u00fbl\u00e9e"]);
  });

  it("length limits apply to the stored (NFC) form, which may be longer", async () => {
    // U+0958 is excluded from composition: its NFC form is two code points (U+0915 U+093C).
    const r = await gql(CREATE_ACCOUNT, { name: "\u0958".repeat(150) }, "createAccount");
    expect(r).toEqual({ success: false, error: "Name must be at most 200 characters.", account: null });
    const ok = await gql(CREATE_ACCOUNT, { name: "\u0958".repeat(100) }, "createAccount");
    expect(ok).toMatchObject({ success: true, account: { name: "\u0915\u093c".repeat(100) } });
  });

  it("a raw insert or update cannot store another form either", async () => {
    const e = await sqlError(h.owner.query(
      "insert into app_public.accounts (organization_id, name, account_type, classification) values ($1, $2, 'expense', 'expense')",
      [t.organizationId, CAFE_NFD]));
    expect(e?.code).toBe("23505");
    const { rows: [row] } = await h.owner.query(
      "insert into app_public.accounts (organization_id, name, account_type, classification) values ($1, $2, 'expense', 'expense') returning name",
      [t.organizationId, decomposed("Raw \u00c9lan")]);
    expect(row.name).toBe("Raw \u00c9lan");
    const { rows: [upd] } = await h.owner.query(
      "update app_public.accounts set name = $2 where organization_id = $1 and name = 'Raw \u00c9lan' returning name",
      [t.organizationId, decomposed("Raw \u00c9lan \u00e0 jour")]);
    expect(upd.name).toBe("Raw \u00c9lan \u00e0 jour");
  });
});

describe("contacts", () => {
  it("a decomposed look-alike of a contact name is the same name; search matches either form", async () => {
    const first = await gql(CREATE_CONTACT, { name: CAFE, email: decomposed("jos\u00e9@caf\u00e9.example") }, "createContact");
    expect(first).toMatchObject({ success: true, contact: { displayName: CAFE, email: "jos\u00e9@caf\u00e9.example" } });
    expect(await gql(CREATE_CONTACT, { name: CAFE_NFD }, "createContact"))
      .toEqual({ success: false, error: "Contact with this name already exists.", contact: null });
    const other = await gql(CREATE_CONTACT, { name: "Other Vendor" }, "createContact");
    expect(await gql(UPDATE_CONTACT, { id: other.contact.id, name: CAFE_NFD }, "updateContact"))
      .toEqual({ success: false, error: "Contact with this name already exists.", contact: null });
    expect(await gql(BATCH_CONTACTS, { items: [{ contactType: "vendor", displayName: CAFE_NFD }] }, "batchCreateContacts"))
      .toEqual({ created: 0, errors: [{ index: 0, error: "Contact with this name already exists." }] });
    const page = await gql(LIST_CONTACTS, { search: CAFE_NFD }, "listContacts");
    expect(page.items.map((c: { displayName: string }) => c.displayName)).toEqual([CAFE]);
  });
});

describe("category rules", () => {
  it("a decomposed look-alike of a pattern is the same pattern; search matches either form", async () => {
    const first = await gql(CREATE_RULE, { p: "Caf\u00e9 Central%", c: acc["Cost of Goods Sold"] }, "createCategoryRule");
    expect(first).toMatchObject({ success: true, categoryRule: { vendorPattern: "Caf\u00e9 Central%" } });
    expect(await gql(CREATE_RULE, { p: "Cafe\u0301 Central%", c: acc["Bank Fees & Charges"] }, "createCategoryRule"))
      .toEqual({ success: false, error: "A category rule with this pattern and these conditions already exists.", categoryRule: null });
    const other = await gql(CREATE_RULE, { p: "Other Vendor%", c: acc["Cost of Goods Sold"] }, "createCategoryRule");
    expect(await gql(UPDATE_RULE, { id: other.categoryRule.id, p: "CAFE\u0301 central%" }, "updateCategoryRule"))
      .toEqual({ success: false, error: "A category rule with this pattern and these conditions already exists.", categoryRule: null });
    const page = await gql(LIST_RULES, { search: "Cafe\u0301" }, "listCategoryRules");
    expect(page.items.map((r: { vendorPattern: string }) => r.vendorPattern)).toEqual(["Caf\u00e9 Central%"]);
  });

  it("a composed pattern matches a decomposed merchant name, and the reverse", async () => {
    const a = await createEvent(h, t, { merchantName: "Cafe\u0301 Central Downtown" });
    expect((await call(h, t, GET, { eventId: a }, "getLedgerEvent")).category).toEqual({ id: acc["Cost of Goods Sold"], name: "Cost of Goods Sold" });
    await gql(CREATE_RULE, { p: decomposed("%P\u00e2tisserie%"), c: acc["Bank Fees & Charges"] }, "createCategoryRule");
    const b = await createEvent(h, t, { merchantName: "La P\u00e2tisserie" });
    expect((await call(h, t, GET, { eventId: b }, "getLedgerEvent")).category).toEqual({ id: acc["Bank Fees & Charges"], name: "Bank Fees & Charges" });
  });
});

describe("ledger events", () => {
  it("merchant names and memos are stored in NFC, and a search in either form finds them", async () => {
    const r = await call(h, t, CREATE_EVENT, { merchantName: decomposed("  Boulangerie Mich\u00e8le "), amount: "5.00", transactionDate: "2026-03-02" }, "createLedgerEvent");
    expect(r.success).toBe(true);
    const e = await call(h, t, GET, { eventId: r.eventId }, "getLedgerEvent");
    expect(e.merchantName).toBe("Boulangerie Mich\u00e8le");
    const { rows: [row] } = await h.owner.query("select merchant_name, merchant_name is nfc normalized as nfc from app_public.ledger_events where id = $1", [r.eventId]);
    expect(row).toEqual({ merchant_name: "Boulangerie Mich\u00e8le", nfc: true });
    const u = await call(h, t, UPDATE_EVENT, { eventId: r.eventId, memo: decomposed("cr\u00eapes pour l'\u00e9quipe") }, "updateLedgerEvent");
    expect(u.event.memo).toBe("cr\u00eapes pour l'\u00e9quipe");
    const byMerchant = await gql(LIST_EVENTS, { search: decomposed("mich\u00e8le") }, "listLedgerEvents");
    expect(byMerchant.items.map((x: { id: string }) => x.id)).toEqual([r.eventId]);
    const byMemo = await gql(LIST_EVENTS, { search: "cr\u00eapes" }, "listLedgerEvents");
    expect(byMemo.items.map((x: { id: string }) => x.id)).toEqual([r.eventId]);
  });
});

describe("organizations, users and labels", () => {
  it("the operator's create_organization refuses a decomposed look-alike of an existing name", async () => {
    const name = `Caf\u00e9 ${randomUUID().slice(0, 8)}`;
    const { rows: [o] } = await h.owner.query("select name from app_private.create_organization($1)", [decomposed(name)]);
    expect(o.name).toBe(name);
    expect(await sqlError(h.owner.query("select app_private.create_organization($1)", [name])))
      .toEqual({ code: "AP400", message: "An organization with this name already exists." });
    expect(await sqlError(h.owner.query("select app_private.create_organization($1)", [decomposed(name).toUpperCase()])))
      .toEqual({ code: "AP400", message: "An organization with this name already exists." });
  });

  it("user emails and names are NFC: a look-alike email is the same user, and addMember finds it in either form", async () => {
    const email = `jos\u00e9-${randomUUID().slice(0, 8)}@example.test`;
    const { rows: [u] } = await h.owner.query("select id, email, name from app_private.create_user($1, $2)", [decomposed(email), decomposed("Jos\u00e9 \u00c1lvarez")]);
    expect(u).toMatchObject({ email, name: "Jos\u00e9 \u00c1lvarez" });
    expect(await sqlError(h.owner.query("select app_private.create_user($1)", [email])))
      .toEqual({ code: "AP400", message: "A user with this email already exists." });
    const m = await gql(ADD_MEMBER, { e: decomposed(email) }, "addMember", t.ownerJwt);
    expect(m).toMatchObject({ success: true, member: { userId: u.id, email } });
    // A user created by the plain helper, for the other spelling of the lookup.
    const other = `\u00e9lise-${randomUUID().slice(0, 8)}@example.test`;
    const id = await createUser(h, other);
    expect(await gql(ADD_MEMBER, { e: decomposed(other) }, "addMember", t.ownerJwt)).toMatchObject({ success: true, member: { userId: id } });
  });

  it("intake addresses and API key labels are NFC; a look-alike address is already registered", async () => {
    const address = `re\u00e7us-${randomUUID().slice(0, 8)}@caf\u00e9.example`;
    const r = await gql(CREATE_INTAKE, { a: decomposed(address), l: decomposed("Re\u00e7us") }, "createIntakeAddress");
    expect(r).toMatchObject({ success: true, intakeAddress: { address, label: "Re\u00e7us" } });
    expect(await gql(CREATE_INTAKE, { a: address }, "createIntakeAddress"))
      .toEqual({ success: false, error: "This address is already registered.", intakeAddress: null });
    const k = await gql(CREATE_KEY, { l: decomposed("Cl\u00e9 comptable") }, "createApiKey", t.ownerJwt);
    expect(k).toMatchObject({ success: true, apiKey: { label: "Cl\u00e9 comptable" } });
  });
});
