import { gql } from "postgraphile/utils";
import { sqlOperationsPlugin } from "./sql-operations.js";

/**
 * Reports from the journal lines of booked events (contract: Report shapes; docs/api.md, Reports).
 * `Date` is PostGraphile's date scalar (a `YYYY-MM-DD` string), as the contract types these arguments.
 */
export const ReportsPlugin = sqlOperationsPlugin("ReportsPlugin", gql`
  type DashboardSummary {
    totalRevenue: String!
    totalExpenses: String!
    netIncome: String!
    receiptCount: Int!
    "Events in needs_review now (the review queue)."
    unreviewedCount: Int!
  }
  type IncomeStatementLine { accountId: UUID! accountName: String! total: String! }
  type IncomeStatement {
    incomeAccounts: [IncomeStatementLine!]!
    expenseAccounts: [IncomeStatementLine!]!
    totalIncome: String!
    totalExpenses: String!
    netIncome: String!
  }
  type AccountBalance { accountId: UUID! accountName: String! accountType: String! classification: String! balance: String! }

  extend type Query {
    "Period defaults: first day of the current month to today (inclusive, on transactionDate)."
    dashboardSummary(organizationId: UUID!, startDate: Date, endDate: Date): DashboardSummary!
    "Profit and loss by account. Period defaults: first day of the current year to today."
    incomeStatement(organizationId: UUID!, startDate: Date, endDate: Date): IncomeStatement!
    "Every active account with its balance as of today."
    accountBalances(organizationId: UUID!): [AccountBalance!]!
  }
`);
