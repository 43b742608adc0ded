import { readFileSync, statSync, existsSync } from "node:fs";
import pg from "pg";
import { benchDatabase, fmt, load, startServer } from "./support.js";

/**
 * `npm run bench -- auth`: the cost of authentication and rate limiting. `myOrganizations` with an
 * API key (key lookup + window count: one round trip, then the operation's transaction) against
 * `{ __typename }` with no credentials (no database at all), on the same server in the same run.
 * Then one authenticated request with the database statement log on, to show its statements.
 */
export async function run() {
  const dbUrl = await benchDatabase("accounting_bench_auth");
  const owner = new pg.Pool({ connectionString: dbUrl, max: 2 });
  const { rows: [org] } = await owner.query("select id from app_private.create_organization('Bench Org')");
  const { rows: [{ key }] } = await owner.query("select app_private.create_api_key($1, 'bench') as key", [org.id]);
  const auth = { authorization: `Bearer ${key.secret}` };

  const server = await startServer(dbUrl);
  try {
    // Warm-up, so both measurements see a hot schema and pool.
    await load(server.url, { query: "{ myOrganizations { id name } }" }, auth, 10, 2);
    const anonymous = await load(server.url, { query: "{ __typename }" });
    const keyed = await load(server.url, { query: "{ myOrganizations { id name } }" }, auth);
    console.log(`{ __typename }, no credentials:     ${fmt(anonymous)}`);
    console.log(`myOrganizations with an API key:    ${fmt(keyed)}`);
    console.log(`ratio (API key / anonymous):        ${(keyed.rps / anonymous.rps).toFixed(2)}`);
  } finally {
    await server.stop();
  }

  // Statement log of one authenticated request: only the API's role is logged, in this database.
  const logFile = process.env.PG_LOG_FILE ?? "/var/log/postgresql/postgresql-15-main.log";
  await owner.query("alter role accounting_authenticator in database accounting_bench_auth set log_statement = 'all'");
  const logged = await startServer(dbUrl);
  try {
    await fetch(`${logged.url}/graphql`, { method: "POST", headers: { "content-type": "application/json", ...auth }, body: JSON.stringify({ query: "{ __typename }" }) });
    const offset = existsSync(logFile) ? statSync(logFile).size : 0;
    const res = await fetch(`${logged.url}/graphql`, { method: "POST", headers: { "content-type": "application/json", ...auth }, body: JSON.stringify({ query: "{ myOrganizations { id name } }" }) });
    await res.text();
    await new Promise((r) => setTimeout(r, 300));
    if (existsSync(logFile)) {
      const lines = readFileSync(logFile, "utf8").slice(offset).split("\n").filter((l) => l.includes("statement:") || l.includes("execute"));
      console.log(`\nStatements of one authenticated myOrganizations request (${logFile}):`);
      for (const l of lines) console.log("  " + l.replace(/^.*?(statement|execute)/, "$1"));
    } else {
      console.log(`\n(no statement log at ${logFile}; set PG_LOG_FILE)`);
    }
  } finally {
    await logged.stop();
    await owner.query("alter role accounting_authenticator in database accounting_bench_auth reset log_statement");
    await owner.end();
  }
}
