import { gql } from "postgraphile/utils";
import { sqlOperationsPlugin } from "./sql-operations.js";

/**
 * batchCreateAccounts and batchCreateContacts (contract: Behavior rule 9; decisions §7). Each is one
 * SQL call; the SQL function runs every item in its own savepoint and lists failures by 0-based index.
 * A failure of the whole call (more than 500 items) is a GraphQL error (BAD_USER_INPUT), not
 * `success: false`: the result type has no such field, and nothing is written.
 */
export const BatchesPlugin = sqlOperationsPlugin("BatchesPlugin", gql`
  "A failed batch item: its 0-based index in items, and why."
  type BatchItemError { index: Int! error: String! }
  type BatchCreateResult { created: Int! errors: [BatchItemError!]! }
  """
  Contract AccountInput. Extra, optional: taxCodeId (a GIFI code of the same classification) and lastFour.
  """
  input AccountInput { name: String! accountType: String! classification: String! subType: String parentId: UUID taxCodeId: UUID lastFour: String }
  input ContactInput { contactType: String! displayName: String! email: String phone: String }

  extend type Mutation {
    "At most 500 items (more is a BAD_USER_INPUT error and nothing is created); each item succeeds or fails on its own."
    batchCreateAccounts(organizationId: UUID!, items: [AccountInput!]!): BatchCreateResult!
    "At most 500 items (more is a BAD_USER_INPUT error and nothing is created); each item succeeds or fails on its own."
    batchCreateContacts(organizationId: UUID!, items: [ContactInput!]!): BatchCreateResult!
  }
`);
