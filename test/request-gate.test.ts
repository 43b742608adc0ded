import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NUL_MESSAGE, QUERY_LIMITS, SURROGATE_MESSAGE } from "../src/http/graphql-gate.js";
import { createTenant, dataOf, errorOf, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { postGraphql, startServerProcess, type ServerProcess } from "./helpers/server-process.js";

/** The request gate: what is refused before anything runs, and how fast. */
let h: Harness;
let t: Tenant;
beforeAll(async () => {
  h = await startHarness();
  t = await createTenant(h);
});
afterAll(async () => {
  await h?.close();
});

/** `fragment G0 on Query { ...G1 ...G1 }` … 2^levels copies of the last fragment's fields. */
function fragmentBomb(levels: number, prefix: string): string {
  const fragments = Array.from({ length: levels }, (_, i) => `fragment ${prefix}${i} on Query { ...${prefix}${i + 1} ...${prefix}${i + 1} }`);
  return `query { ...${prefix}0 } ${fragments.join(" ")} fragment ${prefix}${levels} on Query { myOrganizations { id name } }`;
}

describe("a document that multiplies itself through fragments", () => {
  let server: ServerProcess;
  beforeAll(async () => {
    server = await startServerProcess({ DATABASE_URL: h.databaseUrl, WORKER: "off" });
  });
  afterAll(() => server?.kill());

  // Against a real server process with deadlines, so that a gate that walks every expansion fails
  // here (and is killed) instead of hanging the suite.
  it("is refused at once, anonymously, while the server keeps answering others", async () => {
    for (const [levels, prefix] of [[20, "G"], [30, "Renamed"]] as const) {
      const started = Date.now();
      const bomb = postGraphql(server.url, { query: fragmentBomb(levels, prefix) }, undefined, AbortSignal.timeout(5000));
      const health = fetch(`${server.url}/healthz`, { signal: AbortSignal.timeout(5000) });
      const res = await bomb;
      expect(res.status).toBe(200);
      expect((await res.json()).errors[0]).toEqual({
        message: `Query selects too many fields: more than ${QUERY_LIMITS.maxFields}.`, extensions: { code: "BAD_USER_INPUT" },
      });
      expect((await health).status).toBe(200);
      expect(Date.now() - started).toBeLessThan(2000);
    }
  });
});

describe("the gate", () => {
  const post = (body: string) => request(h.handle.app).post("/graphql").set("Content-Type", "application/json").send(body);

  it("parses with a token limit: a larger document is a 400 syntax error", async () => {
    const query = `{ ${Array.from({ length: QUERY_LIMITS.maxTokens }, (_, i) => `a${i}: __typename`).join(" ")} }`;
    const res = await post(JSON.stringify({ query }));
    expect(res.status).toBe(400);
    expect(res.body.errors[0].message).toBe(`Syntax Error: the query has more than ${QUERY_LIMITS.maxTokens} tokens.`);
    expect(res.body.errors[0].extensions.code).toBe("BAD_USER_INPUT");
  });

  it("counts introspection fields towards the field limit, so repeated __typename cannot make validation quadratic", async () => {
    const query = `{ ${"__typename ".repeat(QUERY_LIMITS.maxFields + 1)} }`;
    const res = await post(JSON.stringify({ query }));
    expect(res.body.errors[0].message).toBe(`Query selects too many fields: more than ${QUERY_LIMITS.maxFields}.`);
  });

  it("refuses too deep a query and a fragment cycle with BAD_USER_INPUT", async () => {
    let deep = "id";
    for (let i = 0; i < QUERY_LIMITS.maxDepth; i++) deep = `myOrganizations { ${deep} }`;
    const tooDeep = await post(JSON.stringify({ query: `{ ${deep} }` }));
    expect(tooDeep.body.errors[0]).toEqual({ message: `Query is too deep: more than ${QUERY_LIMITS.maxDepth} levels.`, extensions: { code: "BAD_USER_INPUT" } });
    const cycle = await post(JSON.stringify({ query: "{ ...A } fragment A on Query { ...B } fragment B on Query { ...A myOrganizations { id } }" }));
    expect(cycle.status).toBe(200);
    expect(cycle.body.errors[0].message).toMatch(/Cannot spread fragment "A" within itself/);
    expect(cycle.body.errors[0].extensions.code).toBe("BAD_USER_INPUT");
  });

  it("accepts the standard introspection query GraphiQL and code generators send", async () => {
    const { getIntrospectionQuery } = await import("postgraphile/graphql");
    const res = await post(JSON.stringify({ query: getIntrospectionQuery({ descriptions: true, inputValueDeprecation: true }) }));
    expect(res.status).toBe(200);
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.__schema.queryType.name).toBe("Query");
  });
});

