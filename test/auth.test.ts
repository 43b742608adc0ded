import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTenant, createUser, dataOf, errorOf, jwtFor, startHarness, type Harness, type Tenant } from "./helpers/harness.js";

let h: Harness;
let a: Tenant;
let b: Tenant;
beforeAll(async () => {
  h = await startHarness();
  a = await createTenant(h, "Alpha Books");
  b = await createTenant(h, "Beta Books");
});
afterAll(() => h?.close());

const MY_ORGS = "{ myOrganizations { id name } }";
const LIST_KEYS = "query($org: UUID!) { listApiKeys(organizationId: $org) { id prefix label } }";
const ADD_MEMBER = "mutation($org: UUID!, $email: String!, $role: String!) { addMember(organizationId: $org, email: $email, role: $role) { success error member { userId role } } }";

describe("myOrganizations", () => {
  it("answers an API key with its one organization", async () => {
    const res = await h.gql(MY_ORGS, {}, a.apiKey);
    expect(res.status).toBe(200);
    expect(dataOf(res, "myOrganizations")).toEqual([{ id: a.organizationId, name: "Alpha Books" }]);
  });
  it("answers a user with every organization they are a member of", async () => {
    await h.owner.query("select app_private.add_member($1, $2, 'member')", [b.organizationId, a.ownerEmail]);
    const res = await h.gql(MY_ORGS, {}, a.ownerJwt);
    expect(dataOf(res, "myOrganizations").map((o: { name: string }) => o.name)).toEqual(["Alpha Books", "Beta Books"]);
    await h.owner.query("delete from app_public.memberships where organization_id = $1 and user_id = $2", [b.organizationId, a.ownerId]);
  });
});

