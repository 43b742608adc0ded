import { createHash, randomUUID } from "node:crypto";
import {
  buildSchema, execute, getNamedType, isObjectType, parse, printSchema, type GraphQLObjectType, type GraphQLSchema, type OperationDefinitionNode,
} from "postgraphile/graphql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AppHandle } from "../src/http/app.js";
import { settingsStatement } from "../src/db/sql-text.js";
import { argumentsOf, compileDirectOperation, respond } from "../src/graphql/direct-operation.js";
import { directReadResults } from "../src/metrics.js";
import { pgSettingsFor } from "../src/db/identity.js";
import { runOperation, SQL_READ } from "../plugins/sql-operations.js";
import { createStorage } from "../src/storage/index.js";
import { byExecution, expectOnUnlessOff } from "./helpers/direct-operations.js";
import { createTenant, gqlTo, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { accountsOf, bookEvent, call, CONFIRM, createEvent } from "./ledger-fixtures.js";

/**
 * Reads answered straight from their SQL function's JSON (src/graphql/direct-operation.ts) answer
 * exactly what GraphQL execution answers: for every Query field served by an SQL function, a
 * document selecting every field of its result (aliases, __typename, fragments) is answered by the
 * server, by the server's GraphQL execution (the same document with `@include(if: true)`, which
 * the direct path leaves to it), and by graphql-js executing the document over the function's JSON.
 * A second server over the same database, with DIRECT_READS=off, answers every one of them through
 * GraphQL execution alone, with the same bytes.
 */
let h: Harness;
let t: Tenant;
let schema: GraphQLSchema;
let plain: GraphQLSchema;
/** The same service with DIRECT_READS=off. */
let off: AppHandle;
/** A request to the DIRECT_READS=off server, which must answer it without a direct read. */
async function gqlOff(query: string, variables: Record<string, unknown>, credential: string) {
  const before = await directReadCounts();
  const res = await gqlTo(off, query, variables, credential);
  expect(await directReadCounts(), `${query} with DIRECT_READS=off`).toEqual(before);
  return res;
}
const ids: Record<string, string> = {};

beforeAll(async () => {
  h = await startHarness({ directReads: true });
  off = await h.secondApp({ directReads: false });
  t = await createTenant(h);
  schema = h.handle.schema;
  // The same types with graphql-js's default resolvers: each field is its JSON property.
  plain = buildSchema(printSchema(schema));

  const acc = await accountsOf(h, t);
  OPTIONAL_GIVEN.previewCategoryRule.categoryId = acc["Bank Fees & Charges"];
  const today = new Date().toISOString().slice(0, 10);
  ids.eventId = await bookEvent(h, t, { merchantName: "Staples", amount: "12.50", transactionDate: today },
    { categoryId: acc["Cost of Goods Sold"], paymentId: acc["Chequing"] });
  await call(h, t, CONFIRM, { eventId: ids.eventId }, "confirmLedgerEvent");
  // A split event with sales tax, in the lists and in the return.
  const split = await createEvent(h, t, { merchantName: "Costco", amount: "169.50", transactionDate: today });
  expect(await call(h, t, `mutation($org: UUID!, $e: UUID!, $s: [LedgerEventSplitInput!]) { updateStagedEntry(organizationId: $org, eventId: $e, splits: $s) { success error } }`,
    { e: split, s: [{ categoryId: acc["Cost of Goods Sold"], amount: "113.00", taxCode: "HST_ON", memo: "stock" }, { categoryId: acc["Bank Fees & Charges"], amount: "56.50" }] },
    "updateStagedEntry")).toEqual({ success: true, error: null });
  Object.assign(ids, { startDate: today.slice(0, 4) + "-01-01", endDate: today, taxType: "GST_HST" });
  // A reconciliation of the account, with the event ticked.
  ids.paymentAccountId = acc["Chequing"];
  const started = await call(h, t, `mutation($org: UUID!, $a: UUID!, $d: String!) {
    startReconciliation(organizationId: $org, paymentAccountId: $a, statementDate: $d, closingBalance: "-12.50") { reconciliation { id } } }`,
  { a: acc["Chequing"], d: today }, "startReconciliation");
  await call(h, t, `mutation($org: UUID!, $r: UUID!, $e: [UUID!]!) { setCleared(organizationId: $org, reconciliationId: $r, eventIds: $e, cleared: true) { success } }`,
    { r: started.reconciliation.id, e: [ids.eventId] }, "setCleared");
  // An endpoint (written as the operator would: its URL is never called here) and a delivery to it.
  ids.webhookEndpointId = (await h.owner.query(`insert into app_public.webhook_endpoints (organization_id, url, events, secret_sealed)
    values ($1, 'https://hooks.example.com/in', '{ledger_event.created}', 'v1:sealed') returning id`, [t.organizationId])).rows[0].id;
  await createEvent(h, t, { merchantName: "Café Ünïcode \"quoted\"", amount: "99.99", transactionDate: today });
  const key = `${t.organizationId}/uploads/${randomUUID()}/receipt.txt`;
  await createStorage(h.config).put(key, "receipt");
  await h.owner.query(`insert into app_public.uploads (organization_id, object_key, filename, content_type, size, sha256)
    values ($1, $2, 'receipt.txt', 'text/plain', 7, $3)`, [t.organizationId, key, createHash("sha256").update("receipt").digest("hex")]);
  const attached = await call(h, t, `mutation($org: UUID!, $eventId: UUID!, $key: String!) {
    attachReceiptToEvent(organizationId: $org, eventId: $eventId, objectKey: $key) { success error receiptId } }`,
  { eventId: ids.eventId, key }, "attachReceiptToEvent");
  ids.receiptId = attached.receiptId;
});
afterAll(async () => {
  await h?.close();
});

const directReadCounts = async () => (await directReadResults.get()).values.map((v) => [v.labels.result, v.value]);
const answeredDirectly = async () => (await directReadResults.get()).values.find((v) => v.labels.result === "answered")?.value ?? 0;

const sqlReads = () => Object.values(schema.getQueryType()!.getFields()).filter((f) => (f.extensions as any)?.grafast?.plan?.[SQL_READ]);

/** Every field of a type without arguments or a plan of its own, every third one aliased. */
function selectionOf(type: GraphQLObjectType, depth = 0): string {
  const parts = ["__typename"];
  Object.values(type.getFields()).forEach((f, i) => {
    if (f.args.length || (f.extensions as any)?.grafast?.plan) return;
    const named = getNamedType(f.type);
    const name = i % 3 === 1 ? `the_${f.name}: ${f.name}` : f.name;
    if (isObjectType(named)) {
      if (depth < 4) parts.push(`${name} { ${selectionOf(named, depth + 1)} }`);
    } else {
      parts.push(name);
    }
  });
  return parts.join(" ");
}

/** Optional arguments given to a read that refuses to run without one of them. */
const OPTIONAL_GIVEN: Record<string, Record<string, unknown>> = { previewCategoryRule: { vendorPattern: "café%" } };

/** A document for one root field: its required arguments from `ids`, its selection whole. */
function documentFor(fieldName: string, rootDirective = ""): { query: string; variables: Record<string, unknown> } {
  const field = schema.getQueryType()!.getFields()[fieldName];
  // Required arguments, and those a read needs one of (previewCategoryRule: a rule's fields or its id).
  const required = field.args.filter((a) => a.type.toString().endsWith("!") || OPTIONAL_GIVEN[fieldName]?.[a.name] !== undefined);
  const variables: Record<string, unknown> = {};
  for (const a of required) {
    const value = a.name === "organizationId" ? t.organizationId : OPTIONAL_GIVEN[fieldName]?.[a.name] ?? ids[a.name];
    if (value === undefined) throw new Error(`test/direct-read.test.ts: give a value for ${fieldName}(${a.name})`);
    variables[a.name] = value;
  }
  const defs = required.map((a) => `$${a.name}: ${a.type}`).join(", ");
  const args = required.map((a) => `${a.name}: $${a.name}`).join(", ");
  const named = getNamedType(field.type);
  const selection = isObjectType(named) ? ` { ${selectionOf(named)} }` : "";
  const query = `query${defs ? `(${defs})` : ""} { result: ${fieldName}${args ? `(${args})` : ""}${rootDirective}${selection} }`;
  return { query, variables };
}

/** The function's JSON as the caller gets it, and graphql-js executing the document over it. */
async function graphqlJs(fieldName: string, query: string, variables: Record<string, unknown>) {
  const document = parse(query);
  const read = compileDirectOperation(schema, document, document.definitions[0] as OperationDefinitionNode)!;
  const client = await h.auth.connect();
  let json: unknown;
  try {
    await client.query(`begin; ${settingsStatement(pgSettingsFor({ kind: "user", userId: t.ownerId }))}`);
    json = await runOperation(client as any, read.operation, argumentsOf(schema, read, variables)!);
    await client.query("commit");
  } finally {
    client.release();
  }
  const executed = JSON.parse(JSON.stringify(await execute({ schema: plain, document, rootValue: { [fieldName]: json }, variableValues: variables })));
  // The projection itself vouches for every value: nothing of it is left to GraphQL execution.
  expect(respond(read, json), fieldName).toEqual(executed);
  return executed;
}

describe("direct reads", () => {
  it("are on unless DIRECT_READS=off", () => {
    expectOnUnlessOff("DIRECT_READS", "directReads", "sometimes");
  });

  it("covers the contract's reads, and leaves the rest to GraphQL execution", () => {
    const reads = sqlReads().map((f) => f.name);
    expect(reads).toEqual(expect.arrayContaining(["myOrganizations", "getLedgerEvent", "listLedgerEvents", "listReceipts", "incomeStatement"]));
    expect(reads).not.toContain("connectMailbox");
    const compiles = (query: string) => {
      const document = parse(query);
      // A mutation compiles as a write (test/direct-write.test.ts), never as a read.
      return compileDirectOperation(schema, document, document.definitions.find((d) => d.kind === "OperationDefinition") as OperationDefinitionNode)?.write === false;
    };
    expect(compiles("{ myOrganizations { id name } }")).toBe(true);
    expect(compiles("query { o: myOrganizations { ...F } } fragment F on Organization { id n: name __typename }")).toBe(true);
    // Two root fields, a directive, a field with a plan of its own, a mutation, introspection: GraphQL's.
    expect(compiles("{ myOrganizations { id } a: myOrganizations { id } }")).toBe(false);
    expect(compiles("{ myOrganizations @include(if: true) { id } }")).toBe(false);
    expect(compiles("{ myOrganizations { id name @skip(if: false) } }")).toBe(false);
    expect(compiles("query($o: UUID!, $r: UUID!) { getReceipt(organizationId: $o, receiptId: $r) { id imageUrl } }")).toBe(false);
    expect(compiles("mutation($o: UUID!) { createApiKey(organizationId: $o) { success } }")).toBe(false);
    expect(compiles("{ __schema { queryType { name } } }")).toBe(false);
    expect(compiles("{ myOrganizations { id id } }")).toBe(false);
    // Not a key of the plain object the projection builds.
    expect(compiles("{ myOrganizations { __proto__: id } }")).toBe(false);
    expect(compiles("{ __proto__: myOrganizations { id } }")).toBe(false);
  });

  it("vouches only for values of their type, as GraphQL would serialize them", () => {
    const document = parse("{ myOrganizations { id name } }");
    const read = compileDirectOperation(schema, document, document.definitions[0] as OperationDefinitionNode)!;
    expect(respond(read, [{ id: "a", name: "b", other: 1 }])).toEqual({ data: { myOrganizations: [{ id: "a", name: "b" }] } });
    expect(respond(read, [{ id: "a", name: 5 }])).toEqual({ data: { myOrganizations: [{ id: "a", name: "5" }] } });
    expect(respond(read, [{ id: null, name: "b" }])).toBeUndefined(); // null in a non-null field
    expect(respond(read, [{ id: "a", name: { no: 1 } }])).toBeUndefined(); // an object in a String
    expect(respond(read, { id: "a" })).toBeUndefined(); // not a list
  });

  it("answers every read as GraphQL execution and graphql-js do", async () => {
    const reads = sqlReads();
    expect(reads.length).toBeGreaterThan(15);
    for (const field of reads) {
      const { query, variables } = documentFor(field.name);
      // The owner's session: some reads (API keys, members, mailboxes) refuse an API key.
      const answered = await answeredDirectly();
      const direct = await h.gql(query, variables, t.ownerJwt);
      expect(await answeredDirectly(), `${field.name} was answered directly`).toBe(answered + 1);
      const executed = await h.gql(documentFor(field.name, " @include(if: true)").query, variables, t.ownerJwt);
      expect(await answeredDirectly(), `${field.name} with @include was left to GraphQL`).toBe(answered + 1);
      expect(direct.body.errors, field.name).toBeUndefined();
      expect(direct.text, field.name).toBe(executed.text);
      expect(direct.headers["content-type"], field.name).toBe(executed.headers["content-type"]);
      expect(direct.body, field.name).toEqual(await graphqlJs(field.name, query, variables));
      const withoutDirectReads = await gqlOff(query, variables, t.ownerJwt);
      expect(withoutDirectReads.text, `${field.name} with DIRECT_READS=off`).toBe(direct.text);
    }
  });

  it("answers arguments, filters and lists as GraphQL execution does", async () => {
    const LIST = `query($org: UUID!, $status: [String!], $limit: Int, $sortBy: String, $search: String) {
      listLedgerEvents(organizationId: $org, status: $status, limit: $limit, sortBy: $sortBy, search: $search, sortDir: "asc") {
        items { id merchantName functionalAmount receipts { id filename } journalEntry { id totalAmount voidedAt } } totalCount } }`;
    for (const variables of [
      { org: t.organizationId }, { org: t.organizationId, status: "confirmed" }, { org: t.organizationId, status: ["needs_review", "confirmed"], limit: 1 },
      { org: t.organizationId, status: ["nonsense"] },
      { org: t.organizationId, sortBy: "merchantName", search: "café" }, { org: t.organizationId, limit: 0 },
    ]) {
      const direct = await h.gql(LIST, variables, t.apiKey);
      const executed = await h.gql(byExecution(LIST, "listLedgerEvents"), variables, t.apiKey);
      expect(direct.text, JSON.stringify(variables)).toBe(executed.text);
      expect((await gqlOff(LIST, variables, t.apiKey)).text, `${JSON.stringify(variables)} with DIRECT_READS=off`).toBe(direct.text);
    }
    // A session that names its organization in a header, and one that names it in the arguments only.
    const GET = `query($eventId: UUID!) { getLedgerEvent(organizationId: "${t.organizationId}", eventId: $eventId) { id status } }`;
    for (const headers of [{ "X-Organization-Id": t.organizationId }, {}] as Record<string, string>[]) {
      const direct = await h.gql(GET, { eventId: ids.eventId }, t.ownerJwt, headers);
      const executed = await h.gql(byExecution(GET, "getLedgerEvent"), { eventId: ids.eventId }, t.ownerJwt, headers);
      expect(direct.body.data.getLedgerEvent.id).toBe(ids.eventId);
      expect(direct.text).toBe(executed.text);
    }
  });

  it("reports a failed read as GraphQL execution does", async () => {
    const GET = `query($org: UUID!, $id: UUID!) { event: getLedgerEvent(organizationId: $org, eventId: $id) { id } }`;
    const LIST = `query($org: UUID!) { listLedgerEvents(organizationId: $org, sortBy: "nonsense") { totalCount } }`;
    const other = await createTenant(h);
    for (const [query, variables, credential] of [
      [GET, { org: t.organizationId, id: randomUUID() }, t.apiKey], // not found, non-null field: data null
      [GET, { org: other.organizationId, id: ids.eventId }, t.apiKey], // another organization's
      [LIST, { org: t.organizationId }, t.ownerJwt], // bad sort
      [GET, { org: t.organizationId, id: "not-a-uuid" }, t.apiKey], // variable that does not coerce
      [GET, { org: t.organizationId }, t.apiKey], // missing variable
    ] as const) {
      const direct = await h.gql(query, variables, credential);
      const executed = await h.gql(byExecution(query, query.includes("getLedgerEvent") ? "getLedgerEvent" : "listLedgerEvents"), variables, credential);
      expect(direct.body.errors?.length, query).toBe(1);
      expect(direct.text, `${query} ${JSON.stringify(variables)}`).toBe(executed.text);
      expect((await gqlOff(query, variables, credential)).text, `${query} with DIRECT_READS=off`).toBe(direct.text);
    }
  });
});
