import { interrupted, runScenario, type Scenario, type SoakResult } from "./harness.js";
import { parseOptions } from "./options.js";
import { ms } from "./stats.js";
import { scenarios } from "./scenarios/index.js";

/**
 * `npm run bench -- soak <scenario|all> [--seconds N] [--root DIR] [--out FILE] [--keep]
 * [--migrate-current] [--idle-source 127.0.0.2] [--max-rss-gb 6]`: issue 32's attacks, each against a service
 * started with `npm start` from the checkout DIR (this one by default). See bench/README.md,
 * "Hostile tenants and senders: soak".
 */
export async function run(args: string[]) {
  const { names, options } = parseOptions(args);
  const all = scenarios as Scenario<any>[];
  if (names.length === 0) {
    console.error(`Usage: npm run bench -- soak <${all.map((s) => s.name).join("|")}|all> [--seconds N] [--root DIR] [--out FILE] [--keep] [--migrate-current] [--idle-source 127.0.0.2] [--max-rss-gb 6]`);
    process.exit(1);
  }
  const chosen = names.includes("all") ? all : names.map((name) => {
    const found = all.find((s) => s.name === name);
    if (!found) {
      console.error(`No soak scenario "${name}": ${all.map((s) => s.name).join(", ")}`);
      process.exit(1);
    }
    return found;
  });
  // A second Ctrl-C leaves at once; the first lets the run stop what it started.
  process.on("SIGINT", () => (interrupted.signal.aborted ? process.exit(130) : interrupted.abort()));
  const results: SoakResult[] = [];
  for (const scenario of chosen) {
    if (interrupted.signal.aborted) break;
    try {
      results.push(await runScenario(scenario, options));
    } catch (e) {
      console.error(`soak ${scenario.name} could not run: ${(e as Error).stack}`);
    }
  }
  if (results.length > 1) summary(results);
}

function summary(results: SoakResult[]): void {
  console.log("\n== soak summary (probe p99 of A and B, the largest process, A's worst waits; checks met)");
  for (const r of results) {
    const p99 = Math.max(r.probes.overall.A.p99 ?? 0, r.probes.overall.B.p99 ?? 0);
    const checks = Object.values(r.checks).filter((v) => v !== null);
    console.log(`  ${r.scenario.padEnd(14)} p99 ${ms(p99).padStart(8)}  max RSS ${String(r.maxProcessMb).padStart(5)} MB  ${r.api.died ? "API DIED" : "API up  "}`
      + `  receipt ${ms(r.victim.worstReceiptMs).padStart(8)}  webhook ${ms(r.victim.worstWebhookMs).padStart(8)}  checks ${checks.filter(Boolean).length}/${checks.length}`);
  }
}
