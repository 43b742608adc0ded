import type { JobHelpers, TaskList } from "graphile-worker";
import { loadConfig, type Config } from "../src/config.js";
import { importProcessorBalance } from "../src/imports/processor-balance/import.js";
import { payloadOrganizationId, PROCESSOR_IMPORT_TASK, processorImportPayload } from "../src/imports/processor-balance/job.js";
import { createStorage, type Storage } from "../src/storage/index.js";
import { EXTRACT_RECEIPT_TASK, extractReceiptPayload, MATCH_RECEIPTS_TASK, matchReceiptsPayload, runExtraction, runMatching } from "../src/receipts/jobs.js";
import { QUEUE_SOURCE_SCANS_TASK, queueDueSourceScans, runSourceScan, SCAN_CLOUD_DRIVE_TASK, SCAN_MAILBOX_TASK, sourceScanPayload } from "../src/sources/jobs.js";
import { jobPool, recordedJob } from "./job-results.js";
import { DELIVER_WEBHOOK_TASK, DELIVER_WEBHOOKS_TASK, QUEUE_DUE_WEBHOOKS_TASK, runWebhookDeliveries, webhookDeliveryPayload } from "../src/webhooks/deliver.js";
import { sealedBox, type SealedBox } from "../src/secrets/sealed-box.js";
import { REBUILD_DAILY_TOTALS_TASK, REEXTRACT_RECEIPTS_TASK, rebuildDailyTotals, reextractReceipts } from "../src/operator-jobs/tasks.js";

/**
 * Every job the worker knows, by identifier, reading stored files from `storage` and its settings
 * from `config` (each made on first use). `taskList` is the configured one's.
 */
