/**
 * Tenancy's contract with PostgreSQL: who is calling, as the server tells the database through
 * per-transaction settings that the row-level-security policies and the access checks read.
 */
export type Identity =
  | { kind: "anonymous" }
  | { kind: "apiKey"; apiKeyId: string; organizationId: string }
  | { kind: "user"; userId: string; organizationId?: string };

export const ANONYMOUS: Identity = Object.freeze({ kind: "anonymous" });

/** Settings for PostgreSQL: the role RLS applies to and the verified identity. */
export function pgSettingsFor(identity: Identity): Record<string, string> {
  switch (identity.kind) {
    case "apiKey":
      return { role: "accounting_visitor", "app.api_key_id": identity.apiKeyId, "app.organization_id": identity.organizationId };
    case "user":
      // The organization is in scope only when the session named one and membership was checked.
      return identity.organizationId
        ? { role: "accounting_visitor", "app.user_id": identity.userId, "app.organization_id": identity.organizationId }
        : { role: "accounting_visitor", "app.user_id": identity.userId };
    default:
      return { role: "accounting_visitor" };
  }
}

/** The credential a request came with: one API key, or one user whatever organization it works in. */
export function credentialOf(identity: Identity): string | undefined {
  return identity.kind === "apiKey" ? `key:${identity.apiKeyId}` : identity.kind === "user" ? `user:${identity.userId}` : undefined;
}
