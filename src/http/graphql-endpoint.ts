import type { IncomingMessage, ServerResponse } from "node:http";
import type { Express, NextFunction, Request, Response } from "express";
import parseurl from "parseurl";

type Step = (req: Request, res: Response, next: NextFunction) => unknown;
type ErrorStep = (err: unknown, req: Request, res: Response, next: NextFunction) => unknown;

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
 * The GraphQL endpoint in front of Express: every API request comes here, so it does not pay for
 * Express's router matching it against each route first. Its steps are ordinary middleware, given
 * Express's request and response helpers as Express itself gives them (app.handle): the
 * prototypes, the circular references and `res.locals`. A step that fails, or whose promise
 * rejects, goes to `onError`, as in Express 5.
 */
export function graphqlEndpoint(app: Express, steps: Step[], onError: ErrorStep) {
  return (req: IncomingMessage, res: ServerResponse) => {
    // `/graphql/` is the same endpoint as `/graphql`.
    if (parseurl(req)?.pathname === "/graphql/") req.url = "/graphql" + (parseurl(req)?.search ?? "");
    const request = Object.setPrototypeOf(req, app.request) as Request;
    const response = Object.setPrototypeOf(res, app.response) as Response;
    request.res = response;
    response.req = request;
    response.locals = Object.create(null);
    let i = 0;
    const next: NextFunction = (err?: unknown) => {
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
