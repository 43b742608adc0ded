import { runOnce } from "graphile-worker";
import { createStorage } from "../../src/storage/index.js";
import { dispatchQueuedJobs, OUTBOX_BATCH } from "../../worker/job-outbox.js";
import { tasksFor } from "../../worker/tasks.js";
import type { Harness } from "./harness.js";

/** Moves every job the changes so far queued into graphile-worker's queue (the running worker's job outbox does it by itself). */
export async function dispatchJobs(h: Harness): Promise<void> {
  while (await dispatchQueuedJobs(h.owner) === OUTBOX_BATCH) { /* the next batch */ }
}

/** Runs every job the worker has, with the harness's configuration, until none is left (scans, then extraction, then matching). */
export async function runJobs(h: Harness, rounds = 4): Promise<void> {
  const taskList = tasksFor(() => createStorage(h.config), () => h.config);
  for (let i = 0; i < rounds; i++) {
    await dispatchJobs(h);
    await runOnce({ pgPool: h.owner, taskList, noHandleSignals: true });
  }
}
