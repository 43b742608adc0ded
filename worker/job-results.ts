import type { JobHelpers } from "graphile-worker";
import type pg from "pg";

/**
 * Every operator job records each attempt's outcome: its log line (helpers.logger) and a row in
 * app_private.job_results (app_private.record_job_result), where an operator reads what a job did
 * without the worker's logs. Wrap the job's work:
 *
 *   await recordedJob(helpers, organizationId, async () => ({ created: 3 }));
 *
 * The work's result is recorded as `succeeded`. An error is recorded as `failed`, then thrown
 * again so that graphile-worker retries the job, unless it is `permanent` (an error object with
 * `permanent: true`, such as a bad file: retrying cannot mend it), which ends the job. An error
 * with a `result` (what the work did before it failed) has it recorded too.
 */
export async function recordedJob(helpers: JobHelpers, organizationId: string | null | undefined,
    work: () => Promise<Record<string, unknown>>): Promise<Record<string, unknown> | undefined> {
  const startedAt = new Date();
  const { job } = helpers;
  const record = (status: "succeeded" | "failed", result: Record<string, unknown> | null, error: string | null) =>
    helpers.query("select app_private.record_job_result($1, $2, $3, $4, $5, $6, $7, $8, $9)", [
      job.task_identifier, String(job.id), job.attempts, organizationId ?? null, JSON.stringify(job.payload ?? {}),
      status, result === null ? null : JSON.stringify(result), error, startedAt]);
  let result: Record<string, unknown>;
  try {
    result = await work();
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    const permanent = (e as { permanent?: unknown } | null)?.permanent === true;
    helpers.logger.error(`${job.task_identifier} failed (attempt ${job.attempts}${permanent ? ", not retried" : ""}): ${message}`);
    const partial = (e as { result?: unknown } | null)?.result;
    try {
      await record("failed", partial && typeof partial === "object" ? partial as Record<string, unknown> : null, message);
    } catch (recordError) {
      helpers.logger.error(`could not record the failure: ${(recordError as Error).message}`);
    }
    if (permanent) return undefined;
    throw e;
  }
  helpers.logger.info(`${job.task_identifier} succeeded: ${JSON.stringify(result)}`);
  await record("succeeded", result, null);
  return result;
}

/**
 * The job's database access in the shape of a pg.Pool, for code shared with the server (intake,
 * scans): each query, and each client from connect() until its release(), is lent by the
 * worker's pool through helpers.withPgClient.
 */
export function jobPool(helpers: JobHelpers): pg.Pool {
  return {
    query: (text: string, values?: unknown[]) => helpers.withPgClient((client) => client.query(text, values)),
    connect: () => new Promise((resolve, reject) => {
      helpers.withPgClient((client) => new Promise<void>((done) => {
        resolve({ query: client.query.bind(client), release: () => done() });
      })).catch(reject);
    }),
  } as unknown as pg.Pool;
}
