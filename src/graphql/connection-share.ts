import type { PgClient, WithPgClient } from "postgraphile/@dataplan/pg";
import { RequestTimeout } from "../db/sql-errors.js";
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

/** Whose share a request draws on. */
export function tenantOf(identity: Identity): string {
  switch (identity.kind) {
    case "apiKey":
      return identity.organizationId;
    case "user":
      return identity.organizationId ?? `user:${identity.userId}`;
    default:
      return "anonymous";
  }
}

/**
 * The database access of one request: one connection at a time (GraphQL would otherwise run
 * each root field on a connection of its own), within the tenant's share, and within one budget
 * of `budgetMs` for the whole request: each transaction gets what is left of it as its
 * statement_timeout, so no request holds a connection longer than that in all.
 */
export function requestWithPgClient<C extends PgClient>(
  withPgClient: WithPgClient<C>, share: ConnectionShare, tenant: string, budgetMs: number,
): WithPgClient<C> {
  const deadline = Date.now() + budgetMs;
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(pgSettings: Record<string, string | undefined> | null, callback: (client: C) => T | Promise<T>) => {
    const run = async (): Promise<T> => {
      const release = await share.acquire(tenant, deadline);
      try {
        const remaining = deadline - Date.now();
        if (remaining <= 0) throw new RequestTimeout();
        return await withPgClient({ ...pgSettings, statement_timeout: String(remaining) }, callback);
      } finally {
        release();
      }
    };
    const result = tail.then(run, run);
    tail = result.catch(() => undefined);
    return result;
  };
}
