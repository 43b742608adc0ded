import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { run, type Runner } from "graphile-worker";
import { startJobOutbox } from "../worker/job-outbox.js";
import { dispatchJobs } from "./helpers/worker.js";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { Config } from "../src/config.js";
import { createStorage } from "../src/storage/index.js";
import { postSigned } from "../src/webhooks/deliver.js";
import { tasksFor } from "../worker/tasks.js";
import { createTenant, dataOf, errorOf, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { accountsOf, addAccount, call, CLASSIFY, CONFIRM, count, createEvent, importBankLines } from "./ledger-fixtures.js";

/**
 * Webhooks (issue 13): a real HTTP receiver on loopback registered as an endpoint gets the
 * organization's events, signed as Stripe signs, retried until it answers 2xx, in the order they
 * were made; refusals of private destinations are shown with a stubbed resolver (no packet sent).
 */
const ENDPOINT = `id url events description status disabledReason created`;
const CREATE = `mutation($o: UUID!, $url: String!, $events: [String!]!, $d: String) {
  createWebhookEndpoint(organizationId: $o, url: $url, events: $events, description: $d) { success error secret webhookEndpoint { ${ENDPOINT} } } }`;
const UPDATE = `mutation($o: UUID!, $id: UUID!, $url: String, $events: [String!], $status: String) {
  updateWebhookEndpoint(organizationId: $o, webhookEndpointId: $id, url: $url, events: $events, status: $status) { success error webhookEndpoint { ${ENDPOINT} } } }`;
const LIST = `query($o: UUID!) { listWebhookEndpoints(organizationId: $o) { ${ENDPOINT} } }`;
const DELETE = `mutation($o: UUID!, $id: UUID!) { deleteWebhookEndpoint(organizationId: $o, webhookEndpointId: $id) { success error } }`;
const DELIVERIES = `query($o: UUID!, $id: UUID!, $status: String) { listWebhookDeliveries(organizationId: $o, webhookEndpointId: $id, status: $status) {
  totalCount items { id webhookEndpointId eventId eventType status attempts responseCode lastError lastAttemptAt nextAttemptAt deliveredAt created } } }`;
const REDELIVER = `mutation($o: UUID!, $id: UUID!) { redeliverWebhook(organizationId: $o, webhookDeliveryId: $id) { success error delivery { id status attempts } } }`;

interface Received { headers: IncomingHttpHeaders; body: string; event: any }

/** A receiver on loopback: answers each request with the next status of `answers` (then 200), keeping what it got. */
async function startReceiver(answer: (event: any, n: number) => number = () => 200) {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const event = JSON.parse(body);
      received.push({ headers: req.headers, body, event });
      res.statusCode = answer(event, received.filter((r) => r.event.id === event.id).length);
      res.end("ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  return { received, url, close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }) };
}

/** A receiver that notes each event as it arrives and answers 200 after `ms`. */
async function startReceiverAnsweringAfter(ms: number) {
  const received: { event: any }[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      received.push({ event: JSON.parse(Buffer.concat(chunks).toString("utf8")) });
      setTimeout(() => res.end("ok"), ms);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  return { received, url, close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }) };
}

/** `work` with a receiver that is closed afterwards, whatever happens. */
async function withReceiver(answer: Parameters<typeof startReceiver>[0], work: (receiver: Awaited<ReturnType<typeof startReceiver>>) => Promise<void>) {
  const receiver = await startReceiver(answer);
  try {
    await work(receiver);
  } finally {
    await receiver.close();
  }
}

/**
 * `sql` run as the API runs a request of tenant `t`'s API key, in a transaction that is rolled
 * back; `check` sees the connection before the rollback. Returns "done", or the error's message.
 */
async function asApiCaller(sql: string, params: unknown[], check: (client: pg.PoolClient) => Promise<void> = async () => {}) {
  const client = await h.auth.connect();
  try {
    await client.query("begin");
    await client.query("select set_config('role', 'accounting_visitor', true), set_config('app.api_key_id', $1, true), set_config('app.organization_id', $2, true)",
      [t.apiKeyId, t.organizationId]);
    await client.query(sql, params);
    await check(client);
    return "done";
  } catch (e) {
    return (e as Error).message;
  } finally {
    await client.query("rollback");
    client.release();
  }
}

/** What a receiver does with the header: the signature over "<t>.<raw body>", compared in constant time. */
function verified(secret: string, header: string | undefined, body: string): boolean {
  const parts = Object.fromEntries((header ?? "").split(",").map((p) => p.split("=") as [string, string]));
  const expected = createHmac("sha256", secret).update(`${parts.t}.${body}`).digest();
  const given = Buffer.from(parts.v1 ?? "", "hex");
  return given.length === expected.length && timingSafeEqual(given, expected) && Math.abs(Date.now() / 1000 - Number(parts.t)) < 300;
}

async function until<T>(what: () => Promise<T> | T, ok: (v: T) => boolean, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await what();
    if (ok(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}

let h: Harness;
let t: Tenant;
let worker: { stop(): Promise<void> };

/** A worker as `npm run worker` runs one (its job outbox too), with this configuration (retries a fifth of a second apart). */
async function startTestWorker(config: Config) {
  const runner: Runner = await run({ pgPool: h.owner, taskList: tasksFor(() => createStorage(config), () => config), concurrency: 3,
    pollInterval: 100, noHandleSignals: true });
  const outbox = startJobOutbox(h.owner);
  return { async stop() { await outbox.stop(); await runner.stop(); } };
}

beforeAll(async () => {
  h = await startHarness({ outboundAllowLoopback: true, webhookRetrySeconds: 0.2 });
  t = await createTenant(h);
  worker = await startTestWorker(h.config);
});
afterAll(async () => {
  await worker?.stop();
  await h?.close();
});

const createEndpoint = async (url: string, events: string[], tenant = t) => {
  const r = dataOf(await h.gql(CREATE, { o: tenant.organizationId, url, events }, tenant.ownerJwt), "createWebhookEndpoint");
  if (!r.success) throw new Error(r.error);
  return r as { secret: string; webhookEndpoint: { id: string } };
};

/** An event created and classified, ready to confirm. */
async function stagedEvent(merchantName = "Paper Co") {
  const accounts = await accountsOf(h, t);
  const category = accounts["Office Supplies"] ?? await addAccount(h, t, "Office Supplies", "expense", "expense");
  const id = await createEvent(h, t, { merchantName });
  const c = await call(h, t, CLASSIFY, { eventId: id, categoryId: category, paymentId: accounts.Chequing }, "updateStagedEntry");
  if (!c.success) throw new Error(c.error);
  return id;
}

describe("webhook endpoints", () => {
  it("registers an endpoint with a secret shown once, owner or admin only, and lists it without the secret", async () => {
    const r = dataOf(await h.gql(CREATE, { o: t.organizationId, url: "http://127.0.0.1:9/x", events: ["receipt.matched", "ledger_event.created", "receipt.matched"], d: "books" }, t.ownerJwt), "createWebhookEndpoint");
    expect(r).toMatchObject({ success: true, error: null, webhookEndpoint: { url: "http://127.0.0.1:9/x", events: ["ledger_event.created", "receipt.matched"], description: "books", status: "enabled", disabledReason: null } });
    expect(r.secret).toMatch(/^whsec_[0-9A-Za-z_-]{40}$/);
    const listed = dataOf(await h.gql(LIST, { o: t.organizationId }, t.ownerJwt), "listWebhookEndpoints");
    expect(listed.find((e: any) => e.id === r.webhookEndpoint.id)).toEqual(r.webhookEndpoint);
    const { rows: [row] } = await h.owner.query("select secret_sealed from app_public.webhook_endpoints where id = $1", [r.webhookEndpoint.id]);
    expect(row.secret_sealed).toMatch(/^v1:/);
    expect(row.secret_sealed).not.toContain(r.secret.slice(6));

    const byKey = await h.gql(CREATE, { o: t.organizationId, url: "http://127.0.0.1:9/y", events: ["receipt.matched"] }, t.apiKey);
    expect(errorOf(byKey)).toEqual({ message: "API Keys Cannot Perform Admin Operations.", code: "FORBIDDEN" });
    const unknown = dataOf(await h.gql(CREATE, { o: t.organizationId, url: "http://127.0.0.1:9/y", events: ["ledger_event.exploded"] }, t.ownerJwt), "createWebhookEndpoint");
    expect(unknown.success).toBe(false);
    expect(unknown.error).toMatch(/^events: unknown event type ledger_event.exploded; known: ledger_event.created, /);

    const other = await createTenant(h);
    expect(dataOf(await h.gql(DELETE, { o: other.organizationId, id: r.webhookEndpoint.id }, other.ownerJwt), "deleteWebhookEndpoint"))
      .toEqual({ success: false, error: "Webhook endpoint not found." });
    expect(errorOf(await h.gql(LIST, { o: t.organizationId }, other.ownerJwt))).toEqual({ message: "Not A Member Of This Organization.", code: "FORBIDDEN" });
    expect(dataOf(await h.gql(DELETE, { o: t.organizationId, id: r.webhookEndpoint.id }, t.ownerJwt), "deleteWebhookEndpoint"))
      .toEqual({ success: true, error: null });
  });

  it("never keeps the secret in an idempotent replay", async () => {
    const vars = { o: t.organizationId, url: "http://127.0.0.1:9/replay", events: ["ledger_event.created"] };
    const first = dataOf(await h.gql(CREATE, vars, t.ownerJwt, { "Idempotency-Key": "webhook-1" }), "createWebhookEndpoint");
    const again = dataOf(await h.gql(CREATE, vars, t.ownerJwt, { "Idempotency-Key": "webhook-1" }), "createWebhookEndpoint");
    expect(first.secret).toMatch(/^whsec_/);
    expect(again).toEqual({ ...first, secret: null });
    expect(await count(h, "select 1 from app_public.webhook_endpoints where url = $1", [vars.url])).toBe(1);
    expect(await count(h, "select 1 from app_public.idempotency_records where idempotency_key = 'webhook-1'")).toBe(1);
    expect(await count(h, "select 1 from app_public.idempotency_records where response_body like '%whsec_%'")).toBe(0);
    await h.gql(DELETE, { o: t.organizationId, id: first.webhookEndpoint.id }, t.ownerJwt);
  });
});

describe("refused destinations (resolver stubbed: no packet is sent)", () => {
  let strict: Harness;
  const resolve = vi.fn(async (host: string) => host === "hooks.attacker.example" ? [{ address: "127.0.0.1", family: 4 }] : [{ address: "93.184.215.14", family: 4 }]);
  beforeAll(async () => { strict = await startHarness({ outboundAllowLoopback: false, outboundResolve: resolve }); });
  afterAll(async () => { await strict?.close(); });

  it("refuses private, metadata and loopback addresses, and plain http, writing nothing", async () => {
    const s = await createTenant(strict);
    const attempt = async (url: string) =>
      dataOf(await strict.gql(CREATE, { o: s.organizationId, url, events: ["ledger_event.confirmed"] }, s.ownerJwt), "createWebhookEndpoint");
    expect(await attempt("https://10.0.0.1/hook")).toEqual({ success: false, error: "The host 10.0.0.1 is not allowed: 10.0.0.1 is a private address.", secret: null, webhookEndpoint: null });
    expect((await attempt("https://169.254.169.254/latest/meta-data")).error).toBe("The host 169.254.169.254 is not allowed: 169.254.169.254 is a link-local (cloud metadata) address.");
    expect((await attempt("https://hooks.attacker.example/in")).error).toBe("The host hooks.attacker.example is not allowed: 127.0.0.1 is a loopback address.");
    expect((await attempt("http://hooks.example.com/in")).error).toBe("url must be an https URL.");
    expect((await attempt("https://user:pw@hooks.example.com/in")).error).toBe("url must not carry a user name or password.");
    expect(resolve.mock.calls.map((c) => c[0])).toEqual(["hooks.attacker.example"]);
    expect(await count(strict, "select 1 from app_public.webhook_endpoints")).toBe(0);

    // A public name is accepted; changing it to a private address is refused the same way.
    const ok = await attempt("https://hooks.example.com/in");
    expect(ok.success).toBe(true);
    const moved = dataOf(await strict.gql(UPDATE, { o: s.organizationId, id: ok.webhookEndpoint.id, url: "https://[::ffff:10.1.2.3]/in" }, s.ownerJwt), "updateWebhookEndpoint");
    expect(moved).toEqual({ success: false, error: "The host ::ffff:a01:203 is not allowed: ::ffff:a01:203 is a private address.", webhookEndpoint: null });
  });

  it("checks again at each delivery: a name that now resolves to loopback is not posted to", async () => {
    const outcome = await postSigned("https://hooks.attacker.example/in", "{}", "whsec_x", { allowLoopback: false, resolve });
    expect(outcome).toEqual({ responseCode: null, error: "The host hooks.attacker.example is not allowed: 127.0.0.1 is a loopback address." });
  });
});

describe("deliveries", () => {
  it("posts ledger_event.confirmed after a confirm, signed with the endpoint's secret", async () => {
    await withReceiver(undefined, async (receiver) => {
      const { secret, webhookEndpoint } = await createEndpoint(receiver.url, ["ledger_event.confirmed"]);
      const id = await stagedEvent();
      expect((await call(h, t, CONFIRM, { eventId: id }, "confirmLedgerEvent")).success).toBe(true);
      await until(() => receiver.received.length, (n) => n >= 1);
      expect(receiver.received).toHaveLength(1);
      const [got] = receiver.received;
      expect(got.headers["content-type"]).toBe("application/json");
      expect(verified(secret, got.headers["accounting-signature"] as string, got.body)).toBe(true);
      expect(verified("whsec_" + "x".repeat(40), got.headers["accounting-signature"] as string, got.body)).toBe(false);
      expect(got.event).toMatchObject({ type: "ledger_event.confirmed", organizationId: t.organizationId, data: { object: { id, status: "confirmed" } } });
      expect(got.event.created).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      // The worker records the answer after the receiver has sent it: wait for the record.
      const log = await until(async () => dataOf(await h.gql(DELIVERIES, { o: t.organizationId, id: webhookEndpoint.id }, t.ownerJwt), "listWebhookDeliveries"),
        (l) => l.items[0]?.status !== "pending");
      expect(log.items).toMatchObject([{ eventId: got.event.id, eventType: "ledger_event.confirmed", status: "succeeded", attempts: 1, responseCode: 200, lastError: null, nextAttemptAt: null }]);
      await h.gql(DELETE, { o: t.organizationId, id: webhookEndpoint.id }, t.ownerJwt);
    });
  });

  it("retries a receiver that answers 500 twice, then 200: three posts of the same event id, logged", async () => {
    await withReceiver((_event, n) => (n <= 2 ? 500 : 200), async (receiver) => {
      const { webhookEndpoint } = await createEndpoint(receiver.url, ["ledger_event.rejected"]);
      const id = await createEvent(h, t, {});
      expect((await call(h, t, `mutation($org: UUID!, $eventId: UUID!) { rejectLedgerEvent(organizationId: $org, eventId: $eventId) { success } }`,
        { eventId: id }, "rejectLedgerEvent")).success).toBe(true);
      await until(() => receiver.received.length, (n) => n >= 3);
      const ids = receiver.received.map((r) => r.event.id);
      expect(ids).toHaveLength(3);
      expect(new Set(ids).size).toBe(1);
      const log = await until(async () => dataOf(await h.gql(DELIVERIES, { o: t.organizationId, id: webhookEndpoint.id }, t.ownerJwt), "listWebhookDeliveries"),
        (l) => l.items[0]?.status === "succeeded");
      expect(log.items).toMatchObject([{ eventId: ids[0], status: "succeeded", attempts: 3, responseCode: 200, lastError: null }]);

      // Sent again on request, with the same event id.
      const again = dataOf(await h.gql(REDELIVER, { o: t.organizationId, id: log.items[0].id }, t.ownerJwt), "redeliverWebhook");
      expect(again).toMatchObject({ success: true, delivery: { status: "pending", attempts: 3 } });
      await until(() => receiver.received.length, (n) => n >= 4);
      expect(receiver.received[3].event.id).toBe(ids[0]);
      await h.gql(DELETE, { o: t.organizationId, id: webhookEndpoint.id }, t.ownerJwt);
    });
  });

  it("sends nothing for a rolled-back change, or a refused one", async () => {
    await withReceiver(undefined, async (receiver) => {
      const { webhookEndpoint } = await createEndpoint(receiver.url, ["ledger_event.confirmed", "ledger_event.created"]);
      const id = await stagedEvent("Rolled Back Ltd");
      await until(() => receiver.received.length, (n) => n >= 1);
      // The confirm the mutation runs, as the API runs it, then rolled back.
      expect(await asApiCaller("select app_public.confirm_ledger_event($1, $2)", [t.organizationId, id], async (client) => {
        const made = await client.query("select count(*)::int n from app_public.webhook_events where type = 'ledger_event.confirmed' and object->>'id' = $1", [id]);
        expect(made.rows).toEqual([{ n: 1 }]);
      })).toBe("done");
      // Refused: an unclassified event cannot be confirmed.
      const bare = await createEvent(h, t, { merchantName: "Unclassified" });
      expect((await call(h, t, CONFIRM, { eventId: bare }, "confirmLedgerEvent")).success).toBe(false);
      await until(() => receiver.received.length, (n) => n >= 2);
      await new Promise((r) => setTimeout(r, 500));
      expect(receiver.received.map((r) => r.event.type)).toEqual(["ledger_event.created", "ledger_event.created"]);
      expect(await count(h, "select 1 from app_public.webhook_events where type = 'ledger_event.confirmed' and object->>'id' = any($1)", [[id, bare]])).toBe(0);
      const { rows } = await h.owner.query(`select ev.type from app_public.webhook_deliveries d join app_public.webhook_events ev on ev.id = d.webhook_event_id
        where d.webhook_endpoint_id = $1`, [webhookEndpoint.id]);
      expect(rows).toEqual([{ type: "ledger_event.created" }, { type: "ledger_event.created" }]);
      await h.gql(DELETE, { o: t.organizationId, id: webhookEndpoint.id }, t.ownerJwt);
    });
  });

  it("sends events in the order they were made; one that keeps failing holds back none behind it", async () => {
    let stuck = "";
    await withReceiver((event) => (event.data.object.merchantName === "Stuck" ? 503 : 200), async (receiver) => {
      const { webhookEndpoint } = await createEndpoint(receiver.url, ["ledger_event.created"]);
      stuck = await createEvent(h, t, { merchantName: "Stuck" });
      const names = ["One", "Two", "Three", "Four", "Five"];
      for (const merchantName of names) await createEvent(h, t, { merchantName });
      await until(() => receiver.received.filter((r) => r.event.data.object.merchantName !== "Stuck").length, (n) => n >= 5);
      const delivered = receiver.received.filter((r) => r.event.data.object.merchantName !== "Stuck");
      expect(delivered.map((r) => r.event.data.object.merchantName)).toEqual(names);
      expect(delivered.map((r) => r.event.created)).toEqual([...delivered.map((r) => r.event.created)].sort());
      expect(receiver.received[0].event.data.object.id).toBe(stuck);
      const pending = await until(async () => dataOf(await h.gql(DELIVERIES, { o: t.organizationId, id: webhookEndpoint.id, status: "pending" }, t.ownerJwt), "listWebhookDeliveries"),
        (l) => l.items[0]?.responseCode != null);
      expect(pending.items[0]).toMatchObject({ status: "pending", responseCode: 503, lastError: "The endpoint answered HTTP 503." });
      expect(pending.items[0].nextAttemptAt).not.toBeNull();
      await h.gql(DELETE, { o: t.organizationId, id: webhookEndpoint.id }, t.ownerJwt);
    });
  });

  it("an organization's waiting events make one job for what is due and one for its next retry, however many there are", async () => {
    await worker.stop();
    const jobsOf = async () => (await h.owner.query<{ key: string; later: boolean }>(
      `select j.key, j.run_at > now() as later from graphile_worker._private_jobs j
        where j.payload->>'organizationId' = $1 and j.task_id = (select id from graphile_worker._private_tasks where identifier = 'deliver_webhooks')
        order by j.key`, [t.organizationId])).rows;
    // The earlier tests' jobs (a retry of a deleted endpoint's) are gone.
    await dispatchJobs(h);
    await h.owner.query(`delete from graphile_worker._private_jobs where payload->>'organizationId' = $1`, [t.organizationId]);
    try {
      await withReceiver((event) => (event.data.object.merchantName === "Refused" ? 500 : 200), async (receiver) => {
        await withReceiver(undefined, async (other) => {
          const endpoints = [await createEndpoint(receiver.url, ["ledger_event.created"]), await createEndpoint(other.url, ["ledger_event.created"])];
          const names = ["Refused", ...Array.from({ length: 11 }, (_, i) => `Waiting ${i + 1}`)];
          for (const merchantName of names) await createEvent(h, t, { merchantName });
          await dispatchJobs(h);
          expect(await jobsOf()).toEqual([{ key: `webhooks:${t.organizationId}`, later: false }]);
          worker = await startTestWorker({ ...h.config, webhookRetrySeconds: 3600 });
          await until(() => receiver.received.length + other.received.length, (n) => n >= 2 * names.length);
          expect(receiver.received.map((r) => r.event.data.object.merchantName)).toEqual(names);
          expect(other.received.map((r) => r.event.data.object.merchantName)).toEqual(names);
          // The refused one waits for its retry, an hour away: its organization's one job then.
          await until(async () => (await dispatchJobs(h), await jobsOf()), (jobs) => jobs.length === 1 && jobs[0].later);
          expect(await jobsOf()).toEqual([{ key: `webhooks-retry:${t.organizationId}`, later: true }]);
          for (const { webhookEndpoint } of endpoints) await h.gql(DELETE, { o: t.organizationId, id: webhookEndpoint.id }, t.ownerJwt);
        });
      });
    } finally {
      await worker.stop();
      worker = await startTestWorker(h.config);
    }
  });

  it("sends to an organization's endpoints at the same time: a slow one holds back none of the others", async () => {
    const slow = await startReceiverAnsweringAfter(300);
    try {
      await withReceiver(undefined, async (fast) => {
        const endpoints = [await createEndpoint(slow.url, ["ledger_event.created"]), await createEndpoint(fast.url, ["ledger_event.created"])];
        const names = ["A", "B", "C", "D", "E"];
        for (const merchantName of names) await createEvent(h, t, { merchantName, amount: "3.00" });
        await until(() => fast.received.length, (n) => n >= names.length);
        // Each of the slow one's posts takes 300 ms; the fast one had all five meanwhile.
        expect(slow.received.length).toBeLessThanOrEqual(2);
        expect(fast.received.map((r) => r.event.data.object.merchantName)).toEqual(names);
        await until(() => slow.received.length, (n) => n >= names.length);
        expect(slow.received.map((r) => r.event.data.object.merchantName)).toEqual(names);
        for (const { webhookEndpoint } of endpoints) await h.gql(DELETE, { o: t.organizationId, id: webhookEndpoint.id }, t.ownerJwt);
      });
    } finally {
      await slow.close();
    }
  });

  it("jobs of older releases (one endpoint's, one delivery's) still send their organization's deliveries", async () => {
    for (const kind of ["endpoint", "delivery"] as const) {
      await worker.stop();
      await withReceiver(undefined, async (receiver) => {
        const { webhookEndpoint } = await createEndpoint(receiver.url, ["ledger_event.created"]);
        await createEvent(h, t, { merchantName: `Queued Before The Deploy (${kind})` });
        // The organization's own job is gone: only the old kind is left.
        await h.owner.query("delete from app_private.job_outbox where task = 'deliver_webhooks' and payload->>'organizationId' = $1", [t.organizationId]);
        await h.owner.query(kind === "endpoint"
          ? `select graphile_worker.add_job('deliver_webhooks', json_build_object('organizationId', ep.organization_id, 'webhookEndpointId', ep.id),
               queue_name => app_private.job_queue('deliver_webhooks', ep.organization_id), job_key => 'webhook-endpoint:' || ep.id)
               from app_public.webhook_endpoints ep where ep.id = $1`
          : `select graphile_worker.add_job('deliver_webhook', json_build_object('organizationId', d.organization_id, 'deliveryId', d.id),
               queue_name => app_private.job_queue('deliver_webhook', d.organization_id)) from app_public.webhook_deliveries d where d.webhook_endpoint_id = $1`,
        [webhookEndpoint.id]);
        worker = await startTestWorker(h.config);
        await until(() => receiver.received.length, (n) => n >= 1);
        expect(receiver.received.map((r) => r.event.data.object.merchantName)).toEqual([`Queued Before The Deploy (${kind})`]);
        await h.gql(DELETE, { o: t.organizationId, id: webhookEndpoint.id }, t.ownerJwt);
      });
    }
  });

  it("an endpoint whose secret this server cannot open: failed attempts, retried later; the others are sent to", async () => {
    await withReceiver(undefined, async (broken) => {
      await withReceiver(undefined, async (fine) => {
        const endpoints = [await createEndpoint(broken.url, ["ledger_event.created"]), await createEndpoint(fine.url, ["ledger_event.created"])];
        const brokenId = endpoints[0].webhookEndpoint.id;
        await h.owner.query("update app_public.webhook_endpoints set secret_sealed = 'v1:broken:seal:x' where id = $1", [brokenId]);
        await createEvent(h, t, { merchantName: "Sealed Badly" });
        await until(() => fine.received.length, (n) => n >= 1);
        const log = await until(async () => dataOf(await h.gql(DELIVERIES, { o: t.organizationId, id: brokenId }, t.ownerJwt), "listWebhookDeliveries"),
          (l) => l.items[0]?.attempts >= 1);
        expect(log.items[0]).toMatchObject({ status: "pending", attempts: 1, responseCode: null,
          lastError: "The endpoint's signing secret could not be opened on the server; nothing was sent." });
        expect(log.items[0].nextAttemptAt).not.toBeNull();
        expect(broken.received).toEqual([]);
        for (const { webhookEndpoint } of endpoints) await h.gql(DELETE, { o: t.organizationId, id: webhookEndpoint.id }, t.ownerJwt);
      });
    });
  });

  it("a delivery whose job was lost is sent after the minute's sweep queues its organization's job again", async () => {
    await worker.stop();
    try {
      await withReceiver(undefined, async (receiver) => {
        const { webhookEndpoint } = await createEndpoint(receiver.url, ["ledger_event.created"]);
        await createEvent(h, t, { merchantName: "Lost Job" });
        // Its job is gone (failed its last attempt, or taken by a worker that did not know it), and it has waited.
        await h.owner.query("delete from app_private.job_outbox where task = 'deliver_webhooks' and payload->>'organizationId' = $1", [t.organizationId]);
        await h.owner.query("delete from graphile_worker._private_jobs where payload->>'organizationId' = $1", [t.organizationId]);
        await h.owner.query("update app_public.webhook_deliveries set next_attempt_at = now() - interval '90 seconds' where webhook_endpoint_id = $1", [webhookEndpoint.id]);
        worker = await startTestWorker(h.config);
        await new Promise((r) => setTimeout(r, 500));
        expect(receiver.received).toEqual([]);
        // The cron task's work: only an organization whose delivery waited more than a minute.
        const { rows: [{ n }] } = await h.owner.query("select app_private.queue_due_webhook_jobs() as n");
        expect(n).toBe(1);
        await until(() => receiver.received.length, (k) => k >= 1);
        expect(receiver.received.map((r) => r.event.data.object.merchantName)).toEqual(["Lost Job"]);
        await until(async () => (await h.owner.query("select app_private.queue_due_webhook_jobs() as n")).rows[0].n, (k) => k === 0);
        // A disabled endpoint's delivery left pending has no job to lose: not counted.
        const client = await h.owner.connect();
        try {
          await client.query("begin");
          await client.query("update app_public.webhook_endpoints set status = 'disabled' where id = $1", [webhookEndpoint.id]);
          await client.query("update app_public.webhook_deliveries set status = 'pending', next_attempt_at = now() - interval '90 seconds' where webhook_endpoint_id = $1",
            [webhookEndpoint.id]);
          expect((await client.query("select app_private.queue_due_webhook_jobs() as n")).rows[0].n).toBe(0);
        } finally {
          await client.query("rollback");
          client.release();
        }
        await h.gql(DELETE, { o: t.organizationId, id: webhookEndpoint.id }, t.ownerJwt);
      });
    } finally {
      await worker.stop();
      worker = await startTestWorker(h.config);
    }
  });

  it("sends one bank_import.completed for an import, and receipt events", async () => {
    await withReceiver(undefined, async (receiver) => {
      const { webhookEndpoint } = await createEndpoint(receiver.url, ["bank_import.completed", "ledger_event.created", "receipt.received"]);
      const imported = await importBankLines(h, t, [
        { transactionDate: "2026-04-01", description: "COFFEE SHOP 12", amount: "-4.50", eventType: "expense" },
        { transactionDate: "2026-04-02", description: "CLIENT PAYMENT", amount: "900.00", eventType: "income" },
        { transactionDate: "2026-04-03", description: "HARDWARE STORE", amount: "-45.10", eventType: "expense" },
      ]);
      expect(imported).toMatchObject({ success: true, importedCount: 3 });
      await h.owner.query("select app_private.store_receipt($1, 'email', 'receipts/x.pdf', 'x.pdf', 'application/pdf', 10, $2)", [t.organizationId, "ab".repeat(32)]);
      await until(() => receiver.received.length, (n) => n >= 2);
      await new Promise((r) => setTimeout(r, 300));
      expect(receiver.received.map((r) => r.event.type)).toEqual(["bank_import.completed", "receipt.received"]);
      expect(receiver.received[0].event.data.object).toMatchObject({ importedCount: 3, skippedCount: 0 });
      expect(receiver.received[1].event.data.object).toMatchObject({ filename: "x.pdf", status: "draft" });
      await h.gql(DELETE, { o: t.organizationId, id: webhookEndpoint.id }, t.ownerJwt);
    });
  });

  it("sends ledger_event.reversed with both entries, and reconciliation.completed with the reconciliation", async () => {
    await withReceiver(undefined, async (receiver) => {
      const { webhookEndpoint } = await createEndpoint(receiver.url, ["ledger_event.reversed", "reconciliation.completed"]);
      const id = await stagedEvent("Reversed Co");
      const accounts = await accountsOf(h, t);
      expect((await call(h, t, CONFIRM, { eventId: id }, "confirmLedgerEvent")).success).toBe(true);
      const reversed = await call(h, t, `mutation($org: UUID!, $eventId: UUID!) {
        reverseLedgerEvent(organizationId: $org, eventId: $eventId, postingDate: "2026-03-05") { success error journalEntryId } }`,
        { eventId: id }, "reverseLedgerEvent");
      expect(reversed.success).toBe(true);
      // A reconciliation of an account with one event that nets it to its statement.
      const visa = await addAccount(h, t, "Webhook Visa", "credit_card", "liability");
      const bought = await createEvent(h, t, { merchantName: "Shop", amount: "12.00", transactionDate: "2026-02-01" });
      await call(h, t, CLASSIFY, { eventId: bought, categoryId: accounts["Office Supplies"], paymentId: visa }, "updateStagedEntry");
      expect((await call(h, t, CONFIRM, { eventId: bought }, "confirmLedgerEvent")).success).toBe(true);
      const started = await call(h, t, `mutation($org: UUID!, $a: UUID!) {
        startReconciliation(organizationId: $org, paymentAccountId: $a, statementDate: "2026-02-28", closingBalance: "12.00") {
          success error reconciliation { id } } }`, { a: visa }, "startReconciliation");
      const rec = started.reconciliation.id;
      await call(h, t, `mutation($org: UUID!, $r: UUID!, $e: [UUID!]!) { setCleared(organizationId: $org, reconciliationId: $r, eventIds: $e, cleared: true) { success } }`,
        { r: rec, e: [bought] }, "setCleared");
      const done = await call(h, t, `mutation($org: UUID!, $r: UUID!) { completeReconciliation(organizationId: $org, reconciliationId: $r) { success error } }`,
        { r: rec }, "completeReconciliation");
      expect(done.success).toBe(true);
      await until(() => receiver.received.length, (n) => n >= 2);
      await new Promise((r) => setTimeout(r, 300));
      expect(receiver.received.map((r) => r.event.type)).toEqual(["ledger_event.reversed", "reconciliation.completed"]);
      expect(receiver.received[0].event.data.object).toMatchObject({ id, status: "ignored",
        journalEntry: { voidedAt: null }, reversalEntry: { id: reversed.journalEntryId, txnDate: "2026-03-05" } });
      expect(receiver.received[1].event.data.object).toMatchObject({ id: rec, status: "completed", closingBalance: "12.00",
        difference: "0.00", paymentAccount: { id: visa } });
      await h.gql(DELETE, { o: t.organizationId, id: webhookEndpoint.id }, t.ownerJwt);
    });
  });

  it("records events only for the caller's organization, of its own objects", async () => {
    const other = await createTenant(h);
    {
      const { webhookEndpoint } = await createEndpoint("http://127.0.0.1:9/never", ["ledger_event.created"]);
      const { webhookEndpoint: theirEndpoint } = await createEndpoint("http://127.0.0.1:9/never", ["ledger_event.created"], other);
      const theirs = await createEvent(h, other, { merchantName: "Not Yours" });
      expect(await asApiCaller("select app_private.record_webhook_event($1, 'ledger_event.created', $2)", [other.organizationId, theirs]))
        .toBe("Organization Not Found.");
      expect(await asApiCaller("select app_private.record_webhook_event($1, 'ledger_event.created', $2)", [t.organizationId, theirs]))
        .toMatch(/^record_webhook_event: no ledger_event.created of organization/);
      const { rows: [d] } = await h.owner.query("select id from app_public.webhook_deliveries where organization_id = $1 limit 1", [other.organizationId]);
      expect(await asApiCaller("select app_private.queue_webhook_attempt($1, now())", [d.id])).toBe("Organization Not Found.");
      // Disabled by hand: its pending deliveries fail.
      dataOf(await h.gql(UPDATE, { o: other.organizationId, id: theirEndpoint.id, status: "disabled" }, other.ownerJwt), "updateWebhookEndpoint");
      expect(await count(h, "select 1 from app_public.webhook_deliveries where webhook_endpoint_id = $1 and status = 'pending'", [theirEndpoint.id])).toBe(0);
      await h.gql(DELETE, { o: t.organizationId, id: webhookEndpoint.id }, t.ownerJwt);
    }
    // However many attempts a delivery has had, its next wait is at most 12 hours.
    const { rows: [w] } = await h.owner.query("select app_private.webhook_retry_delay(500, interval '1 minute')::text as wait");
    expect(w.wait).toBe("12:00:00");
  });

  it("records a batch's attempts as if one after another: stale ones change nothing; a later success clears a failure", async () => {
    await worker.stop();
    try {
      const { webhookEndpoint } = await createEndpoint("http://127.0.0.1:9/hooks", ["ledger_event.created"]);
      const ep = webhookEndpoint.id;
      for (const merchantName of ["First", "Second", "Third"]) await createEvent(h, t, { merchantName });
      const { rows: ids } = await h.owner.query<{ id: string }>(
        "select id from app_public.webhook_deliveries where webhook_endpoint_id = $1 order by seq", [ep]);
      const [d1, d2, d3] = ids.map((r) => r.id);
      const outcome = (deliveryId: string, responseCode: number | null, error: string | null = null, attempt = 0) =>
        ({ deliveryId, attempt, responseCode, error });
      /**
       * The batch recorded (a retry window of `window`; the endpoint failing since an hour ago when
       * `failingBefore`), then the deliveries and the endpoint, all rolled back.
       */
      const recorded = async (window: string, ...batches: ReturnType<typeof outcome>[][]) => recordedAfter(false, window, ...batches);
      const recordedAfter = async (failingBefore: boolean, window: string, ...batches: ReturnType<typeof outcome>[][]) => {
        const client = await h.owner.connect();
        try {
          await client.query("begin");
          if (failingBefore) await client.query("update app_public.webhook_endpoints set failing_since = now() - interval '1 hour' where id = $1", [ep]);
          const more: boolean[] = [];
          for (const batch of batches) {
            more.push((await client.query("select app_private.record_webhook_attempts($1, $2, interval '1 hour', $3::interval) as more",
              [ep, JSON.stringify(batch), window])).rows[0].more);
          }
          const { rows: deliveries } = await client.query(
            `select status, attempts, response_code, last_error, next_attempt_at is not null as retries,
                    first_attempt_at = now() as attempted_now
               from app_public.webhook_deliveries where webhook_endpoint_id = $1 order by seq`, [ep]);
          const { rows: [endpoint] } = await client.query(
            "select status, failing_since = now() as failing_now, failing_since is null as not_failing from app_public.webhook_endpoints where id = $1", [ep]);
          return { more, deliveries, endpoint };
        } finally {
          await client.query("rollback");
          client.release();
        }
      };

      // A failure, a success, a failure: failing since the last one; the same batch again is stale.
      const first = await recorded("1 day", [outcome(d1, 500), outcome(d2, 200), outcome(d3, null, "No answer within 10 seconds.")],
        [outcome(d1, 200), outcome(d2, 200), outcome(d3, 200)]);
      expect(first.more).toEqual([false, false]);
      expect(first.deliveries).toEqual([
        { status: "pending", attempts: 1, response_code: 500, last_error: "The endpoint answered HTTP 500.", retries: true, attempted_now: true },
        { status: "succeeded", attempts: 1, response_code: 200, last_error: null, retries: false, attempted_now: true },
        { status: "pending", attempts: 1, response_code: null, last_error: "No answer within 10 seconds.", retries: true, attempted_now: true },
      ]);
      expect(first.endpoint).toEqual({ status: "enabled", failing_now: true, not_failing: false });

      // Retries ended (no window left) for two failures, but the last attempt succeeded: the endpoint stays enabled.
      const cleared = await recorded("0 seconds", [outcome(d1, 500), outcome(d2, 503), outcome(d3, 204)]);
      expect(cleared.deliveries.map((d) => d.status)).toEqual(["failed", "failed", "succeeded"]);
      expect(cleared.endpoint).toEqual({ status: "enabled", failing_now: null, not_failing: true });

      // A failure after the last success ends a delivery's retries: the endpoint is disabled, and what was pending fails.
      const disabled = await recorded("0 seconds", [outcome(d1, 200), outcome(d2, 410)]);
      expect(disabled.deliveries.map((d) => d.status)).toEqual(["succeeded", "failed", "failed"]);
      expect(disabled.endpoint).toMatchObject({ status: "disabled", failing_now: true });

      // Failing since an hour ago: a success then a failure makes it failing since now; failures alone keep the hour.
      const moved = await recordedAfter(true, "1 day", [outcome(d1, 200), outcome(d2, 500)]);
      expect(moved.endpoint).toEqual({ status: "enabled", failing_now: true, not_failing: false });
      const kept = await recordedAfter(true, "1 day", [outcome(d1, 500), outcome(d2, 500)]);
      expect(kept.endpoint).toEqual({ status: "enabled", failing_now: false, not_failing: false });

      // Due now, with more than the batch: the job goes on.
      const more = await recorded("1 day", [outcome(d1, 200)]);
      expect(more.more).toEqual([true]);
      await h.gql(DELETE, { o: t.organizationId, id: ep }, t.ownerJwt);
    } finally {
      worker = await startTestWorker(h.config);
    }
  });

  it("disables an endpoint that accepted nothing for the whole retry window", async () => {
    await worker.stop();
    const impatient = await startTestWorker({ ...h.config, webhookRetrySeconds: 0.1, webhookRetryWindowSeconds: 1 });
    const receiver = await startReceiver(() => 500);
    try {
      const { webhookEndpoint } = await createEndpoint(receiver.url, ["ledger_event.created"]);
      await createEvent(h, t, { merchantName: "Never Accepted" });
      const listed = await until(async () => dataOf(await h.gql(LIST, { o: t.organizationId }, t.ownerJwt), "listWebhookEndpoints")
        .find((e: any) => e.id === webhookEndpoint.id), (e) => e.status === "disabled");
      expect(listed).toMatchObject({ status: "disabled" });
      expect(listed.disabledReason).toMatch(/^Disabled at .*: every attempt failed for/);
      const log = dataOf(await h.gql(DELIVERIES, { o: t.organizationId, id: webhookEndpoint.id }, t.ownerJwt), "listWebhookDeliveries");
      expect(log.items).toMatchObject([{ status: "failed", responseCode: 500, nextAttemptAt: null }]);
      expect(log.items[0].attempts).toBeGreaterThanOrEqual(3);
      // Disabled: later events make no delivery; enabled again, they do.
      await createEvent(h, t, { merchantName: "While Disabled" });
      expect(await count(h, "select 1 from app_public.webhook_deliveries where webhook_endpoint_id = $1", [webhookEndpoint.id])).toBe(1);
      const enabled = dataOf(await h.gql(UPDATE, { o: t.organizationId, id: webhookEndpoint.id, status: "enabled" }, t.ownerJwt), "updateWebhookEndpoint");
      expect(enabled).toMatchObject({ success: true, webhookEndpoint: { status: "enabled", disabledReason: null } });
      await h.gql(DELETE, { o: t.organizationId, id: webhookEndpoint.id }, t.ownerJwt);
    } finally {
      await receiver.close();
      await impatient.stop();
      worker = await startTestWorker(h.config);
    }
  });
});
