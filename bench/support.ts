import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import pg from "pg";
import { ensureAuthenticatorLogin, runMigrations } from "../src/db/migrate.js";

/** The server benchmarks run on: BENCH_DATABASE_URL's, else the machine's 127.0.0.1:5432. */
export const benchServerUrl = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
export const AUTHENTICATOR_PASSWORD = process.env.AUTHENTICATOR_PASSWORD ?? "bench-authenticator";

export function databaseUrl(name: string): string {
  const u = new URL(benchServerUrl);
  u.pathname = "/" + name;
  return u.toString();
}

/** A migrated database named `name`; recreated when `fresh`. */
export async function benchDatabase(name: string, fresh = true): Promise<string> {
  const admin = new pg.Client({ connectionString: benchServerUrl });
  await admin.connect();
  const exists = (await admin.query("select 1 from pg_database where datname = $1", [name])).rowCount;
  if (fresh || !exists) {
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.query(`create database ${name}`);
  }
  await admin.end();
  const url = databaseUrl(name);
  // Committed migrations and the work in progress (migrations/current.sql), as the tests run them.
  await runMigrations(url, true);
  const owner = new pg.Pool({ connectionString: url, max: 1 });
  await ensureAuthenticatorLogin(owner, AUTHENTICATOR_PASSWORD);
  await owner.end();
  return url;
}

/**
 * An organization `name` (made again when it exists) with two expense accounts and `events` ledger
 * events over three years, about 80% confirmed, generated set-based by bench/ledger-data.sql.
 */
export async function generateLedger(owner: pg.Pool, dbUrl: string, name: string, events: number): Promise<string> {
  const [org] = await generateLedgers(owner, dbUrl, [{ name, events }]);
  return org;
}

