import { loadOneWithPgClient, type PgClient } from "postgraphile/@dataplan/pg";
import { context, list, sideEffect, type FieldInfo } from "postgraphile/grafast";
import { Kind, getNamedType, isObjectType, type DocumentNode, type GraphQLField } from "postgraphile/graphql";
import { extendSchema } from "postgraphile/utils";
import { callerFailure } from "../src/db/sql-errors.js";
import type { CallerDb } from "../src/db/caller.js";
import { literalSql, sqlLiteral, type SqlCall } from "../src/db/sql-text.js";
import type { OutboundCallContext } from "../src/outbound/call-context.js";

/**
 * A contract operation is one SQL function, derived from the GraphQL field and nothing else:
 *   - the function is `app_public.<field in snake_case>`, called with the field's arguments by
 *     name (snake_case), and returns the result type's shape as JSON;
 *   - a field of Query reads (batched per request), a field of Mutation writes in its own
 *     transaction;
 *   - a mutation whose result type has `success` reports business failures as `success: false`;
 *     one without it (the batches) reports them as GraphQL errors (BAD_USER_INPUT).
 * The SQL function owns the rule; this file only translates. test/operation-arguments.test.ts
 * checks every field's arguments against its function's parameter names.
 */

/**
 * Operations served in TypeScript rather than by an SQL function of their name: only what SQL
 * cannot do (signing URLs, testing a connection, encrypting a secret, checking an outbound
 * address). Their rules are still SQL functions, which they call (src/sources/connect.ts).
 */
export const TYPESCRIPT_OPERATIONS: ReadonlySet<string> = new Set<string>(["connectMailbox", "connectCloudDrive",
  "createWebhookEndpoint", "updateWebhookEndpoint"]);

declare global {
  namespace Grafast {
    interface Context {
      /** The request's database access as the caller (src/db/caller.ts). */
      caller: CallerDb;
      tenantOutbound?: OutboundCallContext["tenantOutbound"];
    }
  }
}

/** The plan of a mutation of TYPESCRIPT_OPERATIONS: `serve` with the context and the arguments. */
export const served = (serve: (ctx: OutboundCallContext, args: Record<string, unknown>) => Promise<unknown>) =>
  (_$root: unknown, fieldArgs: { getRaw(): any }) =>
    sideEffect(list([context(), fieldArgs.getRaw()]), ([ctx, args]: any) => serve(ctx as OutboundCallContext, args));

const snake = (name: string) => name.replace(/[A-Z]/g, (c) => "_" + c.toLowerCase());

/**
 * Marks the plan of a Query field that is its SQL function's JSON and nothing else, which a
 * direct read (src/graphql/direct-operation.ts) may stand in for.
 */
export const SQL_READ = Symbol("sql read");
/** Marks the plan of a Mutation field that is runMutation of its SQL function and nothing else: a direct write's. */
export const SQL_WRITE = Symbol("sql write");

/** The SQL function of a root field. */
export const sqlFunctionOf = (fieldName: string) => `app_public.${snake(fieldName)}`;
/** The SQL parameter of a field argument. */
export const sqlParameterOf = snake;

export interface Operation {
  sqlFunction: string;
  args: readonly string[];
  /** Arguments passed as JSON, their explicit null included (it clears); any other null is left out. */
  passedAsJson: readonly string[];
  failuresAsErrors: boolean;
}

/**
 * Arguments where null means "clear it" (docs/api.md, Closing a period: a null lockDate unlocks):
 * their SQL parameter is jsonb and gets the value as JSON, `null` included, while leaving the
 * argument out gives SQL null, which keeps the value. No string the caller sends can mean "keep".
 */
const NULL_CLEARS: Readonly<Record<string, readonly string[]>> = { updateOrganizationSettings: ["lockDate"] };

/** The SQL function behind a root field, and how its failures are told. */
export function operationOf(fieldName: string, field: GraphQLField<unknown, unknown>): Operation {
  const result = getNamedType(field.type);
  return {
    sqlFunction: sqlFunctionOf(fieldName),
    args: field.args.map((a) => a.name),
    passedAsJson: NULL_CLEARS[fieldName] ?? [],
    failuresAsErrors: !(isObjectType(result) && "success" in result.getFields()),
  };
}

type Value = string | number | boolean;

/** The call's present arguments (absent ones are left out, so SQL defaults apply), objects as JSON. */
function callArguments(op: Operation, values: Record<string, unknown>): [parameter: string, value: Value][] {
  const out: [string, Value][] = [];
  for (const arg of op.args) {
    const value = values[arg];
    if (value !== undefined && op.passedAsJson.includes(arg)) {
      out.push([sqlParameterOf(arg), JSON.stringify(value)]);
      continue;
    }
    if (value === undefined || value === null) continue;
    out.push([sqlParameterOf(arg), typeof value === "object" ? JSON.stringify(value) : (value as string | number | boolean)]);
  }
  return out;
}

/** `select fn(a => <a>, b => <b>) as result`, each argument as `placeholder` writes it. */
const callText = (op: Operation, args: [string, Value][], placeholder: (value: Value, n: number) => string) =>
  // Quoted names: `limit` and `offset` are reserved words.
  `select ${op.sqlFunction}(${args.map(([name, value], i) => `"${name}" => ${placeholder(value, i + 1)}`).join(", ")}) as result`;

const parameterCall = (op: Operation, args: [string, Value][]): SqlCall =>
  ({ text: callText(op, args, (_value, n) => `$${n}`), values: args.map(([, value]) => value) });

