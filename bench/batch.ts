import type { AddressInfo } from "node:net";
import pg from "pg";

/**
 * `npm run bench -- batch [runs]`: batchCreateAccounts and batchCreateContacts with 500 items each,
 * through the real HTTP app (in process, on a free port), against a fresh database on
 * BENCH_DATABASE_URL's server (default 127.0.0.1:5432). Every run uses a fresh organization and
 * API key; the figure is the time of the whole HTTP request. Target: median under 500 ms.
 */
export async function run(args: string[] = []) {
  const runs = Number(args[0] ?? 15);
  process.env.LOG_LEVEL ??= "warn"; // no access log line per request; set before the app's modules load
  process.env.GRAPHILE_ENV ??= "production";
  const { AUTHENTICATOR_PASSWORD, benchServerUrl, databaseUrl } = await import("./support.js");
  const { loadConfig } = await import("../src/config.js");
  const { authenticatorUrl, makePool } = await import("../src/db/pools.js");
  const { ensureAuthenticatorLogin, runMigrations } = await import("../src/db/migrate.js");
  const { makeApp } = await import("../src/http/app.js");
  const name = "accounting_bench_batch";
  const admin = new pg.Client({ connectionString: benchServerUrl });
  await admin.connect();
  await admin.query(`drop database if exists ${name} with (force)`);
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = databaseUrl(name);
  await runMigrations(url, true); // committed migrations, plus work in progress if any
  const owner = makePool(url, 4);
  await ensureAuthenticatorLogin(owner, AUTHENTICATOR_PASSWORD);
  const auth = makePool(authenticatorUrl(url, AUTHENTICATOR_PASSWORD), 10);
  const config = { ...loadConfig({ ...process.env, AUTHENTICATOR_PASSWORD, JWT_SECRET: "bench-jwt-secret" }),
    databaseUrl: url, authenticatorPassword: AUTHENTICATOR_PASSWORD, rateLimitPerHour: 100_000_000, graphiql: false, worker: false };
  const handle = await makeApp(config, { owner, auth });
  await new Promise<void>((resolve) => handle.server.listen(0, "127.0.0.1", resolve));
  const endpoint = `http://127.0.0.1:${(handle.server.address() as AddressInfo).port}/graphql`;

  const tenant = async (i: number) => {
    const { rows: [org] } = await owner.query("select id from app_private.create_organization($1)", [`Batch Bench ${i} ${Date.now()}`]);
    const { rows: [{ key }] } = await owner.query("select app_private.create_api_key($1, 'bench') as key", [org.id]);
    return { org: org.id as string, auth: `Bearer ${key.secret}` };
  };
  const post = async (authorization: string, body: unknown) => {
    const started = performance.now();
    const res = await fetch(endpoint, { method: "POST", headers: { "content-type": "application/json", authorization }, body: JSON.stringify(body) });
    const json = (await res.json()) as any;
    const ms = performance.now() - started;
    if (json.errors) throw new Error(JSON.stringify(json.errors));
    return { ms, json };
  };
  const cases = {
    batchCreateAccounts: {
      query: "mutation($o: UUID!, $items: [AccountInput!]!) { batchCreateAccounts(organizationId: $o, items: $items) { created errors { index error } } }",
      items: Array.from({ length: 500 }, (_, i) => ({ name: `Bench Account ${i}`, accountType: i % 2 ? "expense" : "income", classification: i % 2 ? "expense" : "revenue", subType: "bench" })),
    },
    batchCreateContacts: {
      query: "mutation($o: UUID!, $items: [ContactInput!]!) { batchCreateContacts(organizationId: $o, items: $items) { created errors { index error } } }",
      items: Array.from({ length: 500 }, (_, i) => ({ contactType: i % 2 ? "vendor" : "customer", displayName: `Bench Contact ${i}`, email: `c${i}@bench.example`, phone: "416-555-0100" })),
    },
  };
  try {
    console.log(`batch benchmark: ${runs} runs per mutation, 500 items, fresh organization per run (server ${new URL(benchServerUrl).host})`);
    for (const [field, c] of Object.entries(cases)) {
      const warm = await tenant(-1);
      await post(warm.auth, { query: c.query, variables: { o: warm.org, items: c.items } }); // warm-up: schema, plans, pool
      const times: number[] = [];
      for (let i = 0; i < runs; i++) {
        const t = await tenant(i);
        const { ms, json } = await post(t.auth, { query: c.query, variables: { o: t.org, items: c.items } });
        if (json.data[field].created !== 500) throw new Error(`${field}: expected 500 created, got ${JSON.stringify(json.data[field]).slice(0, 300)}`);
        times.push(ms);
      }
      times.sort((p, q) => p - q);
      const median = times.length % 2 ? times[(times.length - 1) / 2] : (times[times.length / 2 - 1] + times[times.length / 2]) / 2;
      console.log(`${field.padEnd(20)} median ${median.toFixed(0)} ms, min ${times[0].toFixed(0)} ms, max ${times.at(-1)!.toFixed(0)} ms ` +
        `(target < 500 ms: ${median < 500 ? "met" : "NOT met"})`);
    }
  } finally {
    await handle.close();
    await new Promise((resolve) => handle.server.close(resolve));
    await auth.end();
    await owner.end();
  }
}
