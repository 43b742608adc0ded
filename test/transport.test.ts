import { once } from "node:events";
import { createServer } from "node:http";
import { connect, type AddressInfo } from "node:net";
import request from "supertest";
import { GraphQLError } from "postgraphile/graphql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { maskError } from "../src/http/errors.js";
import { QUERY_LIMITS } from "../src/http/graphql-gate.js";
import { createTenant, dataOf, startHarness, type Harness, type Tenant } from "./helpers/harness.js";

let h: Harness;
let t: Tenant;
beforeAll(async () => {
  h = await startHarness({ bodyLimit: "10kb" });
  t = await createTenant(h);
});
afterAll(() => h?.close());

const post = (body: string, contentType = "application/json") =>
  request(h.handle.app).post("/graphql").set("Content-Type", contentType).set("Authorization", t.apiKey).send(body);

describe("HTTP status and error codes (docs/api.md, Errors)", () => {
  it.each([
    ["a body that is not JSON", "{not json", "Malformed JSON body."],
    ["a JSON body without query", JSON.stringify({ variables: {} }), "The request body must be a JSON object with a query string."],
    ["a query that does not parse", JSON.stringify({ query: "{ myOrganizations { id }" }), "Syntax Error: Expected Name, found <EOF>."],
    ["a batched array", JSON.stringify([{ query: "{ __typename }" }, { query: "{ __typename }" }]), "Batched requests are not supported: send one operation per request."],
  ])("400 for %s", async (_name, body, message) => {
    const res = await post(body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ errors: [{ message, extensions: { code: "BAD_USER_INPUT" } }] });
  });

  it("400 for another content type", async () => {
    const res = await post("{ __typename }", "application/graphql");
    expect(res.status).toBe(400);
    expect(res.body.errors[0].extensions.code).toBe("BAD_USER_INPUT");
  });

  it("413 for a body over the limit", async () => {
    const res = await post(JSON.stringify({ query: "{ __typename }", variables: { pad: "x".repeat(20_000) } }));
    expect(res.status).toBe(413);
    expect(res.body.errors[0]).toEqual({ message: "Request body is too large.", extensions: { code: "BAD_USER_INPUT" } });
  });

  it("200 with BAD_USER_INPUT for unknown fields and bad variable types", async () => {
    const unknown = await post(JSON.stringify({ query: "{ nope }" }));
    expect(unknown.status).toBe(200);
    expect(unknown.body.errors[0]).toMatchObject({ message: 'Cannot query field "nope" on type "Query".', extensions: { code: "BAD_USER_INPUT" } });
    const badVar = await post(JSON.stringify({ query: "query($o: UUID!) { listMembers(organizationId: $o) { email } }", variables: { o: 42 } }));
    expect(badVar.status).toBe(200);
    expect(badVar.body.errors[0].extensions.code).toBe("BAD_USER_INPUT");
  });

  it("refuses queries over the depth, field and root-field limits", async () => {
    const roots = Array.from({ length: QUERY_LIMITS.maxRootFields + 1 }, (_, i) => `a${i}: myOrganizations { id }`).join(" ");
    const res = await post(JSON.stringify({ query: `{ ${roots} }` }));
    expect(res.status).toBe(200);
    expect(res.body.errors[0]).toEqual({ message: `Query has too many operations: ${QUERY_LIMITS.maxRootFields + 1} root fields, at most ${QUERY_LIMITS.maxRootFields}.`, extensions: { code: "BAD_USER_INPUT" } });
    const fields = Array.from({ length: QUERY_LIMITS.maxFields }, (_, i) => `f${i}: id`).join(" ");
    const wide = await post(JSON.stringify({ query: `{ myOrganizations { ${fields} } }` }));
    expect(wide.body.errors[0].message).toMatch(/^Query selects too many fields/);
  });

  it("introspection is not counted against the limits", async () => {
    const res = await post(JSON.stringify({ query: "{ __schema { types { name fields { name type { name ofType { name ofType { name ofType { name ofType { name ofType { name } } } } } } } } } }" }));
    expect(res.status).toBe(200);
    expect(res.body.data.__schema.types.length).toBeGreaterThan(5);
  });

  it("each mutation field commits or rolls back on its own", async () => {
    const m = `mutation($o: UUID!) {
      bad: createAccount(organizationId: $o, name: "Half Written", accountType: "nope", classification: "expense") { success error }
      good: createAccount(organizationId: $o, name: "Fully Written", accountType: "expense", classification: "expense") { success error }
      again: createAccount(organizationId: $o, name: "fully written", accountType: "expense", classification: "expense") { success error }
    }`;
    const res = await post(JSON.stringify({ query: m, variables: { o: t.organizationId } }));
    expect(res.body.data.bad.success).toBe(false);
    expect(res.body.data.good).toEqual({ success: true, error: null });
    expect(res.body.data.again).toEqual({ success: false, error: "Account with this name already exists." });
    const { rows } = await h.owner.query("select name from app_public.accounts where organization_id = $1 and lower(name) like '%written' order by name", [t.organizationId]);
    expect(rows).toEqual([{ name: "Fully Written" }]);
    // The pool's connections are usable afterwards.
    const after = await post(JSON.stringify({ query: "{ myOrganizations { id } }" }));
    expect(after.body.data.myOrganizations).toHaveLength(1);
  });

  it("/graphql/ is the same endpoint", async () => {
    const res = await request(h.handle.app).post("/graphql/").set("Content-Type", "application/json").set("Authorization", t.apiKey)
      .send(JSON.stringify({ query: "{ myOrganizations { id } }" }));
    expect(dataOf(res, "myOrganizations")).toEqual([{ id: t.organizationId }]);
  });

  it("masks unexpected failures as Internal error. with a request id", () => {
    const masked = maskError(new GraphQLError("boom", { originalError: Object.assign(new Error("relation x does not exist"), { code: "42P01" }) }));
    expect(masked.message).toBe("Internal error.");
    expect(masked.extensions.code).toBe("INTERNAL");
    expect(masked.extensions.requestId).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe("health and IDE", () => {
  it("/healthz answers while alive, /readyz when the database is reachable and migrated", async () => {
    expect((await request(h.handle.app).get("/healthz")).body).toEqual({ status: "ok" });
    expect((await request(h.handle.app).get("/readyz")).body).toEqual({ status: "ready" });
  });
  it("serves Ruru at /graphiql", async () => {
    const res = await request(h.handle.app).get("/graphiql").set("Accept", "text/html");
    expect(res.status).toBe(200);
    expect(res.text).toContain("Ruru");
  });
});

describe("request targets (the endpoint in front of Express)", () => {
  /** One raw HTTP/1.1 request with the target as given (a proxy's absolute form, a fragment …). */
  async function raw(target: string, body: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
    const server = createServer(h.handle.app).listen(0, "127.0.0.1");
    await once(server, "listening");
    const { port } = server.address() as AddressInfo;
    try {
      const socket = connect(port, "127.0.0.1");
      const head = Object.entries({ host: `127.0.0.1:${port}`, "content-type": "application/json", "content-length": String(Buffer.byteLength(body)),
        connection: "close", ...headers }).map(([k, v]) => `${k}: ${v}\r\n`).join("");
      // Written, not ended: the server closes the connection after its answer (connection: close).
      socket.write(`POST ${target} HTTP/1.1\r\n${head}\r\n${body}`);
      let text = "";
      for await (const chunk of socket) text += chunk;
      return { status: Number(text.slice(9, 12)), text: text.slice(text.indexOf("\r\n\r\n") + 4) };
    } finally {
      server.close();
    }
  }

  it("every target that names /graphql goes through authentication and the gate", async () => {
    const body = JSON.stringify({ query: "{ myOrganizations { id } }" });
    for (const target of ["/graphql", "/graphql/", "/graphql?x=1", "/graphql#fragment", "http://example.test/graphql"]) {
      // No credential: refused before anything runs, whichever way the path is written.
      expect(JSON.parse((await raw(target, body)).text), target).toEqual({ data: null, errors: [{ message: "Authentication Required.", extensions: { code: "UNAUTHENTICATED" } }] });
      const answered = JSON.parse((await raw(target, body, { authorization: t.apiKey })).text);
      expect(answered.data.myOrganizations, target).toEqual([{ id: t.organizationId }]);
    }
    // Other paths under /graphql (as Express matches a mount: in any case) are not the endpoint.
    for (const target of ["/GraphQL", "/graphql/other", "http://example.test/GRAPHQL/"]) {
      const res = await raw(target, body, { authorization: t.apiKey });
      expect(res.status, target).toBe(404);
      expect(JSON.parse(res.text).errors[0].extensions.code, target).toBe("NOT_FOUND");
    }
  });
});
