import { spawn } from "node:child_process";
import http from "node:http";
import path from "node:path";
import autocannon from "autocannon";
import jwt from "jsonwebtoken";
import pg from "pg";
import { AUTHENTICATOR_PASSWORD, benchDatabase, startServer } from "./support.js";

/**
 * `npm run bench -- webhooks [--events N] [--rate R] [--concurrency C] [--readers K] [--warmup W]`:
 * N events (default 10,000) made through the API at R a second (default 100) by createLedgerEvent,
 * fanned out to 3 endpoints on loopback (real HTTP receivers in a process of their own), while K
 * other clients (default 2) load the API with reads. W events (default 1,000) are made and
 * delivered first, then the database analyzed, unmeasured. The worker runs as `npm run worker`
 * (WORKER_CONCURRENCY C, default 4; BENCH_WORKER_NODE_OPTIONS its NODE_OPTIONS). Prints
 * deliveries a second (first event made to last delivery received) and the lag from each event's
 * `created` (its transaction's start, so a little before its commit) to its arrival.
 * The target (issue 13): at least 200 deliveries a second, p99 lag under 5 s.
 */
const DB = "accounting_bench_webhooks";
const JWT_SECRET = "bench-jwt-secret";
const SECRETS_KEY = "a".repeat(64);
const ENDPOINTS = 3;

