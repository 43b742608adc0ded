import request from "supertest";
import { parse, type GraphQLSchema, type OperationDefinitionNode } from "postgraphile/graphql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AppHandle } from "../src/http/app.js";
import { compileDirectOperation, executeOver, respond } from "../src/graphql/direct-operation.js";
import { maskError } from "../src/http/errors.js";
import { directWriteResults } from "../src/metrics.js";
import { SQL_WRITE, TYPESCRIPT_OPERATIONS } from "../plugins/sql-operations.js";
import { byExecution, expectOnUnlessOff } from "./helpers/direct-operations.js";
import { createTenant, gqlTo, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { accountsOf, call, CLASSIFY, CONFIRM, CREATE, createEvent, eventRow, UPDATE } from "./ledger-fixtures.js";

/**
 * Mutations answered straight from their SQL function's JSON (src/http/direct-operations.ts) run
 * once and answer exactly what GraphQL execution answers: the same mutation on the same state is
 * sent to the server, to the server's GraphQL execution (`@include(if: true)` on its root field,
 * which the direct path leaves to it) and to a second server over the same database with
 * DIRECT_WRITES=off, and the three answers are the same bytes (ids and times aside where the
 * mutation makes new ones).
 */
let h: Harness;
let t: Tenant;
let schema: GraphQLSchema;
let off: AppHandle;
let acc: Record<string, string>;

beforeAll(async () => {
  h = await startHarness({ directWrites: true });
  off = await h.secondApp({ directWrites: false });
  t = await createTenant(h);
  acc = await accountsOf(h, t);
  schema = h.handle.schema;
});
afterAll(async () => {
  await h?.close();
});

const counts = async () => Object.fromEntries((await directWriteResults.get()).values.map((v) => [v.labels.result, v.value]));
const answered = async () => (await counts()).answered ?? 0;

/** New ids and times replaced: what two runs of the same mutation on the same kind of state share. */
const ID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
const TIME = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)/g;
const shape = (text: string) => text.replace(ID, "<id>").replace(TIME, "<time>");

/**
 * A mutation sent three ways, each on a state of its own made by `prepare` (which returns the
 * variables): directly, by the server's GraphQL execution, by the DIRECT_WRITES=off server.
 */
async function threeWays(query: string, field: string, prepare: () => Promise<Record<string, unknown>>, credential = t.apiKey) {
  const [a, b, c] = [await prepare(), await prepare(), await prepare()];
  const before = await answered();
  const direct = await h.gql(query, a, credential);
  const directCount = await answered();
  const executed = await h.gql(byExecution(query, field), b, credential);
  const withoutDirect = await gqlTo(off, query, c, credential);
  expect(await answered(), `${field}: only the first was answered directly`).toBe(directCount);
  return { direct, executed, withoutDirect, directlyAnswered: directCount - before };
}

