import { writeFileSync } from "node:fs";
import pg from "pg";
import { schemaSnapshot } from "../src/db/schema-snapshot.js";
import { freshMigratedDatabase } from "./migrated-database.js";

/**
 * `npm run schema:dump`: migrates a scratch database from nothing (committed migrations only) and
 * writes its snapshot to data/schema.sql. The server is SCHEMA_DATABASE_URL, else 127.0.0.1:5432.
 */
const { url, drop } = await freshMigratedDatabase();
const client = new pg.Client({ connectionString: url });
await client.connect();
try {
  writeFileSync("data/schema.sql", await schemaSnapshot(client));
  console.log("wrote data/schema.sql");
} finally {
  await client.end();
  await drop();
}