export function tasksFor(storage: () => Storage, config: () => Config = loadConfig): TaskList {
  let made: Storage | undefined;
  let configured: Config | undefined;
  const jobStorage = () => (made ??= storage());
  const jobConfig = () => (configured ??= config());
  let secrets: SealedBox | undefined;
  const jobSecrets = () => (secrets ??= sealedBox(jobConfig().secretsKey));
  const scan = (payload: unknown, helpers: JobHelpers) =>
    runSourceScan({ owner: jobPool(helpers), storage: jobStorage(), config: jobConfig() }, sourceScanPayload(payload));
  const deliverWebhooks = async (payload: unknown, helpers: JobHelpers) => {
    const p = webhookDeliveryPayload(payload);
    if (!p) return helpers.logger.error(`${DELIVER_WEBHOOKS_TASK}: the payload needs organizationId (a UUID); not retried.`);
    await runWebhookDeliveries({ owner: jobPool(helpers), config: jobConfig(), secrets: jobSecrets() }, p);
  };
  return {
    // Hourly housekeeping: idempotency records live 24 hours, rate-limit windows one hour.
    async purge_expired(_payload, helpers) {
      await helpers.withPgClient((client) => client.query("select app_private.purge_expired()"));
    },

    // Nightly: every organization's months before the current one summed a row a month
    // (migrations/fixtures/ledger/monthly-totals.sql), each in a transaction of its own; one
    // whose changes keep it busy through ten tries (about a second) is left for the next night.
    // Only months not rolled yet are read: on most nights there are none.
    async roll_up_monthly_totals(_payload, helpers) {
      const { rows: [r] } = await helpers.withPgClient((client) =>
        client.query<{ rolled: number; left_for_later: number }>("call app_private.roll_up_all_monthly_totals()"));
      if (r.rolled || r.left_for_later) helpers.logger.info(`roll_up_monthly_totals: ${r.rolled} organizations rolled up, ${r.left_for_later} left for the next run`);
    },

    // A processor export already in storage (docs/api.md, Processor imports), enqueued by
    // `import_processor_balance --enqueue` or from SQL. One transaction and the unique source
    // index: a retry after a crash creates nothing twice.
    async [PROCESSOR_IMPORT_TASK](payload, helpers) {
      await recordedJob(helpers, payloadOrganizationId(payload), async () => {
        const p = processorImportPayload(payload);
        const input = await jobStorage().get(p.objectKey);
        const fileName = p.fileName ?? p.objectKey.split("/").pop()!;
        const result = await helpers.withPgClient((client) =>
          importProcessorBalance(client, input, { organizationId: p.organizationId, fileName, review: p.review }));
        return { objectKey: p.objectKey, ...result };
      });
    },

    // Queued by the database with each stored receipt, in the transaction that stores it.
    async [EXTRACT_RECEIPT_TASK](payload, helpers) {
      await recordedJob(helpers, payloadOrganizationId(payload), () => runExtraction(helpers, jobStorage(), extractReceiptPayload(payload)));
    },

    // Mailboxes and cloud drives: due scans queued each minute, an organization's scans on its
    // long-job queue (one at a time), and each scan reported in job_results.
    async [QUEUE_SOURCE_SCANS_TASK](_payload, helpers) {
      await queueDueSourceScans(helpers, jobConfig());
    },
    async [SCAN_MAILBOX_TASK](payload, helpers) {
      await recordedJob(helpers, payloadOrganizationId(payload), () => scan(payload, helpers));
    },
    async [SCAN_CLOUD_DRIVE_TASK](payload, helpers) {
      await recordedJob(helpers, payloadOrganizationId(payload), () => scan(payload, helpers));
    },

    // The operator's (`npm run cli -- enqueue`): daily totals checked against the journal, and
    // receipts read again.
    async [REBUILD_DAILY_TOTALS_TASK](payload, helpers) {
      await recordedJob(helpers, payloadOrganizationId(payload), () => rebuildDailyTotals(helpers, payload));
    },
    async [REEXTRACT_RECEIPTS_TASK](payload, helpers) {
      await recordedJob(helpers, payloadOrganizationId(payload), () => reextractReceipts(helpers, payload));
    },

    // Webhooks: an endpoint's due deliveries (its job queued with the change that made an event,
    // or at its next retry, on its organization's webhook queue). Not in job_results: the
    // delivery log is their record. The release before's task, one delivery's job, does the same
    // for its delivery's endpoint.
    [DELIVER_WEBHOOKS_TASK]: deliverWebhooks,
    [DELIVER_WEBHOOK_TASK]: deliverWebhooks,
    // Every minute: a job again for each organization with a delivery due for more than a minute,
    // should its job have been lost (one that failed its last attempt, or that a worker of an older
    // release took and did not know).
    async [QUEUE_DUE_WEBHOOKS_TASK](_payload, helpers) {
      const { rows: [{ n }] } = await helpers.withPgClient((client) => client.query<{ n: number }>("select app_private.queue_due_webhook_jobs() as n"));
      if (n > 0) helpers.logger.info(`${QUEUE_DUE_WEBHOOKS_TASK}: webhook jobs queued again for ${n} organization(s)`);
    },

    // Queued after extraction, and when an organization's events change while receipts wait.
    async [MATCH_RECEIPTS_TASK](payload, helpers) {
      await recordedJob(helpers, payloadOrganizationId(payload), () => runMatching(helpers, matchReceiptsPayload(payload)));
    },
  };
}

/** The tasks over the configured storage (STORAGE_DIR or S3_BUCKET, read on first use). */
export const taskList: TaskList = tasksFor(() => createStorage(loadConfig()));

/**
 * Which pool of the worker runs each task (worker/run.ts), each lane with slots of its own: quick
 * jobs (seconds: matching, webhooks, housekeeping), reading (a document reader each), and long
 * ones (minutes: scans, imports, rebuilds). The reading and long tasks are also the ones queued
 * one at a time per organization (app_private.job_queue).
 */
export const LANES = {
  quick: ["purge_expired", QUEUE_SOURCE_SCANS_TASK, MATCH_RECEIPTS_TASK, DELIVER_WEBHOOKS_TASK, DELIVER_WEBHOOK_TASK, QUEUE_DUE_WEBHOOKS_TASK,
    REEXTRACT_RECEIPTS_TASK],
  reading: [EXTRACT_RECEIPT_TASK],
  long: [SCAN_MAILBOX_TASK, SCAN_CLOUD_DRIVE_TASK, PROCESSOR_IMPORT_TASK, REBUILD_DAILY_TOTALS_TASK, "roll_up_monthly_totals"],
} as const;

export const crontab = ["0 * * * * purge_expired ?max=1", `* * * * * ${QUEUE_SOURCE_SCANS_TASK} ?max=1`,
  `* * * * * ${QUEUE_DUE_WEBHOOKS_TASK} ?max=1`, "15 0 * * * roll_up_monthly_totals ?max=1"].join("\n");