describe("direct writes", () => {
  it("are on unless DIRECT_WRITES=off", () => {
    expectOnUnlessOff("DIRECT_WRITES", "directWrites", "maybe");
  });

  it("cover every mutation an SQL function serves, and leave the rest to GraphQL execution", () => {
    const mutations = Object.values(schema.getMutationType()!.getFields());
    const direct = mutations.filter((f) => (f.extensions as any)?.grafast?.plan?.[SQL_WRITE]).map((f) => f.name);
    expect(direct.length).toBe(mutations.length - TYPESCRIPT_OPERATIONS.size);
    for (const name of TYPESCRIPT_OPERATIONS) expect(direct).not.toContain(name);
    const compiles = (query: string) => {
      const document = parse(query);
      const op = compileDirectOperation(schema, document, document.definitions.find((d) => d.kind === "OperationDefinition") as OperationDefinitionNode);
      return op === undefined ? undefined : op.write;
    };
    expect(compiles(CONFIRM)).toBe(true);
    expect(compiles("mutation($o: UUID!) { k: createApiKey(organizationId: $o) { ...R } } fragment R on CreateApiKeyResult { success secret }")).toBe(true);
    expect(compiles("{ myOrganizations { id } }")).toBe(false); // a read
    // Two root fields, a directive, a TypeScript operation, a field with a plan of its own: GraphQL's.
    expect(compiles("mutation($o: UUID!) { a: createApiKey(organizationId: $o) { success } b: createApiKey(organizationId: $o) { success } }")).toBeUndefined();
    expect(compiles("mutation($o: UUID!) { createApiKey(organizationId: $o) @skip(if: false) { success } }")).toBeUndefined();
    expect(compiles(`mutation($o: UUID!) { connectMailbox(organizationId: $o, host: "h", username: "u", password: "p") { success } }`)).toBeUndefined();
    expect(compiles("mutation($o: UUID!, $k: String!) { createReceipt(organizationId: $o, objectKey: $k) { receipt { imageUrl } } }")).toBeUndefined();
  });

  it("answer a write as GraphQL execution does, and run it once", async () => {
    let n = 0;
    const fresh = async () => ({ org: t.organizationId, merchantName: `Direct ${++n}`, amount: "42.10", transactionDate: "2026-03-04",
      categoryId: acc["Cost of Goods Sold"], paymentAccountId: acc["Chequing"] });
    const created = await threeWays(CREATE, "createLedgerEvent", fresh);
    expect(created.directlyAnswered).toBe(1);
    expect(created.direct.body.data.createLedgerEvent.success).toBe(true);
    expect(shape(created.direct.text)).toBe(shape(created.executed.text));
    expect(shape(created.direct.text)).toBe(shape(created.withoutDirect.text));
    expect(created.direct.headers["content-type"]).toBe(created.executed.headers["content-type"]);
    const { rows: [{ count }] } = await h.owner.query("select count(*)::int from app_public.ledger_events where merchant_name = 'Direct 1'");
    expect(count).toBe(1);

    // A confirm of a classified event, and an update answering the whole event.
    const classified = async () => {
      const eventId = await createEvent(h, t, { merchantName: "Staples", amount: "15.00", transactionDate: "2026-03-05" });
      expect(await call(h, t, CLASSIFY, { eventId, categoryId: acc["Cost of Goods Sold"], paymentId: acc["Chequing"] }, "updateStagedEntry"))
        .toEqual({ success: true, error: null });
      return { org: t.organizationId, eventId };
    };
    const confirmed = await threeWays(CONFIRM, "confirmLedgerEvent", classified);
    expect(confirmed.direct.body.data.confirmLedgerEvent).toMatchObject({ success: true, error: null });
    expect(shape(confirmed.direct.text)).toBe(shape(confirmed.executed.text));
    expect(shape(confirmed.direct.text)).toBe(shape(confirmed.withoutDirect.text));
    const entryId = confirmed.direct.body.data.confirmLedgerEvent.journalEntryId;
    const { rows: lines } = await h.owner.query("select debit, credit from app_public.journal_lines where entry_id = $1 order by debit desc", [entryId]);
    expect(lines.map((l) => [l.debit, l.credit])).toEqual([["15.00", "0.00"], ["0.00", "15.00"]]);

    const updated = await threeWays(UPDATE, "updateLedgerEvent", async () => ({ ...(await classified()), memo: "Printer ink, \"black\" — ünïcode" }));
    expect(updated.direct.body.data.updateLedgerEvent.event.memo).toBe("Printer ink, \"black\" — ünïcode");
    expect(shape(updated.direct.text)).toBe(shape(updated.executed.text));
    expect(shape(updated.direct.text)).toBe(shape(updated.withoutDirect.text));
  });

  it("report failures as GraphQL execution does, byte for byte, and write nothing", async () => {
    const other = await createTenant(h);
    const eventId = await createEvent(h, t, { merchantName: "Unchanged", amount: "9.99", transactionDate: "2026-03-06" });
    const row = await eventRow(h, eventId);
    const BATCH = `mutation($org: UUID!, $items: [AccountInput!]!) { batchCreateAccounts(organizationId: $org, items: $items) { created errors { index error } } }`;
    for (const [query, field, variables, credential] of [
      // A business failure: success false.
      [CREATE, "createLedgerEvent", { org: t.organizationId, merchantName: "Bad", amount: "12.345", transactionDate: "2026-03-06" }, t.apiKey],
      [CONFIRM, "confirmLedgerEvent", { org: t.organizationId, eventId: "00000000-0000-4000-8000-000000000000" }, t.apiKey],
      // Not classified: confirm refuses, the event stays as it was.
      [CONFIRM, "confirmLedgerEvent", { org: t.organizationId, eventId }, t.apiKey],
      // Another organization's event, and another organization named with this key.
      [UPDATE, "updateLedgerEvent", { org: other.organizationId, eventId, memo: "x" }, other.apiKey],
      [UPDATE, "updateLedgerEvent", { org: other.organizationId, eventId, memo: "x" }, t.apiKey],
      // An operation without `success`: its failure is an error.
      [BATCH, "batchCreateAccounts", { org: t.organizationId, items: Array.from({ length: 501 }, (_, i) => ({ name: `A${i}`, accountType: "expense", classification: "expense" })) }, t.apiKey],
      // Arguments that do not coerce, and one missing: GraphQL's own errors, nothing run.
      [UPDATE, "updateLedgerEvent", { org: t.organizationId, eventId: "not-a-uuid", memo: "x" }, t.apiKey],
      [CREATE, "createLedgerEvent", { org: t.organizationId, merchantName: "No amount", transactionDate: "2026-03-06" }, t.apiKey],
    ] as const) {
      const label = `${field} ${JSON.stringify(variables).slice(0, 120)}`;
      const ways = await threeWays(query, field, async () => variables as Record<string, unknown>, credential);
      // What ran was answered directly; arguments that do not coerce were left to GraphQL execution.
      const coerces = !JSON.stringify(variables).includes("not-a-uuid") && (field !== "createLedgerEvent" || "amount" in variables);
      expect(ways.directlyAnswered, `${label}: answered directly`).toBe(coerces ? 1 : 0);
      expect(ways.direct.text, label).toBe(ways.executed.text);
      expect(ways.withoutDirect.text, label).toBe(ways.direct.text);
      expect(ways.direct.text, label).toMatch(/"success":false|"errors":/);
    }
    expect(await eventRow(h, eventId)).toEqual(row);
    const { rows: [{ count }] } = await h.owner.query("select count(*)::int from app_public.accounts where organization_id = $1 and name = 'A0'", [t.organizationId]);
    expect(count).toBe(0);
  });

  it("replay a response for its Idempotency-Key without running the mutation again", async () => {
    const variables = { org: t.organizationId, merchantName: "Idempotent direct", amount: "5.00", transactionDate: "2026-03-07" };
    const first = await h.gql(CREATE, variables, t.apiKey, { "Idempotency-Key": "direct-write-1" });
    const again = await h.gql(CREATE, variables, t.apiKey, { "Idempotency-Key": "direct-write-1" });
    expect(again.headers["idempotent-replayed"]).toBe("true");
    expect(again.text).toBe(first.text);
    const { rows: [{ count }] } = await h.owner.query("select count(*)::int from app_public.ledger_events where merchant_name = 'Idempotent direct'");
    expect(count).toBe(1);
  });

  it("answer JSON they cannot vouch for as graphql-js executing the document over it, without running the write again", async () => {
    const REJECT_SELECTED = `mutation($org: UUID!, $eventId: UUID!) { rejected: rejectLedgerEvent(organizationId: $org, eventId: $eventId) { success error eventId } }`;
    const document = parse(REJECT_SELECTED);
    const write = compileDirectOperation(schema, document, document.definitions[0] as OperationDefinitionNode)!;
    const broken = { success: null, error: null, eventId: "e" };
    expect(respond(write, broken)).toBeUndefined();
    const executed = await executeOver(schema, write, document, { org: t.organizationId, eventId: "00000000-0000-4000-8000-000000000000" }, broken, maskError);
    expect(JSON.parse(JSON.stringify(executed))).toEqual({ data: null, errors: [expect.objectContaining({
      message: "Cannot return null for non-nullable field RejectLedgerEventResult.success.", path: ["rejected", "success"] })] });

    // A function of this test's database that writes, then answers a null where the type promises a Boolean.
    await h.owner.query(`create or replace function app_public.reject_ledger_event(organization_id uuid, event_id uuid) returns jsonb
      language plpgsql volatile as $$
      begin
        update app_public.ledger_events x set memo = coalesce(x.memo, '') || 'ran;' where x.id = event_id;
        return jsonb_build_object('success', null, 'error', null, 'eventId', event_id);
      end $$`);
    const eventId = await createEvent(h, t, { merchantName: "Broken reject", amount: "1.00", transactionDate: "2026-03-08" });
    const before = await counts();
    const direct = await h.gql(REJECT_SELECTED, { org: t.organizationId, eventId }, t.apiKey);
    expect((await counts()).executed ?? 0).toBe((before.executed ?? 0) + 1);
    expect((await eventRow(h, eventId)).memo).toBe("ran;");
    expect(direct.body).toEqual({ data: null, errors: [expect.objectContaining({
      message: "Cannot return null for non-nullable field RejectLedgerEventResult.success.", path: ["rejected", "success"] })] });
    const grafast = await gqlTo(off, REJECT_SELECTED, { org: t.organizationId, eventId }, t.apiKey);
    expect((await eventRow(h, eventId)).memo).toBe("ran;ran;");
    expect(direct.text).toBe(grafast.text);
  });

  it("leave another error behaviour (onError) to GraphQL execution, and refuse one GraphQL does not know before anything runs", async () => {
    const BATCH = `mutation($org: UUID!, $items: [AccountInput!]!) { batchCreateAccounts(organizationId: $org, items: $items) { created } }`;
    const tooMany = { org: t.organizationId, items: Array.from({ length: 501 }, (_, i) => ({ name: `N${i}`, accountType: "expense", classification: "expense" })) };
    const send = (app: AppHandle, body: Record<string, unknown>) => request(app.app).post("/graphql").set("Content-Type", "application/json")
      .set("Authorization", t.apiKey).send(JSON.stringify(body));
    const before = await answered();
    const direct = await send(h.handle, { query: BATCH, variables: tooMany, onError: "NULL" });
    expect(await answered()).toBe(before);
    expect(direct.body.data).toEqual({ batchCreateAccounts: null });
    expect(direct.text).toBe((await send(off, { query: BATCH, variables: tooMany, onError: "NULL" })).text);
    // PROPAGATE is the default: answered directly, as without it.
    const propagate = await send(h.handle, { query: BATCH, variables: tooMany, onError: "PROPAGATE" });
    expect(await answered()).toBe(before + 1);
    expect(propagate.body.data).toBeNull();

    const create = { query: CREATE, variables: { org: t.organizationId, merchantName: "Refused onError", amount: "1.00", transactionDate: "2026-03-09" } };
    for (const body of [{ ...create, onError: "IGNORE" }, { ...create, extensions: "x" }]) {
      const res = await send(h.handle, body);
      expect(res.status).toBe(400);
      expect((await send(off, body)).text).toBe(res.text);
    }
    const { rows: [{ count }] } = await h.owner.query("select count(*)::int from app_public.ledger_events where merchant_name = 'Refused onError'");
    expect(count).toBe(0);
  });

  it("pick the operation by operationName, through fragments and aliases, and clear with an explicit null", async () => {
    const DOC = `query Orgs { myOrganizations { id } }
      mutation Lock($org: UUID!, $lockDate: String) {
        s: updateOrganizationSettings(organizationId: $org, lockDate: $lockDate) { ...Result ... on OrganizationSettingsResult { __typename ok: success } } }
      fragment Result on OrganizationSettingsResult { success error organization { id lockDate } }`;
    const withName = (app: AppHandle, variables: Record<string, unknown>) =>
      request(app.app).post("/graphql").set("Content-Type", "application/json").set("Authorization", t.ownerJwt)
        .send(JSON.stringify({ query: DOC, operationName: "Lock", variables }));
    const stored = async () => (await h.owner.query("select lock_date::text from app_public.organizations where id = $1", [t.organizationId])).rows[0].lock_date;
    for (const app of [h.handle, off]) {
      const set = await withName(app, { org: t.organizationId, lockDate: "2025-12-31" });
      expect(set.body.data.s).toEqual({ success: true, error: null, organization: { id: t.organizationId, lockDate: "2025-12-31" },
        __typename: "OrganizationSettingsResult", ok: true });
      // A variable declared and not sent keeps the date; an explicit null clears it.
      const kept = await withName(app, { org: t.organizationId });
      expect(kept.body.data.s.organization.lockDate).toBe("2025-12-31");
      expect(await stored()).toBe("2025-12-31");
      const cleared = await withName(app, { org: t.organizationId, lockDate: null });
      expect(cleared.body.data.s.organization.lockDate).toBeNull();
      expect(await stored()).toBeNull();
    }
    const before = await answered();
    const direct = await withName(h.handle, { org: t.organizationId, lockDate: "2025-11-30" });
    expect(await answered()).toBe(before + 1);
    expect(direct.text).toBe((await withName(off, { org: t.organizationId, lockDate: "2025-11-30" })).text);
  });

  it("send a call longer than 16 KB as parameters, answering as GraphQL execution does", async () => {
    const IMPORT = `mutation($org: UUID!, $acct: UUID!, $rows: [BankStatementRowInput!]!) {
      importBankStatement(organizationId: $org, paymentAccountId: $acct, rows: $rows) { success error importedCount skippedCount } }`;
    let batch = 0;
    const rows = async () => {
      batch++;
      return { org: t.organizationId, acct: acc["Chequing"], rows: Array.from({ length: 300 }, (_, i) => ({
        transactionDate: "2026-02-10", description: `LONG IMPORT ${batch} ROW ${i} ${"x".repeat(40)}`, amount: `-${i + 1}.${batch}0`, eventType: "expense" })) };
    };
    expect(JSON.stringify(await rows()).length).toBeGreaterThan(16_384);
    const ways = await threeWays(IMPORT, "importBankStatement", rows);
    expect(ways.directlyAnswered).toBe(1);
    expect(ways.direct.body.data.importBankStatement).toEqual({ success: true, error: null, importedCount: 300, skippedCount: 0 });
    expect(ways.direct.text).toBe(ways.executed.text);
    expect(ways.direct.text).toBe(ways.withoutDirect.text);
  });

  it("read a broken list as grafast reads it: null, an error only where the list is promised", async () => {
    const BATCH = `mutation($org: UUID!, $items: [AccountInput!]!) { b: batchCreateAccounts(organizationId: $org, items: $items) { created errors { index error } } }`;
    await h.owner.query(`create or replace function app_public.batch_create_accounts(organization_id uuid, items jsonb) returns jsonb
      language sql volatile as $$ select jsonb_build_object('created', 0, 'errors', '{}'::jsonb) $$`);
    const variables = { org: t.organizationId, items: [{ name: "Broken list", accountType: "expense", classification: "expense" }] };
    const before = await counts();
    const direct = await h.gql(BATCH, variables, t.apiKey);
    expect((await counts()).executed ?? 0).toBe((before.executed ?? 0) + 1);
    expect(direct.body).toEqual({ data: null, errors: [expect.objectContaining({
      message: "Cannot return null for non-nullable field BatchCreateResult.errors.", path: ["b", "errors"] })] });
    expect(direct.text).toBe((await gqlTo(off, BATCH, variables, t.apiKey)).text);
  });
});
