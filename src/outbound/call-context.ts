import type { WithPgClient } from "postgraphile/@dataplan/pg";
import type { SealedBox } from "../secrets/sealed-box.js";
import type { OutboundOptions } from "./guard.js";

/**
 * What an operation that reaches a host a tenant names (connecting a mailbox or cloud drive,
 * registering a webhook URL) needs from the GraphQL context (src/graphql/preset.ts): the
 * request's database, outside which it waits on the network, the guard's options, and what
 * seals the secret it keeps.
 */
export interface OutboundCallContext {
  withPgClient: WithPgClient & { outside<T>(work: () => Promise<T>): Promise<T> };
  pgSettings: Record<string, string>;
  tenantOutbound: { outbound: OutboundOptions; secrets: SealedBox };
}
