import { gql } from "postgraphile/utils";
import { sqlOperationsPlugin } from "./sql-operations.js";

/**
 * Bank statement rows checked against the books and imported (Behavior rules 6-8; docs/api.md, Bank
 * statement imports).
 */
export const BankStatementsPlugin = sqlOperationsPlugin("BankStatementsPlugin", gql`
  """
  One statement row. amount is signed: negative is money out of the payment account, positive
  money in (the sign gives the direction, whatever eventType says). reference is the bank's id of
  the transaction (an OFX FITID): equal references are the same transaction, different ones never.
  pending: the bank has not posted the row yet; it imports as a pending event, which its posted
  row settles in a later import.
  """
  input BankStatementRowInput {
    transactionDate: String! description: String! amount: String! eventType: String! memo: String reference: String
    pending: Boolean
  }
  """
  matchingEventId names the existing event a row duplicates (isDuplicate) or may duplicate
  (isPossibleDuplicate: same date and amount, another merchant), or the pending event the row
  settles (settlesPendingEvent: the same reference, or the same amount and merchant within 5 days).
  """
  type BankStatementDupCheckRow {
    rowIndex: Int! isDuplicate: Boolean! isPossibleDuplicate: Boolean! matchingEventId: UUID settlesPendingEvent: Boolean!
  }
  type BankStatementDupCheckResult { success: Boolean! error: String results: [BankStatementDupCheckRow!] }
  "settledCount: pending events their posted rows settled in place (neither imported nor skipped)."
  type BankStatementImportResult { success: Boolean! error: String importedCount: Int skippedCount: Int settledCount: Int batchId: UUID }

  extend type Mutation {
    "Flags each row that matches an existing transaction; writes nothing. At most 5,000 rows."
    checkBankStatementDups(organizationId: UUID!, paymentAccountId: UUID!, rows: [BankStatementRowInput!]!): BankStatementDupCheckResult!
    """
    Imports the rows that are not full matches of existing transactions, in needs_review on the
    payment account; full matches are skipped. All rows are validated first: one bad row fails the
    call (the error names its 0-based index) and nothing is written. At most 5,000 rows; currency
    (default the organization's) must be the organization's currency.
    """
    importBankStatement(organizationId: UUID!, paymentAccountId: UUID!, currency: String, rows: [BankStatementRowInput!]!): BankStatementImportResult!
  }
`);
