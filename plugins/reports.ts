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

  "A GST/HST or QST return's lines (CRA line numbers in brackets) from the confirmed books of the period."
  type SalesTaxReturn {
    taxType: String!
    startDate: String!
    endDate: String!
    "[101] Sales and other revenue, tax excluded."
    salesAndRevenue: String!
    "[103] Tax collected on sales."
    taxCollected: String!
    "[104] Adjustments (none are recorded: 0.00)."
    adjustments: String!
    "[105] taxCollected + adjustments."
    totalTaxCollected: String!
    "[106] Input tax credits: recoverable tax paid on purchases."
    inputTaxCredits: String!
    "[108] Total ITCs and adjustments."
    totalItcs: String!
    "[109] totalTaxCollected - totalItcs; negative means a refund."
    netTax: String!
    "Events whose tax of this type is in the period (one reversed in it counted back out)."
    events: Int!
  }

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
    "taxType: GST_HST or QST. By the entries' dates, both ends inclusive."
    salesTaxReturn(organizationId: UUID!, startDate: Date!, endDate: Date!, taxType: String!): SalesTaxReturn!
  }
`);
