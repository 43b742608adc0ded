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
`, {
  myOrganizations: { kind: "query", sqlFunction: "app_public.my_organizations", args: [] },
  listApiKeys: { kind: "query", sqlFunction: "app_public.list_api_keys", args: ["organizationId"] },
  listMembers: { kind: "query", sqlFunction: "app_public.list_members", args: ["organizationId"] },
  createApiKey: { kind: "mutation", sqlFunction: "app_public.create_api_key", args: ["organizationId", "label"] },
  revokeApiKey: { kind: "mutation", sqlFunction: "app_public.revoke_api_key", args: ["organizationId", "apiKeyId"] },
  addMember: { kind: "mutation", sqlFunction: "app_public.add_member", args: ["organizationId", "email", "role"] },
  removeMember: { kind: "mutation", sqlFunction: "app_public.remove_member", args: ["organizationId", "userId"] },
  updateMemberRole: { kind: "mutation", sqlFunction: "app_public.update_member_role", args: ["organizationId", "userId", "role"] },
});
