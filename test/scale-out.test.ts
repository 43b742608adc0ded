import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTenant, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { postGraphql, startServerProcess, startWorkerProcess, type ServerProcess, type WorkerProcess } from "./helpers/server-process.js";

/**
 * Scale-out (docs/operating.md, Scaling out): two API processes (`WORKER=off npm start`) and two
 * workers (`npm run worker`) on one database, started as an operator would, each with a data folder
 * of its own (another host) and one shared storage folder. Nothing they share lives in a process.
 */

/** Starts them all at once; when any fails, stops those that started and throws. */
async function startAll<T extends { kill(): void }>(starts: Promise<T>[]): Promise<T[]> {
  const settled = await Promise.allSettled(starts);
  const started = settled.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []));
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failed) {
    for (const p of started) p.kill();
    throw failed.reason;
  }
  return started;
}

async function until<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const QUOTA = 6;
const dirs: string[] = [];
const tempDir = (prefix: string) => {
  const d = mkdtempSync(path.join(os.tmpdir(), prefix));
  dirs.push(d);
  return d;
};

let h: Harness;
let t: Tenant;
let apis: ServerProcess[] = [];
let workers: WorkerProcess[] = [];

beforeAll(async () => {
  h = await startHarness();
  t = await createTenant(h);
  // What every host must share (docs/operating.md, The same settings everywhere): the database, the
  // secrets, the storage. JWT_SECRET and AUTHENTICATOR_PASSWORD come from the test environment
  // (vitest.config.ts).
  const shared = {
    DATABASE_URL: h.databaseUrl,
    INTAKE_SECRET: "scale-out-intake-secret",
    FILE_URL_SECRET: "scale-out-file-url-secret",
    SECRETS_KEY: "ab".repeat(32),
    STORAGE_DIR: tempDir("accounting-scale-storage-"),
    // The check of jobs held at once counts on 2 each.
    WORKER_CONCURRENCY: "2",
    LOG_LEVEL: "info",
  };
  const api = { ...shared, WORKER: "off", SMTP_PORT: "off", PORT: "0", RATE_LIMIT_PER_HOUR: String(QUOTA) };
  const [a, w] = await Promise.allSettled([
    // Without the tsx launcher: the processes stop on SIGTERM themselves (test/helpers/server-process.ts).
    startAll([1, 2].map(() => startServerProcess({ ...api, DATA_DIR: tempDir("accounting-scale-api-") }, 60_000, false))),
    startAll([1, 2].map(() => startWorkerProcess({ ...shared, DATA_DIR: tempDir("accounting-scale-worker-") }, 60_000, false))),
  ]);
  if (a.status === "fulfilled") apis = a.value;
  if (w.status === "fulfilled") workers = w.value;
  if (a.status === "rejected") throw a.reason;
  if (w.status === "rejected") throw w.reason;
}, 90_000);

