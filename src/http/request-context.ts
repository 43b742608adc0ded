import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";
import type { HttpRequest, HttpResponse, Next } from "./node-http.js";

/** What a request carries wherever its work goes: its id, and how many errors its answer told. */
interface RequestStore { requestId: string; errors: number }

const storage = new AsyncLocalStorage<RequestStore>();

export const currentRequestId = (): string => storage.getStore()?.requestId ?? randomUUID();

/** Counts an error told in the current request's answer (its outcome in the metrics). */
export function noteErrorToCaller(): void {
  const store = storage.getStore();
  if (store) store.errors++;
}

/** Errors the request's answer told (after it is written). */
export const errorsToCaller = (res: HttpResponse): number => (res.locals.requestStore as RequestStore | undefined)?.errors ?? 0;

/** Gives each request an id (echoed as X-Request-Id) that every log line and masked error carries. */
export function requestContext(_req: HttpRequest, res: HttpResponse, next: Next) {
  const requestId = randomUUID();
  const store: RequestStore = { requestId, errors: 0 };
  res.locals.requestId = requestId;
  res.locals.requestStore = store;
  res.setHeader("X-Request-Id", requestId);
  storage.run(store, next);
}
