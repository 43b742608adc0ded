import "../src/gc-flags-first.js";
import type pg from "pg";
import { loadConfig } from "../src/config.js";
import { makePool } from "../src/db/pools.js";
import { flushLogs, logger } from "../src/logger.js";
import { startWorker, workerPoolSize, type Worker } from "./run.js";

/**
 * `npm run worker`: the job worker alone, for scale-out; also the child process that `npm start`
 * runs its worker in (worker/child.ts). Needs DATABASE_URL (the owner).
 */

/** A stop that overruns this (a job that ignores it) exits anyway: its jobs go to the next worker. */
const STOP_DEADLINE_MS = 12_000;
let pool: pg.Pool | undefined;
let runner: Worker | undefined;
let stopping = false;
async function stop(reason: string) {
  if (stopping) return;
  stopping = true;
  logger.info({ reason }, "worker stopping");
  setTimeout(() => {
    logger.error("worker stop did not finish in time; exiting");
    flushLogs();
    process.exit(1);
  }, STOP_DEADLINE_MS).unref();
  await runner?.stop();
  await pool?.end();
  flushLogs();
  process.exit(0);
}
// Before anything that takes time: a parent that goes while this starts must not be missed.
if (process.send) {
  // Run by `npm start` (worker/child.ts): the parent decides when this ends. A Ctrl-C or a service
  // manager's SIGTERM sent to the whole process group is the parent's to handle (it stops this in
  // its own order); the parent gone, even killed outright, this goes too.
  for (const signal of ["SIGTERM", "SIGINT"] as const) process.on(signal, () => undefined);
  process.on("message", (message) => { if (message === "stop") void stop("asked by the API process"); });
  process.once("disconnect", () => void stop("the API process is gone"));
  if (!process.connected) void stop("the API process is gone");
} else {
  for (const signal of ["SIGTERM", "SIGINT"] as const) process.on(signal, () => void stop(signal)); // stop() runs once; a repeated signal must not kill it mid-stop
}

const config = loadConfig();
if (!config.databaseUrl) {
  logger.error("DATABASE_URL is required to run the worker on its own.");
  process.exit(1);
}
pool = makePool(config.databaseUrl, workerPoolSize(config.workerConcurrency));
const started = await startWorker(pool, { concurrency: config.workerConcurrency });
if (stopping) await started.stop();
else {
  runner = started;
  logger.info("worker started");
  // A lane that ends by itself (its pool failed) leaves its tasks unserved: the process ends, and
  // `npm start` starts another worker (`npm run worker` under a service manager is restarted by it).
  started.promise.then(
    () => { if (!stopping) exitBroken("a lane of the worker stopped by itself"); },
    (e: unknown) => { if (!stopping) exitBroken(`a lane of the worker failed: ${(e as Error)?.message}`); },
  );
}

function exitBroken(why: string): never {
  logger.error(why);
  flushLogs();
  process.exit(1);
}