afterAll(async () => {
  try {
    for (const p of [...apis, ...workers]) p.kill();
    await Promise.all([...apis, ...workers].map((p) => p.exited));
  } finally {
    await h?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
});

const newApiKey = async () => {
  const { rows: [{ key }] } = await h.owner.query("select app_private.create_api_key($1, 'scale-out') as key", [t.organizationId]);
  return { auth: `Bearer ${key.secret}`, id: key.apiKey.id as string };
};
const ORGS = { query: "{ myOrganizations { id } }" };

describe("two API processes and two workers on one database", () => {
  it("share one rate-limit quota: requests alternated between the processes count down one window", async () => {
    const key = await newApiKey();
    const seen: { server: number; status: number; limit: string | null; remaining: string | null; retryAfter: string | null }[] = [];
    for (let i = 0; i < QUOTA + 2; i++) {
      const server = i % 2;
      const res = await postGraphql(apis[server].url, ORGS, key.auth);
      await res.arrayBuffer();
      seen.push({ server, status: res.status, limit: res.headers.get("x-ratelimit-limit"),
        remaining: res.headers.get("x-ratelimit-remaining"), retryAfter: res.headers.get("retry-after") });
    }
    // 6 admitted (3 by each process), counting 5, 4, … 0; then 429 from either process.
    expect(seen.map((s) => [s.server, s.status, s.remaining])).toEqual([
      [0, 200, "5"], [1, 200, "4"], [0, 200, "3"], [1, 200, "2"], [0, 200, "1"], [1, 200, "0"],
      [0, 429, "0"], [1, 429, "0"],
    ]);
    expect(seen.every((s) => s.limit === String(QUOTA))).toBe(true);
    expect(seen.filter((s) => s.status === 429).every((s) => Number(s.retryAfter) > 0)).toBe(true);
    const refused = await postGraphql(apis[1].url, ORGS, key.auth);
    expect(refused.status).toBe(429);
    expect((await refused.json()).errors[0]).toMatchObject({
      message: `Rate Limit Exceeded. ${QUOTA} Requests/Hour.`, extensions: { code: "RATE_LIMITED" },
    });
    // The one window both processes counted in (refused requests count too).
    const { rows } = await h.owner.query("select request_count from app_public.rate_limit_windows where api_key_id = $1", [key.id]);
    expect(rows).toEqual([{ request_count: QUOTA + 3 }]);
  });

  it("admit exactly the quota when a burst hits both processes at once", async () => {
    const key = await newApiKey();
    const responses = await Promise.all(Array.from({ length: 20 }, async (_, i) => {
      const res = await postGraphql(apis[i % 2].url, ORGS, key.auth);
      await res.arrayBuffer();
      return { server: i % 2, status: res.status, remaining: res.headers.get("x-ratelimit-remaining") };
    }));
    const admitted = responses.filter((r) => r.status === 200);
    expect(admitted).toHaveLength(QUOTA);
    expect(responses.filter((r) => r.status === 429)).toHaveLength(20 - QUOTA);
    // Each admitted request saw its own place in the shared count: 5, 4, … 0, once each.
    expect(admitted.map((r) => Number(r.remaining)).sort((x, y) => x - y)).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it("serve the same data: a write on one process is read on the other, and its Idempotency-Key is known to both", async () => {
    const CREATE = `mutation($o: UUID!, $n: String!) { createContact(organizationId: $o, contactType: "vendor", displayName: $n) {
      success error contact { id displayName } } }`;
    const LIST = `query($o: UUID!, $s: String) { listContacts(organizationId: $o, search: $s) { totalCount items { id displayName } } }`;
    const post = async (server: number, query: string, variables: Record<string, unknown>, headers: Record<string, string> = {}) => {
      const res = await fetch(`${apis[server].url}/graphql`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: t.ownerJwt, ...headers },
        body: JSON.stringify({ query, variables }),
      });
      return { status: res.status, replayed: res.headers.get("idempotent-replayed"), body: await res.json() };
    };
    const name = `Scale Out Supplies ${Date.now()}`;
    const created = await post(0, CREATE, { o: t.organizationId, n: name }, { "Idempotency-Key": "scale-out-1" });
    expect(created.body.data.createContact).toMatchObject({ success: true, contact: { displayName: name } });
    const id = created.body.data.createContact.contact.id;

    const listed = await post(1, LIST, { o: t.organizationId, s: "Scale Out Supplies" });
    expect(listed.body.data.listContacts).toEqual({ totalCount: 1, items: [{ id, displayName: name }] });

    // The same request with the same key on the other process: the first response, not a second contact.
    const again = await post(1, CREATE, { o: t.organizationId, n: name }, { "Idempotency-Key": "scale-out-1" });
    expect(again.replayed).toBe("true");
    expect(again.body).toEqual(created.body);
    const { rows } = await h.owner.query("select count(*)::int as n from app_public.contacts where organization_id = $1 and display_name = $2",
      [t.organizationId, name]);
    expect(rows[0].n).toBe(1);
  });

  it("run each job once: 40 queued jobs are shared by both workers, none run twice, the queue ends empty", async () => {
    const JOBS = 40;
    // An organization's matching runs one at a time (its own queue): four organizations, ten each.
    const orgs = [t.organizationId, ...await Promise.all([1, 2, 3].map(async () => (await createTenant(h)).organizationId))];
    // Matching runs take a lock per organization (app_private.match_receipts). Holding the four
    // here keeps every job a worker takes waiting in that worker: with a concurrency of 2, the
    // four jobs in progress at once can only be two in each process.
    const holder = await h.owner.connect();
    let released = false;
    const release = async () => {
      if (released) return;
      released = true;
      await holder.query("select pg_advisory_unlock(hashtext('match_receipts:' || o)) from unnest($1::uuid[]) o", [orgs]);
      holder.release();
    };
    try {
      await holder.query("select pg_advisory_lock(hashtext('match_receipts:' || o)) from unnest($1::uuid[]) o", [orgs]);
      // Queued as the database queues them (after extraction, or when events change), all in one commit.
      await h.owner.query("select app_private.queue_receipt_matching(o) from unnest($1::uuid[]) o, generate_series(1, $2::int)",
        [orgs, JOBS / orgs.length]);
      // The workers move them from the job outbox into graphile-worker's queue.
      const queued = await until("every job in the queue", async () => {
        const ids = (await h.owner.query<{ id: string }>(
          "select id::text from graphile_worker.jobs where task_identifier = 'match_receipts'")).rows.map((r) => r.id).sort();
        return ids.length === JOBS ? ids : undefined;
      });
      expect(queued).toHaveLength(JOBS);

      const inProgress = await until("four jobs in progress", async () => {
        const { rows } = await h.owner.query<{ id: string; locked_by: string }>(
          "select id::text, locked_by from graphile_worker.jobs where task_identifier = 'match_receipts' and locked_by is not null");
        return rows.length === 4 ? rows : undefined;
      });
      // locked_by names a worker process (graphile-worker's pool id): two processes, two jobs each.
      const perProcess = new Map<string, number>();
      for (const r of inProgress) perProcess.set(r.locked_by, (perProcess.get(r.locked_by) ?? 0) + 1);
      expect([...perProcess.values()]).toEqual([2, 2]);
      // No fifth: each process runs at most WORKER_CONCURRENCY (2) jobs at once.
      await new Promise((r) => setTimeout(r, 500));
      const { rows: [{ n }] } = await h.owner.query(
        "select count(*)::int as n from graphile_worker.jobs where task_identifier = 'match_receipts' and locked_by is not null");
      expect(n).toBe(4);
      await release();

      // Every job's one attempt is recorded (worker/job-results.ts), and the queue empties.
      const results = await until("every job recorded", async () => {
        const { rows } = await h.owner.query<{ job_id: string; attempt: number; status: string; result: unknown }>(
          "select job_id, attempt, status, result from app_private.job_results where job_name = 'match_receipts' and organization_id = any($1)", [orgs]);
        return rows.length >= JOBS ? rows : undefined;
      });
      await until("an empty queue", async () => {
        const { rows: [{ n }] } = await h.owner.query("select count(*)::int as n from graphile_worker.jobs");
        return n === 0;
      });
      const { rows: after } = await h.owner.query(
        "select count(*)::int as n from app_private.job_results where job_name = 'match_receipts' and organization_id = any($1)", [orgs]);
      expect(after[0].n).toBe(JOBS);
      expect(results.map((r) => r.job_id).sort()).toEqual(queued);
      expect(results.every((r) => r.attempt === 1 && r.status === "succeeded")).toBe(true);
      expect(results[0].result).toEqual({ matched: 0, unmatched: 0 });

      // Which process ran which job, from each worker's own log (written within a quarter of a
      // second): every job in exactly one of them.
      const ranOf = () => workers.map((w) => new Set([...w.logs().matchAll(/Completed task (\d+) \(match_receipts\b/g)].map((m) => m[1])));
      await until("every job in the logs", async () => new Set(ranOf().flatMap((s) => [...s])).size === JOBS);
      const ranBy = ranOf();
      expect(ranBy[0].size).toBeGreaterThanOrEqual(2);
      expect(ranBy[1].size).toBeGreaterThanOrEqual(2);
      expect(ranBy[0].size + ranBy[1].size).toBe(JOBS);
      expect([...ranBy[0], ...ranBy[1]].sort()).toEqual(queued);
      for (const id of inProgress.map((r) => r.id)) expect(ranBy[0].has(id) || ranBy[1].has(id)).toBe(true);
    } finally {
      await release();
    }
  });

  it("stop cleanly on SIGTERM, each on its own", async () => {
    for (const p of [...apis, ...workers]) p.child.kill("SIGTERM");
    expect(await Promise.all([...apis, ...workers].map((p) => p.exited))).toEqual([0, 0, 0, 0]);
  });
});
