import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";
import type { NextFunction, Request, Response } from "express";

const storage = new AsyncLocalStorage<{ requestId: string }>();

export const currentRequestId = (): string => storage.getStore()?.requestId ?? randomUUID();

/** Gives each request an id (echoed as X-Request-Id) that every log line and masked error carries. */
export function requestContext(req: Request, res: Response, next: NextFunction) {
  const requestId = randomUUID();
  res.locals.requestId = requestId;
  res.setHeader("X-Request-Id", requestId);
  storage.run({ requestId }, next);
}
