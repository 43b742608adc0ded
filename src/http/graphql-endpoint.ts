import type { IncomingMessage, ServerResponse } from "node:http";
import parseurl from "parseurl";
import type { HttpRequest, HttpResponse, Next, Step } from "./node-http.js";

type ErrorStep = (err: unknown, req: HttpRequest, res: HttpResponse, next: Next) => unknown;

/**
 * Whether a request is the GraphQL endpoint's: its path, read as Express and grafserv read it
 * (parseurl: an absolute-form target such as a proxy sends, a fragment), is `/graphql` or
 * `/graphql/`. Express answers the other paths; those under `/graphql` with 404.
 */
export function isGraphqlRequest(req: IncomingMessage): boolean {
  const path = parseurl(req)?.pathname;
  return path === "/graphql" || path === "/graphql/";
}

/**
 * The GraphQL endpoint, without Express: every API request comes here, so it pays neither for
 * Express's router nor for the swap of the request's and response's prototypes that Express makes
 * (which slows every later property access on them). Its steps take Node's request and response
 * (src/http/node-http.ts) and run in order; a step that fails, or whose promise rejects, goes to
 * `onError`, as in Express 5.
 */
export function graphqlEndpoint(steps: Step[], onError: ErrorStep) {
  return (req: IncomingMessage, res: ServerResponse) => {
    // `/graphql/` is the same endpoint as `/graphql`.
    if (parseurl(req)?.pathname === "/graphql/") req.url = "/graphql" + (parseurl(req)?.search ?? "");
    const request = req as HttpRequest;
    const response = res as HttpResponse;
    let i = 0;
    const next: Next = (err?: unknown) => {
      if (err !== undefined && err !== "route" && err !== "router") {
        // Too late to answer with an error: the connection is closed, as Express's final handler does.
        if (response.headersSent) return void response.destroy();
        void Promise.resolve().then(() => onError(err, request, response, () => {})).catch(() => response.destroy());
        return;
      }
      const step = steps[i++];
      if (!step) throw new Error("the GraphQL endpoint's last step must answer");
      try {
        const result = step(request, response, next);
        if (result instanceof Promise) result.catch(next);
      } catch (e) {
        next(e);
      }
    };
    next();
  };
}
