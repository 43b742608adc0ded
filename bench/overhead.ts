import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { isDeepStrictEqual } from "node:util";
import pg from "pg";
import { authenticatorUrl } from "../src/db/pools.js";
import { selectionOf, type BareOperation } from "./overhead-bare.js";
import { AUTHENTICATOR_PASSWORD, benchDatabase, databaseUrl, freePort, generateLedger, load, loadEach, processTree, startServer, type LoadResult } from "./support.js";

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

export interface Case {
  name: string;
  query: string;
  variables: Record<string, unknown>;
  /** A write's variables, new for each request (`variables` is then unused). */
  next?: () => Record<string, unknown>;
  /** An API key other than the overhead organization's. */
  credential?: string;
  /** Concurrent clients (10 unless said): imports into one account run one at a time, and ten would wait out the statement timeout. */
  connections?: number;
  bare: Omit<BareOperation, "selection">;
  selection: string;
}

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

/** The three servers measured: GraphQL, the floor (its round trips), the floor with the key check folded in. */
type Server = "graphql" | "floor" | "floor1";
const SERVER_LABELS: Record<Server, string> = { graphql: "GraphQL", floor: "floor (2 round trips)", floor1: "floor, key folded (1 round trip)" };

/** The write cases' fixture: accounts to classify with, and an API key's id for staging events in SQL. */
interface WriteFixture { org: string; importOrg: string; importSecret: string; categoryId: string; paymentAccountId: string; importAccountId: string }

/**
 * Write cases: each request its own variables (`next`), as a client sends them. createLedgerEvent
 * classified (its event is one confirmLedgerEvent can post); confirmLedgerEvent of the next staged
 * event (`stagedIds`, filled before each run); importBankStatement of 500 new rows into an
 * organization of its own (its events do not grow the one the reads use).
 */
export function writeCases(f: WriteFixture, stagedIds: string[]): Case[] {
  let created = 0;
  let imported = 0;
  const day = (n: number) => `2026-${String(1 + (n % 10)).padStart(2, "0")}-${String(1 + (n % 28)).padStart(2, "0")}`;
  return [
    {
      name: "createLedgerEvent",
      query: "mutation($org: UUID!, $m: String!, $a: String!, $d: String!, $c: UUID, $p: UUID) { createLedgerEvent(organizationId: $org, merchantName: $m, amount: $a, transactionDate: $d, categoryId: $c, paymentAccountId: $p) { success error eventId } }",
      variables: {},
      next: () => ({ org: f.org, m: `BENCH CREATE ${++created}`, a: `${(created % 900) + 10}.25`, d: day(created), c: f.categoryId, p: f.paymentAccountId }),
      bare: { field: "createLedgerEvent", sql: "app_public.create_ledger_event(organization_id => $1, merchant_name => $2, amount => $3, transaction_date => $4, category_id => $5, payment_account_id => $6)",
        args: ["org", "m", "a", "d", "c", "p"] },
      selection: "success error eventId",
    },
    {
      name: "confirmLedgerEvent",
      query: "mutation($org: UUID!, $id: UUID!) { confirmLedgerEvent(organizationId: $org, eventId: $id) { success error eventId journalEntryId } }",
      variables: {},
      next: () => {
        const id = stagedIds.pop();
        if (!id) throw new Error("no staged event left to confirm");
        return { org: f.org, id };
      },
      bare: { field: "confirmLedgerEvent", sql: "app_public.confirm_ledger_event(organization_id => $1, event_id => $2)", args: ["org", "id"] },
      selection: "success error eventId journalEntryId",
    },
    {
      name: "importBankStatement (500 rows)",
      query: "mutation($org: UUID!, $acct: UUID!, $rows: [BankStatementRowInput!]!) { importBankStatement(organizationId: $org, paymentAccountId: $acct, rows: $rows) { success error importedCount skippedCount settledCount batchId } }",
      variables: {},
      credential: f.importSecret,
      connections: 2,
      next: () => {
        const batch = ++imported;
        return { org: f.importOrg, acct: f.importAccountId, rows: Array.from({ length: 500 }, (_, i) => ({
          transactionDate: day(batch + i), description: `BENCH IMPORT ${batch} ROW ${i}`, amount: `-${(i % 300) + 1}.${String(batch % 100).padStart(2, "0")}`,
          eventType: "expense" })) };
      },
      bare: { field: "importBankStatement", sql: "app_public.import_bank_statement(organization_id => $1, payment_account_id => $2, rows => $3)", args: ["org", "acct", "rows"] },
      selection: "success error importedCount skippedCount settledCount batchId",
    },
  ];
}

