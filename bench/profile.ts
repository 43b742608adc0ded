import { authenticatorUrl } from "../src/db/pools.js";
import { selectionOf } from "./overhead-bare.js";
import { overheadCases, overheadFixture, startBare, writeCases, writeFixture } from "./overhead.js";
import { AUTHENTICATOR_PASSWORD, databaseUrl, load, loadEach, startServer } from "./support.js";

/**
 * `npm run bench -- profile DIR [--seconds S] [--case C | --query Q] [--floor] [--node-options "…"]`:
 * the server, on the overhead benchmark's database (run `npm run bench -- overhead` once first),
 * under 10 connections (the case's own number, if it has one) of one request for S seconds (default 10), with V8's CPU profiler writing a
 * .cpuprofile into DIR when it stops (open it in Chrome's DevTools, or summarize it). The request is
 * the overhead benchmark's case whose name starts with C (default `myOrganizations`; of the writes,
 * `createLedgerEvent` and `importBankStatement`, each request its own), or the query Q (its variables: `$org`, the
 * organization, and `$id`, one of its events). `--floor` profiles the floor (bench/overhead-bare.ts)
 * under the same load instead, to hold the two profiles side by side.
 */
export async function run(args: string[]) {
  const dir = args[0];
  if (!dir || dir.startsWith("--")) throw new Error("usage: npm run bench -- profile DIR [--seconds S] [--case C | --query Q] [--floor]");
  const option = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
  const seconds = Number(option("--seconds") ?? 10);
  const dbUrl = databaseUrl("accounting_bench_overhead");
  const wanted = option("--case") ?? "myOrganizations";
  if (args.includes("--floor") && option("--query")) throw new Error("--floor answers the cases only: give --case, not --query");
  const { org, secret, eventId } = await overheadFixture(dbUrl, "profile");
  // A read, else a write that needs nothing staged beforehand (its fixture only then).
  const named = overheadCases(org, eventId).find((c) => c.name.startsWith(wanted))
    ?? writeCases(await writeFixture(dbUrl, org), []).find((c) => c.name !== "confirmLedgerEvent" && c.name.startsWith(wanted));
  if (!named) throw new Error(`no case named ${wanted}`);
  const query = option("--query") ?? named.query;
  const nodeOptions = `--cpu-prof --cpu-prof-dir=${dir} ${option("--node-options") ?? ""}`;
  const server = args.includes("--floor")
    ? await startBare(authenticatorUrl(dbUrl, AUTHENTICATOR_PASSWORD), [[query, { ...named.bare, selection: selectionOf(named.selection) }]],
      { RATE_LIMIT_PER_HOUR: "100000000" }, 2, nodeOptions)
    : await startServer(dbUrl, { NODE_OPTIONS: nodeOptions });
  try {
    const body = () => ({ query, variables: option("--query") ? { org, id: eventId } : named.next ? named.next() : named.variables });
    const auth = { authorization: `Bearer ${named.credential ?? secret}` };
    const connections = named.connections ?? 10;
    const measure = (s: number) => (named.next && !option("--query")
      ? loadEach(server.url, body, auth, connections, s) : load(server.url, body(), auth, connections, s));
    await measure(2);
    const r = await measure(seconds);
    console.log(`${r.rps.toFixed(0)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms; profile in ${dir}`);
  } finally {
    await server.stop();
  }
}
