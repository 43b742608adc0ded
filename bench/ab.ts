import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { cpuMs, overheadCases, overheadFixture } from "./overhead.js";
import { AUTHENTICATOR_PASSWORD, databaseUrl, load, startServer } from "./support.js";

/**
 * `npm run bench -- ab --before DIR [--before-env NAME=VALUE …] [--seconds S] [--runs N]`: one
 * change measured on its own. The server of this checkout and the one of DIR (another checkout,
 * with its node_modules: the commit before the change; or this checkout again, with
 * `--before-env` setting what the "before" server runs with, to measure a setting) on the overhead
 * benchmark's database (run `npm run bench -- overhead` first),
 * alternately, N times each per case (the overhead benchmark's `myOrganizations`, `getLedgerEvent` and
 * 25-item `listLedgerEvents`; default 4), printing req/s and CPU milliseconds per request of
 * each run, and the median of the after ÷ before ratios of the pairs.
 */
export async function run(args: string[]) {
  const before = args.includes("--before") ? path.resolve(args[args.indexOf("--before") + 1]) : undefined;
  if (!before) throw new Error("Give --before DIR: a checkout of the commit to compare with, with node_modules.");
  const seconds = args.includes("--seconds") ? Number(args[args.indexOf("--seconds") + 1]) : 6;
  const runs = args.includes("--runs") ? Number(args[args.indexOf("--runs") + 1]) : 4;
  const beforeEnv = Object.fromEntries(args.flatMap((a, i) => {
    if (a !== "--before-env") return [];
    const setting = /^([A-Z_][A-Z0-9_]*)=(.*)$/s.exec(args[i + 1] ?? "");
    if (!setting) throw new Error(`--before-env takes NAME=VALUE, got "${args[i + 1] ?? ""}".`);
    return [[setting[1], setting[2]]];
  }));
  const dbUrl = databaseUrl("accounting_bench_overhead");
  const { org, secret, eventId } = await overheadFixture(dbUrl, "ab");
  const env = { RATE_LIMIT_PER_HOUR: "100000000", SMTP_PORT: "off" };
  const fresh = await startServer(dbUrl, env);
  const port = 5799;
  const child = spawn("npm", ["start", "--silent"], { cwd: before, env: { ...process.env, DATABASE_URL: dbUrl, PORT: String(port), WORKER: "off", LOG_LEVEL: "info",
    NODE_ENV: "production", GRAPHILE_ENV: "production", AUTHENTICATOR_PASSWORD, JWT_SECRET: "bench-jwt-secret", DATA_DIR: mkdtempSync(path.join(os.tmpdir(), "ab-")), ...env, ...beforeEnv }, stdio: ["ignore", "ignore", "inherit"] });
  const oldUrl = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 600 && !(await fetch(`${oldUrl}/readyz`).then((r) => r.ok, () => false)); i++) await new Promise((r) => setTimeout(r, 100));
  const auth = { authorization: `Bearer ${secret}` };
  // The overhead benchmark's cases but the 200-item page, whose runs are too few in a few seconds.
  const cases = overheadCases(org, eventId).slice(0, 3).map((c) => [c.name, { query: c.query, variables: c.variables }] as const);
  const servers = { before: { url: oldUrl, pid: child.pid! }, after: { url: fresh.url, pid: fresh.child.pid! } };
  for (const [name, body] of cases) {
    const out: Record<string, string[]> = { before: [], after: [] };
    const rps: Record<string, number[]> = { before: [], after: [] };
    const cpu: Record<string, number[]> = { before: [], after: [] };
    for (let r = 0; r < runs; r++) for (const which of (r % 2 ? ["after", "before"] : ["before", "after"]) as ("before" | "after")[]) {
      const s = servers[which];
      await load(s.url, body, auth, 10, 1);
      const c0 = cpuMs(s.pid);
      const res = await load(s.url, body, auth, 10, seconds);
      const ms = (cpuMs(s.pid) - c0) / res.requests;
      out[which].push(`${res.rps.toFixed(0)} req/s ${ms.toFixed(2)} ms`);
      rps[which].push(res.rps);
      cpu[which].push(ms);
    }
    const medianRatio = (m: Record<string, number[]>) => {
      const ratios = m.after.map((a, i) => a / m.before[i]).sort((a, b) => a - b);
      return ratios[Math.floor(ratios.length / 2)].toFixed(2);
    };
    console.log(name, JSON.stringify(out));
    console.log(`${name}: after ÷ before, median of ${runs} pairs: req/s ${medianRatio(rps)}, CPU ms/request ${medianRatio(cpu)}`);
  }
  child.kill("SIGTERM");
  await fresh.stop();
}
