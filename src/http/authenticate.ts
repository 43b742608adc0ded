import { createHash } from "node:crypto";
import jwt from "jsonwebtoken";
import type pg from "pg";
import { errorBody } from "./errors.js";
import { headerOf, sendJson, type HttpRequest, type HttpResponse, type Next } from "./node-http.js";
import { rateLimitRefusals } from "../metrics.js";
import type { Config } from "../config.js";
import type { Identity } from "../db/identity.js";
import { scopeOf } from "./request-scope.js";

/** An API key secret as app_private.new_api_key_secret draws it: `acct_` and 40 base62 characters. */
export const API_KEY_SECRET = /acct_[0-9A-Za-z]{40}/;
const API_KEY_SHAPE = new RegExp(`^${API_KEY_SECRET.source}$`);
const UUID_SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const apiKeyDigest = (secret: string) => createHash("sha256").update(secret, "utf8").digest("hex");

/** How a refusal is answered: GraphQL's way (HTTP 200, or 429) unless a route says otherwise. */
export type Refuse = (res: HttpResponse, status: number, body: ReturnType<typeof errorBody>) => void;

export const rateLimitMessage = (quota: number) => `Rate Limit Exceeded. ${quota.toLocaleString("en-US")} Requests/Hour.`;

/**
 * Checks the credential, in this order: present, valid, within the rate limit (docs/api.md,
 * Authentication). An API key costs one
 * database round trip, which also counts the request; a JWT is verified locally and its user
 * looked up. No credential is allowed through: introspection is public, and every data operation
 * refuses an anonymous caller in SQL.
 */
export function authenticate(authPool: pg.Pool, config: Config, refuse: Refuse = sendJson) {
  const quota = config.rateLimitPerHour;
  const verifyKey = config.jwtPublicKey ?? config.jwtSecret;
  const algorithms: jwt.Algorithm[] = config.jwtPublicKey ? ["RS256"] : ["HS256"];

  return async (req: HttpRequest, res: HttpResponse, next: Next) => {
    const header = req.headers.authorization;
    // No credential: the scope's identity stays anonymous.
    if (!header) return next();
    const space = header.indexOf(" ");
    const scheme = space > 0 ? header.slice(0, space).toLowerCase() : "";
    const token = space > 0 ? header.slice(space + 1).trim() : "";
    try {
      if (scheme === "bearer") {
        if (!API_KEY_SHAPE.test(token)) return refuse(res, 200, errorBody("Invalid API Key.", "UNAUTHENTICATED"));
        const { rows } = await authPool.query<{ api_key_id: string; organization_id: string; request_count: number; window_end: Date }>(
          "select * from app_private.authenticate_api_key($1, $2)", [apiKeyDigest(token), quota]);
        const key = rows[0];
        if (!key) return refuse(res, 200, errorBody("Invalid API Key.", "UNAUTHENTICATED"));
        const resetSeconds = Math.ceil(key.window_end.getTime() / 1000);
        res.setHeader("X-RateLimit-Limit", String(quota));
        res.setHeader("X-RateLimit-Remaining", String(Math.max(quota - key.request_count, 0)));
        res.setHeader("X-RateLimit-Reset", String(resetSeconds));
        if (key.request_count > quota) {
          const retryAfter = Math.max(1, Math.ceil((key.window_end.getTime() - Date.now()) / 1000));
          res.setHeader("Retry-After", String(retryAfter));
          rateLimitRefusals.inc();
          return refuse(res, 429, errorBody(rateLimitMessage(quota), "RATE_LIMITED"));
        }
        scopeOf(res).authenticated({ kind: "apiKey", apiKeyId: key.api_key_id, organizationId: key.organization_id } satisfies Identity);
        return next();
      }
      if (scheme === "jwt") {
        let sub: unknown;
        try {
          const payload = jwt.verify(token, verifyKey, { algorithms }) as jwt.JwtPayload;
          // A token without an expiry would be a credential for ever.
          if (typeof payload.exp !== "number") return refuse(res, 200, errorBody("Invalid Token.", "UNAUTHENTICATED"));
          sub = payload.sub;
        } catch {
          return refuse(res, 200, errorBody("Invalid Token.", "UNAUTHENTICATED"));
        }
        if (typeof sub !== "string" || !UUID_SHAPE.test(sub)) return refuse(res, 200, errorBody("Invalid Token.", "UNAUTHENTICATED"));
        // Optional: the organization this session works in, for reads that take no organizationId.
        const header = headerOf(req, "X-Organization-Id");
        const organizationId = header !== undefined && UUID_SHAPE.test(header) ? header : undefined;
        const { rows } = await authPool.query<{ outcome: string }>(
          "select app_private.authenticate_user_in($1, $2) as outcome", [sub, organizationId ?? null]);
        // The user is checked first, then the organization; a header that is no id names no organization.
        const outcome = rows[0]?.outcome === "ok" && header !== undefined && !organizationId ? "organization_not_found" : rows[0]?.outcome;
        switch (outcome) {
          case "ok":
            scopeOf(res).authenticated({ kind: "user", userId: sub, organizationId } satisfies Identity);
            return next();
          case "organization_not_found":
            return refuse(res, 200, errorBody("Organization Not Found.", "NOT_FOUND"));
          case "not_member":
            return refuse(res, 200, errorBody("Not A Member Of This Organization.", "FORBIDDEN"));
          default:
            return refuse(res, 200, errorBody("Invalid Token.", "UNAUTHENTICATED"));
        }
      }
      return refuse(res, 200, errorBody("Authentication Required.", "UNAUTHENTICATED"));
    } catch (err) {
      next(err);
    }
  };
}