/** Organizations, each as generateLedger makes one, in one run of bench/ledger-data.sql; their ids in order. */
export async function generateLedgers(owner: pg.Pool, dbUrl: string, tenants: { name: string; events: number }[]): Promise<string[]> {
  const names = tenants.map((t) => t.name);
  await owner.query("delete from app_public.organizations where name = any ($1)", [names]);
  const orgs = (await owner.query<{ id: string }>(
    "select (select id from app_private.create_organization(n)) as id from unnest($1::text[]) with ordinality u (n, i) order by i", [names])).rows.map((r) => r.id);
  await owner.query(`insert into app_public.accounts (organization_id, name, account_type, classification)
    select o, x.name, 'expense', 'expense' from unnest($1::uuid[]) o cross join (values ('Office Supplies'), ('Travel')) x (name)`, [orgs]);
  await owner.query("drop table if exists public.bench_tenants");
  await owner.query("create table public.bench_tenants (org uuid primary key, events integer not null)");
  await owner.query("insert into public.bench_tenants select * from unnest($1::uuid[], $2::integer[])", [orgs, tenants.map((t) => t.events)]);
  const t0 = Date.now();
  execFileSync("psql", [dbUrl, "-q", "-v", "ON_ERROR_STOP=1", "-f", path.resolve("bench/ledger-data.sql")], { stdio: ["ignore", "ignore", "inherit"] });
  await owner.query("drop table public.bench_tenants");
  const total = tenants.reduce((n, t) => n + t.events, 0);
  console.log(`generated ${total.toLocaleString("en-US")} events in ${tenants.length.toLocaleString("en-US")} organization(s) in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  return orgs;
}

/** A date `n` days before today, as YYYY-MM-DD. */
export const daysAgo = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString().slice(0, 10);

/** POSTs a GraphQL request to the server at `url` with `authorization`; its data, or a throw with its errors. */
export function graphqlClient(url: string, authorization: string) {
  return async (query: string, variables: Record<string, unknown>) => {
    const res = await fetch(`${url}/graphql`, {
      method: "POST", headers: { "content-type": "application/json", authorization }, body: JSON.stringify({ query, variables }),
    });
    const body = (await res.json()) as { data?: Record<string, any>; errors?: unknown[] };
    if (body.errors) throw new Error(JSON.stringify(body.errors));
    return body.data!;
  };
}

export interface ServerProcess { url: string; stop(): Promise<void>; child: ChildProcess }

/** A port nobody listens on right now. */
export async function freePort(): Promise<number> {
  const { createServer } = await import("node:net");
  return new Promise((resolve) => {
    const srv = createServer().listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as import("node:net").AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * The service in its own process, started with `npm start` (worker off, quota out of the way, request
 * logs at BENCH_LOG_LEVEL, default info as in production), ready once /readyz answers.
 */
export async function startServer(dbUrl: string, env: Record<string, string> = {}): Promise<ServerProcess> {
  const port = await freePort();
  // Exactly `npm start`, flags and all (npm execs the server, so SIGTERM reaches it).
  const child = spawn("npm", ["start", "--silent"], {
    env: {
      ...process.env, DATABASE_URL: dbUrl, PORT: String(port), WORKER: "off", LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? "info",
      NODE_ENV: "production", GRAPHILE_ENV: "production", AUTHENTICATOR_PASSWORD, RATE_LIMIT_PER_HOUR: "100000000",
      JWT_SECRET: "bench-jwt-secret", DATA_DIR: mkdtempSync(path.join(os.tmpdir(), "accounting-bench-")), ...env,
    },
    // Logs are written (the server pays for them as in production) and thrown away.
    stdio: ["ignore", "ignore", "inherit"],
  });
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    const ok = await fetch(`${url}/readyz`).then((r) => r.ok, () => false);
    if (ok) return { url, child, stop: async () => { child.kill("SIGTERM"); await exited; } };
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill("SIGKILL");
  throw new Error("server did not become ready in 60 s");
}

export interface LoadResult { rps: number; p50: number; p99: number; p95?: number; non2xx: number; errors: number; requests: number }

/** autocannon: `connections` clients for `seconds`, POSTing one GraphQL body. */
export async function load(url: string, body: unknown, headers: Record<string, string> = {}, connections = 10, seconds = 10): Promise<LoadResult> {
  const r = await autocannon({
    url: `${url}/graphql`, method: "POST", connections, duration: seconds,
    headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body),
  });
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx, errors: r.errors, requests: r.requests.total };
}

/** As `load`, each request with the body `next` makes (a write's own values). */
export async function loadEach(url: string, next: () => unknown, headers: Record<string, string> = {}, connections = 10, seconds = 10): Promise<LoadResult> {
  const r = await autocannon({
    url: `${url}/graphql`, connections, duration: seconds,
    requests: [{ method: "POST", headers: { "content-type": "application/json", ...headers },
      setupRequest: (req: any) => ({ ...req, body: JSON.stringify(next()) }) }],
  });
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx, errors: r.errors, requests: r.requests.total };
}

export const fmt = (r: LoadResult) => `${r.rps.toFixed(0)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms (${r.requests} requests, ${r.non2xx} non-2xx, ${r.errors} errors)`;

/**
 * EXPLAIN ANALYZE of the statements SQL functions run (auto_explain, nested statements included),
 * as the API role sees them (RLS on) with an API key's identity, in a transaction rolled back at
 * the end. `fn` gets `explain(sql, params)`, which runs one call and returns its plans.
 */
export async function withPlans(dbUrl: string, identity: { apiKeyId: string; organizationId: string },
    fn: (explain: (sql: string, params: unknown[]) => Promise<string[]>) => Promise<void>): Promise<void> {
  const c = new pg.Client({ connectionString: dbUrl });
  await c.connect();
  const plans: string[] = [];
  c.on("notice", (n) => { if (/duration/.test(n.message ?? "")) plans.push(n.message!); });
  try {
    await c.query("load 'auto_explain'");
    await c.query("set auto_explain.log_min_duration = 0; set auto_explain.log_analyze = on; set auto_explain.log_nested_statements = on; set auto_explain.log_buffers = on; set client_min_messages = log");
    await c.query("begin");
    await c.query("select set_config('role', 'accounting_visitor', true), set_config('app.api_key_id', $1, true), set_config('app.organization_id', $2, true)",
      [identity.apiKeyId, identity.organizationId]);
    await fn(async (sql, params) => {
      plans.length = 0;
      await c.query(sql, params);
      return [...plans];
    });
  } finally {
    await c.query("rollback").catch(() => undefined);
    await c.end();
  }
}

/** A process and all its descendants (Linux /proc): a server and the children it started. */
export function processTree(root: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch { /* gone */ }
  }
  const tree: number[] = [];
  const visit = (pid: number) => {
    tree.push(pid);
    for (const [child, parent] of parents) if (parent === pid) visit(child);
  };
  visit(root);
  return tree;
}

/** A memory figure of a process in kB (VmRSS now, VmHWM its peak), 0 once it is gone. */
export function memoryKb(pid: number, field: "VmRSS" | "VmHWM"): number {
  try {
    return Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/**
 * A table row of sequential latencies: `request(i)` 20 times to warm up, then 300 times timed;
 * `| name | p50 | p95 | p99 |` in milliseconds.
 */
export async function latencyRow(name: string, request: (i: number) => Promise<unknown>): Promise<string> {
  for (let i = 0; i < 20; i++) await request(i);
  const times: number[] = [];
  for (let i = 0; i < 300; i++) {
    const t0 = performance.now();
    await request(i);
    times.push(performance.now() - t0);
  }
  return percentileRow(name, times);
}

/** `| name | p50 | p95 | p99 |` of `times` (ms). */
export function percentileRow(name: string, times: number[]): string {
  const sorted = [...times].sort((a, b) => a - b);
  const pct = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))].toFixed(1);
  return `| ${name} | ${pct(50)} | ${pct(95)} | ${pct(99)} |`;
}
