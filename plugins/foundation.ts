import { gql } from "postgraphile/utils";
import { sqlOperationsPlugin } from "./sql-operations.js";

/** Organizations, API keys and members (contract: Authentication; decisions §2). */
export const FoundationPlugin = sqlOperationsPlugin("FoundationPlugin", gql`
  type Organization { id: UUID! name: String! }

  type ApiKey { id: UUID! label: String! prefix: String! created: String! lastUsedAt: String revokedAt: String }
  type Member { userId: UUID! email: String! name: String! role: String! created: String! }

  type CreateApiKeyResult { success: Boolean! error: String apiKey: ApiKey "Shown once." secret: String }
  type RevokeApiKeyResult { success: Boolean! error: String apiKey: ApiKey }
  type MemberResult { success: Boolean! error: String member: Member }
  type MutationResult { success: Boolean! error: String }

  extend type Query {
    "The organizations the caller can use: an API key's one organization, or a user's memberships."
    myOrganizations: [Organization!]!
    listApiKeys(organizationId: UUID!): [ApiKey!]!
    listMembers(organizationId: UUID!): [Member!]!
  }
  extend type Mutation {
    createApiKey(organizationId: UUID!, label: String): CreateApiKeyResult!
    revokeApiKey(organizationId: UUID!, apiKeyId: UUID!): RevokeApiKeyResult!
    addMember(organizationId: UUID!, email: String!, role: String!): MemberResult!
    removeMember(organizationId: UUID!, userId: UUID!): MutationResult!
    updateMemberRole(organizationId: UUID!, userId: UUID!, role: String!): MemberResult!
  }
`);
