import type pg from "pg";
import { logger } from "../src/logger.js";

/**
 * Moves the jobs that changes recorded in the job outbox (migrations/fixtures/jobs/outbox.sql) into
 * graphile-worker's queue: a batch at a time, one NOTIFY each, so that the API's transactions
 * never notify (PostgreSQL commits notifying transactions one at a time). A full batch is followed
 * at once by the next; otherwise the outbox is looked at again after a pause that grows while it
 * stays empty, from BUSY_MS to IDLE_MS. Several workers share the outbox: one moves at a time
 * (app_private.dispatch_queued_jobs takes a lock; the others move nothing that round).
 */
export interface JobOutbox {
  stop(): Promise<void>;
}

/** The most jobs moved in one transaction. */
export const OUTBOX_BATCH = 500;
/** The pause after a batch: jobs queued meanwhile go in the next one. */
const BUSY_MS = 50;
/** The longest pause, when nothing was queued for a while: what a job may wait at worst. */
const IDLE_MS = 400;

export function startJobOutbox(pgPool: pg.Pool, options: { busyMs?: number; idleMs?: number } = {}): JobOutbox {
  const busyMs = options.busyMs ?? BUSY_MS;
  const idleMs = options.idleMs ?? IDLE_MS;
  let stopped = false;
  let wake: (() => void) | undefined;
  const sleep = (ms: number) => new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    wake = () => { clearTimeout(timer); resolve(); };
  });
  const loop = (async () => {
    let pause = busyMs;
    while (!stopped) {
      let moved = 0;
      try {
        moved = await dispatchQueuedJobs(pgPool);
      } catch (e) {
        logger.warn({ err: { message: (e as Error).message } }, "job outbox: moving jobs failed; trying again");
      }
      if (stopped) break;
      if (moved === OUTBOX_BATCH) continue;
      pause = moved > 0 ? busyMs : Math.min(pause * 2, idleMs);
      await sleep(pause);
    }
  })();
  return {
    async stop() {
      stopped = true;
      wake?.();
      await loop;
    },
  };
}

/** One batch: how many jobs it moved. */
export async function dispatchQueuedJobs(pgPool: pg.Pool | pg.PoolClient): Promise<number> {
  const { rows: [{ moved }] } = await pgPool.query<{ moved: number }>(
    "select app_private.dispatch_queued_jobs($1) as moved", [OUTBOX_BATCH]);
  return moved;
}