/** The write fixture: the overhead organization's accounts, and an organization of its own for imports. */
export async function writeFixture(dbUrl: string, org: string): Promise<WriteFixture> {
  const owner = new pg.Pool({ connectionString: dbUrl, max: 1 });
  try {
    const account = async (o: string, name: string) =>
      (await owner.query("select id from app_public.accounts where organization_id = $1 and name = $2", [o, name])).rows[0].id as string;
    let importOrg = (await owner.query("select id from app_public.organizations where name = 'Bench Overhead Imports'")).rows[0]?.id as string | undefined;
    importOrg ??= (await owner.query("select id from app_private.create_organization('Bench Overhead Imports')")).rows[0].id as string;
    const { rows: [{ key }] } = await owner.query("select app_private.create_api_key($1, 'bench imports') as key", [importOrg]);
    return { org, importOrg: importOrg!, importSecret: key.secret, categoryId: await account(org, "Office Supplies"),
      paymentAccountId: await account(org, "Chequing"), importAccountId: await account(importOrg!, "Chequing") };
  } finally {
    await owner.end();
  }
}

/** Classified events to confirm, made in SQL as the organization (createLedgerEvent's function), at least `n` in `ids`. */
async function stageEvents(dbUrl: string, f: WriteFixture, ids: string[], n: number) {
  if (ids.length >= n) return;
  const c = new pg.Client({ connectionString: dbUrl });
  await c.connect();
  try {
    const { rows: [k] } = await c.query("select id from app_public.api_keys where organization_id = $1 limit 1", [f.org]);
    await c.query("begin");
    await c.query("select set_config('role', 'accounting_visitor', true), set_config('app.api_key_id', $1, true), set_config('app.organization_id', $2, true)", [k.id, f.org]);
    const { rows } = await c.query<{ id: string }>(`select (app_public.create_ledger_event(organization_id => $1, merchant_name => 'BENCH STAGED ' || i,
        amount => (10 + i % 900)::text || '.75', transaction_date => '2026-0' || (1 + i % 9) || '-' || lpad((1 + i % 28)::text, 2, '0'),
        category_id => $2, payment_account_id => $3))->>'eventId' as id from generate_series(1, $4::int) i`,
      [f.org, f.categoryId, f.paymentAccountId, n - ids.length]);
    await c.query("commit");
    ids.push(...rows.map((r) => r.id));
  } finally {
    await c.end();
  }
}

