import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dispatchQueuedJobs, OUTBOX_BATCH, startJobOutbox } from "../worker/job-outbox.js";
import { createTenant, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { until } from "./helpers/until.js";

/**
 * The job outbox: a change records the jobs it needs in its own transaction, without graphile-worker's
 * NOTIFY (PostgreSQL commits notifying transactions one at a time); the worker moves them into the
 * queue in batches, one NOTIFY a batch, and loses none when it dies halfway.
 */
let h: Harness;
let t: Tenant;

beforeAll(async () => {
  h = await startHarness();
  t = await createTenant(h);
});
afterAll(() => h?.close());

const outbox = async () => (await h.owner.query<{ task: string; payload: unknown; job_key: string | null }>(
  "select task, payload, job_key from app_private.job_outbox where payload->>'organizationId' = $1 order by id", [t.organizationId])).rows;
const queuedJobs = async () => (await h.owner.query<{ payload: unknown; key: string | null }>(
  `select j.payload, j.key from graphile_worker._private_jobs j where j.payload->>'organizationId' = $1 order by j.run_at, j.id`,
  [t.organizationId])).rows;
const clearQueue = () => h.owner.query("delete from graphile_worker._private_jobs where payload->>'organizationId' = $1", [t.organizationId]);
const queueMatching = (client: pg.ClientBase | pg.Pool, amount: string) =>
  client.query("select app_private.queue_receipt_matching($1, null, array[$2::numeric])", [t.organizationId, amount]);

/** Counts the NOTIFYs graphile-worker's listeners would get while `f` runs. */
async function notifiesDuring(f: () => Promise<unknown>): Promise<number> {
  const listener = new pg.Client({ connectionString: h.databaseUrl });
  await listener.connect();
  let heard = 0;
  listener.on("notification", (n) => { if (n.channel === "jobs:insert") heard++; });
  await listener.query('listen "jobs:insert"');
  try {
    await f();
    await listener.query("select 1"); // a round trip after the last commit: its notification has arrived
    return heard;
  } finally {
    await listener.end();
  }
}

describe("the job outbox", () => {
  it("a change's jobs wait in the outbox, without a NOTIFY; a batch moves them in order with one", async () => {
    await clearQueue();
    const queuedNotifies = await notifiesDuring(async () => {
      for (const amount of ["1.00", "2.00", "3.00"]) await queueMatching(h.owner, amount);
    });
    expect(queuedNotifies).toBe(0);
    expect((await outbox()).map((j) => j.task)).toEqual(["match_receipts", "match_receipts", "match_receipts"]);
    expect(await queuedJobs()).toEqual([]);

    const moveNotifies = await notifiesDuring(async () => {
      while (await dispatchQueuedJobs(h.owner) === OUTBOX_BATCH) { /* next */ }
    });
    expect(moveNotifies).toBe(1);
    expect(await outbox()).toEqual([]);
    expect((await queuedJobs()).map((j) => (j.payload as { amounts: string[] }).amounts)).toEqual([["1.00"], ["2.00"], ["3.00"]]);
  });

  it("a rolled-back change queues nothing", async () => {
    await clearQueue();
    const client = await h.owner.connect();
    try {
      await client.query("begin");
      await queueMatching(client, "4.00");
      await client.query("rollback");
    } finally {
      client.release();
    }
    expect(await outbox()).toEqual([]);
  });

  it("of a key's jobs moved together the last queued counts, as add_job called in turn would leave it", async () => {
    await clearQueue();
    const queue = (key: string, n: number) => h.owner.query("select app_private.queue_job('match_receipts', $1::json, job_key => $2)",
      [JSON.stringify({ organizationId: t.organizationId, n }), key]);
    await queue("k-a", 1);
    await queue("k-b", 2);
    await queue("k-a", 3);
    await dispatchQueuedJobs(h.owner);
    expect((await queuedJobs()).map((j) => [j.key, (j.payload as { n: number }).n])).toEqual([["k-b", 2], ["k-a", 3]]);
    // A key already in the queue is replaced by the next move, as add_job would.
    await queue("k-a", 5);
    await dispatchQueuedJobs(h.owner);
    expect((await queuedJobs()).map((j) => [j.key, (j.payload as { n: number }).n])).toEqual([["k-b", 2], ["k-a", 5]]);
  });

  it("a job whose time is preserved keeps its place however often it is asked for again", async () => {
    await clearQueue();
    const queue = (n: number) => h.owner.query("select app_private.queue_job('match_receipts', $1::json, job_key => 'k-p', preserve_run_at => true)",
      [JSON.stringify({ organizationId: t.organizationId, n })]);
    const runAt = async () => (await h.owner.query("select run_at from graphile_worker._private_jobs where key = 'k-p'")).rows[0].run_at as Date;
    await queue(1);
    await dispatchQueuedJobs(h.owner);
    const first = await runAt();
    await new Promise((r) => setTimeout(r, 20));
    await queue(2);
    await queue(3);
    await dispatchQueuedJobs(h.owner);
    expect(await runAt()).toEqual(first);
    expect((await queuedJobs()).map((j) => (j.payload as { n: number }).n)).toEqual([3]);
  });

  it("refuses a job graphile-worker would refuse, with the change that asked for it", async () => {
    await expect(h.owner.query("select app_private.queue_job('match_receipts', '{}', max_attempts => 40000)")).rejects.toThrow(/max_attempts/);
    await expect(h.owner.query("select app_private.queue_job('match_receipts', '{}', job_key => '')")).rejects.toThrow(/job key/);
  });

  it("moves a batch at once however many wait, planned from statistics taken while the outbox was empty", async () => {
    const client = await h.owner.connect();
    try {
      await client.query("begin");
      // An outbox that was busy, then empty when analyzed: pages of no rows, so it plans for none.
      await client.query("insert into app_private.job_outbox (task, payload) select 'match_receipts', '{}' from generate_series(1, 2000)");
      await client.query("delete from app_private.job_outbox");
      await client.query("analyze app_private.job_outbox");
      await client.query(`insert into app_private.job_outbox (task, payload)
        select 'match_receipts', json_build_object('organizationId', $1::text, 'n', n) from generate_series(1, 40000) n`, [t.organizationId]);
      // Read once per row left, the batch took seconds (26 s with 11,000 waiting).
      await client.query("set local statement_timeout = '1s'");
      expect(await dispatchQueuedJobs(client)).toBe(OUTBOX_BATCH);
    } finally {
      await client.query("rollback");
      client.release();
    }
  });

  it("a worker that dies while moving a batch loses nothing; two workers never move at once", async () => {
    await clearQueue();
    for (const amount of ["5.00", "6.00"]) await queueMatching(h.owner, amount);
    const dying = await h.owner.connect();
    try {
      await dying.query("begin");
      expect(await dispatchQueuedJobs(dying)).toBeGreaterThanOrEqual(2);
      // Meanwhile another worker moves nothing: batches reach the queue in the order they were taken.
      await queueMatching(h.owner, "7.00");
      expect(await dispatchQueuedJobs(h.owner)).toBe(0);
      expect(await queuedJobs()).toEqual([]);
      await dying.query("rollback"); // the process died: its transaction is rolled back
    } finally {
      dying.release();
    }
    expect((await outbox()).map((j) => (j.payload as { amounts: string[] }).amounts)).toEqual([["5.00"], ["6.00"], ["7.00"]]);
    await dispatchQueuedJobs(h.owner);
    expect((await queuedJobs()).map((j) => (j.payload as { amounts: string[] }).amounts).sort()).toEqual([["5.00"], ["6.00"], ["7.00"]]);
  });

  it("the running worker's outbox moves jobs within a fraction of a second, and stops cleanly", async () => {
    await clearQueue();
    const mover = startJobOutbox(h.owner, { busyMs: 20, idleMs: 100 });
    try {
      const queuedAt = Date.now();
      await queueMatching(h.owner, "8.00");
      await until("the job in the queue", async () => (await queuedJobs()).length === 1 || undefined);
      expect(Date.now() - queuedAt).toBeLessThan(2_000);
    } finally {
      await mover.stop();
    }
    await queueMatching(h.owner, "9.00");
    await new Promise((r) => setTimeout(r, 300));
    expect((await outbox()).length).toBe(1); // stopped: moved no more
  });
});
