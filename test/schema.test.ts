import { readFileSync } from "node:fs";
import { getNamedType, isObjectType, printSchema, type GraphQLNamedType, type GraphQLSchema } from "postgraphile/graphql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SCHEMA_FILE, printedSchema } from "../src/graphql/schema-file.js";
import { GENERAL_LEDGER_FIELD } from "../plugins/general-ledger.js";
import { startHarness, type Harness } from "./helpers/harness.js";

/**
 * The printed schema holds the contract's custom operations and, generated, only the read-only
 * general ledger connection of @graphile/pg-aggregates: no CRUD, no Node interface,
 * no other table, view or function by accident.
 */
let h: Harness;
let schema: GraphQLSchema;
beforeAll(async () => {
  h = await startHarness();
  schema = h.handle.schema;
});
afterAll(async () => {
  await h?.close();
});

/** Every named type reachable from a type, through fields and arguments. */
function reachable(start: GraphQLNamedType, seen = new Set<string>()): Set<string> {
  if (seen.has(start.name) || start.name.startsWith("__")) return seen;
  seen.add(start.name);
  if (isObjectType(start) || "getFields" in start) {
    for (const field of Object.values((start as any).getFields()) as any[]) {
      reachable(getNamedType(field.type) as unknown as GraphQLNamedType, seen);
      for (const arg of field.args ?? []) reachable(getNamedType(arg.type) as unknown as GraphQLNamedType, seen);
    }
  }
  return seen;
}

const GENERATED_ROOT = GENERAL_LEDGER_FIELD;

describe("printed schema", () => {
  it(`${SCHEMA_FILE} is the schema the server serves`, () => {
    const committed = readFileSync(SCHEMA_FILE, "utf8");
    // A change to the schema must come with the file clients generate their types from.
    expect(committed === printedSchema(schema), `${SCHEMA_FILE} is out of date: run \`npm run schema:print\` and commit it`).toBe(true);
  });

  it("has exactly one generated root field: the general ledger connection", () => {
    const query = schema.getQueryType()!.getFields();
    const generated = Object.values(query).filter((f) => /Connection$/.test(getNamedType(f.type).name) || /^all[A-Z]|By[A-Z]\w*Id$|^node$|^query$/.test(f.name));
    expect(generated.map((f) => f.name)).toEqual([GENERATED_ROOT]);
    expect(getNamedType(query[GENERATED_ROOT].type).name).toBe("GeneralLedgerEntryConnection");
  });

  it("has no generated mutation, no Node interface, no CRUD payloads", () => {
    const mutation = schema.getMutationType()!.getFields();
    for (const f of Object.values(mutation)) {
      expect(getNamedType(f.type).name, f.name).not.toMatch(/Payload$/);
      expect(f.args.map((a) => a.name), f.name).not.toContain("input");
    }
    expect(schema.getType("Node")).toBeUndefined();
    const printed = printSchema(schema);
    expect(printed).not.toMatch(/\bnodeId\b/);
    expect(printed).not.toMatch(/clientMutationId/);
  });

  it("every generated connection type belongs to the general ledger", () => {
    const root = schema.getQueryType()!.getFields()[GENERATED_ROOT];
    const glTypes = reachable(schema.getType("GeneralLedgerEntryConnection")!);
    for (const arg of root.args) reachable(getNamedType(arg.type), glTypes);
    const others = Object.keys(schema.getTypeMap()).filter((n) =>
      /(Connection|Edge|Aggregates|OrderBy|Condition|Filter|GroupBy|HavingInput)$/.test(n) && !glTypes.has(n));
    expect(others).toEqual([]);
    // The general ledger is read-only: its row type has only columns of the view.
    const row = schema.getType("GeneralLedgerEntry");
    expect(row && isObjectType(row)).toBe(true);
    expect(Object.keys((row as any).getFields()).sort()).toEqual([
      "accountId", "accountName", "accountType", "amount", "classification", "credit", "debit", "documentId", "entryId", "eventId",
      "eventStatus", "eventType", "memo", "merchantName", "month", "organizationId", "reversesEntryId", "rowId", "taxOnSale", "taxType",
      "txnDate",
    ]);
  });

  it("offers sums and counts grouped by account and by month", () => {
    const conn = (schema.getType("GeneralLedgerEntryConnection") as any).getFields();
    expect(Object.keys(conn)).toEqual(expect.arrayContaining(["nodes", "totalCount", "aggregates", "groupedAggregates"]));
    const groupBy = schema.getType("GeneralLedgerEntryGroupBy") as any;
    const values = groupBy.getValues().map((v: { name: string }) => v.name);
    expect(values).toEqual(expect.arrayContaining(["ACCOUNT_ID", "MONTH"]));
  });
});
