import type { GraphQLSchema, OperationDefinitionNode } from "postgraphile/graphql";
import { requestCall } from "../../plugins/sql-operations.js";
import { argumentsOf, compileDirectRead, failed, respond, type DirectRead } from "../graphql/direct-read.js";
import { maskError } from "./errors.js";
import type { HttpRequest, HttpResponse, Next } from "./node-http.js";
import { scopeOf } from "./request-scope.js";
import { directReadResults } from "../metrics.js";

/**
 * Serves a read that src/graphql/direct-read.ts can answer from its SQL function's JSON, on the
 * request's database access (the caller's settings, the tenant's share of the pool, the
 * request's budget), in one round trip (plugins/sql-operations.ts, requestCall); passes every
 * other request on to GraphQL execution, which then draws on the same access and budget.
 * Compiled reads are kept per operation node, which the gate keeps per query text.
 * DIRECT_READS=off leaves this step out.
 */
export function directReads(schema: () => GraphQLSchema) {
  const compiled = new WeakMap<OperationDefinitionNode, DirectRead | null>();
  return async (req: HttpRequest, res: HttpResponse, next: Next) => {
    const scope = scopeOf(res);
    const admitted = scope.operation;
    if (!admitted) return next();
    let read = compiled.get(admitted.operation);
    if (read === undefined) {
      read = compileDirectRead(schema(), admitted.document, admitted.operation) ?? null;
      compiled.set(admitted.operation, read);
    }
    if (!read) return next();
    const args = argumentsOf(schema(), read, (req.body as { variables?: Record<string, unknown> }).variables);
    if (!args) return next();
    let body: unknown;
    try {
      body = respond(read, await scope.db.call(requestCall(read.operation, args)));
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
