import { gql } from "postgraphile/utils";
import { sqlOperationsPlugin } from "./sql-operations.js";

/** Auto-categorization rules (contract: CategoryRule). The rule for a merchant: app_private.best_category_rule. */
export const CategoryRulesPlugin = sqlOperationsPlugin("CategoryRulesPlugin", gql`
  type CategoryRuleAccount { id: UUID! name: String! accountType: String! active: Boolean! }
  """
  vendorPattern is a case-insensitive ILIKE pattern (% any text, _ one character). When several rules
  match a merchant name, the longest pattern wins, then the oldest rule; rules of inactive accounts never match.
  """
  type CategoryRule { id: UUID! vendorPattern: String! account: CategoryRuleAccount! matchCount: Int! created: String! updated: String! }
  type CategoryRulePage { items: [CategoryRule!]! totalCount: Int! pageSize: Int! offset: Int! }
  type CategoryRuleResult { success: Boolean! error: String categoryRule: CategoryRule }
  type DeleteCategoryRuleResult { success: Boolean! error: String }

  extend type Query {
    "Rules by vendorPattern unless sortBy says otherwise: vendorPattern, matchCount, created, updated. search matches the pattern text literally."
    listCategoryRules(organizationId: UUID!, limit: Int, offset: Int, search: String, sortBy: String, sortDir: String): CategoryRulePage!
  }
  extend type Mutation {
    "categoryId is an active account of this organization. A pattern is unique per organization, case-insensitively."
    createCategoryRule(organizationId: UUID!, vendorPattern: String!, categoryId: UUID!): CategoryRuleResult!
    updateCategoryRule(organizationId: UUID!, categoryRuleId: UUID!, vendorPattern: String, categoryId: UUID): CategoryRuleResult!
    deleteCategoryRule(organizationId: UUID!, categoryRuleId: UUID!): DeleteCategoryRuleResult!
  }
`);
