import http from "node:http";
import https from "node:https";
import net from "node:net";
import type pg from "pg";
import type { Config } from "../config.js";
import { ConnectionShare } from "../db/connection-share.js";
import { logger } from "../logger.js";
import { OutboundRefused, outboundOf, type OutboundOptions } from "../outbound/guard.js";
import { webhookSecretContext, type SealedBox } from "../secrets/sealed-box.js";
import { checkWebhookUrl, type CheckedUrl } from "./endpoint-url.js";
import { SIGNATURE_HEADER, signatureOf } from "./signature.js";

/** The worker's task: the due deliveries of one organization (queued by migrations/fixtures/webhooks/). */
export const DELIVER_WEBHOOKS_TASK = "deliver_webhooks";
/**
 * The task of an older release: one delivery's job (its organization's deliveries sent), left by a
 * deploy that raced a job being queued. Served until none can be left.
 */
export const DELIVER_WEBHOOK_TASK = "deliver_webhook";
/** The worker's cron task that queues a lost job again (app_private.queue_due_webhook_jobs). */
export const QUEUE_DUE_WEBHOOKS_TASK = "queue_due_webhooks";

/** An endpoint has this long to answer; what it sends after the status line is not waited for. */
const ANSWER_TIMEOUT_MS = 10_000;
/** Read of an answer's body, so that its connection can be used again; a larger one is cut off. */
const MAX_ANSWER_BYTES = 64 * 1024;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface WebhookDeliveryPayload { organizationId: string }

/**
 * A job's payload: its organization. Jobs of older releases named an endpoint or a delivery as
 * well; their organization's job sends those too.
 */
export function webhookDeliveryPayload(payload: unknown): WebhookDeliveryPayload | null {
  const p = payload as Record<string, unknown> | null;
  return typeof p?.organizationId === "string" && UUID.test(p.organizationId) ? { organizationId: p.organizationId } : null;
}

interface DueDeliveries {
  organizationId: string;
  webhookEndpointId: string;
  url: string;
  secretSealed: string;
  deliveries: { deliveryId: string; attempt: number; body: string }[];
}

/** What a job queries with: the worker's pool, or its queries one at a time (oneAtATime). */
interface Queries { query<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>> }

export interface WebhookDeliveryDeps {
  owner: Queries;
  config: Pick<Config, "outboundAllowLoopback" | "webhookRetrySeconds" | "webhookRetryWindowSeconds">;
  secrets: SealedBox;
}

export interface AttemptOutcome { responseCode: number | null; error: string | null }

/**
 * Deliveries one batch sends at most; an endpoint is sent batches until none is due or the job has
 * run this long. Then the organization's next job sends the rest, after the jobs other
 * organizations queued meanwhile (one queue per organization runs one job at a time).
 */
const BATCH = 50;
const JOB_TIME_MS = 1_000;
/** Endpoints of one organization sent to at the same time, at most (each one delivery at a time). */
const ENDPOINTS_AT_ONCE = 8;
/** A job's queries at once, at most, however many endpoints it sends to. */
const DB_QUERIES_AT_ONCE = 2;
/** While an endpoint is being sent to, how often the others are looked at for new deliveries. */
const LOOK_AGAIN_MS = 50;

/**
 * An organization's deliveries that are due: each of its endpoints with deliveries due is sent
 * them at the same time as the others, batch after batch; to one endpoint, each body the database
 * made is signed and posted, oldest event first, one at a time, and what came back is recorded by
 * app_private.record_webhook_attempts, which schedules retries, ends deliveries and disables an
 * endpoint that kept failing. The job ends by queuing the organization's next jobs. Returns how
 * many were posted.
 */
