import { createServer, type RequestListener, type Server } from "node:http";
import bytes from "bytes";
import express, { type Request, type Response } from "express";
import { postgraphile } from "postgraphile";
import type { GraphQLSchema } from "postgraphile/graphql";
import { makePreset } from "../graphql/preset.js";
import type { Config } from "../config.js";
import { logger } from "../logger.js";
import { migrationsCurrent } from "../db/migrate.js";
import type { Pools } from "../db/pools.js";
import { Callers } from "../db/caller.js";
import { ConnectionShare } from "../db/connection-share.js";
import { authenticate } from "./authenticate.js";
import { callerFailure, TIMEOUT_MESSAGE } from "../db/sql-errors.js";
import { errorBody } from "./errors.js";
import { BULK_LIMITS, graphqlGate } from "./graphql-gate.js";
import { idempotency } from "./idempotency.js";
import { directOperations } from "./direct-operations.js";
import { metricsRoute } from "./metrics-route.js";
import { graphqlEndpoint, isGraphqlRequest } from "./graphql-endpoint.js";
import { sendJson, type HttpRequest, type HttpResponse, type Next, type Step } from "./node-http.js";
import { parsedBodyGrafserv } from "../graphql/grafserv-parsed-body.js";
import { requestScope, scopeOf } from "./request-scope.js";
import { accessLog } from "./access-log.js";
import { fileUrls } from "../receipts/file-urls.js";
import { createStorage, type Storage } from "../storage/index.js";
import { uploadRoute } from "./uploads.js";
import { receiptFileRoute } from "./receipt-files.js";
import { intakeRoutes } from "./intake.js";
import { sealedBox } from "../secrets/sealed-box.js";
import { outboundOf, type OutboundOptions } from "../outbound/guard.js";

export interface AppHandle {
  /** Every request: /graphql to its endpoint, the rest to Express. */
  app: RequestListener;
  server: Server;
  /** The GraphQL schema it serves. */
  schema: GraphQLSchema;
  close(): Promise<void>;
}

export interface AppOptions {
  /** Where receipt files are kept: the configured storage when unset. */
  storage?: Storage;
  /** Resolves the hosts tenants name (tests stub it): the system's resolver when unset. */
  outboundResolve?: OutboundOptions["resolve"];
}

