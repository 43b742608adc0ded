import { logger } from "../logger.js";
import { graphqlRequests, graphqlRequestSeconds, outcomeOf } from "../metrics.js";
import { credentialOf } from "../db/identity.js";
import { scopeOf } from "./request-scope.js";
import { pathOf, type HttpRequest, type HttpResponse, type Next } from "./node-http.js";

/**
 * One line per request: never headers, credentials or bodies. Written when the connection is done
 * with the request ("close"), so that a request whose client went away, or whose answer broke
 * off, is counted too (`aborted`).
 */
export function accessLog(req: HttpRequest, res: HttpResponse, next: Next) {
  const start = process.hrtime.bigint();
  const path = pathOf(req);
  const graphql = path === "/graphql";
  const scope = scopeOf(res);
  res.once("close", () => {
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    const finished = res.writableFinished;
    if (graphql) {
      const operation = scope.operation?.label ?? "none";
      graphqlRequests.inc({ operation, outcome: finished ? outcomeOf(res.statusCode, scope.errors) : "aborted" });
      graphqlRequestSeconds.observe({ operation }, ms / 1000);
    }
    logger.info({
      requestId: scope.requestId,
      method: req.method,
      // A signed file URL is a credential for its lifetime: its token stays out of the log.
      path: path.startsWith("/files/") ? "/files/…" : path,
      status: res.statusCode,
      ms,
      ...(finished ? {} : { aborted: true }),
      caller: credentialOf(scope.identity),
    }, "request");
  });
  next();
}
