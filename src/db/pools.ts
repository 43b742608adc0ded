import pg from "pg";
import type { Config } from "../config.js";
import { logger } from "../logger.js";

/** The service's two pools. */
export interface Pools {
  /** The owner: health checks, intake, and what the service does for itself. */
  owner: pg.Pool;
  /**
   * The authenticator's: credentials, rate limits and Idempotency-Key claims, and, as the caller
   * (role and settings set per transaction, RLS applies), every caller's work (src/db/caller.ts).
   */
  auth: pg.Pool;
}

export function makePool(connectionString: string, max = 10, options: pg.PoolConfig = {}): pg.Pool {
  const pool = new pg.Pool({ connectionString, max, ...options });
  // An idle client's error (e.g. the server restarted) must not crash the process.
  pool.on("error", (err) => logger.warn({ err: err.message }, "idle database client error"));
  pool.on("connect", (client) => client.on("error", (err) => logger.warn({ err: err.message }, "database client error")));
  return pool;
}

/**
 * The API's pool. Every statement on it is bounded (authentication and idempotency claims too),
 * and so is the wait for one of its connections: a request never waits unanswered.
 */
export function makeApiPool(connectionString: string, config: Pick<Config, "apiPoolSize" | "statementTimeoutMs">): pg.Pool {
  return makePool(connectionString, config.apiPoolSize, {
    statement_timeout: config.statementTimeoutMs,
    connectionTimeoutMillis: config.statementTimeoutMs,
  });
}

/** The authenticator's URL: same server and database as the owner's, another login role. */
export function authenticatorUrl(ownerUrl: string, password: string): string {
  const url = new URL(ownerUrl);
  url.username = "accounting_authenticator";
  url.password = password;
  return url.toString();
}

/** True when a connection can be opened within a few seconds. */
export async function canConnect(connectionString: string): Promise<boolean> {
  const client = new pg.Client({ connectionString, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.end();
    return true;
  } catch {
    return false;
  }
}
