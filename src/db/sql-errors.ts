import { isSafeError } from "postgraphile/grafast";

/**
 * What a failed database call means for the caller: one home for the SQLSTATE classes our SQL
 * raises (app_private.fail: AP business, AU access) and for the failures that are the caller's
 * request rather than our fault. Used by the GraphQL layer and the operator CLI alike.
 */

export type ErrorCode =
  | "UNAUTHENTICATED" | "FORBIDDEN" | "NOT_FOUND" | "RATE_LIMITED" | "BAD_USER_INPUT" | "SERVICE_UNAVAILABLE" | "INTERNAL"
  // File uploads and intake (HTTP 415 and 413), outside GraphQL.
  | "UNSUPPORTED_MEDIA_TYPE" | "PAYLOAD_TOO_LARGE";

/** Said when a request's database work passes STATEMENT_TIMEOUT_MS (waits for a connection included). */
export const TIMEOUT_MESSAGE = "The request took too long; narrow it.";

/** A request's database budget ran out before it got a connection. */
export class RequestTimeout extends Error {
  readonly code = "57014";
  constructor() {
    super(TIMEOUT_MESSAGE);
  }
}

/** SQLSTATEs raised by our SQL (app_private.fail) and the contract code each one means. */
const SQLSTATE_CODES: Record<string, ErrorCode> = {
  AU401: "UNAUTHENTICATED",
  AU403: "FORBIDDEN",
  AU404: "NOT_FOUND",
  AP400: "BAD_USER_INPUT",
  AP404: "NOT_FOUND",
  AP409: "BAD_USER_INPUT",
};

/**
 * A database failure the caller can act on, with the message to show: our own SQL errors
 * (class AU/AP) keep theirs; a statement cancelled by the timeout (57014) or a connection not
 * given in time (pg-pool says so only in words) is the caller's request being too heavy.
 * Anything else is ours and is masked.
 */
export function callerFailure(e: unknown): { message: string; code: ErrorCode; business: boolean } | undefined {
  const err = e as { code?: unknown; message?: unknown } | null | undefined;
  const code = typeof err?.code === "string" ? SQLSTATE_CODES[err.code] : undefined;
  if (code) return { message: String(err!.message), code, business: (err!.code as string).startsWith("AP") };
  if (err?.code === "57014" || err?.message === "timeout exceeded when trying to connect") {
    return { message: TIMEOUT_MESSAGE, code: "BAD_USER_INPUT", business: true };
  }
  // Grafast's SafeError is by its definition a message meant for the caller.
  if (e instanceof Error && isSafeError(e)) return { message: e.message, code: "BAD_USER_INPUT", business: true };
  return undefined;
}

