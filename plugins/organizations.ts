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
  type OrganizationSettings { id: UUID! name: String! functionalCurrency: String! "auto, DMY or MDY" dateOrder: String! }
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
    "Owner or admin: dateOrder (auto, DMY, MDY) decides receipt dates whose day and month could be either way."
    updateOrganizationSettings(organizationId: UUID!, dateOrder: String): OrganizationSettingsResult!
  }
`);
