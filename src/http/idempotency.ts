import { createHmac, hkdfSync } from "node:crypto";
import type pg from "pg";
import { errorBody } from "./errors.js";
import { noteErrorToCaller, scopeOf } from "./request-scope.js";
import { headerOf, sendJson, type HttpRequest, type HttpResponse, type Next } from "./node-http.js";
import { API_KEY_SECRET } from "./authenticate.js";
import { credentialOf } from "../db/identity.js";
import { logger } from "../logger.js";
import { WEBHOOK_SECRET } from "../webhooks/signature.js";

/**
 * A secret is shown once: a replayed createApiKey or createWebhookEndpoint response carries null
 * where the secret was (whatever the field's alias).
 */
const SECRET_IN_JSON = new RegExp(`"(?:${API_KEY_SECRET.source}|${WEBHOOK_SECRET.source})"`, "g");
const redactSecrets = (body: string) => body.replace(SECRET_IN_JSON, "null");

/**
 * `Idempotency-Key` on mutations, as Stripe does: the first request with a key (per credential,
 * for 24 hours) runs and its response is stored; a repeat gets that response without running the
 * mutation again; the same key with another body is refused. The claim is a row in PostgreSQL,
 * so concurrent repeats across server processes run the mutation once. The request is kept as
 * an HMAC under a key derived from SECRETS_KEY: a request may carry a password (connectMailbox),
 * and a plain hash of it would let a copy of the database test guesses.
 */
export function idempotency(authPool: pg.Pool, secretsKey: Buffer) {
  const digestKey = Buffer.from(hkdfSync("sha256", secretsKey, Buffer.alloc(0), "idempotency request digest", 32));
  return async (req: HttpRequest, res: HttpResponse, next: Next) => {
    const key = headerOf(req, "Idempotency-Key");
    const scope = scopeOf(res);
    const { identity } = scope;
    const credential = credentialOf(identity);
    if (key === undefined || scope.operation?.operation.operation !== "mutation" || credential === undefined) return next();
    if (key.length < 1 || key.length > 255) {
      return sendJson(res, 200, errorBody("Idempotency-Key must be 1 to 255 characters.", "BAD_USER_INPUT"));
    }
    const { query, variables, operationName } = req.body as Record<string, unknown>;
    const digest = createHmac("sha256", digestKey).update(JSON.stringify([query, variables ?? null, operationName ?? null])).digest("hex");
    try {
      const { rows } = await authPool.query<{ outcome: string; response_status: number | null; response_body: string | null }>(
        "select * from app_private.claim_idempotency_key($1, $2, $3, $4)",
        [credential, key, digest, identity.kind === "apiKey" ? identity.organizationId : null]);
      const claim = rows[0];
      if (claim.outcome === "mismatch") {
        return sendJson(res, 200, errorBody("This Idempotency-Key was already used with a different request.", "BAD_USER_INPUT"));
      }
      if (claim.outcome === "in_progress") {
        return sendJson(res, 200, errorBody("A request with this Idempotency-Key is still running; retry later.", "BAD_USER_INPUT"));
      }
      if (claim.outcome === "replay") {
        res.setHeader("Idempotent-Replayed", "true");
        if (claim.response_body!.includes('"errors":')) noteErrorToCaller();
        res.writeHead(claim.response_status!, { "Content-Type": "application/json; charset=utf-8", "Content-Length": Buffer.byteLength(claim.response_body!) });
        return res.end(claim.response_body);
      }
    } catch (err) {
      return next(err);
    }
    captureResponse(res, (status, body) => {
      // A request that ran out of time wrote nothing: a retry with this key must run, not replay.
      const settle = scope.timedOut
        ? authPool.query("select app_private.release_idempotency_key($1, $2)", [credential, key])
        : authPool.query("select app_private.save_idempotent_response($1, $2, $3, $4)", [credential, key, status, redactSecrets(body)]);
      settle.catch((err) => logger.error({ err: err.message, requestId: scope.requestId }, "could not store idempotent response"));
    });
    next();
  };
}

function captureResponse(res: HttpResponse, onDone: (status: number, body: string) => void) {
  const chunks: Buffer[] = [];
  const write = res.write.bind(res) as (...args: unknown[]) => boolean;
  const end = res.end.bind(res) as (...args: unknown[]) => HttpResponse;
  const keep = (chunk: unknown, encoding?: unknown) => {
    if (chunk == null || typeof chunk === "function") return;
    chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string, typeof encoding === "string" ? (encoding as BufferEncoding) : "utf8"));
  };
  res.write = ((chunk: unknown, ...rest: unknown[]) => { keep(chunk, rest[0]); return write(chunk, ...rest); }) as HttpResponse["write"];
  res.end = ((chunk?: unknown, ...rest: unknown[]) => { keep(chunk, rest[0]); return end(chunk, ...rest); }) as HttpResponse["end"];
  res.on("finish", () => onDone(res.statusCode, Buffer.concat(chunks).toString("utf8")));
}
