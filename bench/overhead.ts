import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { isDeepStrictEqual } from "node:util";
import pg from "pg";
import { authenticatorUrl } from "../src/db/pools.js";
import { selectionOf, type BareOperation } from "./overhead-bare.js";
import { AUTHENTICATOR_PASSWORD, benchDatabase, databaseUrl, freePort, generateLedger, load, processTree, startServer, type LoadResult } from "./support.js";

/**
 * `npm run bench -- overhead [--events N] [--reuse] [--seconds S] [--repetitions R] [--warm W]` (issue 12):
 * the GraphQL server against a bare `node:http` + `pg` handler (bench/overhead-bare.ts) that sends
 * the same statements and returns the same JSON, on one database of N events (default 200,000).
 * Both servers first serve every case for W seconds (default 10), unmeasured: a fresh process's CPU
 * per request falls for its first 15–20 s of load (getLedgerEvent in 5 s windows: 1.48 to 0.49 ms
 * for the server, 0.98 to 0.43 ms for the baseline), and cold repetitions measured that start.
 * Each case then runs interleaved (GraphQL, bare, GraphQL, bare …), R times (default 3) for S seconds
 * (default 8) with 10 connections, and prints req/s, p50, p99 and the server's CPU milliseconds
 * per request (its whole process tree, from /proc), medians over the repetitions, and the ratios.
 */
const DB = "accounting_bench_overhead";
const EVENT = "id eventType direction merchantName functionalAmount functionalCurrency transactionDate status memo hasDocument " +
  "category { id name } paymentAccount { id name } taxAmount taxCode journalEntry { id txnDate totalAmount } receipts { id filename } created updated";

export interface Case { name: string; query: string; variables: Record<string, unknown>; bare: Omit<BareOperation, "selection">; selection: string }

/** The benchmark's requests on organization `org`, whose event `eventId` has a journal entry. */
export function overheadCases(org: string, eventId: string): Case[] {
  const list = (limit: number): Case => ({
    name: `listLedgerEvents (${limit} items)`,
    query: `query($org: UUID!, $limit: Int) { listLedgerEvents(organizationId: $org, limit: $limit) { items { ${EVENT} } totalCount pageSize offset } }`,
    variables: { org, limit },
    bare: { field: "listLedgerEvents", sql: `app_public.list_ledger_events(organization_id => $1, "limit" => $2)`, args: ["org", "limit"] },
    selection: `items { ${EVENT} } totalCount pageSize offset`,
  });
  return [
    { name: "myOrganizations", query: "{ myOrganizations { id name } }", variables: {},
      bare: { field: "myOrganizations", sql: "app_public.my_organizations()", args: [] }, selection: "id name" },
    { name: "getLedgerEvent", query: `query($org: UUID!, $id: UUID!) { getLedgerEvent(organizationId: $org, eventId: $id) { ${EVENT} } }`,
      variables: { org, id: eventId },
      bare: { field: "getLedgerEvent", sql: "app_public.get_ledger_event(organization_id => $1, event_id => $2)", args: ["org", "id"] }, selection: EVENT },
    list(25),
    list(200),
  ];
}

/** The overhead database's organization, an API key of it, and an event of it with a journal entry. */
export async function overheadFixture(dbUrl: string, keyName: string): Promise<{ org: string; secret: string; eventId: string }> {
  const owner = new pg.Pool({ connectionString: dbUrl, max: 1 });
  try {
    const { rows: [o] } = await owner.query("select id from app_public.organizations where name = 'Bench Overhead'");
    if (!o) throw new Error("no overhead database: run `npm run bench -- overhead` first");
    const { rows: [{ key }] } = await owner.query("select app_private.create_api_key($1, $2) as key", [o.id, keyName]);
    const { rows: [{ id }] } = await owner.query(
      "select id from app_public.ledger_events where organization_id = $1 and journal_entry_id is not null order by md5(id::text) limit 1", [o.id]);
    return { org: o.id, secret: key.secret, eventId: id };
  } finally {
    await owner.end();
  }
}

