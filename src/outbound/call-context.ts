import type { CallerDb } from "../db/caller.js";
import type { SealedBox } from "../secrets/sealed-box.js";
import type { OutboundOptions } from "./guard.js";

/**
 * What an operation that reaches a host a tenant names (connecting a mailbox or cloud drive,
 * registering a webhook URL) needs from the GraphQL context (src/graphql/preset.ts): the
 * caller's database access, outside which it waits on the network, the guard's options, and
 * what seals the secret it keeps.
 */
export interface OutboundCallContext {
  caller: CallerDb;
  tenantOutbound: { outbound: OutboundOptions; secrets: SealedBox };
}
