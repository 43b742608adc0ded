import { RequestTimeout } from "./sql-errors.js";
import type { Identity } from "./identity.js";

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

