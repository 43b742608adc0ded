import { gql } from "postgraphile/utils";
import { sqlOperationsPlugin } from "./sql-operations.js";

/**
 * Reconciliation of a payment account against its statement (docs/api.md, Closing a period). The
 * rules (difference exactly 0.00, opening = previous closing, one open per account, only the
 * latest undone) are the SQL functions' and the table's (migrations/fixtures/ledger/reconciliations.sql).
 */
export const ReconciliationsPlugin = sqlOperationsPlugin("ReconciliationsPlugin", gql`
  type Reconciliation {
    id: UUID!
    paymentAccount: LedgerAccountRef!
    statementDate: String!
    "The previous completed reconciliation's closingBalance (0.00 for the first)."
    openingBalance: String!
    closingBalance: String!
    "openingBalance + cleared money in - cleared money out (the other way round for a credit card)."
    clearedBalance: String
    "closingBalance - clearedBalance; completeReconciliation needs exactly 0.00."
    difference: String
    clearedCount: Int!
    "open, completed or undone"
    status: String!
    created: String!
    completedAt: String
    undoneAt: String
  }
  type ReconciliationPage { items: [Reconciliation!]! totalCount: Int! pageSize: Int! offset: Int! }
  type ReconciliationResult { success: Boolean! error: String reconciliation: Reconciliation }

  extend type Query {
    "An account's reconciliations, newest first."
    listReconciliations(organizationId: UUID!, paymentAccountId: UUID!, limit: Int, offset: Int): ReconciliationPage!
  }
  extend type Mutation {
    "closingBalance: the statement's closing balance, a decimal string (negative for an overdrawn account)."
    startReconciliation(organizationId: UUID!, paymentAccountId: UUID!, statementDate: String!, closingBalance: String!): ReconciliationResult!
    "Ticks (cleared: true) or unticks confirmed events of the account dated on or before the statement date; at most 1000 at a time."
    setCleared(organizationId: UUID!, reconciliationId: UUID!, eventIds: [UUID!]!, cleared: Boolean!): ReconciliationResult!
    "Only with a difference of 0.00: every cleared event becomes reconciled."
    completeReconciliation(organizationId: UUID!, reconciliationId: UUID!): ReconciliationResult!
    "Owner or admin; only the account's latest reconciliation. Its events go back to confirmed."
    undoReconciliation(organizationId: UUID!, reconciliationId: UUID!): ReconciliationResult!
  }
`);
