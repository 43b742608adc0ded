import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

/**
 * What the service tells Prometheus (GET /metrics, src/http/metrics-route.ts). Counters live for the
 * process; gauges of the database (jobs, pools) are read at each scrape. Labels take only values
 * from a closed set (operation names of the schema, a handful of outcomes), never caller input.
 */
export const registry = new Registry();

let processMetrics = false;
/** prom-client's process metrics (CPU, memory, event loop lag): only where /metrics is served, since they cost each process a little. */
export function startProcessMetrics(): void {
  if (processMetrics) return;
  processMetrics = true;
  collectDefaultMetrics({ register: registry, prefix: "accounting_" });
}

export const graphqlRequests = new Counter({
  name: "accounting_graphql_requests_total",
  help: "GraphQL requests by operation (the root field, introspection's included; multiple; none when refused before one was known) and outcome (ok, error, rejected, rate_limited, failed, aborted).",
  labelNames: ["operation", "outcome"] as const,
  registers: [registry],
});

export const graphqlRequestSeconds = new Histogram({
  name: "accounting_graphql_request_duration_seconds",
  help: "Time from a GraphQL request's arrival to the end of its answer, by operation.",
  labelNames: ["operation"] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});

export const rateLimitRefusals = new Counter({
  name: "accounting_rate_limit_refusals_total",
  help: "Requests refused with HTTP 429 because their API key used up its hourly quota.",
  registers: [registry],
});

export const directReadResults = new Counter({
  name: "accounting_direct_reads_total",
  help: "Reads answered from their SQL function's JSON without GraphQL execution (answered), and those passed on to it after their SQL ran (unvouched).",
  labelNames: ["result"] as const,
  registers: [registry],
});

export const directWriteResults = new Counter({
  name: "accounting_direct_writes_total",
  help: "Mutations answered without GraphQL execution: from their SQL function's JSON or with the error their call raised (answered), or by graphql-js executing the document over JSON their type did not promise (executed).",
  labelNames: ["result"] as const,
  registers: [registry],
});

export const jobsQueued = new Gauge({
  name: "accounting_jobs_queued",
  help: "Jobs waiting (in the job outbox or graphile-worker's queue) or running, by task (those out of attempts are in accounting_jobs_failing).",
  labelNames: ["task"] as const,
  registers: [registry],
});

export const jobsFailing = new Gauge({
  name: "accounting_jobs_failing",
  help: "Jobs whose last attempt failed, by task: waiting for a retry (retrying) or out of attempts (given_up).",
  labelNames: ["task", "state"] as const,
  registers: [registry],
});

export const jobAttempts = new Gauge({
  name: "accounting_job_attempts_last_hour",
  help: "Job attempts that ended in the last hour, by task and status (succeeded, failed), from app_private.job_results.",
  labelNames: ["task", "status"] as const,
  registers: [registry],
});

export const webhookDeliveries = new Gauge({
  name: "accounting_webhook_deliveries_last_hour",
  help: "Webhook deliveries attempted in the last hour, by the outcome of their last attempt: succeeded, retrying (failed, retry due) or failed (retries ended).",
  labelNames: ["outcome"] as const,
  registers: [registry],
});

export const webhookDeliveriesPending = new Gauge({
  name: "accounting_webhook_deliveries_pending",
  help: "Webhook deliveries waiting for an attempt (new, or failed with a retry due).",
  registers: [registry],
});

export const jobFiguresRead = new Gauge({
  name: "accounting_jobs_scrape_ok",
  help: "1 when the job figures of this scrape were read from the database, 0 when that failed or took too long.",
  registers: [registry],
});

export const poolConnections = new Gauge({
  name: "accounting_pg_pool_connections",
  help: "PostgreSQL pool connections by pool (api, owner) and state (total, idle, waiting clients).",
  labelNames: ["pool", "state"] as const,
  registers: [registry],
});

/** What a GraphQL request came to, from its HTTP status and whether its answer carried errors. */
export function outcomeOf(status: number, errors: number): string {
  if (status === 429) return "rate_limited";
  if (status >= 500) return "failed";
  if (status >= 400) return "rejected";
  return errors > 0 ? "error" : "ok";
}
