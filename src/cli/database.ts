import pg from "pg";
import type { Config } from "../config.js";
import { embeddedDatabaseUrl, startEmbeddedPostgres } from "../db/embedded.js";
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
    const running = embeddedDatabaseUrl(config.dataDir, config.embeddedPostgresPort);
    if (running && (await canConnect(running))) {
      url = running;
    } else {
      const embedded = await startEmbeddedPostgres(config.dataDir, config.embeddedPostgresPort);
      url = embedded.url;
      stop = embedded.stop;
    }
  }
  await runMigrations(url);
  const client = new pg.Client({ connectionString: url });
  // A connection that breaks fails the query in flight (or the next one), which reports it; the
  // client's own error event must not end the command a second time, with a stack.
  client.on("error", () => undefined);
  await client.connect();
  return { client, close: async () => { await client.end(); await stop?.(); } };
}
