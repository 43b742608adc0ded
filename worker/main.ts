import "../src/gc-flags-first.js";
import { loadConfig } from "../src/config.js";
import { makePool } from "../src/db/pools.js";
import { logger } from "../src/logger.js";
import { startWorker, workerPoolSize } from "./run.js";

/** `npm run worker`: the job worker alone, for scale-out. Needs DATABASE_URL (the owner). */
const config = loadConfig();
if (!config.databaseUrl) {
  logger.error("DATABASE_URL is required to run the worker on its own.");
  process.exit(1);
}
const pool = makePool(config.databaseUrl, workerPoolSize(config.workerConcurrency));
const runner = await startWorker(pool, { concurrency: config.workerConcurrency });
logger.info("worker started");
for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.once(signal, async () => {
    await runner.stop();
    await pool.end();
    process.exit(0);
  });
}
