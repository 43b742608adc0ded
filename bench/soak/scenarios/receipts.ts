import type { SoakContext } from "../harness.js";
import { gql, upload } from "../http.js";
import type { Tenant } from "../tenants.js";

/** A file uploaded (POST /uploads) and made a receipt (createReceipt), as an integration does it. */
export async function uploadReceipt(ctx: SoakContext, org: Tenant, file: { name: string; type: string; bytes: Buffer }): Promise<{ receiptId?: string; error?: string }> {
  const up = await upload(ctx.url, org.apiKey, org.id, file, 120_000);
  if (up.status !== 201) return { error: `upload ${file.name}: ${up.status ? `HTTP ${up.status} ${JSON.stringify(up.body).slice(0, 200)}` : up.error}` };
  const made = await gql(ctx.url, org.keyAuth, `mutation($o: UUID!, $k: String!) { createReceipt(organizationId: $o, objectKey: $k) { success error receiptId } }`,
    { o: org.id, k: up.body.objectKey });
  return made.createReceipt.success ? { receiptId: made.createReceipt.receiptId } : { error: `createReceipt ${file.name}: ${made.createReceipt.error}` };
}

/** A receipt's state read from the database (the API may be the thing that is stuck). */
export async function receiptState(ctx: SoakContext, receiptId: string): Promise<string> {
  const { rows } = await ctx.db.query("select status, extraction_error from app_public.receipts where id = $1", [receiptId]);
  if (!rows[0]) return "missing";
  return rows[0].extraction_error ? `${rows[0].status} (${String(rows[0].extraction_error).slice(0, 160)})` : rows[0].status;
}
