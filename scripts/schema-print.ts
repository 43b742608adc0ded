import { writeFileSync } from "node:fs";
import { postgraphile } from "postgraphile";
import { ConnectionShare } from "../src/graphql/connection-share.js";
import { makePreset } from "../src/graphql/preset.js";
import { SCHEMA_FILE, printedSchema } from "../src/graphql/schema-file.js";
import { ensureAuthenticatorLogin } from "../src/db/migrate.js";
import { authenticatorUrl, makePool } from "../src/db/pools.js";
import { freshMigratedDatabase } from "./migrated-database.js";

/**
 * `npm run schema:print`: writes schema.graphql, the GraphQL schema the server serves, built as the
 * server builds it over a scratch database migrated from nothing (SCHEMA_DATABASE_URL's server,
 * else 127.0.0.1:5432). test/schema.test.ts fails when the file differs from the server's schema.
 */
const { url, drop } = await freshMigratedDatabase();
const owner = makePool(url, 1);
const password = "schema-print";
const auth = makePool(authenticatorUrl(url, password), 2);
try {
  await ensureAuthenticatorLogin(owner, password);
  const pgl = postgraphile(makePreset(auth, { graphiql: false, share: ConnectionShare.forPool(2), statementTimeoutMs: 5000 }));
  try {
    writeFileSync(SCHEMA_FILE, printedSchema(await pgl.getSchema()));
    console.log(`wrote ${SCHEMA_FILE}`);
  } finally {
    await pgl.release();
  }
} finally {
  await auth.end();
  await owner.end();
  await drop();
}