describe("a NUL character anywhere in a request", () => {
  const count = async (table: string) =>
    (await h.owner.query(`select count(*)::int as n from app_public.${table} where organization_id = $1`, [t.organizationId])).rows[0].n;

  it.each([
    ["merchantName", { merchantName: "Bad\u0000Merchant", amount: "5.00" }],
    ["amount", { merchantName: "Fine", amount: "5.00\u0000" }],
  ])("in a variable (%s) is BAD_USER_INPUT, and nothing is written", async (_name, vars) => {
    const before = await count("ledger_events");
    const res = await h.gql(`mutation($o: UUID!, $m: String!, $a: String!) {
      createLedgerEvent(organizationId: $o, merchantName: $m, amount: $a, transactionDate: "2026-01-05") { success error } }`,
    { o: t.organizationId, m: vars.merchantName, a: vars.amount }, t.apiKey);
    expect(res.status).toBe(200);
    expect(errorOf(res)).toEqual({ message: NUL_MESSAGE, code: "BAD_USER_INPUT" });
    expect(await count("ledger_events")).toBe(before);
  });

  it("in a string literal (search) is BAD_USER_INPUT", async () => {
    const res = await h.gql(`query($o: UUID!) { listLedgerEvents(organizationId: $o, search: "a\\u0000b") { totalCount } }`,
      { o: t.organizationId }, t.apiKey);
    expect(errorOf(res)).toEqual({ message: NUL_MESSAGE, code: "BAD_USER_INPUT" });
  });

  it("in one item of a batch refuses the whole batch once, with nothing created", async () => {
    const before = await count("contacts");
    const items = [{ contactType: "vendor", displayName: "Good One" }, { contactType: "vendor", displayName: "Bad\u0000One" }];
    const res = await h.gql(`mutation($o: UUID!, $items: [ContactInput!]!) { batchCreateContacts(organizationId: $o, items: $items) { created } }`,
      { o: t.organizationId, items }, t.apiKey);
    expect(errorOf(res)).toEqual({ message: NUL_MESSAGE, code: "BAD_USER_INPUT" });
    expect(await count("contacts")).toBe(before);
  });

  it("in names, patterns, labels and addresses is never an internal error", async () => {
    const probes = [
      `createAccount(organizationId: $o, name: $s, accountType: "expense", classification: "expense") { success }`,
      `createCategoryRule(organizationId: $o, vendorPattern: $s, categoryId: $o) { success }`,
      `createIntakeAddress(organizationId: $o, addressType: "email", address: $s, label: $s) { success }`,
      `createApiKey(organizationId: $o, label: $s) { success }`,
    ];
    for (const probe of probes) {
      const res = await h.gql(`mutation($o: UUID!, $s: String!) { ${probe} }`, { o: t.organizationId, s: "x\u0000y@example.test" }, t.ownerJwt);
      expect(errorOf(res)).toEqual({ message: NUL_MESSAGE, code: "BAD_USER_INPUT" });
    }
  });
});

describe("an unpaired surrogate in a request", () => {
  it("is refused like a NUL, in a variable or a JSON-sent batch item, and in a literal", async () => {
    const batch = await h.gql(`mutation($o: UUID!, $items: [ContactInput!]!) { batchCreateContacts(organizationId: $o, items: $items) { created } }`,
      { o: t.organizationId, items: [{ contactType: "vendor", displayName: "\ud800" }] }, t.apiKey);
    expect(errorOf(batch)).toEqual({ message: SURROGATE_MESSAGE, code: "BAD_USER_INPUT" });
    // In a literal, GraphQL's own parser refuses it: a syntax error.
    const literal = await h.gql(`query($o: UUID!) { listLedgerEvents(organizationId: $o, status: ["\\udfff"]) { totalCount } }`, { o: t.organizationId }, t.apiKey);
    expect(literal.status).toBe(400);
    expect(errorOf(literal).code).toBe("BAD_USER_INPUT");
    const paired = await h.gql(`query($o: UUID!, $s: String) { listAccounts(organizationId: $o, search: $s) { totalCount } }`,
      { o: t.organizationId, s: "\ud83d\ude00 emoji" }, t.apiKey);
    expect(dataOf(paired, "listAccounts").totalCount).toBe(0);
  });
});

