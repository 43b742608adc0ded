import type { IncomingMessage, ServerResponse } from "node:http";
import type { Express, NextFunction, Request, Response } from "express";

type Step = (req: Request, res: Response, next: NextFunction) => unknown;
type ErrorStep = (err: unknown, req: Request, res: Response, next: NextFunction) => unknown;

/** `/graphql` and `/graphql/` (the same endpoint), with or without a query string. */
export function isGraphqlPath(url: string | undefined): boolean {
  if (!url) return false;
  const q = url.indexOf("?");
  const path = q < 0 ? url : url.slice(0, q);
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
    if (req.url && !req.url.startsWith("/graphql?") && req.url !== "/graphql") req.url = "/graphql" + req.url.slice(9);
    const request = Object.setPrototypeOf(req, app.request) as Request;
    const response = Object.setPrototypeOf(res, app.response) as Response;
    request.res = response;
    response.req = request;
    response.locals = Object.create(null);
    let i = 0;
    const next: NextFunction = (err?: unknown) => {
      if (err !== undefined && err !== "route" && err !== "router") {
        void Promise.resolve(onError(err, request, response, () => {})).catch(() => response.destroy());
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
