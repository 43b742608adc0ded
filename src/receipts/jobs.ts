import { buffer } from "node:stream/consumers";
import type { JobHelpers } from "graphile-worker";
import type { Storage } from "../storage/index.js";
import { extractReceipt } from "./extraction/index.js";

/**
 * The receipt jobs the database queues (app_private.enqueue_job): extraction when a receipt is
 * stored, matching after extraction and when events change. Payloads come from SQL, so they are
 * checked like any input: a malformed one is a permanent failure.
 */
export const EXTRACT_RECEIPT_TASK = "extract_receipt";
export const MATCH_RECEIPTS_TASK = "match_receipts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

class ReceiptJobError extends Error {
  readonly permanent = true;
}

function uuidField(payload: unknown, field: string): string {
  const value = (payload as Record<string, unknown> | null)?.[field];
  if (typeof value !== "string" || !UUID.test(value)) throw new ReceiptJobError(`The job payload needs ${field}, a UUID.`);
  return value;
}

export interface ExtractReceiptPayload { organizationId: string; receiptId: string }
export interface MatchReceiptsPayload { organizationId: string; receiptIds?: string[] }

export const extractReceiptPayload = (payload: unknown): ExtractReceiptPayload =>
  ({ organizationId: uuidField(payload, "organizationId"), receiptId: uuidField(payload, "receiptId") });

export function matchReceiptsPayload(payload: unknown): MatchReceiptsPayload {
  const organizationId = uuidField(payload, "organizationId");
  const ids = (payload as Record<string, unknown>).receiptIds;
  if (ids === undefined || ids === null) return { organizationId };
  if (!Array.isArray(ids) || ids.length > 10_000 || !ids.every((id) => typeof id === "string" && UUID.test(id))) {
    throw new ReceiptJobError("receiptIds must be a list of receipt ids (UUIDs).");
  }
  return { organizationId, receiptIds: ids as string[] };
}

/**
 * Reads a stored receipt and records what it says. A receipt that cannot be read (a permanent
 * error, or the last attempt of a passing one) is still recorded, with empty fields and the
 * error: it ends `processed`, never stuck in `draft`.
 */
export async function runExtraction(helpers: JobHelpers, storage: Storage, p: ExtractReceiptPayload): Promise<Record<string, unknown>> {
  const { rows: [receipt] } = await helpers.query<{ object_key: string; content_type: string; date_order: "auto" | "DMY" | "MDY" }>(
    `select r.object_key, r.content_type, o.date_order from app_public.receipts r
       join app_public.organizations o on o.id = r.organization_id
      where r.id = $1 and r.organization_id = $2`, [p.receiptId, p.organizationId]);
  if (!receipt) return { receiptId: p.receiptId, skipped: "no such receipt" };
  let extraction: Record<string, unknown>;
  try {
    const bytes = await buffer(await storage.get(receipt.object_key));
    extraction = { ...(await extractReceipt({ bytes, contentType: receipt.content_type, dateOrder: receipt.date_order })) };
  } catch (e) {
    const lastAttempt = helpers.job.attempts >= helpers.job.max_attempts;
    if ((e as { permanent?: unknown }).permanent !== true && !lastAttempt) throw e;
    extraction = { text: "", vendorName: null, amount: null, currency: null, dateReadings: [], method: "unreadable", error: (e as Error).message };
  }
  await helpers.query("select app_private.record_receipt_extraction($1, $2)", [p.receiptId, JSON.stringify(extraction)]);
  return {
    receiptId: p.receiptId, method: extraction.method, vendorName: extraction.vendorName, amount: extraction.amount,
    dateReadings: extraction.dateReadings, ...(extraction.error ? { error: extraction.error } : {}),
  };
}

export async function runMatching(helpers: JobHelpers, p: MatchReceiptsPayload): Promise<Record<string, unknown>> {
  const { rows: [row] } = await helpers.query<{ result: Record<string, unknown> }>(
    "select app_private.match_receipts($1, $2::uuid[]) as result", [p.organizationId, p.receiptIds ?? null]);
  return row.result;
}