export async function run(args: string[]) {
  const opt = (name: string, fallback: number) => Number(args[args.indexOf(name) + 1] || 0) || fallback;
  const events = opt("--events", 10_000);
  const rate = opt("--rate", 100);
  const concurrency = opt("--concurrency", 4);
  const readers = args.includes("--readers") ? Number(args[args.indexOf("--readers") + 1]) : 2;
  const warmup = args.includes("--warmup") ? Number(args[args.indexOf("--warmup") + 1]) : 1_000;
  const dbUrl = await benchDatabase(DB);
  const owner = new pg.Pool({ connectionString: dbUrl, max: 2 });
  const org = (await owner.query("select id from app_private.create_organization('Bench Webhooks')")).rows[0].id as string;
  const user = (await owner.query("select id from app_private.create_user('owner@bench.test')")).rows[0].id as string;
  await owner.query("select app_private.add_member($1, 'owner@bench.test', 'owner')", [org]);
  const apiKey = `Bearer ${(await owner.query("select app_private.create_api_key($1, 'bench') as key", [org])).rows[0].key.secret}`;
  const ownerJwt = `JWT ${jwt.sign({ sub: user }, JWT_SECRET, { algorithm: "HS256", expiresIn: "2h" })}`;

  // The receivers, in a process of their own: arrival time and lag of each event, per endpoint.
  const receiverProcess = spawn(path.resolve("node_modules/.bin/tsx"), ["bench/webhook-receivers.ts", String(ENDPOINTS)],
    { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const ask = <T>(message: string | null, key: string) => new Promise<T>((resolve) => {
    const on = (m: any) => { if (key in m) { receiverProcess.off("message", on); resolve(m[key]); } };
    receiverProcess.on("message", on);
    if (message) receiverProcess.send(message);
  });
  const receivers = (await ask<string[]>(null, "urls")).map((url) => ({ url }));

  const env = { JWT_SECRET, SECRETS_KEY, OUTBOUND_ALLOW_LOOPBACK: "1", BENCH_LOG_LEVEL: "warn" };
  const server = await startServer(dbUrl, { ...env, LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? "warn" });
  const worker = spawn("npm", ["run", "worker", "--silent"], {
    env: { ...process.env, ...env, DATABASE_URL: dbUrl, AUTHENTICATOR_PASSWORD, WORKER_CONCURRENCY: String(concurrency), LOG_LEVEL: process.env.BENCH_WORKER_LOG_LEVEL ?? "warn", NODE_ENV: "production",
      ...(process.env.BENCH_WORKER_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_WORKER_NODE_OPTIONS } : {}) },
    stdio: ["ignore", process.env.BENCH_WORKER_LOG_LEVEL ? "inherit" : "ignore", "inherit"],
  });
  const workerExited = new Promise<void>((resolve) => worker.on("exit", () => resolve()));
  // node:http with kept connections: the load generator shares the machine, and fetch cost it about 1 ms a request.
  // A kept connection is dropped after 4 s idle, before the server's 5 s keep-alive timeout closes it
  // under a request being written (ECONNRESET).
  const agent = new http.Agent({ keepAlive: true, timeout: 4_000 });
  const gql = (query: string, variables: Record<string, unknown>, credential: string) => new Promise<any>((resolve, reject) => {
    const payload = Buffer.from(JSON.stringify({ query, variables }));
    const request = http.request(`${server.url}/graphql`, { method: "POST", agent,
      headers: { "content-type": "application/json", "content-length": payload.length, authorization: credential } }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (c: Buffer) => chunks.push(c));
      response.on("end", () => {
        try {
          const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
          if (body.errors) reject(new Error(JSON.stringify(body.errors)));
          else resolve(body.data);
        } catch (e) {
          reject(e);
        }
      });
      response.on("error", reject);
    });
    request.on("error", reject);
    request.end(payload);
  });
  try {
    for (const r of receivers) {
      const made = await gql(`mutation($o: UUID!, $url: String!) { createWebhookEndpoint(organizationId: $o, url: $url, events: ["ledger_event.created"]) { success error } }`,
        { o: org, url: r.url }, ownerJwt);
      if (!made.createWebhookEndpoint.success) throw new Error(made.createWebhookEndpoint.error);
    }

    // Events at `rate` a second, each its own createLedgerEvent request.
    // Dated over two months, as a bookkeeper's entries are (one day's counts row is one lock).
    const create = `mutation($o: UUID!, $m: String!, $d: String!) { createLedgerEvent(organizationId: $o, merchantName: $m, amount: "12.34", transactionDate: $d) { success error } }`;
    const dateOf = (i: number) => new Date(Date.UTC(2026, 8, 1 + (i % 61))).toISOString().slice(0, 10);
    const makeEvents = async (count: number, from: number) => {
      const started = Date.now();
      const inFlight = new Set<Promise<void>>();
      let failed = 0;
      const reasons = new Map<string, number>();
      const fail = (why: string) => {
        failed++;
        reasons.set(why, (reasons.get(why) ?? 0) + 1);
      };
      for (let i = 0; i < count; i++) {
        const due = started + (i * 1000) / rate;
        if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
        const p = gql(create, { o: org, m: `Vendor ${from + i}`, d: dateOf(from + i) }, apiKey).then((d) => { if (!d.createLedgerEvent.success) fail(d.createLedgerEvent.error); }, (e) => fail(String(e)));
        const tracked = p.finally(() => inFlight.delete(tracked));
        inFlight.add(tracked);
      }
      await Promise.all(inFlight);
      for (const [why, n] of reasons) console.log(`createLedgerEvent failed ${n} times: ${why.slice(0, 300)}`);
      return { started, made: Date.now(), failed };
    };
    // Until `total` deliveries arrived, or none arrived for 30 s.
    const waitForDeliveries = async (total: number) => {
      let seen = 0;
      let quietSince = Date.now();
      for (;;) {
        const now = await ask<number>("count", "count");
        if (now >= total) return;
        if (now > seen) { seen = now; quietSince = Date.now(); }
        if (Date.now() - quietSince > 30_000) { console.log(`no delivery for 30 s: ${now} of ${total} arrived`); return; }
        await new Promise((r) => setTimeout(r, 200));
      }
    };

    // A database a minute old has statistics (autovacuum's analyze); one made seconds ago has
    // none, and the plans its sessions keep were made for empty tables (sequential scans that
    // grow with every event). The warm-up's events are made, delivered and analyzed first.
    if (warmup > 0) {
      const w = await makeEvents(warmup, events);
      await waitForDeliveries(warmup * ENDPOINTS);
      await owner.query("analyze");
      await ask<boolean>("reset", "reset");
      console.log(`warm-up: ${warmup.toLocaleString("en-US")} events (${w.failed} failed) made and delivered, then ANALYZE; not measured`);
    }

    // Reads by other clients for the whole run.
    const readBody = JSON.stringify({ query: "query($o: UUID!) { listLedgerEvents(organizationId: $o) { totalCount items { id merchantName functionalAmount } } }", variables: { o: org } });
    const readLoad = readers === 0 ? undefined : autocannon({ url: `${server.url}/graphql`, method: "POST", connections: readers, duration: Math.ceil(events / rate),
      headers: { "content-type": "application/json", authorization: apiKey }, body: readBody });
    const { started, made, failed } = await makeEvents(events, 0);
    (readLoad as unknown as { stop(): void } | undefined)?.stop();
    const reads = readLoad && await Promise.race([readLoad, new Promise<undefined>((r) => setTimeout(r, 5_000))]);
    const total = events * ENDPOINTS;
    await waitForDeliveries(total);
    const arrivals = await ask<{ at: number; lag: number; id: string }[][]>("report", "arrivals");
    const all = arrivals.flat();
    const last = Math.max(...all.map((a) => a.at));

    const lags = all.map((a) => a.lag).sort((a, b) => a - b);
    const pct = (p: number) => lags[Math.min(lags.length - 1, Math.floor((p / 100) * lags.length))];
    const perSecond = all.length / ((last - started) / 1000);
    const distinct = arrivals.map((a) => new Set(a.map((x) => x.id)).size);
    console.log(`events: ${events.toLocaleString("en-US")} made at ${rate}/s in ${((made - started) / 1000).toFixed(1)} s (${failed} failed); endpoints: ${ENDPOINTS}; worker concurrency ${concurrency}`);
    console.log(`deliveries: ${all.length.toLocaleString("en-US")} of ${total.toLocaleString("en-US")} (distinct per endpoint: ${distinct.join(", ")}), `
      + `${perSecond.toFixed(0)}/s from the first event to the last delivery (${((last - started) / 1000).toFixed(1)} s)`);
    console.log(`lag from created to arrival: p50 ${pct(50)} ms, p95 ${pct(95)} ms, p99 ${pct(99)} ms, max ${lags[lags.length - 1]} ms`);
    // By when the event was made: a worker's start shows in the first window, a backlog in the later ones.
    const windows: number[][] = [];
    for (const a of all) (windows[Math.max(0, Math.floor((a.at - a.lag - started) / 5000))] ??= []).push(a.lag);
    const p99Of = (xs: number[] = []) => [...xs].sort((a, b) => a - b)[Math.floor(0.99 * (xs.length - 1))] ?? 0;
    console.log(`lag p99 by 5 s window of the events' making: ${Array.from(windows, (w) => p99Of(w)).join(", ")} ms`);
    if (reads) console.log(`API reads while the events were made (${readers} connections): ${reads.requests.average.toFixed(0)} req/s, p50 ${reads.latency.p50} ms, p99 ${reads.latency.p99} ms, ${reads.non2xx} non-2xx`);
    const verdict = perSecond >= 200 && pct(99) < 5000 && all.length === total ? "met" : "NOT met";
    console.log(`target: at least 200 deliveries/s and p99 lag under 5 s: ${verdict}`);
  } finally {
    worker.kill("SIGTERM");
    await workerExited;
    await server.stop();
    if (receiverProcess.exitCode === null) receiverProcess.kill();
    await owner.end();
  }
}
