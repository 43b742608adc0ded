import path from "node:path";
import { pathToFileURL } from "node:url";
import pg from "pg";
import { benchServerUrl, databaseUrl } from "../support.js";

/**
 * A database of its own for one soak run, `soak_<timestamp>`, on the machine's PostgreSQL
 * (BENCH_DATABASE_URL's server, else 127.0.0.1:5432), dropped afterwards. `npm start` migrates it.
 */
export interface SoakDatabase { name: string; url: string; drop(): Promise<void> }

export async function createSoakDatabase(): Promise<SoakDatabase> {
  const stamp = new Date().toISOString().replace(/\D/g, "").slice(0, 14);
  const name = `soak_${stamp}_${Math.random().toString(36).slice(2, 6)}`;
  await admin((c) => c.query(`create database ${name}`));
  return { name, url: databaseUrl(name), drop: () => admin((c) => c.query(`drop database if exists ${name} with (force)`)) };
}

async function admin(fn: (c: pg.Client) => Promise<unknown>): Promise<void> {
  const c = new pg.Client({ connectionString: benchServerUrl });
  await c.connect();
  try {
    await fn(c);
  } finally {
    await c.end();
  }
}

/**
 * Committed migrations and migrations/current.sql of the checkout at `root`, with that checkout's
 * own migration code (`--migrate-current`: work not yet committed as a migration).
 */
export async function migrateWithCurrent(root: string, url: string): Promise<void> {
  const migrate = await import(pathToFileURL(path.join(root, "src/db/migrate.ts")).href) as
    { runMigrations(url: string, withCurrent: boolean): Promise<void> };
  await migrate.runMigrations(url, true);
}
