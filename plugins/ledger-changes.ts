import { gql } from "postgraphile/utils";
import { sqlOperationsPlugin } from "./sql-operations.js";

/** The change feed and events marked synced (docs/api.md, The change feed). */
export const LedgerChangesPlugin = sqlOperationsPlugin("LedgerChangesPlugin", gql`
  """
  One change of an event. kind: created, updated, classified, confirmed, reconciled, ignored,
  reversed, synced or deleted. at: when its transaction began. event: the event as it is now
  (null once deleted).
  """
  type LedgerChange { cursor: String! eventId: UUID! kind: String! at: String! event: LedgerEvent }
  "nextCursor: give it as after for the next page (the same cursor when nothing is new)."
  type LedgerChangePage { changes: [LedgerChange!]! nextCursor: String hasMore: Boolean! }
  type MarkLedgerEventsSyncedResult { success: Boolean! error: String syncedCount: Int events: [LedgerEvent!] }

  extend type Query {
    """
    Every change to the organization's events, oldest first, after the cursor (from the oldest
    kept without one). A change appears once every transaction that began before it has ended, so
    a cursor never passes one still to come. Changes and cursors are kept 30 days.
    """
    ledgerChanges(organizationId: UUID!, after: String, limit: Int): LedgerChangePage!
  }
  extend type Mutation {
    """
    Moves confirmed events to synced and keeps the i-th externalId as the i-th event's id in
    externalSystem (a synced or reconciled event gets its id replaced). All or none; at most 500.
    """
    markLedgerEventsSynced(organizationId: UUID!, eventIds: [UUID!]!, externalSystem: String!, externalIds: [String!]!): MarkLedgerEventsSyncedResult!
  }
`);
