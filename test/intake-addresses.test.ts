import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTenant, dataOf, startHarness, type Harness, type Tenant } from "./helpers/harness.js";

let h: Harness;
let a: Tenant;
let b: Tenant;
beforeAll(async () => {
  h = await startHarness();
  a = await createTenant(h);
  b = await createTenant(h);
});
afterAll(() => h?.close());

const CREATE = `mutation($o: UUID!, $t: String!, $a: String!, $l: String) {
  createIntakeAddress(organizationId: $o, addressType: $t, address: $a, label: $l) { success error intakeAddress { id addressType address label active created } } }`;
const DELETE = `mutation($o: UUID!, $id: UUID!) { deleteIntakeAddress(organizationId: $o, intakeAddressId: $id) { success error } }`;
const LIST = `query($o: UUID!) { listIntakeAddresses(organizationId: $o) { id addressType address label active created } }`;

const create = async (t: Tenant, type: string, address: string, label?: string) =>
  dataOf(await h.gql(CREATE, { o: t.organizationId, t: type, a: address, l: label }, t.apiKey), "createIntakeAddress");
const del = async (t: Tenant, id: string) => dataOf(await h.gql(DELETE, { o: t.organizationId, id }, t.apiKey), "deleteIntakeAddress");
const list = async (t: Tenant) => dataOf(await h.gql(LIST, { o: t.organizationId }, t.apiKey), "listIntakeAddresses");

describe("createIntakeAddress", () => {
  it("stores email lower-case and SMS as digits", async () => {
    const e = await create(a, "email", "  Receipts@Alpha.Example ", "Main inbox");
    expect(e).toMatchObject({ success: true, error: null, intakeAddress: { addressType: "email", address: "receipts@alpha.example", label: "Main inbox", active: true } });
    expect(e.intakeAddress.created).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect((await create(a, "sms", "14165550100")).intakeAddress).toMatchObject({ addressType: "sms", address: "14165550100", label: "" });
  });

  it.each([
    ["sms", "+1 416 555 0100", "An SMS address must contain digits only."],
    ["sms", "12345", "An SMS address must have 7 to 15 digits."],
    ["email", "no-at-sign", "Email must look like an email address."],
    ["fax", "14165550100", "Address type must be email or sms."],
    ["email", "  ", "Address is required."],
  ])("refuses %s %j", async (type, address, error) => {
    expect(await create(a, type, address)).toEqual({ success: false, error, intakeAddress: null });
  });

  it("an address registered by another organization is refused with the same words, naming no owner; after the owner deletes it, it can be registered", async () => {
    const first = await create(a, "email", "shared@intake.example");
    expect(first.success).toBe(true);
    const taken = await create(b, "email", "SHARED@intake.example");
    expect(taken).toEqual({ success: false, error: "This address is already registered.", intakeAddress: null });
    expect(await create(a, "email", "shared@intake.example")).toEqual(taken); // the owner gets the very same answer
    expect(JSON.stringify(taken)).not.toContain(a.organizationId);
    // B cannot see or delete A's address.
    expect((await list(b)).map((x: any) => x.address)).not.toContain("shared@intake.example");
    expect(await del(b, first.intakeAddress.id)).toEqual({ success: false, error: "Intake address not found." });
    expect(await del(a, first.intakeAddress.id)).toEqual({ success: true, error: null });
    expect((await list(a)).map((x: any) => x.id)).not.toContain(first.intakeAddress.id);
    const second = await create(b, "email", "shared@intake.example");
    expect(second).toMatchObject({ success: true, intakeAddress: { address: "shared@intake.example" } });
    expect((await create(a, "email", "shared@intake.example")).error).toBe("This address is already registered.");
    expect(await del(a, first.intakeAddress.id)).toEqual({ success: false, error: "Intake address not found." });
  });

  it("two organizations registering one address at once: exactly one gets it", async () => {
    const rs = await Promise.all([create(a, "sms", "5145550199"), create(b, "sms", "5145550199")]);
    expect(rs.filter((r) => r.success)).toHaveLength(1);
    expect(rs.find((r) => !r.success)?.error).toBe("This address is already registered.");
  });
});

describe("listIntakeAddresses", () => {
  it("is a plain list of the organization's active addresses, oldest first", async () => {
    const t = await createTenant(h);
    const x = (await create(t, "email", "one@t.example")).intakeAddress;
    const y = (await create(t, "sms", "6045550123", "Phone")).intakeAddress;
    const z = (await create(t, "email", "three@t.example")).intakeAddress;
    await del(t, y.id);
    expect((await list(t)).map((r: any) => r.id)).toEqual([x.id, z.id]);
  });
});
