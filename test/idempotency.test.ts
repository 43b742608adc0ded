import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTenant, dataOf, errorOf, startHarness, type Harness, type Tenant } from "./helpers/harness.js";

let h: Harness;
let t: Tenant;
beforeAll(async () => {
  h = await startHarness();
  t = await createTenant(h);
});
afterAll(() => h?.close());

const CREATE_KEY = "mutation($o: UUID!, $label: String) { createApiKey(organizationId: $o, label: $label) { success error secret apiKey { id label } } }";
const keyCount = async () =>
  (await h.owner.query("select count(*)::int as n from app_public.api_keys where organization_id = $1", [t.organizationId])).rows[0].n;

describe("Idempotency-Key on mutations", () => {
  it("a repeated mutation runs once and returns the first response (the secret is shown once)", async () => {
    const before = await keyCount();
    const first = await h.gql(CREATE_KEY, { o: t.organizationId, label: "once" }, t.ownerJwt, { "Idempotency-Key": "k-1" });
    const second = await h.gql(CREATE_KEY, { o: t.organizationId, label: "once" }, t.ownerJwt, { "Idempotency-Key": "k-1" });
    const a = dataOf(first, "createApiKey");
    const b = dataOf(second, "createApiKey");
    expect(a.success).toBe(true);
    expect(a.secret).toMatch(/^acct_/);
    expect(b).toEqual({ ...a, secret: null });
    expect(second.headers["idempotent-replayed"]).toBe("true");
    expect(await keyCount()).toBe(before + 1);
  });

  it("no secret is stored or replayed, whatever the field's alias", async () => {
    const aliased = "mutation($o: UUID!) { createApiKey(organizationId: $o, label: \"alias\") { success s: secret } }";
    const first = dataOf(await h.gql(aliased, { o: t.organizationId }, t.ownerJwt, { "Idempotency-Key": "k-alias" }), "createApiKey");
    expect(first.s).toMatch(/^acct_/);
    const again = dataOf(await h.gql(aliased, { o: t.organizationId }, t.ownerJwt, { "Idempotency-Key": "k-alias" }), "createApiKey");
    expect(again).toEqual({ success: true, s: null });
    const { rows } = await h.owner.query("select count(*)::int as n from app_public.idempotency_records where response_body like '%acct\\_%'");
    expect(rows[0].n).toBe(0);
  });

  it("the same key with another request is refused and runs nothing", async () => {
    const before = await keyCount();
    await h.gql(CREATE_KEY, { o: t.organizationId, label: "a" }, t.ownerJwt, { "Idempotency-Key": "k-2" });
    const res = await h.gql(CREATE_KEY, { o: t.organizationId, label: "b" }, t.ownerJwt, { "Idempotency-Key": "k-2" });
    expect(errorOf(res)).toEqual({ message: "This Idempotency-Key was already used with a different request.", code: "BAD_USER_INPUT" });
    expect(await keyCount()).toBe(before + 1);
  });

  it("concurrent repeats run the mutation once", async () => {
    const before = await keyCount();
    const responses = await Promise.all(Array.from({ length: 8 }, () =>
      h.gql(CREATE_KEY, { o: t.organizationId, label: "race" }, t.ownerJwt, { "Idempotency-Key": "k-3" })));
    expect(await keyCount()).toBe(before + 1);
    const ran = responses.filter((r) => r.body.data?.createApiKey?.secret);
    expect(ran).toHaveLength(1);
    for (const r of responses) {
      if (r.body.errors) expect(errorOf(r).message).toBe("A request with this Idempotency-Key is still running; retry later.");
    }
  });

  it("keys are per credential, and expire after 24 hours", async () => {
    const other = await createTenant(h);
    const before = await keyCount();
    await h.gql(CREATE_KEY, { o: t.organizationId, label: "x" }, t.ownerJwt, { "Idempotency-Key": "k-4" });
    const otherRes = await h.gql(CREATE_KEY, { o: other.organizationId, label: "x" }, other.ownerJwt, { "Idempotency-Key": "k-4" });
    expect(dataOf(otherRes, "createApiKey").secret).toMatch(/^acct_/);
    await h.owner.query("update app_public.idempotency_records set created = now() - interval '25 hours' where idempotency_key = 'k-4'");
    const again = await h.gql(CREATE_KEY, { o: t.organizationId, label: "x" }, t.ownerJwt, { "Idempotency-Key": "k-4" });
    expect(dataOf(again, "createApiKey").secret).toMatch(/^acct_/);
    expect(await keyCount()).toBe(before + 2);
  });

  it("queries ignore the header", async () => {
    const res = await h.gql("{ myOrganizations { id } }", {}, t.apiKey, { "Idempotency-Key": "k-5" });
    expect(dataOf(res, "myOrganizations")).toHaveLength(1);
    const { rows } = await h.owner.query("select count(*)::int as n from app_public.idempotency_records where idempotency_key = 'k-5'");
    expect(rows[0].n).toBe(0);
  });
});