describe("the contract's error messages, in the check order of docs/api.md, Authentication", () => {
  const cases: [string, () => [string, Record<string, unknown>, string | undefined], string, string][] = [
    ["no credential", () => [MY_ORGS, {}, undefined], "Authentication Required.", "UNAUTHENTICATED"],
    ["another scheme", () => [MY_ORGS, {}, "Basic dXNlcjpwYXNz"], "Authentication Required.", "UNAUTHENTICATED"],
    ["an unknown API key", () => [MY_ORGS, {}, "Bearer acct_" + "x".repeat(40)], "Invalid API Key.", "UNAUTHENTICATED"],
    ["a malformed API key", () => [MY_ORGS, {}, "Bearer nope"], "Invalid API Key.", "UNAUTHENTICATED"],
    ["a JWT with a bad signature", () => [MY_ORGS, {}, "JWT " + "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"], "Invalid Token.", "UNAUTHENTICATED"],
    ["an expired JWT", () => [MY_ORGS, {}, jwtFor(h, a.ownerId, { expiresIn: -10 })], "Invalid Token.", "UNAUTHENTICATED"],
    ["a JWT that never expires (no exp)", () => [MY_ORGS, {}, jwtFor(h, a.ownerId, {})], "Invalid Token.", "UNAUTHENTICATED"],
    ["a JWT for an unknown user", () => [MY_ORGS, {}, jwtFor(h, "00000000-0000-4000-8000-000000000000")], "Invalid Token.", "UNAUTHENTICATED"],
    ["an admin operation with an API key", () => [LIST_KEYS, { org: a.organizationId }, a.apiKey], "API Keys Cannot Perform Admin Operations.", "FORBIDDEN"],
    ["an admin operation with an API key, even on an unknown organization", () => [LIST_KEYS, { org: "00000000-0000-4000-8000-000000000000" }, a.apiKey], "API Keys Cannot Perform Admin Operations.", "FORBIDDEN"],
    ["an unknown organization", () => [LIST_KEYS, { org: "00000000-0000-4000-8000-000000000000" }, a.ownerJwt], "Organization Not Found.", "NOT_FOUND"],
    ["a user who is not a member", () => [LIST_KEYS, { org: b.organizationId }, a.ownerJwt], "Not A Member Of This Organization.", "FORBIDDEN"],
  ];
  it.each(cases)("%s", async (_name, make, message, code) => {
    const [query, variables, credential] = make();
    const res = await h.gql(query, variables, credential);
    expect(res.status).toBe(200);
    expect(errorOf(res)).toEqual({ message, code });
  });

  it.each([
    ["a key of another organization", () => [b.organizationId, a.apiKey], "API Key Not Authorized For This Organization.", "FORBIDDEN"],
    ["a key of another organization, on an unknown organization: not found comes first", () => ["00000000-0000-4000-8000-000000000000", a.apiKey], "Organization Not Found.", "NOT_FOUND"],
    ["a user of another organization", () => [b.organizationId, a.ownerJwt], "Not A Member Of This Organization.", "FORBIDDEN"],
    ["no credential, on an unknown organization: authentication comes first", () => ["00000000-0000-4000-8000-000000000000", undefined], "Authentication Required.", "UNAUTHENTICATED"],
  ] as const)("a data operation (listAccounts) with %s", async (_name, make, message, code) => {
    const [org, credential] = make();
    const res = await h.gql("query($o: UUID!) { listAccounts(organizationId: $o) { totalCount } }", { o: org }, credential);
    expect(res.status).toBe(200);
    expect(errorOf(res)).toEqual({ message, code });
    expect(res.body.data).toBeNull();
  });

  it("an invalid key is refused before the organization is looked at", async () => {
    const res = await h.gql("query($o: UUID!) { listAccounts(organizationId: $o) { totalCount } }", { o: "00000000-0000-4000-8000-000000000000" }, "Bearer acct_" + "y".repeat(40));
    expect(errorOf(res)).toEqual({ message: "Invalid API Key.", code: "UNAUTHENTICATED" });
  });

  it("API Key Not Authorized For This Organization. also at the SQL level", async () => {
    // The access check every non-admin operation runs first, called as the API role with A's key.
    const client = await h.auth.connect();
    try {
      await client.query("begin");
      await client.query("select set_config('role', 'accounting_visitor', true), set_config('app.api_key_id', $1, true), set_config('app.organization_id', $2, true)",
        [a.apiKeyId, a.organizationId]);
      await expect(client.query("select app_private.assert_org_access($1, false)", [b.organizationId]))
        .rejects.toMatchObject({ message: "API Key Not Authorized For This Organization.", code: "AU403" });
    } finally {
      await client.query("rollback");
      client.release();
    }
  });

  it("Must Be Owner Or Admin.", async () => {
    const email = `member-${Date.now()}@example.test`;
    const userId = await createUser(h, email);
    await h.owner.query("select app_private.add_member($1, $2, 'member')", [a.organizationId, email]);
    const res = await h.gql(LIST_KEYS, { org: a.organizationId }, jwtFor(h, userId));
    expect(errorOf(res)).toEqual({ message: "Must Be Owner Or Admin.", code: "FORBIDDEN" });
  });

  it("introspection needs no credentials", async () => {
    const res = await h.gql("{ __schema { queryType { name } } }");
    expect(res.body).toEqual({ data: { __schema: { queryType: { name: "Query" } } } });
  });
});

