import type pg from "pg";

/**
 * The organization an intake message is for: the one whose ACTIVE intake address is among
 * `addresses` (email compared lower-case, SMS on digits only, in SQL), or null.
 */
export async function intakeOrganization(owner: pg.Pool, type: "email" | "sms", addresses: string[]): Promise<string | null> {
  if (addresses.length === 0) return null;
  const { rows } = await owner.query<{ org: string | null }>(
    "select app_private.intake_organization($1, $2::text[]) as org", [type, addresses]);
  return rows[0]?.org ?? null;
}
