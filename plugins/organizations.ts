import { gql } from "postgraphile/utils";
import { sqlOperationsPlugin } from "./sql-operations.js";

/** Organizations and their members (contract: Authentication; decisions §2: admin operations). */
export const OrganizationsPlugin = sqlOperationsPlugin("OrganizationsPlugin", gql`
  type Organization { id: UUID! name: String! }
  type Member { userId: UUID! email: String! name: String! role: String! created: String! }
  type MemberResult { success: Boolean! error: String member: Member }
  type MutationResult { success: Boolean! error: String }

  extend type Query {
    "The organizations the caller can use: an API key's one organization, or a user's memberships."
    myOrganizations: [Organization!]!
    listMembers(organizationId: UUID!): [Member!]!
  }
  extend type Mutation {
    addMember(organizationId: UUID!, email: String!, role: String!): MemberResult!
    removeMember(organizationId: UUID!, userId: UUID!): MutationResult!
    updateMemberRole(organizationId: UUID!, userId: UUID!, role: String!): MemberResult!
  }
`);
