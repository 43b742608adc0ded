import { run, type Runner } from "graphile-worker";
import type pg from "pg";
import { closeSandbox } from "../src/receipts/sandbox/index.js";
import { crontab, taskList } from "./tasks.js";

export async function startWorker(pgPool: pg.Pool, concurrency = 2): Promise<Runner> {
  const runner = await run({ pgPool, taskList, crontab, concurrency, noHandleSignals: true, pollInterval: 2000 });
  // The document reader (a child process keeping its OCR engine) is made on first use and kept for
  // every later job; it goes with the worker.
  void runner.promise.finally(() => closeSandbox());
  return runner;
}

/** Connections a worker's pool needs: one for each job at once, one held for LISTEN, one spare. */
export const workerPoolSize = (concurrency: number) => Math.max(4, concurrency + 2);
