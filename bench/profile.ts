import pg from "pg";
import { databaseUrl, load, startServer } from "./support.js";

/**
 * `npm run bench -- profile DIR [--seconds S] [--query Q] [--node-options "…"]`: the server, on the overhead benchmark's
 * database (run `npm run bench -- overhead` once first), under 10 connections of one request for
 * S seconds (default 10), with V8's CPU profiler writing a .cpuprofile into DIR when it stops
 * (open it in Chrome's DevTools, or summarize it). The request is `myOrganizations` unless Q is given.
 */
export async function run(args: string[]) {
  const dir = args[0];
  if (!dir || dir.startsWith("--")) throw new Error("usage: npm run bench -- profile DIR [--seconds S] [--query Q]");
  const option = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
  const seconds = Number(option("--seconds") ?? 10);
  const dbUrl = databaseUrl("accounting_bench_overhead");
  const owner = new pg.Pool({ connectionString: dbUrl, max: 1 });
  const { rows: [org] } = await owner.query("select id from app_public.organizations where name = 'Bench Overhead'");
  if (!org) throw new Error("no overhead database: run `npm run bench -- overhead` first");
  const { rows: [{ key }] } = await owner.query("select app_private.create_api_key($1, 'profile') as key", [org.id]);
  await owner.end();
  const query = option("--query") ?? "{ myOrganizations { id name } }";
  const server = await startServer(dbUrl, { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${dir} ${option("--node-options") ?? ""}` });
  try {
    const body = { query, variables: { org: org.id } };
    const auth = { authorization: `Bearer ${key.secret}` };
    await load(server.url, body, auth, 10, 2);
    const r = await load(server.url, body, auth, 10, seconds);
    console.log(`${r.rps.toFixed(0)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms; profile in ${dir}`);
  } finally {
    await server.stop();
  }
}
