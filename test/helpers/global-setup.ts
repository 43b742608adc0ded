import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { ensureAuthenticatorLogin, runMigrations } from "../../src/db/migrate.js";
import { startEmbeddedPostgres } from "../../src/db/embedded.js";
import { canConnect } from "../../src/db/pools.js";


/**
 * Finds a real PostgreSQL (TEST_DATABASE_URL, else 127.0.0.1:5432, else an embedded one),
 * migrates a template database once, and hands its server URL to the test files, which each
 * clone the template into a database of their own.
 */
export default async function setup(project: TestProject) {
  let serverUrl = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
  let stop: (() => Promise<void>) | undefined;
  let tmp: string | undefined;
  if (!(await canConnect(serverUrl))) {
    if (process.env.TEST_DATABASE_URL) throw new Error(`TEST_DATABASE_URL is not reachable.`);
    tmp = mkdtempSync(path.join(os.tmpdir(), "accounting-test-pg-"));
    const embedded = await startEmbeddedPostgres(tmp, 54331);
    serverUrl = embedded.url;
    stop = embedded.stop;
  }
  // One template per run, so that concurrent runs on one server do not break each other.
  const TEMPLATE_DB = `accounting_test_template_${process.pid}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`drop database if exists ${TEMPLATE_DB} with (force)`);
  await admin.query(`create database ${TEMPLATE_DB}`);
  await admin.end();
  const templateUrl = withDatabase(serverUrl, TEMPLATE_DB);
  await runMigrations(templateUrl, true);
  const owner = new pg.Pool({ connectionString: templateUrl, max: 1 });
  await ensureAuthenticatorLogin(owner, process.env.AUTHENTICATOR_PASSWORD!);
  await owner.end();

  project.provide("serverUrl", serverUrl);
  project.provide("templateDb", TEMPLATE_DB);
  return async () => {
    const cleanup = new pg.Client({ connectionString: serverUrl });
    await cleanup.connect();
    await cleanup.query(`drop database if exists ${TEMPLATE_DB} with (force)`);
    await cleanup.end();
    await stop?.();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  };
}

export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = "/" + database;
  return u.toString();
}

declare module "vitest" {
  export interface ProvidedContext {
    serverUrl: string;
    templateDb: string;
  }
}