/**
 * Calls whose arguments are longer than this keep them as parameters (and the three round trips
 * of `withPgClient`): PostgreSQL's log keeps the text of a failing statement
 * (log_min_error_statement), and a bank statement's rows have no place there.
 */
const ONE_ROUND_TRIP_MAX_CHARS = 16_384;

/**
 * The call as a request sends it: its values as literals, for a statement sent in one round trip
 * (RequestWithPgClient.statement); as parameters when its arguments are longer than
 * ONE_ROUND_TRIP_MAX_CHARS (judged before any is quoted).
 */
export function requestCall(op: Operation, values: Record<string, unknown>): SqlCall {
  const args = callArguments(op, values);
  let length = 0;
  for (const [, value] of args) length += String(value).length;
  return length <= ONE_ROUND_TRIP_MAX_CHARS ? { text: literalSql(callText(op, args, sqlLiteral)) } : parameterCall(op, args);
}

/** A call on the request's client: the result type's shape as JSON. */
export const runCall = async (client: PgClient, call: SqlCall) =>
  (await client.query<{ result: unknown }>({ text: call.text, values: call.values })).rows[0].result;

/** A root field's SQL function called on the request's client, its values as parameters. */
export const runOperation = (client: PgClient, op: Operation, args: Record<string, unknown>) =>
  runCall(client, parameterCall(op, callArguments(op, args)));

/** A business failure as a result type with `success` carries it. */
export type Failure = { success: false; error: string };
export const isFailure = (r: unknown): r is Failure => (r as Failure | null)?.success === false;

/**
 * One statement as the caller (CallerDb.call), its result as a mutation returns it: a failure the
 * caller can act on (our SQL's class AP, or the request's time running out, waiting for a
 * connection included) is `{success: false, error}` unless `failuresAsErrors`; a failed statement
 * rolled its transaction back, so nothing was written.
 */
export async function callForResult(caller: CallerDb, call: SqlCall, failuresAsErrors = false): Promise<unknown> {
  try {
    return await caller.call(call);
  } catch (e) {
    const failure = callerFailure(e);
    if (!failuresAsErrors && failure?.business) return { success: false, error: failure.message };
    throw e;
  }
}

/** A mutation's function in a transaction of its own (in one round trip when its values can be literals). */
export const runMutation = (caller: CallerDb, op: Operation, args: Record<string, unknown>) =>
  callForResult(caller, requestCall(op, args), op.failuresAsErrors);

/** The Query and Mutation fields a document adds. */
function rootFields(typeDefs: DocumentNode): Record<"Query" | "Mutation", string[]> {
  const fields: Record<"Query" | "Mutation", string[]> = { Query: [], Mutation: [] };
  for (const d of typeDefs.definitions) {
    if ((d.kind === Kind.OBJECT_TYPE_EXTENSION || d.kind === Kind.OBJECT_TYPE_DEFINITION) && (d.name.value === "Query" || d.name.value === "Mutation")) {
      fields[d.name.value].push(...(d.fields ?? []).map((f) => f.name.value));
    }
  }
  return fields;
}

/**
 * Plans SQL cannot give, by type and field: non-root fields (a signed URL), and the root fields of
 * TYPESCRIPT_OPERATIONS.
 */
export type FieldPlans = Record<string, Record<string, (...args: any[]) => unknown>>;

/**
 * The types and operations of one feature: every root field it adds is served by its SQL function;
 * `fieldPlans` adds plans for fields of its other types.
 */
export function sqlOperationsPlugin(name: string, typeDefs: DocumentNode, fieldPlans: FieldPlans = {}) {
  return extendSchema((build) => {
    const executor = build.input.pgRegistry.pgExecutors.main;
    const fields = rootFields(typeDefs);
    const plans = { Query: {} as Record<string, unknown>, Mutation: {} as Record<string, unknown> };
    for (const field of fields.Query.filter((f) => !TYPESCRIPT_OPERATIONS.has(f))) {
      plans.Query[field] = Object.assign((_$root: unknown, fieldArgs: { getRaw(): any }, info: FieldInfo) => {
        const op = operationOf(info.fieldName, info.field);
        return loadOneWithPgClient(executor, fieldArgs.getRaw(), (client, specs) =>
          Promise.all(specs.map((args) => runOperation(client, op, args as Record<string, unknown>))));
      }, { [SQL_READ]: true });
    }
    for (const field of fields.Mutation.filter((f) => !TYPESCRIPT_OPERATIONS.has(f))) {
      plans.Mutation[field] = Object.assign((_$root: unknown, fieldArgs: { getRaw(): any }, info: FieldInfo) => {
        const op = operationOf(info.fieldName, info.field);
        return sideEffect(list([context(), fieldArgs.getRaw()]), ([ctx, args]: any) => runMutation((ctx as Grafast.Context).caller, op, args));
      }, { [SQL_WRITE]: true });
    }
    return {
      typeDefs,
      objects: {
        ...Object.fromEntries(Object.entries(fieldPlans).map(([type, p]) => [type, { plans: p as any }])),
        ...(fields.Query.length ? { Query: { plans: { ...plans.Query, ...fieldPlans.Query } as any } } : {}),
        ...(fields.Mutation.length ? { Mutation: { plans: { ...plans.Mutation, ...fieldPlans.Mutation } as any } } : {}),
      },
    };
  }, name);
}
