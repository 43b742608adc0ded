import { execFile, spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { createReadStream } from "node:fs";
import path from "node:path";
import { Readable } from "node:stream";
import { text } from "node:stream/consumers";
import { promisify } from "node:util";
import { Logger, runOnce } from "graphile-worker";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateProcessorExport } from "../scripts/generate-processor-export.js";
import { StorageNotFound } from "../src/storage/storage.js";
import { taskList } from "../worker/tasks.js";
import { startHarness, type Harness } from "./helpers/harness.js";
import { tempStorage } from "./helpers/temp-storage.js";
import { until } from "./helpers/until.js";

const run = promisify(execFile);
const SAMPLE_A = path.resolve("data/samples/processor/processor_balance_sample.csv");
const { tmp, storageDir, storage, remove } = tempStorage("processor-worker-");

let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(async () => {
  await h?.close();
  remove();
});

let orgCount = 0;
async function organization(): Promise<{ id: string; name: string }> {
  const { rows: [o] } = await h.owner.query("select id, name from app_private.create_organization($1)", [`Worker Co ${++orgCount} ${Date.now()}`]);
  return o;
}

const silent = new Logger(() => () => {});
/**
 * A worker in this process that runs every job due, then returns once those jobs have left the
 * queue: graphile-worker's runOnce can return before the last job's completion (which it does not
 * wait for) has committed.
 */
async function work(): Promise<void> {
  await runOnce({ pgPool: h.owner, taskList, logger: silent, noHandleSignals: true });
  await until("the jobs run to leave the queue", async () => (await h.owner.query(
    "select 1 from graphile_worker.jobs where locked_at is not null or (run_at <= now() and attempts = 0)")).rowCount === 0);
}

async function addJob(payload: Record<string, unknown>): Promise<string> {
  const { rows: [j] } = await h.owner.query("select (graphile_worker.add_job('import_processor_balance', $1::json)).id::text as id", [JSON.stringify(payload)]);
  return j.id;
}

async function jobResults(jobId: string) {
  const { rows } = await h.owner.query("select * from app_private.job_results where job_id = $1 order by id", [jobId]);
  return rows;
}

async function eventCount(orgId: string): Promise<{ n: number; ids: number }> {
  const { rows: [e] } = await h.owner.query(
    "select count(*)::int as n, count(distinct source_id)::int as ids from app_public.ledger_events where organization_id = $1", [orgId]);
  return e;
}

describe("storage: the local folder", () => {
  it("puts a stream or a buffer under a key, reads it back, tells whether it exists, deletes it", async () => {
    await storage.put("a/b/c.csv", Readable.from(["hello ", "world"]));
    expect(await storage.exists("a/b/c.csv")).toBe(true);
    expect(await text(await storage.get("a/b/c.csv"))).toBe("hello world");
    expect(await storage.put("a/b/c.csv", Buffer.from("replaced"))).toEqual({ key: "a/b/c.csv", size: 8 });
    expect(await text(await storage.get("a/b/c.csv"))).toBe("replaced");
    await storage.delete("a/b/c.csv");
    await storage.delete("a/b/c.csv"); // twice: no error
    expect(await storage.exists("a/b/c.csv")).toBe(false);
    await expect(storage.get("a/b/c.csv")).rejects.toBeInstanceOf(StorageNotFound);
  });

  it("refuses keys that could leave its folder", async () => {
    for (const key of ["", "../x", "a/../../x", "/etc/passwd", "a//b", "a/./b", "a b", "a\\b"]) {
      await expect(storage.put(key, "x"), key).rejects.toThrow(/Invalid storage key/);
    }
  });
});

