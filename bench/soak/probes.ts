import { latency, type Latency } from "./stats.js";

/**
 * The tester's probe: `{ myOrganizations { id } }` for each organization every second, and
 * `GET /healthz` every second, each with a 30 s timeout, whatever the previous one is doing
 * (a frozen server piles them up, as it would real clients). Figures overall and per phase.
 */
export const PROBE_TIMEOUT_MS = 30_000;

interface Sample { target: string; at: number; ms: number; ok: boolean; timeout: boolean; unfinished: boolean; error?: string }

export interface ProbeFigures extends Latency { timeouts: number; errors: number; unfinished: number; firstError?: string }

export class Probes {
  private readonly samples: Sample[] = [];
  private readonly inFlight = new Map<number, { target: string; at: number; abort: AbortController }>();
  private readonly phases: { name: string; at: number }[] = [];
  private timer: NodeJS.Timeout | undefined;
  private nextId = 0;

  constructor(private readonly url: () => string, private readonly orgs: { name: string; apiKey: string }[]) {}

  start(): void {
    this.timer ??= setInterval(() => {
      for (const org of this.orgs) this.probe(org.name, (signal) => this.myOrganizations(org.apiKey, signal));
      this.probe("/healthz", (signal) => fetch(`${this.url()}/healthz`, { signal }).then((r) => { if (!r.ok) throw new Error(`HTTP ${r.status}`); return r.text(); }));
    }, 1000);
  }

  /** From now on, samples count towards phase `name` (and the overall figures). */
  phase(name: string): void {
    this.phases.push({ name, at: Date.now() });
  }

  /** Stops probing; a probe still waiting counts as unfinished, with the time it had waited. */
  stop(): void {
    clearInterval(this.timer);
    const now = Date.now();
    for (const { target, at, abort } of this.inFlight.values()) {
      abort.abort();
      this.samples.push({ target, at, ms: now - at, ok: false, timeout: false, unfinished: true });
    }
    this.inFlight.clear();
  }

  /** Per target (org names, /healthz): all phases, then each phase. */
  figures(): { overall: Record<string, ProbeFigures>; phases: Record<string, Record<string, ProbeFigures>> } {
    const targets = [...this.orgs.map((o) => o.name), "/healthz"];
    const of = (samples: Sample[]) => Object.fromEntries(targets.map((t) => [t, summarise(samples.filter((s) => s.target === t))]));
    const phases: Record<string, Record<string, ProbeFigures>> = {};
    this.phases.forEach((p, i) => {
      const end = this.phases[i + 1]?.at ?? Infinity;
      phases[p.name] = of(this.samples.filter((s) => s.at >= p.at && s.at < end));
    });
    return { overall: of(this.samples), phases };
  }

  private async myOrganizations(apiKey: string, signal: AbortSignal): Promise<void> {
    const res = await fetch(`${this.url()}/graphql`, {
      method: "POST", signal,
      headers: { "content-type": "application/json", authorization: `Bearer ${apiKey}` },
      body: JSON.stringify({ query: "{ myOrganizations { id } }" }),
    });
    const body = await res.json() as { errors?: { message: string }[] };
    if (!res.ok || body.errors) throw new Error(`HTTP ${res.status}${body.errors ? `: ${body.errors[0].message}` : ""}`);
  }

  private probe(target: string, send: (signal: AbortSignal) => Promise<unknown>): void {
    const id = this.nextId++;
    const abort = new AbortController();
    const at = Date.now();
    this.inFlight.set(id, { target, at, abort });
    const timer = setTimeout(() => abort.abort(), PROBE_TIMEOUT_MS);
    send(abort.signal).then(
      () => this.record(id, { target, at, ms: Date.now() - at, ok: true, timeout: false, unfinished: false }),
      (e: Error & { cause?: { code?: string; message?: string } }) => this.record(id, {
        target, at, ms: Date.now() - at, ok: false, timeout: abort.signal.aborted, unfinished: false,
        error: e.cause ? `${e.message}: ${e.cause.code ?? e.cause.message}` : e.message, // undici says "fetch failed" and why in cause
      }),
    ).finally(() => clearTimeout(timer));
  }

  private record(id: number, sample: Sample): void {
    if (!this.inFlight.delete(id)) return; // already counted as unfinished by stop()
    this.samples.push(sample);
  }
}

function summarise(samples: Sample[]): ProbeFigures {
  // A probe that timed out or was cut short took at least that long: it counts in the latencies.
  const figures = latency(samples.filter((s) => s.ok || s.timeout || s.unfinished).map((s) => s.ms));
  const errors = samples.filter((s) => !s.ok && !s.timeout && !s.unfinished);
  return {
    ...figures,
    timeouts: samples.filter((s) => s.timeout).length,
    errors: errors.length,
    unfinished: samples.filter((s) => s.unfinished).length,
    ...(errors[0]?.error ? { firstError: errors[0].error } : {}),
  };
}
