import { GraphQLError } from "postgraphile/graphql";
import { currentRequestId } from "./request-context.js";
import { logger } from "../logger.js";

export type ErrorCode = "UNAUTHENTICATED" | "FORBIDDEN" | "NOT_FOUND" | "RATE_LIMITED" | "BAD_USER_INPUT" | "INTERNAL";

/** SQLSTATEs raised by our SQL (app_private.fail) and the contract code each one means. */
const SQLSTATE_CODES: Record<string, ErrorCode> = {
  AU401: "UNAUTHENTICATED",
  AU403: "FORBIDDEN",
  AU404: "NOT_FOUND",
  AP400: "BAD_USER_INPUT",
  AP404: "NOT_FOUND",
  AP409: "BAD_USER_INPUT",
};

/** A GraphQL error body as the contract shows it, for responses written outside GraphQL. */
export function errorBody(message: string, code: ErrorCode, extra: Record<string, unknown> = {}) {
  return { errors: [{ message, extensions: { code, ...extra } }] };
}

/**
 * Every error leaves with `extensions.code`. Our own SQL errors keep their message; errors
 * GraphQL itself produced (validation, variable coercion) are the caller's fault; anything
 * else is logged with the request id and masked.
 */
export function maskError(error: GraphQLError): GraphQLError {
  const original = error.originalError as (Error & { code?: unknown; extensions?: Record<string, unknown> }) | undefined;
  const sqlCode = typeof original?.code === "string" ? SQLSTATE_CODES[original.code] : undefined;
  if (sqlCode) return withCode(error, original!.message, sqlCode);
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