export async function runWebhookDeliveries(jobDeps: WebhookDeliveryDeps, p: WebhookDeliveryPayload): Promise<number> {
  const started = Date.now();
  // The worker's pool has a connection per slot and a few to spare; the job's senders share two.
  const deps = { ...jobDeps, owner: atMost(DB_QUERIES_AT_ONCE, jobDeps.owner) };
  const waiting: string[] = []; // due, not being sent to
  const busy = new Set<string>(); // being sent to
  const endpointsDue = async () => {
    const { rows: [{ endpoints }] } = await deps.owner.query<{ endpoints: string[] }>(
      "select app_private.webhook_endpoints_due($1) as endpoints", [p.organizationId]);
    for (const id of endpoints) if (!busy.has(id) && !waiting.includes(id)) waiting.push(id);
  };
  // While one endpoint is still being sent to (the job cannot end before it answers), the others'
  // new deliveries are looked for and sent too, rather than waiting for the next job.
  let looking: Promise<void> | null = null;
  const lookAgain = () => (looking ??= new Promise((r) => setTimeout(r, LOOK_AGAIN_MS)).then(endpointsDue).finally(() => { looking = null; }));
  let posted = 0;
  const sender = async () => {
    for (;;) {
      // Time's up: what is still due goes to the organization's next job.
      if (Date.now() - started > JOB_TIME_MS) return;
      const id = waiting.shift();
      if (id === undefined) {
        if (busy.size === 0) return;
        await lookAgain();
        continue;
      }
      busy.add(id);
      try {
        const sent = await sendToEndpoint(deps, p.organizationId, id, started);
        posted += sent;
      } finally {
        busy.delete(id);
      }
    }
  };
  await endpointsDue();
  // Every sender finishes before the job does, even when one failed: none posts after its job ended.
  const failed = (await Promise.allSettled(Array.from({ length: ENDPOINTS_AT_ONCE }, sender)))
    .find((r): r is PromiseRejectedResult => r.status === "rejected");
  // What is due now (the rest of a busy endpoint's, or an endpoint's that became due meanwhile),
  // after the other organizations' jobs; and the next retry. Also when a retry job ran early. A
  // job that failed queues only the retry: graphile-worker runs it again after its backoff.
  await deps.owner.query("select app_private.queue_webhook_jobs($1, $2)", [p.organizationId, failed === undefined]);
  if (failed) throw failed.reason;
  return posted;
}

/**
 * `pool`'s queries, at most `n` at a time, the others waiting their turn in order: the API's fair
 * share of connections (ConnectionShare), here one job's. A query that waits longer than an
 * endpoint's answer may take fails the job, which graphile-worker runs again after its backoff.
 */
function atMost(n: number, pool: Queries): Queries {
  const share = new ConnectionShare(n);
  return {
    async query<R extends pg.QueryResultRow>(text: string, values?: unknown[]) {
      const release = await share.acquire("job", Date.now() + ANSWER_TIMEOUT_MS);
      try {
        return await pool.query<R>(text, values);
      } finally {
        release();
      }
    },
  };
}

/** One endpoint's due deliveries, batch after batch, until none is due or the job's time is up. */
async function sendToEndpoint(deps: WebhookDeliveryDeps, organizationId: string, webhookEndpointId: string, started: number): Promise<number> {
  let posted = 0;
  // The secret opened and the URL checked once a job, again only if the endpoint changed between batches.
  let sending = null as { url: string; sealed: string; secret: string; target: CheckedUrl | (AttemptOutcome & { error: string }) } | null;
  for (;;) {
    const { rows: [{ due }] } = await deps.owner.query<{ due: DueDeliveries | null }>(
      "select app_private.webhook_deliveries_due($1, $2) as due", [webhookEndpointId, BATCH]);
    if (!due || due.organizationId !== organizationId || due.deliveries.length === 0) return posted;
    if (sending === null || sending.url !== due.url || sending.sealed !== due.secretSealed) {
      sending = { url: due.url, sealed: due.secretSealed, ...await signingTarget(deps, due) };
    }
    const { secret, target } = sending;
    const attempts: (AttemptOutcome & { deliveryId: string; attempt: number })[] = [];
    for (const d of due.deliveries) {
      if (attempts.length > 0 && Date.now() - started > JOB_TIME_MS) break;
      const outcome = "error" in target ? target : await postTo(target, d.body, secret);
      attempts.push({ deliveryId: d.deliveryId, attempt: d.attempt, ...outcome });
    }
    posted += attempts.length;
    const { rows: [{ more }] } = await deps.owner.query<{ more: boolean }>(
      "select app_private.record_webhook_attempts($1, $2, make_interval(secs => $3), make_interval(secs => $4)) as more",
      [webhookEndpointId, JSON.stringify(attempts), deps.config.webhookRetrySeconds, deps.config.webhookRetryWindowSeconds]);
    if (!more || Date.now() - started > JOB_TIME_MS) return posted;
  }
}

