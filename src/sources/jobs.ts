import type { JobHelpers } from "graphile-worker";
import type pg from "pg";
import type { Config } from "../config.js";
import { outboundOf } from "../outbound/guard.js";
import { sealedBox, sourceSecretContext } from "../secrets/sealed-box.js";
import type { Storage } from "../storage/index.js";
import type { CloudDriveSettings } from "./cloud-drive/client.js";
import { scanCloudDrive } from "./cloud-drive/scan.js";
import { deadline, SourceError, withoutSecret } from "./errors.js";
import type { MailboxSettings } from "./mailbox/connection.js";
import { scanMailbox } from "./mailbox/scan.js";
import { emptyScanReport, type ScanReport } from "./scan-report.js";

/** The worker's tasks for receipt sources (queued by migrations/fixtures/sources/receipt-sources.sql). */
export const SCAN_MAILBOX_TASK = "scan_mailbox";
export const SCAN_CLOUD_DRIVE_TASK = "scan_cloud_drive";
/** Run by the worker's cron each minute: queues the scans that are due. */
export const QUEUE_SOURCE_SCANS_TASK = "queue_source_scans";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface SourceScanPayload { organizationId: string; receiptSourceId: string }

export function sourceScanPayload(payload: unknown): SourceScanPayload {
  const p = payload as Record<string, unknown> | null;
  if (typeof p?.organizationId !== "string" || !UUID.test(p.organizationId) || typeof p.receiptSourceId !== "string" || !UUID.test(p.receiptSourceId)) {
    throw Object.assign(new Error("The job payload needs organizationId and receiptSourceId, UUIDs."), { permanent: true });
  }
  return { organizationId: p.organizationId, receiptSourceId: p.receiptSourceId };
}

interface StoredSource { organizationId: string; kind: "mailbox" | "cloud_drive"; settings: unknown; secretSealed: string; cursor: Record<string, unknown> }

export interface SourceScanDeps { owner: pg.Pool; storage: Storage; config: Config }

/** A scan in all: a server that trickles bytes cannot hold a worker's slot longer. A scan takes no new message or object after 8 minutes. */
const SCAN_DEADLINE_MS = 10 * 60_000;
const SCAN_SOFT_LIMIT_MS = 8 * 60_000;
/** How soon a scan notices that its source was disconnected, and stops. */
const DISCONNECT_CHECK_MS = 5_000;

/**
 * One scan of a mailbox or cloud drive. What the tenant's server does wrong (a refused login, an
 * unreachable host, a bad certificate, a scan past its deadline) is kept on the source (status
 * `error`, lastError, lastScannedAt), retried by the schedule with backoff, and ends this job (an
 * error with `permanent`, carrying what the scan did before it), never the worker. Our own
 * failures (the database, our storage) leave the source as it is and are retried by
 * graphile-worker. A source disconnected meanwhile is nothing more to do.
 */
export async function runSourceScan(deps: SourceScanDeps, payload: SourceScanPayload): Promise<Record<string, unknown>> {
  const { owner, storage, config } = deps;
  const { rows: [{ source }] } = await owner.query<{ source: StoredSource | null }>(
    "select app_private.source_for_scan($1) as source", [payload.receiptSourceId]);
  const id = payload.receiptSourceId;
  if (!source || source.organizationId !== payload.organizationId) return { receiptSourceId: id, disconnected: true };
  const interval = source.kind === "mailbox" ? config.mailboxScanIntervalSeconds : config.cloudDriveScanIntervalSeconds;
  const finish = (error: string | null, more: boolean) => owner.query(
    "select app_private.finish_source_scan($1, $2, make_interval(secs => $3), $4)", [id, error, interval, more]);
  const report: ScanReport = emptyScanReport();
  let secret = "";
  const limit = deadline(SCAN_DEADLINE_MS, "The scan", SCAN_SOFT_LIMIT_MS);
  // Disconnecting a source stops its scan in flight: the person asked for nothing more from it.
  const watch = setInterval(() => {
    owner.query<{ gone: boolean }>("select not exists (select 1 from app_public.receipt_sources where id = $1) as gone", [id]).then(({ rows: [{ gone }] }) => {
      if (!gone) return;
      report.disconnected = true;
      limit.cancel(new SourceError("The source was disconnected during its scan."));
    }, () => {});
  }, DISCONNECT_CHECK_MS);
  watch.unref();
  try {
    // A secret that does not open is this server's SECRETS_KEY, not the tenant's doing: an
    // error of ours, in job_results and the log for the operator.
    secret = sealedBox(config.secretsKey).open(source.secretSealed, sourceSecretContext(source.kind, source.organizationId, id));
    const scanSource = { id, organizationId: source.organizationId, secret, cursor: source.cursor };
    if (source.kind === "mailbox") {
      await scanMailbox(owner, storage, outboundOf(config), { ...scanSource, settings: source.settings as MailboxSettings }, report, limit);
    } else {
      await scanCloudDrive(owner, storage, outboundOf(config), { ...scanSource, settings: source.settings as CloudDriveSettings }, report, limit);
    }
  } catch (e) {
    const result = { receiptSourceId: id, ...report };
    if (report.disconnected) return result;
    if (e instanceof SourceError) {
      const reason = withoutSecret(e.message, secret);
      // The database unreachable: the job fails, and graphile-worker retries it.
      await finish(reason, false).catch((dbError) => { throw Object.assign(dbError as Error, { result }); });
      throw Object.assign(new Error(reason), { permanent: true, result });
    }
    throw Object.assign(new Error(withoutSecret(`The scan failed on our side: ${(e as Error).message}`, secret)), { result });
  } finally {
    clearInterval(watch);
    limit.clear();
  }
  if (!report.disconnected) await finish(null, report.more);
  return { receiptSourceId: id, ...report };
}

/** The cron's task: every source whose scan is due is queued, on its organization's long-job queue. */
export async function queueDueSourceScans(helpers: JobHelpers, config: Config): Promise<void> {
  await helpers.query("select app_private.queue_due_source_scans(make_interval(secs => $1), make_interval(secs => $2))",
    [config.mailboxScanIntervalSeconds, config.cloudDriveScanIntervalSeconds]);
}
