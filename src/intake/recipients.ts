import type pg from "pg";

/**
 * The organizations an intake message is for: those whose ACTIVE intake addresses are among
 * `addresses` (email compared lower-case, SMS on digits only, in SQL), each once, in one query.
 */
export async function intakeOrganizations(owner: pg.Pool, type: "email" | "sms", addresses: string[]): Promise<string[]> {
  if (addresses.length === 0) return [];
  const { rows } = await owner.query<{ orgs: string[] }>(
    "select app_private.intake_organizations($1, $2::text[]) as orgs", [type, addresses]);
  return rows[0]?.orgs ?? [];
}
