import { runOnce } from "graphile-worker";
import { createStorage } from "../../src/storage/index.js";
import { tasksFor } from "../../worker/tasks.js";
import type { Harness } from "./harness.js";

/** Runs every job the worker has, with the harness's configuration, until none is left (scans, then extraction, then matching). */
export async function runJobs(h: Harness, rounds = 4): Promise<void> {
  const taskList = tasksFor(() => createStorage(h.config), () => h.config);
  for (let i = 0; i < rounds; i++) await runOnce({ pgPool: h.owner, taskList, noHandleSignals: true });
}
