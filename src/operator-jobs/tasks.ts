import type { JobHelpers } from "graphile-worker";
import { payloadOrganizationId } from "../imports/processor-balance/job.js";

/**
 * The operator's own tasks (`npm run cli -- enqueue TASK`), besides the worker's tasks an operator
 * may queue again (a processor import of a stored file, matching). Both only call their SQL.
 */
export const REBUILD_DAILY_TOTALS_TASK = "rebuild_daily_totals";
export const REEXTRACT_RECEIPTS_TASK = "reextract_receipts";

/** A payload's organization, which every operator task needs; a job without one cannot succeed. */
function organizationOf(payload: unknown): string {
  const org = payloadOrganizationId(payload);
  if (!org) throw Object.assign(new Error("The payload names no organization (organizationId)."), { permanent: true });
  return org;
}

/**
 * Daily totals and counts rebuilt from the journal and the events, compared with what the
 * triggers kept and put right (app_private.rebuild_daily_totals), in one repeatable-read
 * transaction: one snapshot for the journal and the totals while postings go on.
 */
export async function rebuildDailyTotals(helpers: JobHelpers, payload: unknown): Promise<Record<string, unknown>> {
  const org = organizationOf(payload);
  return helpers.withPgClient(async (client) => {
    await client.query("begin isolation level repeatable read");
    try {
      const { rows: [{ result }] } = await client.query<{ result: Record<string, unknown> }>(
        "select app_private.rebuild_daily_totals($1) as result", [org]);
      await client.query("commit");
      return result;
    } catch (e) {
      await client.query("rollback").catch(() => {});
      // The organization is gone: no retry brings it back.
      if ((e as { code?: unknown }).code === "AP404") throw Object.assign(new Error((e as Error).message), { permanent: true });
      throw e;
    }
  });
}

/** Extraction queued again for the organization's unread receipts, or all waiting ones with `{"all": true}`. */
export async function reextractReceipts(helpers: JobHelpers, payload: unknown): Promise<Record<string, unknown>> {
  const org = organizationOf(payload);
  const all = (payload as { all?: unknown }).all === true;
  const { rows: [{ queued }] } = await helpers.query<{ queued: number }>(
    "select app_private.queue_receipt_reextraction($1, $2) as queued", [org, all]);
  return { organizationId: org, all, queued };
}
