import { randomUUID } from "node:crypto";
import pg from "pg";
import { runMigrations } from "../src/db/migrate.js";

/**
 * A scratch database migrated from nothing (committed migrations, then migrations/current.sql, as
 * the test template is) on SCHEMA_DATABASE_URL's server, else 127.0.0.1:5432; dropped by `drop`.
 */
export async function freshMigratedDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const server = process.env.SCHEMA_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
  const name = `accounting_schema_${randomUUID().replace(/-/g, "").slice(0, 12)}`;
  const admin = async (sql: string) => {
    const c = new pg.Client({ connectionString: server });
    await c.connect();
    try { await c.query(sql); } finally { await c.end(); }
  };
  await admin(`create database ${name}`);
  const url = new URL(server);
  url.pathname = `/${name}`;
  try {
    await runMigrations(url.toString(), true);
  } catch (e) {
    await admin(`drop database if exists ${name} with (force)`);
    throw e;
  }
  // graphile-migrate keeps its pool 200 ms after use; dropping under it would log an error.
  const drop = async () => {
    await new Promise((r) => setTimeout(r, 300));
    await admin(`drop database if exists ${name} with (force)`);
  };
  return { url: url.toString(), drop };
}
