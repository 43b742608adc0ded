import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import pg from "pg";
import { settingsStatement, sqlLiteral } from "../src/db/sql-text.js";
import { applyGcFlags } from "../src/gc-flags.js";

/**
 * The baseline of `npm run bench -- overhead` (issues 12 and 31): the floor, the least a server
 * can do for the same answers. `node:http` and `pg` only, and the same admission and database work
 * as the GraphQL server, in the same round trips: the body limit and a JSON object body, the API
 * key checked and counted by app_private.authenticate_api_key (rate-limit headers, 429) in one
 * round trip, the query text looked up as the server's gate looks up a query it has checked
 * before, then the operation's transaction as the server sends it: `begin`, the settings, the
 * operation's SQL function with its values as literals and `commit` in one simple-protocol message
 * (values longer than the server's 16,384 characters as parameters, in three round trips, as the
 * server does). The selected fields of its JSON, in selection order, are the response.
 * BARE_ROUND_TRIPS=1 is the variant with the key check folded into the transaction's message: one
 * round trip for the whole request, which the server does not do.
 * Started by bench/overhead.ts: DATABASE_URL is the API's (authenticator) connection.
 */

/** The fields a query selects, in order; a nested list for an object or a list of objects. */
type Selection = [string, Selection | null][];

export interface BareOperation {
  field: string;
  /** `select <sql> as result`, with the variables named in `args` as $1, $2 … */
  sql: string;
  args: string[];
  selection: Selection;
}

/** The server's limit on a call's values sent as literals (plugins/sql-operations.ts, ONE_ROUND_TRIP_MAX_CHARS). */
const ONE_ROUND_TRIP_MAX_CHARS = 16_384;

/** A variable's value as the server passes it: objects as JSON. */
const valueOf = (v: unknown) => (v === undefined || v === null ? null : typeof v === "object" ? JSON.stringify(v) : v as string | number | boolean);

interface KeyRow { api_key_id: string; organization_id: string; request_count: number; window_end: Date }

const BODY_LIMIT = 1024 * 1024;
const API_KEY_SHAPE = /^acct_[0-9A-Za-z]{40}$/;

function project(value: unknown, selection: Selection | null): unknown {
  if (selection === null || value === null || value === undefined) return value ?? null;
  if (Array.isArray(value)) return value.map((v) => project(v, selection));
  const source = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [name, sub] of selection) out[name] = project(source[name], sub);
  return out;
}

const error = (res: ServerResponse, status: number, message: string, code: string) => {
  res.writeHead(status, { "content-type": "application/json; charset=utf-8" });
  res.end(JSON.stringify({ errors: [{ message, extensions: { code } }] }));
};

