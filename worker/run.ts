import { EventEmitter } from "node:events";
import { run, type Runner, type TaskList, type WorkerEvents } from "graphile-worker";
import type pg from "pg";
import { logger } from "../src/logger.js";
import { closeSandbox, READERS } from "../src/receipts/sandbox/index.js";
import { startJobOutbox } from "./job-outbox.js";
import { crontab, LANES, taskList as configuredTasks } from "./tasks.js";

/**
 * The worker: one graphile-worker pool per lane (worker/tasks.ts), each with slots of its own, so
 * that long jobs (scans, imports) cannot hold the slots that matching and webhooks need, nor
 * reading the slots of scans. Within a lane, an organization runs one job at a time (its queue,
 * app_private.job_queue), so the other slots stay free for other organizations.
 *
 * Each pool beats every few seconds in app_private.worker_heartbeats; every worker releases the
 * jobs of pools that stopped beating (a process killed or out of memory), so that they run again
 * within a minute rather than after graphile-worker's four-hour lock.
 */
export interface WorkerOptions {
  /** Slots of the quick and the long lane each (WORKER_CONCURRENCY); the reading lane has one per document reader. */
  concurrency?: number;
  /** How often a pool beats. */
  heartbeatMs?: number;
  /** A pool silent this long is dead. */
  deadAfterMs?: number;
  /** A lock by a pool that never beat is released after this long. */
  unknownAfterMs?: number;
  /** A released job waits this long × its attempts², so that a job that kills its worker does not loop. */
  retryAfterMs?: number;
  /** The tasks (tests pass their own storage and configuration). */
  taskList?: TaskList;
}

/**
 * How often an idle slot looks for a job, by lane. They differ on purpose: a slot looking for a job
 * locks, for that moment, every organization's queue it could take from, and another lane's slot
 * looking at the same moment skips them and finds nothing until its next look. Polls in step
 * would meet every time; these drift apart.
 */
const POLL_MS = { quick: 2_000, reading: 1_300, long: 1_700 } as const;

const HEARTBEAT_MS = 5_000;
/** Six missed beats: a pool's event loop blocked that long is as good as dead. */
const DEAD_AFTER_MS = 30_000;
/** Longer than a scan's deadline (10 minutes): a worker of an older version that does not beat keeps its jobs. */
const UNKNOWN_AFTER_MS = 15 * 60_000;
/** A job released once runs again 10 s later, so within a minute of its worker's death. */
const RETRY_AFTER_MS = 10_000;

export interface Worker {
  stop(): Promise<void>;
  /** Settles when every lane has stopped; rejects when one of them failed (the process should then end). */
  promise: Promise<void>;
  /** The pools' ids, as graphile-worker locks jobs with them. */
  poolIds(): string[];
}

export async function startWorker(pgPool: pg.Pool, options: WorkerOptions = {}): Promise<Worker> {
  const concurrency = options.concurrency ?? 2;
  const tasks = options.taskList ?? configuredTasks;
  const slots = { quick: concurrency, reading: READERS, long: concurrency };
  const pools = new Set<string>(); // beating
  const made = new Set<string>(); // forgotten at the end
  const events: WorkerEvents = new EventEmitter();
  events.on("pool:create", ({ workerPool }) => {
    pools.add(workerPool.id);
    made.add(workerPool.id);
  });
  // A pool that ended beats no more: its jobs, if any, go to the next worker.
  events.on("pool:release", ({ workerPool }) => pools.delete(workerPool.id));
  const heartbeat = startHeartbeat(pgPool, () => [...pools], () => [...made], options);

  const runners: Runner[] = [];
  try {
    for (const lane of Object.keys(LANES) as (keyof typeof LANES)[]) {
      runners.push(await run({
        pgPool, events, noHandleSignals: true, pollInterval: POLL_MS[lane],
        taskList: Object.fromEntries(LANES[lane].map((task) => [task, tasks[task]])),
        concurrency: slots[lane],
        ...(lane === "quick" ? { crontab } : {}),
      }, undefined, lane === "quick" ? undefined : []));
    }
  } catch (e) {
    await Promise.all(runners.map((r) => r.stop()));
    heartbeat.stop();
    throw e;
  }
  heartbeat.beatNow();
  const outbox = startJobOutbox(pgPool);
  const promise = Promise.all(runners.map((r) => r.promise)).then(() => undefined);
  // The document readers (child processes keeping their OCR engines) are made on first use and
  // kept for every later job; they go with the worker.
  void promise.finally(() => closeSandbox());
  return {
    promise,
    poolIds: () => [...pools],
    async stop() {
      await outbox.stop();
      await Promise.all(runners.map((r) => r.stop()));
      await heartbeat.stop();
      // Before this process may exit: a reader left running would read on, orphaned.
      await closeSandbox();
    },
  };
}

/** Beats for the pools, and releases the jobs of dead ones, every `heartbeatMs`. */
function startHeartbeat(pgPool: pg.Pool, poolIds: () => string[], allPoolIds: () => string[], options: WorkerOptions) {
  const every = options.heartbeatMs ?? HEARTBEAT_MS;
  const deadAfter = `${(options.deadAfterMs ?? DEAD_AFTER_MS) / 1000} seconds`;
  const unknownAfter = `${(options.unknownAfterMs ?? UNKNOWN_AFTER_MS) / 1000} seconds`;
  const retryAfter = `${(options.retryAfterMs ?? RETRY_AFTER_MS) / 1000} seconds`;
  let beating: Promise<void> = Promise.resolve();
  const beat = () => {
    beating = beating.then(async () => {
      try {
        const ids = poolIds();
        if (ids.length === 0) return;
        await pgPool.query("select app_private.beat_worker_pools($1, $2::interval)", [ids, deadAfter]);
        const { rows: [{ released }] } = await pgPool.query<{ released: number }>(
          "select app_private.release_dead_worker_jobs($1, $2::interval, $3::interval, $4::interval) as released",
          [ids, deadAfter, unknownAfter, retryAfter]);
        if (released > 0) logger.warn({ released }, "worker: jobs of a dead worker released, to be run again");
      } catch (e) {
        logger.warn({ err: { message: (e as Error).message } }, "worker: heartbeat failed");
      }
    });
  };
  const timer = setInterval(beat, every);
  timer.unref();
  return {
    beatNow: beat,
    async stop() {
      clearInterval(timer);
      await beating;
      const ids = allPoolIds();
      if (ids.length > 0) await pgPool.query("select app_private.forget_worker_pools($1)", [ids]).catch(() => {});
    },
  };
}

/** Connections a worker's pool needs: one for each slot, one held for LISTEN by each lane, the job outbox's, one spare. */
export const workerPoolSize = (concurrency: number) => 2 * concurrency + READERS + 3 + 1 + 1;
