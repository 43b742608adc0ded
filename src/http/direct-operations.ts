import type { GraphQLSchema, OperationDefinitionNode } from "postgraphile/graphql";
import { requestCall, runMutation } from "../../plugins/sql-operations.js";
import { argumentsOf, compileDirectOperation, executeOver, failed, respond, type DirectOperation } from "../graphql/direct-operation.js";
import { maskError } from "./errors.js";
import type { HttpRequest, HttpResponse, Next } from "./node-http.js";
import { scopeOf } from "./request-scope.js";
import { directReadResults, directWriteResults } from "../metrics.js";

/**
 * Serves an operation that src/graphql/direct-operation.ts can answer from its SQL function's
 * JSON, on the request's database access (the caller's settings, the tenant's share of the pool,
 * the request's budget), in one round trip (plugins/sql-operations.ts, requestCall); passes every
 * other request on to GraphQL execution, which then draws on the same access and budget.
 * A write runs as GraphQL execution runs it (runMutation: a business failure is
 * `{success: false, error}`, or an error for the operations without `success`).
 * Compiled operations are kept per operation node, which the gate keeps per query text.
 * DIRECT_READS=off and DIRECT_WRITES=off leave reads and writes to GraphQL execution.
 */
export function directOperations(schema: () => GraphQLSchema, serve: { reads: boolean; writes: boolean }) {
  const compiled = new WeakMap<OperationDefinitionNode, DirectOperation | null>();
  return async (req: HttpRequest, res: HttpResponse, next: Next) => {
    const scope = scopeOf(res);
    const admitted = scope.operation;
    if (!admitted) return next();
    let direct = compiled.get(admitted.operation);
    if (direct === undefined) {
      direct = compileDirectOperation(schema(), admitted.document, admitted.operation) ?? null;
      compiled.set(admitted.operation, direct);
    }
    if (!direct || !(direct.write ? serve.writes : serve.reads)) return next();
    const { variables, onError } = req.body as { variables?: Record<string, unknown>; onError?: string };
    // An error behaviour other than GraphQL's default (null bubbling up): GraphQL execution's.
    if (onError != null && onError !== "PROPAGATE") return next();
    // Arguments that do not coerce: GraphQL execution says why, and nothing has run.
    const args = argumentsOf(schema(), direct, variables);
    if (!args) return next();
    let body: unknown;
    let result: "answered" | "executed" = "answered";
    try {
      const json = direct.write
        ? await runMutation(scope.db, direct.operation, args)
        : await scope.db.call(requestCall(direct.operation, args));
      body = respond(direct, json);
      if (!body && !direct.write) {
        // Not what its type promises: GraphQL execution says what is wrong with it.
        directReadResults.inc({ result: "unvouched" });
        return next();
      }
      if (!body) {
        result = "executed";
        body = await executeOver(schema(), direct, admitted.document, variables, json, maskError);
      }
    } catch (e) {
      body = failed(direct, e as Error, maskError);
    }
    (direct.write ? directWriteResults : directReadResults).inc({ result });
    // A string, not a Buffer: Node sends it in one write with the headers.
    const text = JSON.stringify(body);
    res.writeHead(200, { "Content-Type": "application/json;charset=utf-8", "Content-Length": String(Buffer.byteLength(text)) });
    res.end(text);
  };
}
