import { loadOneWithPgClient } from "postgraphile/@dataplan/pg";
import type { PgClient, WithPgClient } from "postgraphile/@dataplan/pg";
import { list, sideEffect } from "postgraphile/grafast";
import { callerFailure } from "../src/http/errors.js";
import { extendSchema } from "postgraphile/utils";
import type { DocumentNode } from "postgraphile/graphql";

/**
 * A contract operation implemented by one SQL function that takes the operation's arguments
 * (snake_case, by name) and returns the contract's result shape as JSON. The SQL function owns
 * the rule; this file only translates.
 */
export interface SqlOperation {
  kind: "query" | "mutation";
  /** Schema-qualified SQL function, e.g. `app_public.create_api_key`. */
  sqlFunction: string;
  /** GraphQL argument names, in any order; each maps to the snake_case SQL argument. */
  args: readonly string[];
  /**
   * A mutation whose result type has no `success`/`error` (the batches): its business failures
   * are GraphQL errors (BAD_USER_INPUT) instead.
   */
  failuresAsErrors?: boolean;
}

export type SqlOperations = Record<string, SqlOperation>;

const snake = (name: string) => name.replace(/[A-Z]/g, (c) => "_" + c.toLowerCase());

/** Builds `select fn(a => $1, b => $2)`, leaving out absent arguments so SQL defaults apply. */
export function sqlCall(op: SqlOperation, values: Record<string, unknown>): { text: string; values: unknown[] } {
  const params: unknown[] = [];
  const named: string[] = [];
  for (const arg of op.args) {
    const value = values[arg];
    if (value === undefined || value === null) continue;
    params.push(typeof value === "object" ? JSON.stringify(value) : value);
    named.push(`"${snake(arg)}" => $${params.length}`); // quoted: `limit` and `offset` are reserved words
  }
  return { text: `select ${op.sqlFunction}(${named.join(", ")}) as result`, values: params };
}

/**
 * Runs a mutation's function in the request's transaction. A failure the caller can act on (our
 * SQL's class AP, or the request's time running out, waiting for a connection included) is
 * `success: false`; a commit after a failed statement rolls the field back, so nothing is written.
 */
async function runMutation(
  db: { withPgClient: WithPgClient; pgSettings: Record<string, string> }, op: SqlOperation, args: Record<string, unknown>,
) {
  try {
    return await db.withPgClient(db.pgSettings, async (client: PgClient) =>
      (await client.query<{ result: unknown }>(sqlCall(op, args))).rows[0].result);
  } catch (e) {
    if (!op.failuresAsErrors && callerFailure(e)?.business) return { success: false, error: callerFailure(e)!.message };
    throw e;
  }
}

export function sqlOperationsPlugin(name: string, typeDefs: DocumentNode, operations: SqlOperations) {
  return extendSchema((build) => {
    const executor = build.input.pgRegistry.pgExecutors.main;
    const plans: Record<"Query" | "Mutation", Record<string, unknown>> = { Query: {}, Mutation: {} };
    for (const [field, op] of Object.entries(operations)) {
      if (op.kind === "query") {
        plans.Query[field] = (_$root: unknown, fieldArgs: { getRaw(): any }) =>
          loadOneWithPgClient(executor, fieldArgs.getRaw(), async (client, specs) =>
            Promise.all(specs.map(async (args) =>
              (await client.query<{ result: unknown }>(sqlCall(op, args as Record<string, unknown>))).rows[0].result)));
      } else {
        plans.Mutation[field] = (_$root: unknown, fieldArgs: { getRaw(): any }) =>
          sideEffect(list([executor.context(), fieldArgs.getRaw()]), ([db, args]: any) => runMutation(db, op, args));
      }
    }
    return {
      typeDefs,
      objects: {
        ...(Object.keys(plans.Query).length ? { Query: { plans: plans.Query as any } } : {}),
        ...(Object.keys(plans.Mutation).length ? { Mutation: { plans: plans.Mutation as any } } : {}),
      },
    };
  }, name);
}
