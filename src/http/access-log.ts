import type { NextFunction, Request, Response } from "express";
import { logger } from "../logger.js";
import { graphqlRequests, graphqlRequestSeconds, outcomeOf } from "../metrics.js";
import { errorsToCaller } from "./request-context.js";

/** One line per request: never headers, credentials or bodies. */
export function accessLog(req: Request, res: Response, next: NextFunction) {
  const start = process.hrtime.bigint();
  const graphql = req.path === "/graphql";
  res.on("finish", () => {
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    if (graphql) {
      const operation: string = res.locals.operationLabel ?? "none";
      graphqlRequests.inc({ operation, outcome: outcomeOf(res.statusCode, errorsToCaller(res)) });
      graphqlRequestSeconds.observe({ operation }, ms / 1000);
    }
    const identity = res.locals.identity;
    logger.info({
      requestId: res.locals.requestId,
      method: req.method,
      // A signed file URL is a credential for its lifetime: its token stays out of the log.
      path: req.path.startsWith("/files/") ? "/files/…" : req.path,
      status: res.statusCode,
      ms,
      caller: identity?.kind === "apiKey" ? `key:${identity.apiKeyId}` : identity?.kind === "user" ? `user:${identity.userId}` : undefined,
    }, "request");
  });
  next();
}