export function bareHandler(pool: pg.Pool, operations: Map<string, BareOperation>, quota: number, statementTimeoutMs: number,
    roundTrips: 1 | 2 = 2) {
  /** The key check and the settings in one statement; a key refused or over its quota sets a role that does not exist, which ends the transaction. */
  const foldedKeyCheck = (digest: string) => `select k.api_key_id, k.organization_id, k.request_count, k.window_end,
      set_config('role', case when k.request_count <= ${quota} then 'accounting_visitor' else 'refused by the key check' end, true),
      set_config('app.api_key_id', k.api_key_id::text, true), set_config('app.organization_id', k.organization_id::text, true),
      set_config('statement_timeout', '${statementTimeoutMs}', true)
    from (values (1)) one left join app_private.authenticate_api_key(${sqlLiteral(digest)}, ${quota}) k on true`;

  return (req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== "POST" || req.url !== "/graphql") return error(res, 404, "Not found.", "NOT_FOUND");
    if (!(req.headers["content-type"] ?? "").startsWith("application/json")) {
      return error(res, 400, "Send a JSON body with Content-Type: application/json.", "BAD_USER_INPUT");
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > BODY_LIMIT) {
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => {
      void answer(Buffer.concat(chunks).toString("utf8")).catch(() => error(res, 500, "Internal error.", "INTERNAL"));
    });

    const rateHeaders = (key: KeyRow) => {
      res.setHeader("X-RateLimit-Limit", String(quota));
      res.setHeader("X-RateLimit-Remaining", String(Math.max(quota - key.request_count, 0)));
      res.setHeader("X-RateLimit-Reset", String(Math.ceil(new Date(key.window_end).getTime() / 1000)));
    };
    /** The key check on its own round trip, as the server makes it: the key, or null when the response was sent. */
    const checkKey = async (digest: string) => {
      const { rows: [key] } = await pool.query<KeyRow>("select * from app_private.authenticate_api_key($1, $2)", [digest, quota]);
      if (!key) {
        error(res, 200, "Invalid API Key.", "UNAUTHENTICATED");
        return null;
      }
      rateHeaders(key);
      if (key.request_count > quota) {
        error(res, 429, `Rate Limit Exceeded. ${quota} Requests/Hour.`, "RATE_LIMITED");
        return null;
      }
      return key;
    };

    const answer = async (text: string) => {
      const header = req.headers.authorization ?? "";
      const token = header.startsWith("Bearer ") ? header.slice(7).trim() : "";
      if (!API_KEY_SHAPE.test(token)) return error(res, 200, "Invalid API Key.", "UNAUTHENTICATED");
      const digest = createHash("sha256").update(token, "utf8").digest("hex");
      let key: KeyRow | null = null;
      if (roundTrips === 2 && !(key = await checkKey(digest))) return;

      let body: { query?: unknown; variables?: unknown };
      try {
        body = JSON.parse(text);
      } catch {
        return error(res, 400, "Malformed JSON body.", "BAD_USER_INPUT");
      }
      if (typeof body !== "object" || body === null || Array.isArray(body) || typeof body.query !== "string") {
        return error(res, 400, "The request body must be a JSON object with a query string.", "BAD_USER_INPUT");
      }
      const op = operations.get(body.query);
      if (!op) return error(res, 400, "This baseline knows only the benchmark's queries.", "BAD_USER_INPUT");
      const variables = (typeof body.variables === "object" && body.variables !== null ? body.variables : {}) as Record<string, unknown>;
      const refusal = variablesRefusal(variables);
      if (refusal) return error(res, 400, refusal, "BAD_USER_INPUT");

      const values = op.args.map((a) => valueOf(variables[a]));
      const asLiterals = values.reduce<number>((n, v) => n + String(v).length, 0) <= ONE_ROUND_TRIP_MAX_CHARS;
      const call = `select ${asLiterals ? op.sql.replace(/\$(\d+)/g, (_m, n: string) => sqlLiteral(values[Number(n) - 1])) : op.sql} as result`;
      const opening = key
        ? settingsStatement({ role: "accounting_visitor", "app.api_key_id": key.api_key_id, "app.organization_id": key.organization_id,
          statement_timeout: String(statementTimeoutMs) })
        : foldedKeyCheck(digest);
      const client = await pool.connect();
      let result: unknown;
      try {
        if (asLiterals) {
          const results = (await client.query(`begin;\n${opening};\n${call}\n;commit`)) as unknown as pg.QueryResult[];
          key ??= results[1].rows[0] as KeyRow;
          result = results[2].rows[0].result;
        } else {
          const results = (await client.query(`begin;\n${opening}`)) as unknown as pg.QueryResult[];
          key ??= results[1].rows[0] as KeyRow;
          result = (await client.query<{ result: unknown }>(call, values)).rows[0].result;
          await client.query("commit");
        }
      } catch (e) {
        await client.query("rollback").catch(() => {});
        client.release();
        // Folded: a refused key ended the transaction (its count with it); the key check alone says why.
        if (roundTrips === 1 && /role "refused by the key check" does not exist/.test((e as Error).message)) {
          if (await checkKey(digest)) error(res, 500, "The key was refused, then accepted.", "INTERNAL");
          return;
        }
        throw e;
      }
      client.release();
      if (roundTrips === 1) rateHeaders(key);
      res.writeHead(200, { "content-type": "application/json; charset=utf-8" });
      res.end(JSON.stringify({ data: { [op.field]: project(result, op.selection) } }));
    };
  };
}

/** The server's limits on variables (src/http/graphql-gate.ts): depth, count, and text PostgreSQL can hold. */
function variablesRefusal(variables: unknown): string | null {
  let count = 0;
  const walk = (v: unknown, depth: number): string | null => {
    if (++count > 20_000) return "Too many variable values.";
    if (depth > 32) return "Variables are nested too deeply.";
    if (typeof v === "string") return v.includes("\0") || !(v as unknown as { isWellFormed(): boolean }).isWellFormed() ? "Bad text." : null;
    if (typeof v === "object" && v !== null) {
      for (const x of Array.isArray(v) ? v : Object.values(v)) {
        const r = walk(x, depth + 1);
        if (r) return r;
      }
    }
    return null;
  };
  return walk(variables, 0);
}

/** Parses a selection written as GraphQL: `id name items { id }`. */
export function selectionOf(text: string): Selection {
  const tokens = text.match(/[A-Za-z_]\w*|[{}]/g) ?? [];
  let i = 0;
  const read = (): Selection => {
    const out: Selection = [];
    while (i < tokens.length && tokens[i] !== "}") {
      const name = tokens[i++];
      if (tokens[i] === "{") {
        i++;
        out.push([name, read()]);
        i++; // "}"
      } else {
        out.push([name, null]);
      }
    }
    return out;
  };
  return read();
}

// Run as a process by bench/overhead.ts: OPERATIONS is the JSON of [query, BareOperation] pairs.
if (process.env.BARE_OPERATIONS) {
  applyGcFlags(); // as the server (src/gc-flags-first.ts): the same garbage collection
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.API_POOL_SIZE ?? 20) });
  pool.on("error", () => {});
  const operations = new Map<string, BareOperation>(JSON.parse(process.env.BARE_OPERATIONS));
  const server = createServer(bareHandler(pool, operations, Number(process.env.RATE_LIMIT_PER_HOUR ?? 5000), Number(process.env.STATEMENT_TIMEOUT_MS ?? 5000),
    process.env.BARE_ROUND_TRIPS === "1" ? 1 : 2));
  server.listen(Number(process.env.PORT), "127.0.0.1", () => console.log("ready"));
  process.on("SIGTERM", () => server.close(() => void pool.end().then(() => process.exit(0))));
}
