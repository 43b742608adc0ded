import type { Runner } from "graphile-worker";
import { loadConfig } from "./config.js";
import { startEmbeddedPostgres } from "./db/embedded.js";
import { ensureAuthenticatorLogin, runMigrations } from "./db/migrate.js";
import { authenticatorUrl, makePool } from "./db/pools.js";
import { makeApp } from "./http/app.js";
import { flushLogs, logger } from "./logger.js";
import { startWorker } from "../worker/run.js";

/**
 * `npm start`: a database (DATABASE_URL, else an embedded PostgreSQL under ./.data/postgres),
 * migrations, the worker in-process (unless WORKER=off), then the HTTP server.
 */
// A start that cannot complete (database unreachable, port taken, bad setting) says why in one
// log line and exits 1, instead of a stack trace.
process.on("uncaughtException", (err) => fatal(err));
process.on("unhandledRejection", (err) => fatal(err));
function fatal(err: unknown): never {
  const e = err as Error & { code?: string };
  logger.fatal({ err: { message: e.message, code: e.code } }, "cannot start");
  flushLogs();
  process.exit(1);
}

const config = loadConfig();
let stopDatabase: (() => Promise<void>) | undefined;
let databaseUrl = config.databaseUrl;
if (!databaseUrl) {
  const embedded = await startEmbeddedPostgres(config.dataDir);
  databaseUrl = embedded.url;
  stopDatabase = embedded.stop;
}

await runMigrations(databaseUrl);
const owner = makePool(databaseUrl, 4);
if (!config.authDatabaseUrl) await ensureAuthenticatorLogin(owner, config.authenticatorPassword);
const auth = makePool(config.authDatabaseUrl ?? authenticatorUrl(databaseUrl, config.authenticatorPassword), 20);

const handle = await makeApp(config, { owner, auth });
const worker: Runner | undefined = config.worker ? await startWorker(owner) : undefined;
await new Promise<void>((resolve) => handle.server.listen(config.port, config.host, resolve));
const { port } = handle.server.address() as import("node:net").AddressInfo;
logger.info({ url: `http://${config.host}:${port}/graphql`, worker: Boolean(worker), embedded: Boolean(stopDatabase) }, "accounting API listening");

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  logger.info({ signal }, "shutting down");
  // Stop accepting, let requests in flight finish, then the worker, the pools and the database.
  await new Promise<void>((resolve) => {
    handle.server.close(() => resolve());
    handle.server.closeIdleConnections();
  });
  await handle.close();
  await worker?.stop();
  await auth.end();
  await owner.end();
  await stopDatabase?.();
  logger.info("stopped");
  process.exit(0);
}
process.once("SIGTERM", () => void shutdown("SIGTERM"));
process.once("SIGINT", () => void shutdown("SIGINT"));
