import { readdirSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import JSON5 from "json5";
import { migrate, watch, type Settings } from "graphile-migrate";
import { Logger as WorkerLogger, runMigrations as runWorkerMigrations } from "graphile-worker";
import { Logger } from "@graphile/logger";
import { logger } from "../logger.js";
import pg from "pg";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

// The libraries' messages go to our structured log (stderr-free stdout keeps the CLI's --json clean).
const logTo = () => (level: string, message: string) =>
  logger[level === "error" ? "error" : level === "warning" ? "warn" : "debug"]({ migrate: true }, message);
const libraryLogger = new Logger(logTo);
// graphile-worker carries its own copy of @graphile/logger.
const workerLogger = new WorkerLogger(logTo);

/**
 * Applies committed migrations (a no-op when up to date). With `withCurrent`, also runs
 * migrations/current.sql (work in progress): for development and the test template only.
 */
export async function runMigrations(databaseUrl: string, withCurrent = false): Promise<void> {
  const settings = JSON5.parse(await readFile(path.join(root, ".gmrc"), "utf8")) as Settings;
  settings.connectionString = databaseUrl;
  settings.logger = libraryLogger;
  // graphile-migrate only tries its lock and fails when another process holds it; servers starting
  // together wait here instead, and the later ones find nothing left to do.
  const lock = new pg.Client({ connectionString: databaseUrl });
  await lock.connect();
  const cwd = process.cwd();
  try {
    await lock.query("select pg_advisory_lock(hashtext('accounting-api:migrate'))");
    process.chdir(root); // graphile-migrate resolves migrations/ against the working directory
    // The job queue first: the database queues jobs itself (app_private.queue_receipt_extraction and the like) in the
    // transactions that need them, so graphile-worker's schema must exist before any request.
    await runWorkerMigrations({ connectionString: databaseUrl, logger: workerLogger });
    await migrate(settings, false, false);
    if (withCurrent) await watch(settings, true, false);
  } finally {
    process.chdir(cwd);
    await lock.end();
  }
}

/**
 * Gives the API's login role its password. Roles are cluster-wide; the migration created it
 * without one, and the owner (who must be able to alter it) sets it at every start.
 */
export async function ensureAuthenticatorLogin(owner: pg.Pool, password: string): Promise<void> {
  const { rows } = await owner.query(
    "select rolpassword is not null as has_password from pg_authid where rolname = 'accounting_authenticator'",
  ).catch(() => ({ rows: [] as { has_password: boolean }[] }));
  // Only a superuser can read pg_authid; others rely on AUTH_DATABASE_URL or an existing password.
  if (rows.length === 0 && !(await isSuperuser(owner))) return;
  // Kept out of the statement log: the password is part of the statement's text.
  const client = await owner.connect();
  try {
    await client.query("begin");
    await client.query("set local log_statement = 'none'");
    // Processes starting together would otherwise alter the role at once ("tuple concurrently updated").
    await client.query("select pg_advisory_xact_lock(hashtext('accounting-api:migrate'))");
    await client.query(`alter role accounting_authenticator with login password '${password.replace(/'/g, "''")}'`);
    await client.query("commit");
  } catch (e) {
    await client.query("rollback");
    throw e;
  } finally {
    client.release();
  }
}

async function isSuperuser(owner: pg.Pool): Promise<boolean> {
  const { rows } = await owner.query("select rolsuper from pg_roles where rolname = current_user");
  return rows[0]?.rolsuper === true;
}

/** The committed migrations this build carries: fixed for the life of the process. */
const committedCount = readdirSync(path.join(root, "migrations/committed")).filter((f) => f.endsWith(".sql")).length;

/** True when every committed migration has been applied (one query; /readyz calls it often). */
export async function migrationsCurrent(owner: pg.Pool): Promise<boolean> {
  const { rows } = await owner.query("select count(*)::int as n from graphile_migrate.migrations");
  return rows[0].n === committedCount;
}
