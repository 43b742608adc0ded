import type { SoakResult } from "./harness.js";
import type { ProbeFigures } from "./probes.js";
import type { Round } from "./victim.js";
import { ms } from "./stats.js";

/** A soak run's figures as a short table, then the whole result as one JSON line. */
export function printReport(r: SoakResult): void {
  const out: string[] = [];
  out.push("", `== soak ${r.scenario}: ${r.title}`);
  out.push(`root ${r.root} (${r.commit}); attack ${r.seconds} s; ${r.machine.cpus} CPUs, load ${r.machine.load1AtStart} at start, ${r.machine.load1AtEnd} at end; npm start ready in ${r.startupS} s`);
  out.push(row(["probe", "n", "p50", "p99", "max", "timeouts", "errors"]));
  const probeRow = (name: string, f: ProbeFigures) => row([name, String(f.n), ms(f.p50), ms(f.p99), ms(f.max), String(f.timeouts + f.unfinished), String(f.errors)]);
  out.push(probeRow("A myOrganizations", r.probes.overall.A));
  out.push(probeRow("B myOrganizations", r.probes.overall.B));
  out.push(probeRow("GET /healthz", r.probes.overall["/healthz"]));
  for (const [phase, figures] of Object.entries(r.probes.phases)) {
    if (figures.A.n + figures.A.errors === 0) continue; // a phase that lasted no probe
    out.push(`  phase ${phase}: A p99 ${ms(figures.A.p99)} max ${ms(figures.A.max)}; B p99 ${ms(figures.B.p99)} max ${ms(figures.B.max)}; /healthz max ${ms(figures["/healthz"].max)}; timeouts ${["A", "B", "/healthz"].reduce((n, t) => n + figures[t].timeouts + figures[t].unfinished, 0)}`);
  }
  out.push(row(["process", "pid", "peak RSS", "gone at"]));
  for (const p of r.processes) out.push(row([p.label, String(p.pid), `${p.peakMb.toLocaleString("en-US")} MB`, p.goneS === null ? "-" : `${p.goneS} s`]));
  out.push(`API RSS every 10 s (MB): ${r.apiRssMb.map(([, v]) => v).join(" ")}`);
  out.push(r.api.died
    ? `API process DIED at ${r.api.diedAtS} s${r.api.fatal ? `: ${r.api.fatal}` : ""}`
    : `API process alive throughout${r.api.restarts ? `, but restarted ${r.api.restarts} time(s)` : ", no restart"}`);
  if (r.safetyStop) out.push(`STOPPED: ${r.safetyStop}`);
  const b = r.victim.baseline;
  out.push(`A's receipt processed: baseline ${b ? wait(b, "receipt") : "-"}; during the attack ${rounds(r.victim.rounds, "receipt")}`);
  out.push(`A's webhook arrived:   baseline ${b ? wait(b, "webhook") : "-"}; during the attack ${rounds(r.victim.rounds, "webhook")}`);
  for (const [key, value] of Object.entries(r.attack)) out.push(`${key}: ${typeof value === "string" ? value : JSON.stringify(value)}`);
  if (r.attackError) out.push(`attack failed: ${r.attackError.split("\n")[0]}`);
  out.push("checks: " + Object.entries(r.checks).map(([k, v]) => `${k} ${v === null ? "n/a" : v ? "met" : "NOT met"}`).join("; "));
  out.push(`server log: ${r.logFile}`);
  console.log(out.join("\n"));
  console.log(JSON.stringify(r));
}

const row = (cells: string[]) => "  " + cells.map((c, i) => (i === 0 ? c.padEnd(22) : c.padStart(9))).join(" ");

function wait(round: Round, what: "receipt" | "webhook"): string {
  const done = what === "receipt" ? round.receiptMs : round.webhookMs;
  const waited = what === "receipt" ? round.receiptWaitedMs : round.webhookWaitedMs;
  const error = what === "receipt" ? round.receiptError : round.webhookError;
  const text = done !== null ? ms(done) : `not after ${ms(waited)}`;
  return error ? `${text} (${error.slice(0, 120)})` : text;
}

function rounds(list: Round[], what: "receipt" | "webhook"): string {
  if (list.length === 0) return "no round";
  return `${list.length} round(s): ` + list.map((r) => `${wait(r, what)} (started at ${r.startedAt.toFixed(0)} s)`).join(", ");
}
