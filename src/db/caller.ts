import type pg from "pg";
import type { PgClient, WithPgClient } from "postgraphile/@dataplan/pg";
import { callerFailure, RequestTimeout, TIMEOUT_MESSAGE } from "./sql-errors.js";
import { createWithPgClient, type NodePostgresPgClient } from "postgraphile/adaptors/pg";
import { tenantsOf, type ConnectionShare } from "./connection-share.js";
import { pgSettingsFor, type Identity } from "./identity.js";
import { settingsStatement, type SqlCall } from "./sql-text.js";

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
 * A request's database access: `withPgClient` as PostGraphile uses it (the settings it is handed
 * are ignored: the access runs with the caller's, given when it was made), and
 * - `statement(settings, text)`: the rows of one statement run as a transaction of its own, its
 *   `begin`, settings and `commit` sent with it in one round trip (the simple protocol: any values
 *   are literals in `text`, see `sqlLiteral`);
 * - `outside(work)`: work that is no database time (testing a connection to a tenant's server,
 *   bounded by its own timeouts) does not use up the budget.
 */
export type RequestWithPgClient<C extends PgClient> = WithPgClient<C> & {
  statement(_ignored: unknown, text: string): Promise<Record<string, unknown>[]>;
  outside<T>(work: () => Promise<T>): Promise<T>;
};

/** The adaptor's client, with the node-postgres client under it (@dataplan/pg's `rawClient`). */
export type RawPgClient = PgClient & { rawClient: Pick<pg.ClientBase, "query"> };

/**
 * The database access of one request: one connection at a time (GraphQL would otherwise run
 * each root field on a connection of its own), within the tenant's share, and within one budget
 * of `budgetMs` for the whole request, waits for a connection included: each transaction gets
 * what is left of it as its statement_timeout, so no request holds a connection longer than that
 * in all. Every transaction runs with `pgSettings`, the caller's, whatever settings it is handed, so
 * nothing that holds the access can act as another. `onTimeout` is told when the budget ran out (a
 * timed-out mutation must not be replayed).
 */
export function requestWithPgClient<C extends RawPgClient>(
  withPgClient: WithPgClient<C>, share: ConnectionShare, tenants: string[], budgetMs: number,
  pgSettings: Record<string, string>, onTimeout: () => void = () => {},
): RequestWithPgClient<C> {
  let deadline = Date.now() + budgetMs;
  let tail: Promise<unknown> = Promise.resolve();
  /**
   * `work` on a connection, once the tenant's shares allow one, after the request's earlier
   * work; given the settings with what is left of the budget as the statement_timeout (measured
   * once the connection is held; 1 ms when none is left, which fails at once).
   */
  const serially = <T>(work: (client: C, settings: string) => Promise<T>): Promise<T> => {
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
  const request = <T>(_ignored: unknown, callback: (client: C) => T | Promise<T>) =>
    serially(async (client, settings) => {
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
    statement: (_ignored: unknown, text: string) =>
      serially(async ({ rawClient }, settings) => {
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

/**
 * One caller's database access for one request: everything TypeScript runs as a caller goes
 * through it, so every such statement has the caller's settings (RLS applies), the tenant's
 * share of the pool and the request's time budget.
 */
export interface CallerDb {
  readonly pgSettings: Record<string, string>;
  /**
   * The access as PostGraphile takes it (the GraphQL context's `withPgClient`): whatever settings
   * it is handed, it runs with `pgSettings`.
   */
  readonly withPgClient: RequestWithPgClient<NodePostgresPgClient>;
  /**
   * One statement in a transaction of its own, its single column `result` returned: with its
   * values as parameters, or, when they are literals in its text (LiteralSql), in one round trip
   * with its `begin`, settings and `commit`.
   */
  call(sql: SqlCall): Promise<unknown>;
  /** Work that is no database time (a connection to a tenant's server) does not use up the budget. */
  outside<T>(work: () => Promise<T>): Promise<T>;
  /** The budget ran out (a timed-out mutation wrote nothing: its Idempotency-Key must not replay). */
  readonly timedOut: boolean;
}

/**
 * The one way TypeScript reaches SQL as a caller: the API's pool, its fair shares, and the
 * budget every request gets (STATEMENT_TIMEOUT_MS).
 */
export class Callers {
  private readonly adaptor: WithPgClient<NodePostgresPgClient>;

  constructor(pool: pg.Pool, readonly budgetMs: number, readonly share: ConnectionShare) {
    this.adaptor = createWithPgClient({ pool });
  }

  /**
   * A caller's access; `organization` is the one its work names, when it names one (whose share
   * a JWT session draws on besides its user's).
   */
  open(identity: Identity, organization?: string): CallerDb {
    let timedOut = false;
    const pgSettings = pgSettingsFor(identity);
    const withPgClient = requestWithPgClient(this.adaptor, this.share, tenantsOf(identity, organization), this.budgetMs, pgSettings,
      () => { timedOut = true; });
    return {
      pgSettings,
      withPgClient,
      call: async ({ text, values }) => values === undefined
        ? (await withPgClient.statement(null, text))[0].result
        : withPgClient(null, async (client) => (await client.query<{ result: unknown }>({ text, values })).rows[0].result),
      outside: withPgClient.outside,
      get timedOut() { return timedOut; },
    };
  }
}
