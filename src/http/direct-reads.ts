import type pg from "pg";
import { createWithPgClient } from "postgraphile/adaptors/pg";
import type { DocumentNode, GraphQLSchema, OperationDefinitionNode } from "postgraphile/graphql";
import { requestCall, runCall } from "../../plugins/sql-operations.js";
import { argumentsOf, compileDirectRead, failed, respond, type DirectRead } from "../graphql/direct-read.js";
import { requestWithPgClient, tenantsOf, type ConnectionShare } from "../graphql/connection-share.js";
import { identityOf, pgSettingsFor } from "./authenticate.js";
import { maskError } from "./errors.js";
import type { HttpRequest, HttpResponse, Next } from "./node-http.js";
import { directReadResults } from "../metrics.js";

/** What the gate admitted: the document and the operation it runs. */
export interface AdmittedOperation { document: DocumentNode; operation: OperationDefinitionNode }

/**
 * Serves a read that src/graphql/direct-read.ts can answer from its SQL function's JSON, with the
 * same database access as GraphQL execution (the caller's settings, the tenant's share of the
 * pool, the request's budget), in one round trip (plugins/sql-operations.ts, requestCall); passes every
 * other request on to GraphQL. Compiled reads are kept
 * per operation node, which the gate keeps per query text.
 */
export function directReads(schema: () => GraphQLSchema, authPool: pg.Pool, share: ConnectionShare, budgetMs: number) {
  const withPgClient = createWithPgClient({ pool: authPool });
  const compiled = new WeakMap<OperationDefinitionNode, DirectRead | null>();
  return async (req: HttpRequest, res: HttpResponse, next: Next) => {
    const admitted = res.locals.admittedOperation as AdmittedOperation | undefined;
    if (!admitted) return next();
    let read = compiled.get(admitted.operation);
    if (read === undefined) {
      read = compileDirectRead(schema(), admitted.document, admitted.operation) ?? null;
      compiled.set(admitted.operation, read);
    }
    if (!read) return next();
    const args = argumentsOf(schema(), read, (req.body as { variables?: Record<string, unknown> }).variables);
    if (!args) return next();
    const identity = identityOf(res);
    const db = requestWithPgClient(withPgClient, share, tenantsOf(identity, res.locals.operationOrganization), budgetMs,
      () => { res.locals.timedOut = true; });
    // GraphQL execution, should it run this request after all, draws on the same budget.
    res.locals.requestDb = db;
    let body: unknown;
    try {
      const call = requestCall(read.operation, args);
      const json = call.values === undefined
        ? (await db.statement(pgSettingsFor(identity), call.text))[0].result
        : await db(pgSettingsFor(identity), (client) => runCall(client, call));
      body = respond(read, json);
      if (!body) {
        // Not what its type promises: GraphQL execution says what is wrong with it.
        directReadResults.inc({ result: "unvouched" });
        return next();
      }
    } catch (e) {
      body = failed(read, e as Error, maskError);
    }
    directReadResults.inc({ result: "answered" });
    // A string, not a Buffer: Node sends it in one write with the headers.
    const text = JSON.stringify(body);
    res.writeHead(200, { "Content-Type": "application/json;charset=utf-8", "Content-Length": String(Buffer.byteLength(text)) });
    res.end(text);
  };
}
