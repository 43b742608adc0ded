import { randomUUID } from "node:crypto";
import type { TaskList } from "graphile-worker";
import { afterAll, beforeAll, expect, it } from "vitest";
import { makePool } from "../src/db/pools.js";
import { LANES, taskList } from "../worker/tasks.js";
import { startWorker, workerPoolSize, type Worker } from "../worker/run.js";
import { createTenant, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { until } from "./helpers/until.js";

/**
 * The worker's fairness and recovery: long jobs run one at a time per organization in a lane of
 * their own, so another organization's work starts at once; the jobs of a worker that died are
 * run again within seconds, not after graphile-worker's four-hour lock.
 */
let h: Harness;
let a: Tenant;
let b: Tenant;

beforeAll(async () => {
  h = await startHarness();
  [a, b] = [await createTenant(h), await createTenant(h)];
});
afterAll(() => h?.close());

/** Records when each job of `recorded` ran; each takes `ms` (the others, such as the cron's, do nothing). */
function recorder(ms: number, recorded: string) {
  const runs: { task: string; org: string; start: number; end: number }[] = [];
  const task = (name: string) => async (payload: unknown) => {
    if (name !== recorded) return;
    const start = Date.now();
    await new Promise((resolve) => setTimeout(resolve, ms));
    runs.push({ task: name, org: (payload as { organizationId: string }).organizationId, start, end: Date.now() });
  };
  const tasks: TaskList = Object.fromEntries(Object.keys(taskList).map((name) => [name, task(name)]));
  return { runs, tasks };
}


async function addSource(org: string): Promise<string> {
  const id = randomUUID();
  await h.owner.query(
    `insert into app_public.receipt_sources (id, organization_id, kind, settings, secret_sealed)
     values ($1::uuid, $2, 'mailbox', jsonb_build_object('host', 'imap.example.test', 'port', 993, 'secure', true, 'username', $1::text, 'folder', 'INBOX'), 'v1:sealed')`,
    [id, org]);
  return id;
}

it("puts every task in exactly one lane", () => {
  const laned = Object.values(LANES).flat();
  expect(new Set(laned).size).toBe(laned.length);
  expect([...laned].sort()).toEqual(Object.keys(taskList).sort());
});

it("runs one organization's long jobs one at a time, and another organization's beside them", async () => {
  // Longer than the worker's 2 s poll: a slot that found nothing when B's first scan was taken looks again within it.
  const { runs, tasks } = recorder(3_000, "scan_mailbox");
  // Organization B queues scans of two mailboxes, then A one.
  const [b1, b2, a1] = [await addSource(b.organizationId), await addSource(b.organizationId), await addSource(a.organizationId)];
  for (const [org, source] of [[b, b1], [b, b2], [a, a1]] as const) {
    await h.owner.query("select app_private.queue_source_scan($1, $2)", [org.organizationId, source]);
  }
  const pool = makePool(h.databaseUrl, workerPoolSize(2));
  const worker = await startWorker(pool, { concurrency: 2, taskList: tasks });
  try {
    await until("three scans", () => runs.length === 3, 20_000);
  } finally {
    await worker.stop();
    await pool.end();
  }
  const [first, second] = runs.filter((r) => r.org === b.organizationId).sort((x, y) => x.start - y.start);
  const ofA = runs.find((r) => r.org === a.organizationId)!;
  expect(second.start).toBeGreaterThanOrEqual(first.end); // B's scans one after the other
  expect(ofA.start).toBeLessThan(first.end); // A's did not wait for B's
  const { rows } = await h.owner.query("select distinct queue_name from graphile_worker.jobs where task_identifier = 'scan_mailbox'");
  expect(rows).toEqual([]); // all done
});

it("releases the jobs of a worker that stopped beating, and runs them again at once", async () => {
  const { runs, tasks } = recorder(10, "match_receipts");
  // Two jobs locked as by running pools: one whose process died a while ago, one alive.
  const { rows: [dead] } = await h.owner.query(
    "select id from graphile_worker.add_job('match_receipts', json_build_object('organizationId', $1::uuid))", [a.organizationId]);
  const { rows: [alive] } = await h.owner.query(
    "select id from graphile_worker.add_job('match_receipts', json_build_object('organizationId', $1::uuid))", [b.organizationId]);
  await h.owner.query(`update graphile_worker._private_jobs set locked_by = case id when $1 then 'pool-dead' else 'pool-alive' end,
    locked_at = now() - interval '2 minutes', attempts = 1 where id in ($1, $2)`, [dead.id, alive.id]);
  await h.owner.query(`insert into app_private.worker_heartbeats (pool_id, beat_at)
    values ('pool-dead', now() - interval '2 minutes'), ('pool-alive', now() + interval '1 hour')`); // still beating

  const pool = makePool(h.databaseUrl, workerPoolSize(2));
  let worker: Worker | undefined;
  try {
    const started = Date.now();
    worker = await startWorker(pool, { taskList: tasks, heartbeatMs: 200, deadAfterMs: 1_000, retryAfterMs: 100 });
    await until("the released job", () => runs.length === 1, 10_000);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(runs[0].org).toBe(a.organizationId);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(runs).toHaveLength(1); // the live pool's job is left alone
    const { rows } = await h.owner.query("select locked_by from graphile_worker._private_jobs where id = $1", [alive.id]);
    expect(rows).toEqual([{ locked_by: "pool-alive" }]);
    const beats = await h.owner.query("select pool_id from app_private.worker_heartbeats order by pool_id");
    expect(beats.rows.map((r) => r.pool_id)).toEqual(expect.arrayContaining(worker.poolIds()));
    expect(beats.rows.map((r) => r.pool_id)).not.toContain("pool-dead");
  } finally {
    await worker?.stop();
    await pool.end();
  }
  const after = await h.owner.query("select pool_id from app_private.worker_heartbeats");
  expect(after.rows.map((r) => r.pool_id)).toEqual(["pool-alive"]); // a clean stop forgets its pools
});