describe("the import_processor_balance job", () => {
  it("a job enqueued from SQL imports the stored file and records its counts in job_results", async () => {
    const org = await organization();
    await storage.put("uploads/sample.csv", createReadStream(SAMPLE_A));
    const jobId = await addJob({ organizationId: org.id, objectKey: "uploads/sample.csv" });
    await work();
    expect(await eventCount(org.id)).toEqual({ n: 59, ids: 59 });
    const [r] = await jobResults(jobId);
    expect(r).toMatchObject({
      job_name: "import_processor_balance", attempt: 1, organization_id: org.id, status: "succeeded", error: null,
      payload: { organizationId: org.id, objectKey: "uploads/sample.csv" },
      result: { objectKey: "uploads/sample.csv", created: 59, skippedApplicationFee: 5, skippedDuplicate: 0, skippedUnsupported: 0 },
    });
    expect(r.result.batchId).toMatch(/^processor:\d{8}T\d{9}Z$/);
    expect(r.finished_at.getTime()).toBeGreaterThanOrEqual(r.started_at.getTime());
    const { rows: [b] } = await h.owner.query("select file_name from app_public.import_batches where organization_id = $1", [org.id]);
    expect(b.file_name).toBe("sample.csv");
    // Done: the job is gone from the queue.
    const { rows: left } = await h.owner.query("select id from graphile_worker.jobs where id = $1", [jobId]);
    expect(left).toEqual([]);
  });

  it("a bad file or a missing object is recorded as failed, once: retrying cannot mend it", async () => {
    const org = await organization();
    await storage.put("uploads/bad.csv", "id,Type,Amount,Fee,Currency,Created (UTC)\ntxn_1,charge,12.x,0,cad,2025-01-01 10:00\n");
    const bad = await addJob({ organizationId: org.id, objectKey: "uploads/bad.csv", review: true });
    const missing = await addJob({ organizationId: org.id, objectKey: "uploads/nothing-here.csv" });
    const malformed = await addJob({ objectKey: 42 });
    await work();
    expect(await jobResults(bad)).toMatchObject([{ status: "failed", attempt: 1, result: null, error: 'Line 2, column Amount: "12.x" is not an amount.' }]);
    expect(await jobResults(missing)).toMatchObject([{ status: "failed", error: 'No stored object "uploads/nothing-here.csv".' }]);
    expect(await jobResults(malformed)).toMatchObject([{ status: "failed", organization_id: null, error: "The job payload needs organizationId, an organization id (UUID)." }]);
    const { rows } = await h.owner.query("select id from graphile_worker.jobs where id = any($1::bigint[])", [[bad, missing, malformed]]);
    expect(rows).toEqual([]);
    expect(await eventCount(org.id)).toEqual({ n: 0, ids: 0 });
  });

  it("`import_processor_balance --enqueue` uploads the file, adds the job and prints both; the worker imports it", async () => {
    const org = await organization();
    const { stdout } = await run(path.resolve("node_modules/.bin/tsx"),
      ["src/cli/main.ts", "import_processor_balance", SAMPLE_A, "--org-name", org.name, "--enqueue", "--review", "--json"],
      { env: { ...process.env, DATABASE_URL: h.databaseUrl, STORAGE_DIR: storageDir, LOG_LEVEL: "silent" } });
    const out = JSON.parse(stdout);
    expect(out).toMatchObject({ enqueued: true, organizationId: org.id, fileName: "processor_balance_sample.csv" });
    expect(out.objectKey).toMatch(new RegExp(`^processor-imports/${org.id}/\\d{8}T\\d{9}Z-[0-9a-f]{8}-processor_balance_sample\\.csv$`));
    expect(await storage.exists(out.objectKey)).toBe(true);
    const { rows: [job] } = await h.owner.query("select t.identifier as task_identifier, j.payload from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id where j.id = $1", [out.jobId]);
    expect(job).toEqual({ task_identifier: "import_processor_balance",
      payload: { organizationId: org.id, objectKey: out.objectKey, fileName: "processor_balance_sample.csv", review: true } });
    await work();
    expect(await jobResults(out.jobId)).toMatchObject([{ status: "succeeded", result: { created: 59, status: "needs_review" } }]);
    expect(await eventCount(org.id)).toEqual({ n: 59, ids: 59 });
  });

  it("a worker killed with kill -9 mid-import: another worker retries the job, and each event exists exactly once", async () => {
    const org = await organization();
    const file = path.join(tmp, "large.csv");
    const generated = await generateProcessorExport(file, 20_000, 5);
    await storage.put("uploads/large.csv", createReadStream(file));
    const jobId = await addJob({ organizationId: org.id, objectKey: "uploads/large.csv" });

    // A real worker process (`npm run worker`), killed with its whole process group once it posts.
    const first = startWorker("doomed-worker");
    try {
      await until("the first worker to start posting", async () => (await h.owner.query(
        `select 1 from pg_stat_activity where application_name = 'doomed-worker' and state = 'active'
            and query like '%processor_import_post%'`)).rowCount === 1, 120_000);
      process.kill(-first.pid!, "SIGKILL");
    } finally {
      await first.exited;
    }
    // Its transaction never committed: nothing of it is visible.
    expect(await eventCount(org.id)).toEqual({ n: 0, ids: 0 });
    const { rows: [locked] } = await h.owner.query("select locked_by, attempts from graphile_worker.jobs where id = $1", [jobId]);
    expect(locked.attempts).toBe(1);
    expect(locked.locked_by).not.toBeNull();
    // graphile-worker frees a dead worker's jobs only after 4 hours; the operator frees them now.
    await h.owner.query("select graphile_worker.force_unlock_workers(array[$1::text])", [locked.locked_by]);

    const second = startWorker("second-worker");
    try {
      await until("the second worker to finish the job", async () => (await jobResults(jobId)).length > 0, 240_000);
    } finally {
      process.kill(-second.pid!, "SIGTERM");
      await second.exited;
    }
    expect(await jobResults(jobId)).toMatchObject([{ status: "succeeded", attempt: 2, result: { created: generated.expected.created } }]);
    expect(await eventCount(org.id)).toEqual({ n: generated.expected.created, ids: generated.expected.created });
    const { rows: [b] } = await h.owner.query("select count(*)::int as n from app_public.import_batches where organization_id = $1", [org.id]);
    expect(b.n).toBe(1);
    const { rows: [j] } = await h.owner.query(
      "select count(*)::int as entries, count(*) filter (where e.journal_entry_id = je.id)::int as linked from app_public.journal_entries je join app_public.ledger_events e on e.id = je.event_id where je.organization_id = $1", [org.id]);
    expect(j).toEqual({ entries: generated.expected.created, linked: generated.expected.created });
  }, 420_000);
});

/** `npm run worker` in its own process group (so kill -9 takes npm, tsx and node at once). */
function startWorker(applicationName: string): { pid: number | undefined; exited: Promise<unknown> } {
  const url = new URL(h.databaseUrl);
  url.searchParams.set("application_name", applicationName);
  const child: ChildProcess = spawn("npm", ["run", "--silent", "worker"], {
    env: { ...process.env, DATABASE_URL: url.toString(), STORAGE_DIR: storageDir, WORKER_CONCURRENCY: "1", LOG_LEVEL: "silent" },
    detached: true,
    stdio: "ignore",
  });
  return { pid: child.pid, exited: child.exitCode !== null ? Promise.resolve() : once(child, "exit") };
}