/**
 * The endpoint's secret and the address its posts go to (every post of the job goes to the
 * address checked), or why it cannot be posted to, as each attempt's outcome: a refused address,
 * or a secret this server cannot open (recorded as a failed attempt, so that it is retried and
 * ends as any failure does, rather than failing the organization's job again and again).
 */
async function signingTarget(deps: WebhookDeliveryDeps, due: DueDeliveries): Promise<{ secret: string; target: CheckedUrl | (AttemptOutcome & { error: string }) }> {
  let secret: string;
  try {
    secret = deps.secrets.open(due.secretSealed, webhookSecretContext(due.organizationId, due.webhookEndpointId));
  } catch (e) {
    logger.error({ err: { message: (e as Error).message }, webhookEndpointId: due.webhookEndpointId }, "webhook: the endpoint's signing secret could not be opened");
    return { secret: "", target: { responseCode: null, error: "The endpoint's signing secret could not be opened on the server; nothing was sent." } };
  }
  return { secret, target: await deliveryTarget(due.url, outboundOf(deps.config)) };
}

// Connections are kept for the next delivery to the same address (the address was checked). No
// limit of sockets: a request waiting for one would spend its answer's 10 s waiting.
const agents = { "http:": new http.Agent({ keepAlive: true }), "https:": new https.Agent({ keepAlive: true }) };

/** Where a webhook URL may be posted to now (checkWebhookUrl), or why not, as an attempt's outcome. */
async function deliveryTarget(url: string, outbound: OutboundOptions): Promise<CheckedUrl | AttemptOutcome & { error: string }> {
  try {
    return await checkWebhookUrl(url, outbound);
  } catch (e) {
    if (e instanceof OutboundRefused) return { responseCode: null, error: e.message };
    throw e;
  }
}

/** One POST to `url`, checked by the outbound guard first. */
export async function postSigned(url: string, body: string, secret: string, outbound: OutboundOptions): Promise<AttemptOutcome> {
  const target = await deliveryTarget(url, outbound);
  return "error" in target ? target : postTo(target, body, secret);
}

/**
 * POSTs `body` to the address the outbound guard checked (never resolving the name again),
 * signed with `secret`. A redirect is an answer like any other non-2xx: not followed.
 */
function postTo(checked: CheckedUrl, body: string, secret: string): Promise<AttemptOutcome> {
  const { url: target, address } = checked;
  const isHttps = target.protocol === "https:";
  const payload = Buffer.from(body, "utf8");
  return new Promise<AttemptOutcome>((resolve) => {
    const request = (isHttps ? https : http).request({
      method: "POST",
      host: address.address,
      family: address.family,
      port: target.port || (isHttps ? 443 : 80),
      path: target.pathname + target.search,
      // The certificate is checked against the URL's name; an IP address is sent no SNI.
      ...(isHttps && !net.isIP(address.host) ? { servername: address.host } : {}),
      agent: agents[isHttps ? "https:" : "http:"],
      signal: AbortSignal.timeout(ANSWER_TIMEOUT_MS),
      headers: {
        Host: target.host,
        "Content-Type": "application/json",
        "Content-Length": payload.length,
        "User-Agent": "accounting-api-webhooks/1",
        [SIGNATURE_HEADER]: signatureOf(secret, body, Math.floor(Date.now() / 1000)),
      },
    }, (response) => {
      resolve({ responseCode: response.statusCode ?? null, error: null });
      let read = 0;
      response.on("data", (chunk: Buffer) => {
        read += chunk.length;
        if (read > MAX_ANSWER_BYTES) response.destroy();
      });
      response.on("error", () => {});
    });
    request.on("error", (e: NodeJS.ErrnoException) => {
      const timedOut = e.name === "AbortError" || e.name === "TimeoutError";
      resolve({ responseCode: null, error: timedOut ? `No answer within ${ANSWER_TIMEOUT_MS / 1000} seconds.`
        : `Could not reach the endpoint: ${e.code ?? e.message}.` });
    });
    request.end(payload);
  });
}
