import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GENERAL_LEDGER_FIELD } from "../plugins/general-ledger.js";
import { sqlFunctionOf, sqlParameterOf, TYPESCRIPT_OPERATIONS } from "../plugins/sql-operations.js";
import { startHarness, type Harness } from "./helpers/harness.js";

/**
 * Each operation is written once, in the SDL: its SQL function and arguments are derived from the
 * field (plugins/sql-operations.ts). So the SDL and the SQL signature must agree, name for name.
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

describe("every root field", () => {
  it("has an SQL function of its name whose parameters are its arguments, no more and no fewer", async () => {
    const res = await h.gql(`{ __schema {
      queryType { fields { name args { name } } } mutationType { fields { name args { name } } } } }`);
    const fields: { name: string; args: { name: string }[] }[] = [
      ...res.body.data.__schema.queryType.fields, ...res.body.data.__schema.mutationType.fields,
    ].filter((f) => f.name !== GENERAL_LEDGER_FIELD && !TYPESCRIPT_OPERATIONS.has(f.name));
    expect(fields.length).toBeGreaterThanOrEqual(40);
    const { rows } = await h.owner.query<{ fn: string; params: string[] }>(`
      select n.nspname || '.' || p.proname as fn,
             coalesce((select array_agg(a.name order by a.name) from unnest(p.proargnames, coalesce(p.proargmodes, array_fill('i'::"char", array[p.pronargs]))) a (name, mode)
                        where a.mode in ('i', 'b', 'v')), '{}') as params
        from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = 'app_public'`);
    const signatures = new Map<string, string[][]>();
    for (const r of rows) signatures.set(r.fn, [...(signatures.get(r.fn) ?? []), r.params]);
    const differences = fields.flatMap((f) => {
      const expected = f.args.map((a) => sqlParameterOf(a.name)).sort();
      const found = signatures.get(sqlFunctionOf(f.name));
      if (!found) return [`${f.name}: no function ${sqlFunctionOf(f.name)}`];
      if (found.length > 1) return [`${f.name}: ${sqlFunctionOf(f.name)} is overloaded (${found.length} signatures)`];
      return JSON.stringify(found[0]) === JSON.stringify(expected) ? []
        : [`${f.name}: GraphQL (${expected.join(", ")}) but SQL ${sqlFunctionOf(f.name)}(${found[0].join(", ")})`];
    });
    expect(differences).toEqual([]);
  });
});