describe("anonymous callers", () => {
  it("get Authentication Required. for the general ledger connection, not an empty page", async () => {
    const res = await h.gql("{ generalLedgerEntries { totalCount } }");
    expect(res.status).toBe(200);
    expect(errorOf(res)).toEqual({ message: "Authentication Required.", code: "UNAUTHENTICATED" });
    expect(res.body.data).toBeNull();
  });

  it("still read the schema without credentials", async () => {
    expect(dataOf(await h.gql("{ __typename }"), "__typename")).toBe("Query");
  });
});

describe("every error body is JSON with a code", () => {
  it.each(["get", "put", "delete", "patch", "options"] as const)("%s /graphql is 405 with Allow: POST", async (method) => {
    const res = await request(h.handle.app)[method]("/graphql");
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe("POST");
    expect(res.body).toEqual({ errors: [{ message: "Send GraphQL requests with POST.", extensions: { code: "BAD_USER_INPUT" } }] });
  });

  it.each([
    ["variables that are a string", { query: "{ __typename }", variables: "abc" }, "variables must be a JSON object."],
    ["variables that are an array", { query: "{ __typename }", variables: [1] }, "variables must be a JSON object."],
    ["an operationName that is a number", { query: "{ __typename }", operationName: 5 }, "operationName must be a string."],
    ["an onError that is no error behaviour", { query: "{ __typename }", onError: "IGNORE" }, "onError must be one of PROPAGATE, NULL, HALT."],
    ["extensions that are a string", { query: "{ __typename }", extensions: "x" }, "extensions must be a JSON object."],
  ])("%s is 400 with BAD_USER_INPUT", async (_name, body, message) => {
    const res = await request(h.handle.app).post("/graphql").set("Content-Type", "application/json").send(JSON.stringify(body));
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ errors: [{ message, extensions: { code: "BAD_USER_INPUT" } }] });
  });

  it("variables nested deeper than any input needs are 400, not a stack overflow", async () => {
    const deep = "[".repeat(200_000) + "]".repeat(200_000);
    const res = await request(h.handle.app).post("/graphql").set("Content-Type", "application/json").set("Authorization", t.apiKey)
      .set("Idempotency-Key", "deep-1").send(`{"query":"mutation { __typename }","variables":{"x":${deep}}}`);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ errors: [{ message: `variables are nested too deeply: more than ${QUERY_LIMITS.maxVariableDepth} levels.`, extensions: { code: "BAD_USER_INPUT" } }] });
  });

  it("variables holding more values than any input needs are 400, before the server coerces them", async () => {
    const many = JSON.stringify({
      query: `query($o: UUID!, $x: [UUID!]) { listLedgerEvents(organizationId: $o, accountIds: $x) { totalCount } }`,
      variables: { o: t.organizationId, x: Array.from({ length: QUERY_LIMITS.maxVariableValues + 1 }, () => t.organizationId) },
    });
    const res = await request(h.handle.app).post("/graphql").set("Content-Type", "application/json").set("Authorization", t.apiKey).send(many);
    expect(res.status).toBe(400);
    expect(res.body.errors[0]).toEqual({ message: "variables hold too many values: more than 20,000.", extensions: { code: "BAD_USER_INPUT" } });
  });

  it("an unknown path is a JSON 404", async () => {
    const res = await request(h.handle.app).get("/nope");
    expect(res.status).toBe(404);
    expect(res.headers["content-type"]).toMatch(/application\/json/);
    expect(res.body).toEqual({ errors: [{ message: "Not found.", extensions: { code: "NOT_FOUND" } }] });
  });
});
