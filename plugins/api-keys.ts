import { gql } from "postgraphile/utils";
import { sqlOperationsPlugin } from "./sql-operations.js";

/**
 * API keys of an organization: created (the secret shown once), listed, revoked; owners and admins
 * only (docs/api.md, Authentication).
 */
export const ApiKeysPlugin = sqlOperationsPlugin("ApiKeysPlugin", gql`
  type ApiKey { id: UUID! label: String! prefix: String! created: String! lastUsedAt: String revokedAt: String }
  type CreateApiKeyResult { success: Boolean! error: String apiKey: ApiKey "Shown once." secret: String }
  type RevokeApiKeyResult { success: Boolean! error: String apiKey: ApiKey }

  extend type Query {
    listApiKeys(organizationId: UUID!): [ApiKey!]!
  }
  extend type Mutation {
    createApiKey(organizationId: UUID!, label: String): CreateApiKeyResult!
    revokeApiKey(organizationId: UUID!, apiKeyId: UUID!): RevokeApiKeyResult!
  }
`);
