import { gql } from "postgraphile/utils";
import { sqlOperationsPlugin } from "./sql-operations.js";

/**
 * The chart of accounts (contract: Account; docs/api.md, Chart of accounts, contacts and rules),
 * created one by one or in batches.
 */
export const AccountsPlugin = sqlOperationsPlugin("AccountsPlugin", gql`
  """
  An account of the chart. currentBalance is a number from posted journal lines (debit-normal for
  asset/expense, credit-normal otherwise). lastFour matches card/bank statements; parentId makes it a sub-account.
  """
  type Account {
    id: UUID! name: String! accountType: String! classification: String! subType: String!
    lastFour: String parentId: UUID currentBalance: Float! active: Boolean! taxCode: TaxCode
    created: String! updated: String!
  }
  type AccountPage { items: [Account!]! totalCount: Int! pageSize: Int! offset: Int! }
  type AccountResult { success: Boolean! error: String account: Account }

  extend type Query {
    """
    Accounts, by name unless sortBy says otherwise: name, accountType, classification, subType,
    currentBalance, active, created, updated (ties by name, then id). search matches the name.
    Optional filters: active, classification.
    """
    listAccounts(organizationId: UUID!, limit: Int, offset: Int, search: String, sortBy: String, sortDir: String,
      active: Boolean, classification: String): AccountPage!
  }
  """
  Contract AccountInput. Extra, optional: taxCodeId (a GIFI code of the same classification) and lastFour.
  """
  input AccountInput { name: String! accountType: String! classification: String! subType: String parentId: UUID taxCodeId: UUID lastFour: String }

  extend type Mutation {
    "At most 500 items (more is a BAD_USER_INPUT error and nothing is created); each item succeeds or fails on its own."
    batchCreateAccounts(organizationId: UUID!, items: [AccountInput!]!): BatchCreateResult!
    """
    Creates an account from taxCodeId (type and classification follow from the GIFI code), or from
    accountType + classification (with taxCodeId too, the code is linked and must have that classification).
    A sub-account (parentId) has its parent's classification.
    """
    createAccount(organizationId: UUID!, name: String!, taxCodeId: UUID, accountType: String, classification: String,
      subType: String, lastFour: String, parentId: UUID): AccountResult!
    """
    Changes name, lastFour ("" removes it), parent (clearParent: true makes it top-level), tax code
    (same classification) or subType. Absent arguments leave the field as it is.
    """
    updateAccount(organizationId: UUID!, accountId: UUID!, name: String, lastFour: String, parentId: UUID,
      clearParent: Boolean, taxCodeId: UUID, subType: String): AccountResult!
    "Accounts are never deleted: a deactivated account keeps its history, takes no new use, and its category rules stop matching."
    deactivateAccount(organizationId: UUID!, accountId: UUID!): AccountResult!
    reactivateAccount(organizationId: UUID!, accountId: UUID!): AccountResult!
  }
`);
