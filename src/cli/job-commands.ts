import { CliError, organizationByName, required, sql, type Command } from "./command.js";

interface Job {
  id: string; task: string; organizationId: string | null; organization: string | null; state: string;
  attempts: number; maxAttempts: number; lastError: string | null; runAt: string; createdAt: string;
}

interface JobResult {
  id: string; task: string; jobId: string | null; attempt: number | null; organizationId: string | null; organization: string | null;
  status: string; result: unknown; error: string | null; startedAt: string; finishedAt: string;
}

/** A whole number from 1 to 1000, or the default. */
function limitOf(raw: string | boolean | undefined, fallback = 50): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 1000) throw new CliError("--limit must be a whole number from 1 to 1000.");
  return n;
}

/**
 * Jobs an operator drives (issue 13): queue one of the tasks that are safe to run again for an
 * organization, list the queue, see what jobs did, run a failed job again. The rules are SQL functions
 * (migrations/fixtures/jobs/operator-jobs.sql); what each job did is in app_private.job_results.
 */
export const jobCommands: Record<string, Command> = {
  enqueue: {
    usage: "enqueue TASK --org-name N [--payload JSON]  (TASK: import_processor_balance, match_receipts, reextract_receipts, rebuild_daily_totals)",
    options: { "org-name": { type: "string" }, payload: { type: "string" } },
    async run(ctx) {
      const [task] = ctx.args.positionals;
      if (!task) throw new CliError("Name the task: enqueue TASK --org-name N [--payload JSON].");
      const org = await organizationByName(ctx.db, required(ctx, "org-name"));
      let payload: unknown = {};
      if (typeof ctx.args.values.payload === "string") {
        try {
          payload = JSON.parse(ctx.args.values.payload);
        } catch {
          throw new CliError("--payload must be JSON, such as '{\"objectKey\": \"…\"}'.");
        }
      }
      const [{ id }] = await sql<{ id: string }>(ctx.db, "select app_private.enqueue_operator_job($1, $2, $3) as id",
        [task, org.id, JSON.stringify(payload)]);
      return {
        result: { jobId: id, task, organizationId: org.id },
        text: `Queued job ${id}: ${task} for "${org.name}". The worker records what it did (list_jobs while it waits; job_results when done).`,
      };
    },
  },
  list_jobs: {
    usage: "list_jobs [--failed] [--limit 50] [--json]",
    options: { failed: { type: "boolean" }, limit: { type: "string" } },
    async run(ctx) {
      const failed = ctx.args.values.failed === true;
      const [{ jobs }] = await sql<{ jobs: Job[] }>(ctx.db, "select app_private.list_operator_jobs($1, $2) as jobs",
        [failed, limitOf(ctx.args.values.limit)]);
      const header = ["id", "task", "organization", "state", "attempts", "run at", "last error"].join("\t");
      const lines = jobs.map((j) => [j.id, j.task, j.organization ?? j.organizationId ?? "-", j.state, `${j.attempts}/${j.maxAttempts}`,
        j.runAt, (j.lastError ?? "").split("\n")[0]].join("\t"));
      return {
        result: { jobs },
        text: jobs.length === 0 ? (failed ? "No failed jobs in the queue." : "The queue is empty.") : [header, ...lines].join("\n"),
      };
    },
  },
  job_results: {
    usage: "job_results [TASK] [--job ID] [--limit 50] [--json]",
    options: { job: { type: "string" }, limit: { type: "string" } },
    async run(ctx) {
      const [task] = ctx.args.positionals;
      const job = typeof ctx.args.values.job === "string" ? ctx.args.values.job : null;
      const [{ results }] = await sql<{ results: JobResult[] }>(ctx.db, "select app_private.list_job_results($1, $2, $3) as results",
        [task ?? null, job, limitOf(ctx.args.values.limit)]);
      const header = ["finished", "job", "task", "organization", "attempt", "status", "result", "error"].join("\t");
      const lines = results.map((r) => [r.finishedAt, r.jobId ?? "-", r.task, r.organization ?? r.organizationId ?? "-", r.attempt ?? "-", r.status,
        r.result === null ? "" : JSON.stringify(r.result), (r.error ?? "").split("\n")[0]].join("\t"));
      return { result: { results }, text: results.length === 0 ? "No job has recorded a result yet." : [header, ...lines].join("\n") };
    },
  },
  retry_job: {
    usage: "retry_job ID",
    options: {},
    async run(ctx) {
      const [id] = ctx.args.positionals;
      if (!id || !/^\d{1,18}$/.test(id)) throw new CliError("Name the job by its id: retry_job ID (list_jobs shows them).");
      const [{ job }] = await sql<{ job: { id: string; task: string } }>(ctx.db, "select app_private.retry_operator_job($1) as job", [id]);
      return { result: { job }, text: `Job ${job.id} (${job.task}) runs again now, with all its attempts.` };
    },
  },
};
