import { timingSafeEqual, createHash } from "node:crypto";
import type { NextFunction, Request, Response } from "express";
import type pg from "pg";
import { jobsFailing, jobsQueued, poolConnections, registry } from "../metrics.js";
import { errorBody } from "./errors.js";

/**
 * GET /metrics in Prometheus's text format, only with `Authorization: Bearer $METRICS_TOKEN`:
 * without METRICS_TOKEN there is no such page (404), with a wrong or no token 401. The gauges of
 * the database are read here, at each scrape, in one query.
 */
export function metricsRoute(token: string | undefined, pools: { owner: pg.Pool; auth: pg.Pool }) {
  const expected = token && createHash("sha256").update(`Bearer ${token}`).digest();
  return async (req: Request, res: Response, next: NextFunction) => {
    if (!expected) return next();
    const given = createHash("sha256").update(req.get("Authorization") ?? "").digest();
    if (!timingSafeEqual(given, expected)) {
      return res.status(401).set("WWW-Authenticate", "Bearer").json(errorBody("A valid metrics token is required.", "UNAUTHENTICATED"));
    }
    try {
      const { rows } = await pools.owner.query<{ task: string; queued: number; retrying: number; given_up: number }>(`
        select task_identifier as task, count(*)::int as queued,
               count(*) filter (where last_error is not null and attempts < max_attempts)::int as retrying,
               count(*) filter (where attempts >= max_attempts)::int as given_up
          from graphile_worker.jobs group by task_identifier`);
      jobsQueued.reset();
      jobsFailing.reset();
      for (const r of rows) {
        jobsQueued.set({ task: r.task }, r.queued);
        jobsFailing.set({ task: r.task, state: "retrying" }, r.retrying);
        jobsFailing.set({ task: r.task, state: "given_up" }, r.given_up);
      }
    } catch {
      // No worker schema yet (it is made when a worker first starts): no job figures.
    }
    for (const [name, pool] of [["api", pools.auth], ["owner", pools.owner]] as const) {
      poolConnections.set({ pool: name, state: "total" }, pool.totalCount);
      poolConnections.set({ pool: name, state: "idle" }, pool.idleCount);
      poolConnections.set({ pool: name, state: "waiting" }, pool.waitingCount);
    }
    res.set("Content-Type", registry.contentType).send(await registry.metrics());
  };
}
