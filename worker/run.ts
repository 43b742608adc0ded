import { run, type Runner } from "graphile-worker";
import type pg from "pg";
import { closeOcr } from "../src/receipts/extraction/index.js";
import { crontab, taskList } from "./tasks.js";

export async function startWorker(pgPool: pg.Pool, concurrency = 2): Promise<Runner> {
  const runner = await run({ pgPool, taskList, crontab, concurrency, noHandleSignals: true, pollInterval: 2000 });
  // The OCR engine is made on first use and kept for every later job; it goes with the worker.
  void runner.promise.finally(() => closeOcr());
  return runner;
}