/** Builds the HTTP app and its GraphQL schema (eagerly, so a broken schema fails at start). */
export async function makeApp(config: Config, pools: Pools, options: AppOptions = {}): Promise<AppHandle> {
  const storage = options.storage ?? createStorage(config);
  const app = express();
  app.disable("x-powered-by");
  app.set("trust proxy", config.trustProxy);
  const server = createServer();
  const callers = new Callers(pools.auth, config.statementTimeoutMs, ConnectionShare.forPool(pools.auth.options.max ?? config.apiPoolSize));
  const urls = fileUrls(config);
  const pgl = postgraphile(makePreset(pools.auth, {
    graphiql: config.graphiql, signFileUrl: urls.sign,
    tenantOutbound: { outbound: outboundOf(config, options.outboundResolve), secrets: sealedBox(config.secretsKey) },
  }));
  const serv = pgl.createServ(parsedBodyGrafserv);
  const grafservHandler = serv.createHandler() as unknown as Step;
  const schema = await pgl.getSchema();
  const bodyLimit = bytes.parse(config.bodyLimit);
  if (bodyLimit === null || !(bodyLimit > 0)) throw new Error(`BODY_LIMIT must look like 1mb, 512kb or 100000, got "${config.bodyLimit}".`);
  const jsonBody = (limit: number) => express.json({
    limit, type: () => true, strict: false,
    verify: (_req, res, buf) => { scopeOf(res).bodyBytes = buf.length; },
  });
  const parseBody = jsonBody(bodyLimit);
  const parseBulkBody = jsonBody(Math.max(bodyLimit, BULK_LIMITS.bodyBytes));

  const scope = requestScope(callers);
  app.use(scope, accessLog);
  const metrics = metricsRoute(config.metricsToken, pools);
  app.get("/metrics", metrics);
  app.get("/healthz", (_req, res) => { res.json({ status: "ok" }); });
  app.get("/readyz", async (_req, res) => {
    try {
      if (!(await migrationsCurrent(pools.owner))) return res.status(503).json({ status: "migrations pending" });
      res.json({ status: "ready" });
    } catch {
      res.status(503).json({ status: "database unreachable" });
    }
  });

  // Receipt files: their own body handling (streamed multipart, raw MIME, large JSON), never the
  // GraphQL JSON parser.
  app.post("/uploads", ...uploadRoute(config, pools.auth, storage));
  app.get("/files/:token", receiptFileRoute(urls, storage));
  app.use(intakeRoutes(config, pools, storage));

  // grafserv's handler for GraphiQL, when it is on. /graphql itself is answered by the endpoint
  // below, in front of Express; were a request for it ever to reach Express, it must not reach
  // grafserv without the endpoint's steps (authentication, limits).
  app.use("/graphql", notFound);
  app.use(grafservHandler as unknown as express.RequestHandler);
  app.use(notFound);
  app.use(jsonErrors);

  const graphql = graphqlEndpoint([
    scope, accessLog,
    (req, res, next) => {
      if (req.method !== "POST") {
        res.setHeader("Allow", "POST");
        return sendJson(res, 405, errorBody("Send GraphQL requests with POST.", "BAD_USER_INPUT"));
      }
      // grafserv answers in "legacy" application/json mode: HTTP 200 for GraphQL errors, as the
      // contract's clients expect (grafserv's default, application/graphql-response+json, is 4xx).
      req.headers.accept = "application/json";
      next();
    },
    // Credentials first: every request with a valid key counts, whatever its outcome (docs/api.md, Rate limit).
    authenticate(pools.auth, config),
    // An authenticated caller's body is read up to the bulk operations' limit, and the gate holds
    // every other operation to BODY_LIMIT; an anonymous caller's, which can run nothing, to BODY_LIMIT.
    (req, res, next) => (scopeOf(res).identity.kind === "anonymous" ? parseBody : parseBulkBody)(req as Request, res as unknown as Response, next),
    graphqlGate(() => schema, bodyLimit),
    idempotency(pools.auth, config.secretsKey),
    ...(config.directReads || config.directWrites
      ? [directOperations(() => schema, { reads: config.directReads, writes: config.directWrites })] : []),
    grafservHandler,
    notFound,
  ], jsonErrors);
  const listener: RequestListener = (req, res) => (isGraphqlRequest(req) ? graphql(req, res) : app(req, res));
  server.on("request", listener);

  return {
    app: listener,
    server,
    schema,
    // Releasing the PostGraphile instance releases its grafserv too.
    close: async () => {
      await pgl.release();
      await metrics.close();
    },
  };
}

function notFound(_req: HttpRequest, res: HttpResponse) {
  sendJson(res, 404, errorBody("Not found.", "NOT_FOUND"));
}

/** Body-parser and unexpected middleware errors as JSON, with the contract's codes. */
function jsonErrors(err: unknown, _req: HttpRequest, res: HttpResponse, _next: Next) {
  const e = err as { type?: string; status?: number; message?: string };
  if (e.type === "entity.parse.failed") return sendJson(res, 400, errorBody("Malformed JSON body.", "BAD_USER_INPUT"));
  if (e.type === "entity.too.large") return sendJson(res, 413, errorBody("Request body is too large.", "BAD_USER_INPUT"));
  // The API's pool gave no connection in time (authentication or idempotency): busy, not broken.
  if (callerFailure(err)?.message === TIMEOUT_MESSAGE) {
    res.setHeader("Retry-After", "1");
    return sendJson(res, 503, errorBody("The service is busy; retry shortly.", "SERVICE_UNAVAILABLE"));
  }
  const { requestId } = scopeOf(res);
  logger.error({ requestId, err: { message: e.message } }, "request failed");
  sendJson(res, 500, errorBody("Internal error.", "INTERNAL", { requestId }));
}
