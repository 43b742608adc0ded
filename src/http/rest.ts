import type { NextFunction, Request, Response } from "express";
import { logger } from "../logger.js";
import type pg from "pg";
import type { Config } from "../config.js";
import type { ErrorCode } from "../db/sql-errors.js";
import { sendJson } from "./node-http.js";
import { authenticate } from "./authenticate.js";
import { errorBody } from "./errors.js";
import { scopeOf } from "./request-scope.js";

/**
 * What the routes outside GraphQL (uploads, files, intake) share: HTTP statuses for the
 * contract's error codes, and GraphQL's authentication with those statuses. An upload's database
 * work as the caller goes through the request's scope (src/db/caller.ts), as GraphQL's does.
 */

const STATUS: Record<ErrorCode, number> = {
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  RATE_LIMITED: 429,
  BAD_USER_INPUT: 400,
  UNSUPPORTED_MEDIA_TYPE: 415,
  PAYLOAD_TOO_LARGE: 413,
  SERVICE_UNAVAILABLE: 503,
  INTERNAL: 500,
};

export const statusFor = (code: ErrorCode): number => STATUS[code] ?? 500;

export function sendError(res: Response, message: string, code: ErrorCode): void {
  if (res.headersSent) return;
  res.status(statusFor(code)).json(errorBody(message, code));
}

/** An unexpected failure: logged with the request id, masked for the caller. */
export function sendInternalError(res: Response, e: unknown, what: string): void {
  const { requestId } = scopeOf(res);
  logger.error({ requestId, err: { message: (e as Error)?.message } }, what);
  if (!res.headersSent) res.status(500).json(errorBody("Internal error.", "INTERNAL", { requestId }));
}

/** After an early refusal, at most this much more of a body is read (and dropped) so the client sees the answer. */
const DISCARD_LIMIT_BYTES = 8 * 1024 * 1024;

/** Stops using the request body: a little more is drained so the answer gets through, then the connection is cut. */
export function stopReading(req: Request): void {
  req.unpipe();
  let discarded = 0;
  req.on("data", (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > DISCARD_LIMIT_BYTES) req.destroy();
  });
  req.resume();
}

/**
 * GraphQL's `authenticate` (same messages, counting and X-RateLimit-* headers), but its refusals
 * leave with the HTTP status of their code instead of GraphQL's 200, and an anonymous caller is
 * refused too: unlike introspection, nothing here is public. A refused request's body (a file) is
 * not read: the connection closes once the answer is written.
 */
export function authenticateRest(authPool: pg.Pool, config: Config) {
  const inner = authenticate(authPool, config, (res, status, body) => {
    const code = body.errors[0]?.extensions?.code;
    res.setHeader("Connection", "close");
    sendJson(res, status === 200 && code ? statusFor(code) : status, body);
  });
  return (req: Request, res: Response, next: NextFunction) => {
    void inner(req, res, (err?: unknown) => {
      if (err) return next(err);
      if (scopeOf(res).identity.kind === "anonymous") {
        res.setHeader("Connection", "close");
        return sendError(res, "Authentication Required.", "UNAUTHENTICATED");
      }
      next();
    });
  };
}
