import { writeFileSync } from "node:fs";
import { postgraphile } from "postgraphile";
import { makePreset } from "../src/graphql/preset.js";
import { SCHEMA_FILE, printedSchema } from "../src/graphql/schema-file.js";
import pg from "pg";
import { freshMigratedDatabase } from "./migrated-database.js";

/**
 * `npm run schema:print`: writes schema.graphql, the GraphQL schema the server serves, built as the
 * server builds it over a scratch database migrated from nothing (SCHEMA_DATABASE_URL's server,
 * else 127.0.0.1:5432). test/schema.test.ts fails when the file differs from the server's schema.
 */
const { url, drop } = await freshMigratedDatabase();
// As the API's role, as the server builds it, without touching its password (a role is the whole
// server's: tests and servers on it keep theirs).
const auth = new pg.Pool({ connectionString: url, max: 2, options: "-c role=accounting_authenticator" });
try {
  const pgl = postgraphile(makePreset(auth, { graphiql: false }));
  try {
    writeFileSync(SCHEMA_FILE, printedSchema(await pgl.getSchema()));
    console.log(`wrote ${SCHEMA_FILE}`);
  } finally {
    await pgl.release();
  }
} finally {
  await auth.end();
  await drop();
}
