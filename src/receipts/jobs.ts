import { buffer } from "node:stream/consumers";
import type { JobHelpers } from "graphile-worker";
import type { Storage } from "../storage/index.js";
import { extractInSandbox } from "./sandbox/index.js";

/**
 * The receipt jobs the database queues (migrations/fixtures/jobs/enqueue.sql): extraction when a
 * receipt is stored, matching after extraction and when events change. Payloads come from SQL, so they are
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

/** `reextract`: queued by the operator for a receipt read before; a failed read leaves that reading as it was. */
export interface ExtractReceiptPayload { organizationId: string; receiptId: string; reextract?: boolean }
export interface MatchReceiptsPayload { organizationId: string; receiptIds?: string[]; amounts?: string[] }

export const extractReceiptPayload = (payload: unknown): ExtractReceiptPayload => ({
  organizationId: uuidField(payload, "organizationId"), receiptId: uuidField(payload, "receiptId"),
  reextract: (payload as Record<string, unknown>).reextract === true,
});

export function matchReceiptsPayload(payload: unknown): MatchReceiptsPayload {
  const organizationId = uuidField(payload, "organizationId");
  const { receiptIds, amounts } = payload as Record<string, unknown>;
  const p: MatchReceiptsPayload = { organizationId };
  if (receiptIds !== undefined && receiptIds !== null) {
    if (!Array.isArray(receiptIds) || receiptIds.length > 10_000 || !receiptIds.every((id) => typeof id === "string" && UUID.test(id))) {
      throw new ReceiptJobError("receiptIds must be a list of receipt ids (UUIDs).");
    }
    p.receiptIds = receiptIds as string[];
  }
  if (amounts !== undefined && amounts !== null) {
    if (!Array.isArray(amounts) || amounts.length > 10_000 || !amounts.every((a) => typeof a === "string" && /^\d{1,15}(\.\d{1,2})?$/.test(a))) {
      throw new ReceiptJobError("amounts must be a list of decimal amounts.");
    }
    p.amounts = amounts as string[];
  }
  return p;
}

/** Text PostgreSQL's JSON cannot hold (NUL, lone surrogates from a broken PDF text layer) is dropped. */
const storable = (text: unknown) => typeof text === "string" ? text.replace(/\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, "") : text;

const UNREAD = { text: "", vendorName: null, amount: null, currency: null, dateReadings: [], method: "unreadable" };

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
  const lastAttempt = helpers.job.attempts >= helpers.job.max_attempts;
  let extraction: Record<string, unknown>;
  try {
    const bytes = await buffer(await storage.get(receipt.object_key));
    const read = await extractInSandbox({ bytes, contentType: receipt.content_type, dateOrder: receipt.date_order });
    extraction = { ...read, text: storable(read.text), vendorName: storable(read.vendorName) };
  } catch (e) {
    if ((e as { permanent?: unknown }).permanent !== true && !lastAttempt) throw e;
    // Read again at the operator's request: what was read before stays.
    if (p.reextract) return { receiptId: p.receiptId, reextract: true, kept: "the earlier reading", error: (e as Error).message };
    extraction = { ...UNREAD, error: (e as Error).message };
  }
  const record = (x: Record<string, unknown>) =>
    helpers.query("select app_private.record_receipt_extraction($1, $2)", [p.receiptId, JSON.stringify(x)]);
  try {
    await record(extraction);
  } catch (e) {
    // What was read cannot be recorded: on the last attempt the receipt still leaves draft.
    if (!lastAttempt) throw e;
    extraction = { ...UNREAD, error: `The extraction could not be recorded: ${(e as Error).message}` };
    await record(extraction);
  }
  return {
    receiptId: p.receiptId, method: extraction.method, vendorName: extraction.vendorName, amount: extraction.amount,
    dateReadings: extraction.dateReadings, ...(extraction.error ? { error: extraction.error } : {}),
  };
}

export async function runMatching(helpers: JobHelpers, p: MatchReceiptsPayload): Promise<Record<string, unknown>> {
  const { rows: [row] } = await helpers.query<{ result: Record<string, unknown> }>(
    "select app_private.match_receipts($1, $2::uuid[], $3::numeric[]) as result", [p.organizationId, p.receiptIds ?? null, p.amounts ?? null]);
  return row.result;
}