export async function run(args: string[]) {
  const option = (name: string, fallback: number) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : fallback);
  const events = option("--events", 200_000);
  const seconds = option("--seconds", 8);
  const repetitions = option("--repetitions", 3);
  const warm = option("--warm", 10);
  const dbUrl = args.includes("--reuse") ? databaseUrl(DB) : await benchDatabase(DB);
  const owner = new pg.Pool({ connectionString: dbUrl, max: 2 });
  let org: string | undefined = (await owner.query(`select o.id from app_public.organizations o where o.name = 'Bench Overhead'
    and (select count(*) from app_public.ledger_events e where e.organization_id = o.id) >= $1`, [events])).rows[0]?.id;
  if (!org) {
    org = await generateLedger(owner, dbUrl, "Bench Overhead", events);
  }
  const { rows: [{ n }] } = await owner.query("select count(*)::int n from app_public.ledger_events where organization_id = $1", [org]);
  await owner.end();
  const { secret, eventId } = await overheadFixture(dbUrl, "bench");
  console.log(`data: ${n.toLocaleString("en-US")} events in one organization`);

  const cases = overheadCases(org, eventId);
  const operations: [string, BareOperation][] = cases.map((c) => [c.query, { ...c.bare, selection: selectionOf(c.selection) }]);

  const env = { RATE_LIMIT_PER_HOUR: "100000000" };
  const graphql = await startServer(dbUrl, env);
  const bare = await startBare(authenticatorUrl(dbUrl, AUTHENTICATOR_PASSWORD), operations, env);
  const servers = { graphql: { url: graphql.url, pid: graphql.child.pid! }, bare };
  const auth = { authorization: `Bearer ${secret}` };
  try {
    // The same answers, or the comparison means nothing.
    for (const c of cases) {
      const [a, b] = await Promise.all([graphql.url, bare.url].map((url) => fetch(`${url}/graphql`, {
        method: "POST", headers: { "content-type": "application/json", ...auth }, body: JSON.stringify({ query: c.query, variables: c.variables }),
      }).then((r) => r.text())));
      const equal = isDeepStrictEqual(JSON.parse(a), JSON.parse(b));
      console.log(`${c.name}: responses ${equal ? "equal" : "DIFFER"}${a === b ? ", byte for byte" : ""} (${a.length} bytes)`);
      if (!equal) throw new Error(`${c.name}: the baseline's answer differs from the server's:\n${a.slice(0, 500)}\n${b.slice(0, 500)}`);
    }
    if (warm > 0) for (const c of cases) for (const server of Object.values(servers)) await load(server.url, { query: c.query, variables: c.variables }, auth, 10, warm);
    const results = new Map<string, { graphql: Measured[]; bare: Measured[] }>();
    for (let r = 0; r < repetitions; r++) {
      for (const c of cases) {
        const entry = results.get(c.name) ?? { graphql: [], bare: [] };
        results.set(c.name, entry);
        for (const which of ["graphql", "bare"] as const) {
          const server = servers[which];
          const body = { query: c.query, variables: c.variables };
          await load(server.url, body, auth, 10, 1); // warm
          const cpu0 = cpuMs(server.pid);
          const result = await load(server.url, body, auth, 10, seconds);
          const cpu = cpuMs(server.pid) - cpu0;
          if (result.non2xx || result.errors) throw new Error(`${which} ${c.name}: ${result.non2xx} non-2xx, ${result.errors} errors`);
          entry[which].push({ ...result, cpuPerRequest: cpu / result.requests });
        }
      }
    }
    console.log(`\n${warm} s of warm-up per case and server, then ${repetitions} interleaved repetitions of ${seconds} s, 10 connections; medians`);
    console.log("case | server | req/s | p50 ms | p99 ms | CPU ms/request");
    for (const [name, r] of results) {
      const g = median(r.graphql);
      const b = median(r.bare);
      for (const [label, m] of [["GraphQL", g], ["bare", b]] as const) {
        console.log(`${name} | ${label} | ${m.rps.toFixed(0)} | ${m.p50} | ${m.p99} | ${m.cpuPerRequest.toFixed(2)}`);
      }
      console.log(`${name} | GraphQL ÷ bare | ${(g.rps / b.rps).toFixed(2)} (range ${range(r.graphql.map((x, i) => x.rps / r.bare[i].rps))}) | | | CPU × ${(g.cpuPerRequest / b.cpuPerRequest).toFixed(2)}`);
    }
  } finally {
    await graphql.stop();
    await bare.stop();
  }
}

interface Measured extends LoadResult { cpuPerRequest: number }

const mid = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const median = (ms: Measured[]) => ({ rps: mid(ms.map((m) => m.rps)), p50: mid(ms.map((m) => m.p50)), p99: mid(ms.map((m) => m.p99)),
  cpuPerRequest: mid(ms.map((m) => m.cpuPerRequest)) });
const range = (xs: number[]) => `${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}`;

/** User and system CPU of a process and its descendants, in milliseconds (clock ticks of 10 ms). */
export function cpuMs(root: number): number {
  let ticks = 0;
  for (const pid of processTree(root)) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      ticks += Number(fields[11]) + Number(fields[12]); // utime, stime
    } catch { /* gone */ }
  }
  return ticks * 10;
}

/** The baseline in its own process, run as the server is (tsx, the same Node flags). */
async function startBare(authUrl: string, operations: [string, BareOperation][], env: Record<string, string>) {
  const port = await freePort();
  const child = spawn(path.resolve("node_modules/.bin/tsx"), ["bench/overhead-bare.ts"], {
    env: { ...process.env, ...env, DATABASE_URL: authUrl, PORT: String(port), BARE_OPERATIONS: JSON.stringify(operations),
      NODE_ENV: "production", NODE_OPTIONS: `--max-semi-space-size=32 --experimental-async-context-frame ${process.env.NODE_OPTIONS ?? ""}` },
    stdio: ["ignore", "pipe", "inherit"],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on("data", (d: Buffer) => { if (d.toString().includes("ready")) resolve(); });
    child.on("exit", (code) => reject(new Error(`the baseline exited with ${code}`)));
  });
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  return { url: `http://127.0.0.1:${port}`, pid: child.pid!, stop: async () => { child.kill("SIGTERM"); await exited; } };
}
