import type pg from "pg";
import type { PgClient, WithPgClient } from "postgraphile/@dataplan/pg";
import { callerFailure, RequestTimeout, TIMEOUT_MESSAGE } from "../db/sql-errors.js";
import type { Identity } from "../http/authenticate.js";

interface Slots {
  active: number;
  waiting: (() => void)[];
}

/**
 * Fair shares of the API's pool. An organization (or, for a JWT session that names none, its
 * user) holds at most `perTenant` connections at once; more requests of the same tenant wait,
 * first come first served, until their deadline. So one tenant's heavy requests queue behind each
 * other instead of taking every connection of the pool.
 */
export class ConnectionShare {
  private readonly tenants = new Map<string, Slots>();

  constructor(readonly perTenant: number) {}

  /** For a pool of `poolSize`: a quarter of it each, and never fewer than 2. */
  static forPool(poolSize: number): ConnectionShare {
    return new ConnectionShare(Math.max(2, Math.floor(poolSize / 4)));
  }

  /** Resolves to a release function once the tenant may hold one more connection; rejects at `deadline`. */
  acquire(tenant: string, deadline: number): Promise<() => void> {
    let slots = this.tenants.get(tenant);
    if (!slots) {
      slots = { active: 0, waiting: [] };
      this.tenants.set(tenant, slots);
    }
    const s = slots;
    if (s.active < this.perTenant) {
      s.active++;
      return Promise.resolve(this.releaser(tenant, s));
    }
    return new Promise((resolve, reject) => {
      const take = () => {
        clearTimeout(timer);
        s.active++;
        resolve(this.releaser(tenant, s));
      };
      const timer = setTimeout(() => {
        s.waiting.splice(s.waiting.indexOf(take), 1);
        reject(new RequestTimeout());
      }, Math.max(0, deadline - Date.now()));
      s.waiting.push(take);
    });
  }

  /** Connections held now by `tenant` (for tests and metrics). */
  held(tenant: string): number {
    return this.tenants.get(tenant)?.active ?? 0;
  }

  private releaser(tenant: string, s: Slots): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      s.active--;
      const next = s.waiting.shift();
      if (next) next();
      else if (s.active === 0) this.tenants.delete(tenant);
    };
  }
}

/**
 * Whose shares a request draws on. An API key: its organization's. A JWT session: its user's, and
 * the organization's its operation names (its `organizationId` arguments, when they name one),
 * else the one its X-Organization-Id header names. So every member working on an organization
 * draws on that organization's one share, and naming an organization one does not belong to
 * (refused in SQL) still costs one's own share first.
 */
export function tenantsOf(identity: Identity, operationOrganization: string | undefined): string[] {
  switch (identity.kind) {
    case "apiKey":
      return [identity.organizationId];
    case "user": {
      const organization = operationOrganization ?? identity.organizationId;
      return organization ? [`user:${identity.userId}`, organization] : [`user:${identity.userId}`];
    }
    default:
      return ["anonymous"];
  }
}

/**
 * The adaptor's client, told it is inside our transaction: a transaction it is asked for is a
 * savepoint (its own would `begin` and `commit`, ending ours and its settings early).
 */
function inTransaction<C extends PgClient>(client: C): C {
  let depth = 0;
  // A copy, not Object.create(client): an object made a prototype is slow to use, and this is
  // made for every request.
  const wrapped: C = { ...client };
  wrapped.withTransaction = async <R>(callback: (c: C) => Promise<R>): Promise<R> => {
    const name = `tx${++depth}`;
    await client.query({ text: `savepoint ${name}` });
    try {
      const result = await callback(wrapped);
      await client.query({ text: `release savepoint ${name}` });
      return result;
    } catch (e) {
      await client.query({ text: `rollback to savepoint ${name}` }).catch(() => {});
      throw e;
    } finally {
      depth--;
    }
  };
  return wrapped;
}

/**
 * `select set_config(…, true), …` for the settings, as literals (sqlLiteral), so that it can share
 * a simple-protocol round trip with `begin`.
 */
export function settingsStatement(settings: Record<string, string | undefined>): string {
  const entries = Object.entries(settings).filter((e): e is [string, string] => e[1] != null);
  return `select ${entries.map(([k, v]) => `set_config(${sqlLiteral(k)}, ${sqlLiteral(v)}, true)`).join(", ")}`;
}

/**
 * A request's database access: `withPgClient` as PostGraphile uses it, and
 * - `statement(settings, text)`: the rows of one statement run as a transaction of its own, its
 *   `begin`, settings and `commit` sent with it in one round trip (the simple protocol: any values
 *   are literals in `text`, see `sqlLiteral`);
 * - `outside(work)`: work that is no database time (testing a connection to a tenant's server,
 *   bounded by its own timeouts) does not use up the budget.
 */
