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
  "accountId is null only on a Retained Earnings line of a chart that has no retained earnings account."
  type BalanceSheetLine { accountId: UUID accountName: String! balance: String! }
  type BalanceSheet {
    asOf: String!
    "The first day of the fiscal year asOf falls in."
    fiscalYearStart: String!
    assets: [BalanceSheetLine!]!
    liabilities: [BalanceSheetLine!]!
    "Earlier fiscal years' earnings are in retained earnings."
    equity: [BalanceSheetLine!]!
    totalAssets: String!
    totalLiabilities: String!
    totalEquity: String!
    "Revenue less expenses from fiscalYearStart to asOf; totalAssets = totalLiabilities + totalEquity + currentYearEarnings."
    currentYearEarnings: String!
  }
  type TrialBalanceRow { accountId: UUID accountName: String! classification: String! debit: String! credit: String! }
  type TrialBalance { asOf: String! rows: [TrialBalanceRow!]! totalDebit: String! totalCredit: String! }

  extend type Query {
    "Period defaults: first day of the current month to today (inclusive, on the entries' dates: the transaction date unless posted on another)."
    dashboardSummary(organizationId: UUID!, startDate: Date, endDate: Date): DashboardSummary!
    "Profit and loss by account. Period defaults: first day of the current year to today."
    incomeStatement(organizationId: UUID!, startDate: Date, endDate: Date): IncomeStatement!
    "Every active account with its balance as of today."
    accountBalances(organizationId: UUID!): [AccountBalance!]!
    "Assets, liabilities and equity as of asOf (default today), each account at its normal balance."
    balanceSheet(organizationId: UUID!, asOf: Date): BalanceSheet!
    "Each account's balance as of asOf (default today) as a debit or a credit; revenue and expense accounts from the fiscal year's first day."
    trialBalance(organizationId: UUID!, asOf: Date): TrialBalance!
  }
`);
