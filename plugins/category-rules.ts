import { gql } from "postgraphile/utils";
import { sqlOperationsPlugin } from "./sql-operations.js";

/**
 * Category rules (contract: CategoryRule; docs/api.md, Category rules). Which rule applies to an
 * event, and what it sets, is app_private.rule_classifications, for every path alike.
 */
export const CategoryRulesPlugin = sqlOperationsPlugin("CategoryRulesPlugin", gql`
  type CategoryRuleAccount { id: UUID! name: String! accountType: String! active: Boolean! }
  "A line of a rule's splits: a share of the event's amount, with its own sales tax code."
  type CategoryRuleSplit { category: LedgerAccountRef! percent: String! taxCode: String memo: String! }
  "percent: a decimal from 0.01 to 100 with at most 2 places; a rule's percents add up to 100."
  input CategoryRuleSplitInput { categoryId: UUID! percent: String! taxCode: String memo: String }
  """
  vendorPattern is a case-insensitive ILIKE pattern (% any text, _ one character). The conditions
  (direction, amountMin and amountMax inclusive, paymentAccount) must all hold too. Of the rules
  that hold for an event, the lowest priority applies, then the longest pattern, then the oldest
  rule; a rule whose accounts are inactive or do not fit the event's type is passed over. A rule
  sets the category (account) or splits by percentage, and contact and taxCode when it has them.
  """
  type CategoryRule {
    id: UUID! vendorPattern: String! account: CategoryRuleAccount! matchCount: Int! created: String! updated: String!
    priority: Int! direction: String amountMin: String amountMax: String paymentAccount: LedgerAccountRef
    contact: DocumentContact taxCode: String splits: [CategoryRuleSplit!]!
  }
  type CategoryRulePage { items: [CategoryRule!]! totalCount: Int! pageSize: Int! offset: Int! }
  type CategoryRuleResult { success: Boolean! error: String categoryRule: CategoryRule }
  type DeleteCategoryRuleResult { success: Boolean! error: String }
  "What a rule sets on an event."
  type CategoryRuleOutcome { category: LedgerAccountRef splits: [LedgerEventSplit!]! taxCode: String taxAmount: String contact: DocumentContact }
  "An event the rule would change: as it is now, and what the rule would set."
  type CategoryRuleChange { event: LedgerEvent! after: CategoryRuleOutcome! }
  "totalCount: every event that would change; changes: the latest of them (limit)."
  type CategoryRulePreview { totalCount: Int! changes: [CategoryRuleChange!]! }
  type ApplyCategoryRuleResult { success: Boolean! error: String appliedCount: Int categoryRule: CategoryRule }

  extend type Query {
    "Rules by vendorPattern unless sortBy says otherwise: vendorPattern, matchCount, created, updated, priority. search matches the pattern text literally."
    listCategoryRules(organizationId: UUID!, limit: Int, offset: Int, search: String, sortBy: String, sortDir: String): CategoryRulePage!
    """
    The events waiting for review a rule would change, and the change, writing nothing: a new
    rule's fields, or categoryRuleId with the fields to change (an edit). Exactly what
    applyCategoryRule changes for the same rule.
    """
    previewCategoryRule(organizationId: UUID!, categoryRuleId: UUID, vendorPattern: String, categoryId: UUID,
      priority: Int, direction: String, amountMin: String, amountMax: String, paymentAccountId: UUID, contactId: UUID,
      taxCode: String, splits: [CategoryRuleSplitInput!], limit: Int): CategoryRulePreview!
  }
  extend type Mutation {
    """
    categoryId (an active account of this organization) or splits. priority: lower first, 0 to
    1,000,000 (default 100). direction: in or out. Rules with the same pattern must differ in
    their conditions. A new rule classifies the events waiting for review that have no category.
    """
    createCategoryRule(organizationId: UUID!, vendorPattern: String!, categoryId: UUID, priority: Int, direction: String,
      amountMin: String, amountMax: String, paymentAccountId: UUID, contactId: UUID, taxCode: String,
      splits: [CategoryRuleSplitInput!]): CategoryRuleResult!
    "Absent fields keep their value; an empty string removes direction, amountMin, amountMax or taxCode; clearPaymentAccount and clearContact remove those."
    updateCategoryRule(organizationId: UUID!, categoryRuleId: UUID!, vendorPattern: String, categoryId: UUID, priority: Int,
      direction: String, amountMin: String, amountMax: String, paymentAccountId: UUID, contactId: UUID, taxCode: String,
      splits: [CategoryRuleSplitInput!], clearPaymentAccount: Boolean, clearContact: Boolean): CategoryRuleResult!
    deleteCategoryRule(organizationId: UUID!, categoryRuleId: UUID!): DeleteCategoryRuleResult!
    "Applies the rule to the events waiting for review it is the rule for, whatever their classification; never to confirmed events."
    applyCategoryRule(organizationId: UUID!, categoryRuleId: UUID!): ApplyCategoryRuleResult!
  }
`);
