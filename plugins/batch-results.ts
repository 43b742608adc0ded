import { gql } from "postgraphile/utils";
import { sqlOperationsPlugin } from "./sql-operations.js";

/**
 * What a batch creation returns (contract: Behavior rule 9; docs/api.md, Batches): each item runs
 * in its own savepoint and failures are listed by 0-based index. A failure of the whole call (more
 * than 500 items) is a GraphQL error (BAD_USER_INPUT), not `success: false`: the type has no such
 * field.
 */
export const BatchResultsPlugin = sqlOperationsPlugin("BatchResultsPlugin", gql`
  "A failed batch item: its 0-based index in items, and why."
  type BatchItemError { index: Int! error: String! }
  type BatchCreateResult { created: Int! errors: [BatchItemError!]! }
`);
