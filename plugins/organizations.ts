import { gql } from "postgraphile/utils";
import { sqlOperationsPlugin } from "./sql-operations.js";

/**
 * Organizations and their members (contract: Authentication; admin operations: docs/api.md,
 * Authentication).
 */
export const OrganizationsPlugin = sqlOperationsPlugin("OrganizationsPlugin", gql`
  type Organization { id: UUID! name: String! }
  type Member { userId: UUID! email: String! name: String! role: String! created: String! }
  type MemberResult { success: Boolean! error: String member: Member }
  type MutationResult { success: Boolean! error: String }
  type OrganizationSettings {
    id: UUID!
    name: String!
    functionalCurrency: String!
    "auto, DMY or MDY"
    dateOrder: String!
    "No journal line dated on or before it is added, voided or removed; null when unlocked."
    lockDate: String
    "The fiscal year's first day, MM-DD (default 01-01)."
    fiscalYearStart: String!
  }
  type OrganizationSettingsResult { success: Boolean! error: String organization: OrganizationSettings }

  extend type Query {
    "The organizations the caller can use: an API key's one organization, or a user's memberships."
    myOrganizations: [Organization!]!
    listMembers(organizationId: UUID!): [Member!]!
  }
  extend type Mutation {
    addMember(organizationId: UUID!, email: String!, role: String!): MemberResult!
    removeMember(organizationId: UUID!, userId: UUID!): MutationResult!
    updateMemberRole(organizationId: UUID!, userId: UUID!, role: String!): MemberResult!
    """
    Owner or admin: dateOrder (auto, DMY, MDY) decides receipt dates whose day and month could be either way;
    lockDate (YYYY-MM-DD) locks the books through that day, null unlocks; fiscalYearStart (MM-DD).
    Arguments left out keep their value.
    """
    updateOrganizationSettings(organizationId: UUID!, dateOrder: String, lockDate: String, fiscalYearStart: String): OrganizationSettingsResult!
  }
`);
