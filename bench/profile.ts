import { overheadCases, overheadFixture } from "./overhead.js";
import { databaseUrl, load, startServer } from "./support.js";

/**
 * `npm run bench -- profile DIR [--seconds S] [--case C | --query Q] [--node-options "…"]`: the server,
 * on the overhead benchmark's database (run `npm run bench -- overhead` once first), under 10
 * connections of one request for S seconds (default 10), with V8's CPU profiler writing a
 * .cpuprofile into DIR when it stops (open it in Chrome's DevTools, or summarize it). The request is
 * the overhead benchmark's case whose name starts with C (default `myOrganizations`), or the query
 * Q (its variables: `$org`, the organization, and `$id`, one of its events).
 */
export async function run(args: string[]) {
  const dir = args[0];
  if (!dir || dir.startsWith("--")) throw new Error("usage: npm run bench -- profile DIR [--seconds S] [--query Q]");
  const option = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
  const seconds = Number(option("--seconds") ?? 10);
  const dbUrl = databaseUrl("accounting_bench_overhead");
  const { org, secret, eventId } = await overheadFixture(dbUrl, "profile");
  const named = overheadCases(org, eventId).find((c) => c.name.startsWith(option("--case") ?? "myOrganizations"));
  if (!named) throw new Error(`no case named ${option("--case")}`);
  const query = option("--query") ?? named.query;
  const server = await startServer(dbUrl, { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${dir} ${option("--node-options") ?? ""}` });
  try {
    const body = { query, variables: option("--query") ? { org, id: eventId } : named.variables };
    const auth = { authorization: `Bearer ${secret}` };
    await load(server.url, body, auth, 10, 2);
    const r = await load(server.url, body, auth, 10, seconds);
    console.log(`${r.rps.toFixed(0)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms; profile in ${dir}`);
  } finally {
    await server.stop();
  }
}
