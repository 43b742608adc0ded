import { timingSafeEqual, createHash } from "node:crypto";
import pg from "pg";
import { logger } from "../logger.js";
import { jobAttempts, jobFiguresRead, jobsFailing, jobsQueued, poolConnections, registry, startProcessMetrics, webhookDeliveries, webhookDeliveriesPending } from "../metrics.js";
import { errorBody } from "./errors.js";
import { headerOf, sendJson, type HttpRequest, type HttpResponse, type Next } from "./node-http.js";

/** How long a scrape may wait for the database, in all: a busy one costs the figures, not the scrape. */
const SCRAPE_DATABASE_MS = 2000;

/**
 * GET /metrics in Prometheus's text format, only with `Authorization: Bearer $METRICS_TOKEN`:
 * without METRICS_TOKEN there is no such page (404), with a wrong or no token 401. The job
 * figures are read at each scrape, on a connection of their own with a time limit, one read at a
 * time however many scrapes arrive.
 */
/** A delivery's status as an outcome of its last attempt. */
const WEBHOOK_OUTCOMES: Record<string, string> = { succeeded: "succeeded", pending: "retrying", failed: "failed" };

const resetJobFigures = () => {
  for (const gauge of [jobsQueued, jobsFailing, jobAttempts, webhookDeliveries, webhookDeliveriesPending]) gauge.reset();
};

export function metricsRoute(token: string | undefined, pools: { owner: pg.Pool; auth: pg.Pool }) {
  const expected = token && createHash("sha256").update(`Bearer ${token}`).digest();
  if (token) startProcessMetrics();
  let scrapePool: pg.Pool | undefined;
  let reading: Promise<void> | undefined;
  const readJobFigures = async () => {
    scrapePool ??= new pg.Pool({ ...pools.owner.options, max: 1, connectionTimeoutMillis: SCRAPE_DATABASE_MS,
      statement_timeout: SCRAPE_DATABASE_MS, idleTimeoutMillis: 60_000 });
    try {
      const { rows } = await scrapePool.query<{ source: string; task: string; a: number; b: number; c: number }>(`
        select 'queue' as source, task,
               count(*) filter (where attempts < max_attempts)::int as a,
               count(*) filter (where last_error is not null and attempts < max_attempts)::int as b,
               count(*) filter (where attempts >= max_attempts)::int as c
          from (select task_identifier as task, attempts, max_attempts, last_error from graphile_worker.jobs
                union all -- queued by a change, not yet moved into graphile-worker's queue (worker/job-outbox.ts); a key's rows are one job
                select distinct on (coalesce(job_key, id::text)) task, 0, 1, null from app_private.job_outbox) j
         group by task
        union all
        select 'results', job_name, count(*) filter (where status = 'succeeded')::int, count(*) filter (where status = 'failed')::int, 0
          from app_private.job_results where finished_at > now() - interval '1 hour' group by job_name
        union all
        select 'webhooks', status, count(*)::int, 0, 0
          from app_public.webhook_deliveries where last_attempt_at > now() - interval '1 hour' group by status
        union all
        select 'webhooks_pending', '', count(*)::int, 0, 0 from app_public.webhook_deliveries where status = 'pending'`);
      resetJobFigures();
      for (const r of rows) {
        if (r.source === "webhooks") {
          webhookDeliveries.set({ outcome: WEBHOOK_OUTCOMES[r.task] ?? r.task }, r.a);
        } else if (r.source === "webhooks_pending") {
          webhookDeliveriesPending.set(r.a);
        } else if (r.source === "queue") {
          jobsQueued.set({ task: r.task }, r.a);
          jobsFailing.set({ task: r.task, state: "retrying" }, r.b);
          jobsFailing.set({ task: r.task, state: "given_up" }, r.c);
        } else {
          jobAttempts.set({ task: r.task, status: "succeeded" }, r.a);
          jobAttempts.set({ task: r.task, status: "failed" }, r.b);
        }
      }
      jobFiguresRead.set(1);
    } catch (e) {
      // Figures that could not be read are not shown as if they were current.
      resetJobFigures();
      jobFiguresRead.set(0);
      logger.warn({ err: { message: (e as Error).message } }, "metrics: the job figures could not be read");
    }
  };
  const route = async (req: HttpRequest, res: HttpResponse, next: Next) => {
    if (!expected) return next();
    const given = createHash("sha256").update((headerOf(req, "Authorization") ?? "").trim()).digest();
    if (!timingSafeEqual(given, expected)) {
      res.setHeader("WWW-Authenticate", "Bearer");
      return sendJson(res, 401, errorBody("A valid metrics token is required.", "UNAUTHENTICATED"));
    }
    reading ??= readJobFigures().finally(() => { reading = undefined; });
    await reading;
    for (const [name, pool] of [["api", pools.auth], ["owner", pools.owner]] as const) {
      poolConnections.set({ pool: name, state: "total" }, pool.totalCount);
      poolConnections.set({ pool: name, state: "idle" }, pool.idleCount);
      poolConnections.set({ pool: name, state: "waiting" }, pool.waitingCount);
    }
    const text = await registry.metrics();
    res.writeHead(200, { "Content-Type": registry.contentType, "Content-Length": Buffer.byteLength(text) });
    res.end(text);
  };
  return Object.assign(route, { close: async () => { await scrapePool?.end(); } });
}