export async function run(args: string[]) {
  const option = (name: string, fallback: number) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : fallback);
  const events = option("--events", 200_000);
  const seconds = option("--seconds", 8);
  const repetitions = option("--repetitions", 3);
  const warm = option("--warm", 10);
  const only = args.includes("--writes") ? "writes" : args.includes("--reads") ? "reads" : "all";
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
  const fixture = await writeFixture(dbUrl, org);
  console.log(`data: ${n.toLocaleString("en-US")} events in one organization`);

  const staged: string[] = [];
  const cases = [...(only === "writes" ? [] : overheadCases(org, eventId)), ...(only === "reads" ? [] : writeCases(fixture, staged))];
  const operations: [string, BareOperation][] = cases.map((c) => [c.query, { ...c.bare, selection: selectionOf(c.selection) }]);

  const env = { RATE_LIMIT_PER_HOUR: "100000000" };
  const graphql = await startServer(dbUrl, env);
  const authUrl = authenticatorUrl(dbUrl, AUTHENTICATOR_PASSWORD);
  const floor = await startBare(authUrl, operations, env, 2);
  const floor1 = await startBare(authUrl, operations, env, 1);
  const servers: Record<Server, { url: string; pid: number }> = { graphql: { url: graphql.url, pid: graphql.child.pid! }, floor, floor1 };
  const headersOf = (c: Case) => ({ authorization: `Bearer ${c.credential ?? secret}` });
  const bodyOf = (c: Case) => ({ query: c.query, variables: c.next ? c.next() : c.variables });
  // A write's rate is not known before it is measured: staged events for 2,000 confirms a second, more than any server makes here.
  const enoughToConfirm = async (s: number) => stageEvents(dbUrl, fixture, staged, Math.ceil(s * 2_000) + 500);
  try {
    // The same answers, or the comparison means nothing (a write's ids aside).
    for (const c of cases) {
      if (c.name === "confirmLedgerEvent") await enoughToConfirm(1);
      const answers = await Promise.all(Object.values(servers).map(async ({ url }) => masked(c, await (await fetch(`${url}/graphql`, {
        method: "POST", headers: { "content-type": "application/json", ...headersOf(c) }, body: JSON.stringify(bodyOf(c)),
      })).text())));
      const equal = answers.every((a) => isDeepStrictEqual(JSON.parse(a), JSON.parse(answers[0])));
      console.log(`${c.name}: responses ${equal ? "equal" : "DIFFER"}${answers.every((a) => a === answers[0]) ? ", byte for byte" : ""}${c.next ? " (ids aside)" : ""} (${answers[0].length} bytes)`);
      if (!equal) throw new Error(`${c.name}: the floor's answers differ from the server's:\n${answers.map((a) => a.slice(0, 400)).join("\n")}`);
    }
    const measure = async (c: Case, server: Server, s: number) => {
      if (c.name === "confirmLedgerEvent") await enoughToConfirm(s);
      const target = servers[server];
      if (!c.next) return load(target.url, bodyOf(c), headersOf(c), c.connections ?? 10, s);
      return loadEach(target.url, () => bodyOf(c), headersOf(c), c.connections ?? 10, s);
    };
    if (warm > 0) for (const c of cases) for (const server of Object.keys(servers) as Server[]) await measure(c, server, warm);
    const results = new Map<string, Record<Server, Measured[]>>();
    for (let r = 0; r < repetitions; r++) {
      for (const c of cases) {
        const entry = results.get(c.name) ?? { graphql: [], floor: [], floor1: [] };
        results.set(c.name, entry);
        // Each repetition in another order: a write grows the data the next server writes to.
        const order = Object.keys(servers) as Server[];
        for (const server of [...order.slice(r % order.length), ...order.slice(0, r % order.length)]) {
          await measure(c, server, 1); // warm
          const cpu0 = cpuMs(servers[server].pid);
          const result = await measure(c, server, seconds);
          const cpu = cpuMs(servers[server].pid) - cpu0;
          if (result.non2xx || result.errors) throw new Error(`${server} ${c.name}: ${result.non2xx} non-2xx, ${result.errors} errors`);
          entry[server].push({ ...result, cpuPerRequest: cpu / result.requests });
        }
      }
    }
    console.log(`\n${warm} s of warm-up per case and server, then ${repetitions} interleaved repetitions of ${seconds} s, 10 connections (imports 2); medians`);
    console.log("case | server | req/s | p50 ms | p99 ms | CPU ms/request");
    for (const [name, r] of results) {
      const m = { graphql: median(r.graphql), floor: median(r.floor), floor1: median(r.floor1) };
      for (const server of Object.keys(m) as Server[]) {
        console.log(`${name} | ${SERVER_LABELS[server]} | ${m[server].rps.toFixed(0)} | ${m[server].p50} | ${m[server].p99} | ${m[server].cpuPerRequest.toFixed(2)}`);
      }
      for (const base of ["floor", "floor1"] as const) {
        console.log(`${name} | GraphQL ÷ ${SERVER_LABELS[base]} | ${(m.graphql.rps / m[base].rps).toFixed(2)} (range ${range(r.graphql.map((x, i) => x.rps / r[base][i].rps))}) | | | CPU × ${(m.graphql.cpuPerRequest / m[base].cpuPerRequest).toFixed(2)}`);
      }
    }
  } finally {
    await graphql.stop();
    await floor.stop();
    await floor1.stop();
  }
}

/** A write's answer with its new ids as `<id>`: two servers make different ones. */
const masked = (c: Case, text: string) => (c.next ? text.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, "<id>") : text);

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

/**
 * The floor's server (bench/overhead-bare.ts) answering `operations`, in its own process, run as the
 * server is (tsx, the same Node flags); `nodeOptions` are added to those flags.
 */
export async function startBare(authUrl: string, operations: [string, BareOperation][], env: Record<string, string>, roundTrips: 1 | 2,
    nodeOptions = "") {
  const port = await freePort();
  const child = spawn(path.resolve("node_modules/.bin/tsx"), ["bench/overhead-bare.ts"], {
    env: { ...process.env, ...env, DATABASE_URL: authUrl, PORT: String(port), BARE_OPERATIONS: JSON.stringify(operations), BARE_ROUND_TRIPS: String(roundTrips),
      NODE_ENV: "production", NODE_OPTIONS: `--max-semi-space-size=32 --experimental-async-context-frame ${process.env.NODE_OPTIONS ?? ""} ${nodeOptions}` },
    stdio: ["ignore", "pipe", "inherit"],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on("data", (d: Buffer) => { if (d.toString().includes("ready")) resolve(); });
    child.on("exit", (code) => reject(new Error(`the baseline exited with ${code}`)));
  });
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  return { url: `http://127.0.0.1:${port}`, pid: child.pid!, stop: async () => { child.kill("SIGTERM"); await exited; } };
}