export type RequestWithPgClient<C extends PgClient> = WithPgClient<C> & {
  statement(pgSettings: Record<string, string | undefined> | null, text: string): Promise<Record<string, unknown>[]>;
  outside<T>(work: () => Promise<T>): Promise<T>;
};

/** The adaptor's client, with the node-postgres client under it (@dataplan/pg's `rawClient`). */
export type RawPgClient = PgClient & { rawClient: Pick<pg.ClientBase, "query"> };

/**
 * A value as a literal of the simple protocol: quoted, as text, which PostgreSQL reads as it reads
 * a parameter of unstated type (node-postgres sends those as text too). Quotes are doubled, and a
 * value with a backslash is an E'' string with its backslashes doubled (as pg's escapeLiteral
 * does, whatever standard_conforming_strings says), in one pass of native replaces. Never a NUL,
 * which would end the statement's text early.
 */
export function sqlLiteral(value: string | number | boolean | null | undefined): string {
  if (value === null || value === undefined) return "null";
  const text = String(value);
  if (text.includes("\0")) throw new Error("A value sent to PostgreSQL must not contain the NUL character.");
  const quoted = text.replaceAll("'", "''");
  return text.includes("\\") ? `E'${quoted.replaceAll("\\", "\\\\")}'` : `'${quoted}'`;
}

/**
 * The database access of one request: one connection at a time (GraphQL would otherwise run
 * each root field on a connection of its own), within the tenant's share, and within one budget
 * of `budgetMs` for the whole request, waits for a connection included: each transaction gets
 * what is left of it as its statement_timeout, so no request holds a connection longer than that
 * in all. `onTimeout` is told when the budget ran out (a timed-out mutation must not be replayed).
 */
export function requestWithPgClient<C extends RawPgClient>(
  withPgClient: WithPgClient<C>, share: ConnectionShare, tenants: string[], budgetMs: number, onTimeout: () => void = () => {},
): RequestWithPgClient<C> {
  let deadline = Date.now() + budgetMs;
  let tail: Promise<unknown> = Promise.resolve();
  /**
   * `work` on a connection, once the tenant's shares allow one, after the request's earlier
   * work; given the settings with what is left of the budget as the statement_timeout (measured
   * once the connection is held; 1 ms when none is left, which fails at once).
   */
  const serially = <T>(pgSettings: Record<string, string | undefined> | null, work: (client: C, settings: string) => Promise<T>): Promise<T> => {
    const run = async (): Promise<T> => {
      // Always in the order given (a user's share before an organization's): no two requests
      // can each hold what the other waits for.
      const releases: (() => void)[] = [];
      try {
        for (const tenant of tenants) releases.push(await share.acquire(tenant, deadline));
        if (deadline <= Date.now()) throw new RequestTimeout();
        return await withPgClient(null, (client) =>
          work(client, settingsStatement({ ...pgSettings, statement_timeout: String(Math.max(1, deadline - Date.now())) })));
      } catch (e) {
        if (callerFailure(e)?.message === TIMEOUT_MESSAGE) onTimeout();
        throw e;
      } finally {
        for (const release of releases) release();
      }
    };
    const result = tail.then(run, run);
    tail = result.catch(() => undefined);
    return result;
  };
  // The transaction is begun and its settings made in one round trip (the adaptor would take two).
  const request = <T>(pgSettings: Record<string, string | undefined> | null, callback: (client: C) => T | Promise<T>) =>
    serially(pgSettings, async (client, settings) => {
      try {
        // Inside the try: a settings statement that fails must not leave the connection in an
        // aborted transaction for the next request (a rollback outside one is harmless).
        await client.query({ text: `begin; ${settings}` });
        const result = await callback(inTransaction(client));
        await client.query({ text: "commit" });
        return result;
      } catch (e) {
        await client.query({ text: "rollback" }).catch(() => {});
        throw e;
      }
    });
  return Object.assign(request, {
    statement: (pgSettings: Record<string, string | undefined> | null, text: string) =>
      serially(pgSettings, async ({ rawClient }, settings) => {
        try {
          // A failing statement skips the rest (commit included) and leaves the transaction
          // aborted. Each on its own line: a statement's trailing comment cannot swallow `commit`.
          const results = (await rawClient.query(`begin;\n${settings};\n${text}\n;commit`)) as unknown as pg.QueryResult[];
          if (!Array.isArray(results) || results.length !== 4 || results[3].command !== "COMMIT") {
            throw new Error("A statement sent in one round trip must be exactly one statement.");
          }
          return results[2].rows;
        } catch (e) {
          await rawClient.query("rollback").catch(() => {});
          throw e;
        }
      }),
    async outside<T>(work: () => Promise<T>): Promise<T> {
      const started = Date.now();
      try {
        return await work();
      } finally {
        deadline += Date.now() - started;
      }
    },
  });
}
