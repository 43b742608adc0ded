import { existsSync } from "node:fs";
import path from "node:path";
import pg from "pg";
import type { Config } from "../config.js";
import { startEmbeddedPostgres } from "../db/embedded.js";
import { runMigrations } from "../db/migrate.js";
import { canConnect } from "../db/pools.js";

/**
 * The owner's connection for operator commands: DATABASE_URL, else the embedded PostgreSQL that
 * `npm start` uses (reached while the server runs, started for the command otherwise).
 */
export async function openOwnerDatabase(config: Config): Promise<{ client: pg.Client; close: () => Promise<void> }> {
  let url = config.databaseUrl;
  let stop: (() => Promise<void>) | undefined;
  if (!url) {
    const passwordFile = path.join(config.dataDir, "postgres-password");
    const port = Number(process.env.EMBEDDED_PG_PORT ?? 54329);
    const candidate = existsSync(passwordFile)
      ? `postgres://postgres:${encodeURIComponent((await import("node:fs")).readFileSync(passwordFile, "utf8").trim())}@127.0.0.1:${port}/accounting`
      : undefined;
    if (candidate && (await canConnect(candidate))) {
      url = candidate;
    } else {
      const embedded = await startEmbeddedPostgres(config.dataDir);
      url = embedded.url;
      stop = embedded.stop;
    }
  }
  await runMigrations(url);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return { client, close: async () => { await client.end(); await stop?.(); } };
}
