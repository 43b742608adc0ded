import { run, type Runner } from "graphile-worker";
import type pg from "pg";
import { crontab, taskList } from "./tasks.js";

export function startWorker(pgPool: pg.Pool, concurrency = 2): Promise<Runner> {
  return run({ pgPool, taskList, crontab, concurrency, noHandleSignals: true, pollInterval: 2000 });
}