describe("admin operations", () => {
  it("an owner creates, lists and revokes API keys; the secret works once created and never after revoking", async () => {
    const created = dataOf(await h.gql(
      "mutation($org: UUID!) { createApiKey(organizationId: $org, label: \"books\") { success error secret apiKey { id label prefix created lastUsedAt } } }",
      { org: a.organizationId }, a.ownerJwt), "createApiKey");
    expect(created.success).toBe(true);
    expect(created.secret).toMatch(/^acct_[0-9A-Za-z]{40}$/);
    expect(created.apiKey.prefix).toBe(created.secret.slice(0, 9));
    expect(created.apiKey.created).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(dataOf(await h.gql(MY_ORGS, {}, `Bearer ${created.secret}`), "myOrganizations")).toHaveLength(1);

    const keys = dataOf(await h.gql(LIST_KEYS, { org: a.organizationId }, a.ownerJwt), "listApiKeys");
    expect(keys.map((k: { id: string }) => k.id)).toContain(created.apiKey.id);

    const revoked = dataOf(await h.gql(
      "mutation($org: UUID!, $id: UUID!) { revokeApiKey(organizationId: $org, apiKeyId: $id) { success error apiKey { revokedAt } } }",
      { org: a.organizationId, id: created.apiKey.id }, a.ownerJwt), "revokeApiKey");
    expect(revoked.success).toBe(true);
    expect(revoked.apiKey.revokedAt).not.toBeNull();
    expect(errorOf(await h.gql(MY_ORGS, {}, `Bearer ${created.secret}`)).message).toBe("Invalid API Key.");
  });

  it("revoking another organization's key is not found and changes nothing", async () => {
    const res = dataOf(await h.gql(
      "mutation($org: UUID!, $id: UUID!) { revokeApiKey(organizationId: $org, apiKeyId: $id) { success error } }",
      { org: a.organizationId, id: b.apiKeyId }, a.ownerJwt), "revokeApiKey");
    expect(res).toEqual({ success: false, error: "API key not found." });
    const { rows } = await h.owner.query("select revoked_at from app_public.api_keys where id = $1", [b.apiKeyId]);
    expect(rows[0].revoked_at).toBeNull();
  });

  it("members: add, change role, remove; an organization always keeps an owner", async () => {
    const email = `admin-${Date.now()}@example.test`;
    const userId = await createUser(h, email);
    const added = dataOf(await h.gql(ADD_MEMBER, { org: a.organizationId, email, role: "admin" }, a.ownerJwt), "addMember");
    expect(added).toEqual({ success: true, error: null, member: { userId, role: "admin" } });
    expect(dataOf(await h.gql(ADD_MEMBER, { org: a.organizationId, email, role: "admin" }, a.ownerJwt), "addMember").error)
      .toBe("User is already a member of this organization.");
    expect(dataOf(await h.gql(ADD_MEMBER, { org: a.organizationId, email: "nobody@example.test", role: "admin" }, a.ownerJwt), "addMember").error)
      .toBe("User not found.");
    expect(dataOf(await h.gql(ADD_MEMBER, { org: a.organizationId, email, role: "boss" }, a.ownerJwt), "addMember").error)
      .toBe("Role must be one of: owner, admin, member.");

    const demote = "mutation($org: UUID!, $user: UUID!, $role: String!) { updateMemberRole(organizationId: $org, userId: $user, role: $role) { success error member { role } } }";
    expect(dataOf(await h.gql(demote, { org: a.organizationId, user: a.ownerId, role: "member" }, a.ownerJwt), "updateMemberRole"))
      .toEqual({ success: false, error: "An organization must keep at least one owner.", member: null });
    const remove = "mutation($org: UUID!, $user: UUID!) { removeMember(organizationId: $org, userId: $user) { success error } }";
    expect(dataOf(await h.gql(remove, { org: a.organizationId, user: a.ownerId }, a.ownerJwt), "removeMember"))
      .toEqual({ success: false, error: "An organization must keep at least one owner." });

    // Only an owner manages owners: an admin can neither promote itself nor act on an owner.
    const adminJwt = jwtFor(h, userId);
    const ownersOnly = "Only an owner can grant, change or remove the owner role.";
    expect(dataOf(await h.gql(demote, { org: a.organizationId, user: userId, role: "owner" }, adminJwt), "updateMemberRole"))
      .toEqual({ success: false, error: ownersOnly, member: null });
    expect(dataOf(await h.gql(remove, { org: a.organizationId, user: a.ownerId }, adminJwt), "removeMember"))
      .toEqual({ success: false, error: ownersOnly });
    // The owner promotes the admin; the new owner lets the first one step down.
    expect(dataOf(await h.gql(demote, { org: a.organizationId, user: userId, role: "owner" }, a.ownerJwt), "updateMemberRole").success).toBe(true);
    expect(dataOf(await h.gql(demote, { org: a.organizationId, user: a.ownerId, role: "admin" }, adminJwt), "updateMemberRole"))
      .toEqual({ success: true, error: null, member: { role: "admin" } });
    expect(dataOf(await h.gql(remove, { org: a.organizationId, user: userId }, adminJwt), "removeMember").error)
      .toBe("An organization must keep at least one owner.");
    // Restore for other tests.
    expect(dataOf(await h.gql(demote, { org: a.organizationId, user: a.ownerId, role: "owner" }, adminJwt), "updateMemberRole").success).toBe(true);
    expect(dataOf(await h.gql(remove, { org: a.organizationId, user: userId }, a.ownerJwt), "removeMember")).toEqual({ success: true, error: null });
  });
});
