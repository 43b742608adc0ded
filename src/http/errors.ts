import { GraphQLError } from "postgraphile/graphql";
import { callerFailure, type ErrorCode } from "../db/sql-errors.js";
import { currentRequestId, noteErrorToCaller } from "./request-scope.js";
import { logger } from "../logger.js";

/** A GraphQL error body as the contract shows it, for responses written outside GraphQL. */
export function errorBody(message: string, code: ErrorCode, extra: Record<string, unknown> = {}) {
  noteErrorToCaller();
  return { errors: [{ message, extensions: { code, ...extra } }] };
}

/**
 * Every error leaves with `extensions.code`. Failures the caller can act on keep their message;
 * errors GraphQL itself produced (validation, variable coercion) are the caller's fault; anything
 * else is logged with the request id and masked.
 */
export function maskError(error: GraphQLError): GraphQLError {
  noteErrorToCaller();
  const original = error.originalError as (Error & { code?: unknown }) | undefined;
  const failure = callerFailure(original);
  if (failure) return withCode(error, failure.message, failure.code);
  if (!original || original instanceof GraphQLError) {
    const code = (error.extensions?.code as ErrorCode | undefined) ?? "BAD_USER_INPUT";
    return withCode(error, error.message, code);
  }
  const requestId = currentRequestId();
  logger.error({ requestId, err: { message: original.message, code: original.code, stack: original.stack }, path: error.path }, "internal error");
  return withCode(error, "Internal error.", "INTERNAL", { requestId });
}

function withCode(error: GraphQLError, message: string, code: ErrorCode, extra: Record<string, unknown> = {}) {
  return new GraphQLError(message, {
    nodes: error.nodes, source: error.source, positions: error.positions, path: error.path,
    originalError: error.originalError, extensions: { ...error.extensions, code, ...extra },
  });
}
