import { execFileSync } from "node:child_process";
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { freePort } from "../support.js";
import { createSoakDatabase, migrateWithCurrent } from "./database.js";
import type { SoakOptions } from "./options.js";
import { ProcessWatch, type WatchedProcess } from "./processes.js";
import { Probes, type ProbeFigures } from "./probes.js";
import { printReport } from "./report.js";
import { startSoakServer, type SoakServer } from "./server.js";
import { mb } from "./stats.js";
import { createTenant, type Tenant } from "./tenants.js";
import { gql } from "./http.js";
import { Victim, type Round, type VictimFigures } from "./victim.js";

/**
 * One soak run: a fresh database, the service started with `npm start` from the checkout under
 * test, a victim organization A and an attacker B made with the CLI, probes and process sampling
 * throughout, a baseline round of A's receipt and webhook, then the scenario's attack for its
 * time while A keeps timing its receipts and webhooks. Everything started is stopped at the end,
 * the database dropped, and the figures printed as a table and one JSON line.
 */
export interface Scenario<P = unknown> {
  name: string;
  /** What the attack is, in one line (issue 32's item). */
  title: string;
  defaultSeconds: number;
  /** The run ends once the attack is done (and A's round in progress has ended), not at the time limit. */
  endWhenDone?: boolean;
  /** A's rounds start this long after the attack (default 5 s); null: the scenario starts them. */
  victimDelayMs?: number | null;
  /** Files and fakes the attack needs, made before the probes start (their cost is not the server's). */
  prepare?(ctx: SoakContext): Promise<P>;
  attack(ctx: SoakContext, prepared: P): Promise<AttackResult>;
}

export interface AttackResult {
  figures: Record<string, unknown>;
  /** The scenario's own targets from issue 32's "What it must show" (true: met). */
  checks?: Record<string, boolean | null>;
}

export interface SoakContext {
  root: string;
  options: SoakOptions;
  url: string;
  smtpPort: number;
  intakeSecret: string;
  /** A's active intake e-mail address. */
  intakeAddress: string;
  victim: Tenant;
  attacker: Tenant;
  /** Scratch folder of this run (removed at the end unless --keep). */
  tmpDir: string;
  /** The environment `npm start` and the CLI run with. */
  env: NodeJS.ProcessEnv;
  /** The owner's connection to the soaked database, for checks a client cannot make. */
  db: pg.Pool;
  /** When the attack's time is up (epoch ms). */
  endAt: number;
  /** Aborted when the time is up or the API process died. */
  signal: AbortSignal;
  phase(name: string): void;
  log(message: string): void;
  /** Waits `ms`, or less when the run ends. */
  sleep(ms: number): Promise<void>;
  /** Resolves when the run ends (at once if it has). */
  untilEnd(): Promise<void>;
  onCleanup(fn: () => unknown): void;
  /** Samples this process and its children too (a CLI run). */
  watchProcess(pid: number): void;
  /** `kill -9` of the API process, on purpose (not counted as a death). */
  killApi(): Promise<{ pid: number; leftovers: string[] }>;
  /** `npm start` again, same settings; resolves with the milliseconds until /readyz answered. */
  restart(): Promise<number>;
  startVictimRounds(delayMs?: number): void;
  jobs(): Promise<JobRow[]>;
}

export interface JobRow { id: string; task: string; payload: Record<string, unknown>; queue: string | null; attempts: number; maxAttempts: number; lockedAt: string | null; lockedBy: string | null; runAt: string; lastError: string | null }

export interface SoakResult {
  scenario: string;
  title: string;
  root: string;
  commit: string;
  startedAt: string;
  seconds: number;
  machine: { cpus: number; load1AtStart: number; load1AtEnd: number; memoryGb: number };
  startupS: number;
  probes: { overall: Record<string, ProbeFigures>; phases: Record<string, Record<string, ProbeFigures>> };
  processes: { label: string; pid: number; peakMb: number; firstSeenS: number; goneS: number | null }[];
  maxProcessMb: number;
  /** The API process's RSS every 10 s: [seconds since sampling began, MB]. */
  apiRssMb: [number, number][];
  api: { died: boolean; diedAtS: number | null; restarts: number; fatal: string | null; launcherExit: number | string | null };
  /** Why the run was cut short to protect the machine, if it was. */
  safetyStop?: string;
  victim: VictimFigures;
  attack: Record<string, unknown>;
  attackError?: string;
  checks: Record<string, boolean | null>;
  logFile: string;
}

/** Ctrl-C: the run in progress ends as if its time were up, and stops everything it started. */
export const interrupted = new AbortController();

const JWT_SECRET = "soak-jwt-secret";
const INTAKE_SECRET = "soak-intake-secret";
// The role is cluster-wide and every start sets its password: the tests' password, so that a soak
// beside a test run on the same PostgreSQL does not lock the tests' API connections out.
const AUTHENTICATOR_PASSWORD = process.env.AUTHENTICATOR_PASSWORD ?? "test-authenticator";
const GIGABYTE_KB = 1024 * 1024;
const LOG_DIR = path.join(os.tmpdir(), "soak-logs");

export async function runScenario<P>(scenario: Scenario<P>, options: SoakOptions): Promise<SoakResult> {
  const seconds = options.seconds ?? scenario.defaultSeconds;
  const root = options.root;
  const tmpDir = mkdtempSync(path.join(os.tmpdir(), `soak-${scenario.name}-`));
  // The server's log outlives the run's scratch folder: it says why a server died.
  mkdirSync(LOG_DIR, { recursive: true });
  const logFile = path.join(LOG_DIR, `${scenario.name}-${new Date().toISOString().replace(/\D/g, "").slice(0, 14)}.log`);
  const began = Date.now();
  const log = (message: string) => console.log(`[${scenario.name} ${((Date.now() - began) / 1000).toFixed(0).padStart(4)} s] ${message}`);
  const load1AtStart = os.loadavg()[0];
  const cleanups: (() => unknown)[] = [];
  const watch = new ProcessWatch();
  const ended = new AbortController();
  interrupted.signal.addEventListener("abort", () => ended.abort(), { once: true });
  const expectedDeaths = new Set<number>();
  let apiDeath: WatchedProcess | undefined;
  let safetyStop: string | undefined;
  let stopping = false;
  let deliberateRestarts = 0;
  let server: SoakServer | undefined;
  let probes: Probes | undefined;
  let victim: Victim | undefined;
  let db: pg.Pool | undefined;
  let startupMs = 0;
  let attack: AttackResult | undefined;
  let attackError: string | undefined;
  let launcherExit: number | string | null = null;

  log(`root ${root} (${commitOf(root)}), ${seconds} s, log ${logFile}`);
  const database = await createSoakDatabase();
  try {
    if (options.migrateCurrent) await migrateWithCurrent(root, database.url);
    const port = await freePort();
    const smtpPort = await freePort();
    const env: NodeJS.ProcessEnv = {
      ...process.env, DATABASE_URL: database.url, PORT: String(port), SMTP_PORT: String(smtpPort), HOST: "127.0.0.1",
      OUTBOUND_ALLOW_LOOPBACK: "1", MAILBOX_SCAN_INTERVAL: "1m", CLOUD_DRIVE_SCAN_INTERVAL: "1m",
      JWT_SECRET, INTAKE_SECRET, AUTHENTICATOR_PASSWORD, DATA_DIR: path.join(tmpDir, "data"),
      NODE_ENV: "production", GRAPHILE_ENV: "production", LOG_LEVEL: "info",
    };
    const start = async () => {
      const t = Date.now();
      server = await startSoakServer(root, env, logFile, port);
      watch.watch(server.launcher.pid!);
      return Date.now() - t;
    };
    startupMs = await start();
    log(`npm start ready in ${(startupMs / 1000).toFixed(1)} s at ${server!.url}, SMTP ${smtpPort}`);
    db = new pg.Pool({ connectionString: database.url, max: 2 });

    const [victimOrg, attackerOrg] = await Promise.all([
      createTenant(root, env, "Soak Victim A", "owner-a@soak.test"),
      createTenant(root, env, "Soak Attacker B", "owner-b@soak.test"),
    ]);
    const intakeAddress = "receipts-a@intake.soak.test";
    const made = await gql(server!.url, victimOrg.keyAuth,
      `mutation($o: UUID!, $a: String!) { createIntakeAddress(organizationId: $o, addressType: "email", address: $a) { success error } }`,
      { o: victimOrg.id, a: intakeAddress });
    if (!made.createIntakeAddress.success) throw new Error(`intake address: ${made.createIntakeAddress.error}`);
    victim = new Victim(() => server!.url, victimOrg);
    await victim.setup();
    log("organizations A (victim) and B (attacker), keys, JWTs, A's webhook and intake address made");

    const ctx: SoakContext = {
      root, options, get url() { return server!.url; }, smtpPort, intakeSecret: INTAKE_SECRET, intakeAddress,
      victim: victimOrg, attacker: attackerOrg, tmpDir, env, db, endAt: Infinity, signal: ended.signal,
      phase: (name) => { probes?.phase(name); log(`phase: ${name}`); },
      log,
      sleep: (ms) => new Promise((resolve) => {
        if (ended.signal.aborted) return resolve();
        const timer = setTimeout(resolve, ms);
        ended.signal.addEventListener("abort", () => { clearTimeout(timer); resolve(); }, { once: true });
      }),
      untilEnd: () => new Promise((resolve) => {
        if (ended.signal.aborted) return resolve();
        ended.signal.addEventListener("abort", () => resolve(), { once: true });
      }),
      onCleanup: (fn) => cleanups.push(fn),
      watchProcess: (pid) => watch.watch(pid),
      killApi: async () => {
        watch.sample();
        const api = watch.api();
        if (!api) throw new Error("no API process to kill");
        expectedDeaths.add(api.pid);
        process.kill(api.pid, "SIGKILL");
        await new Promise((r) => setTimeout(r, 2_000));
        watch.sample();
        return { pid: api.pid, leftovers: watch.alive().map((p) => `${p.label} ${p.pid}`) };
      },
      restart: async () => {
        // Nothing the killed server left running is ended here (a child still holding its job's
        // lock is a finding): only its launcher, npm, if it outlived it. All is killed at the end.
        const old = server!;
        await Promise.race([old.exited, new Promise((r) => setTimeout(r, 10_000))]);
        if (old.launcher.exitCode === null && old.launcher.signalCode === null) old.launcher.kill("SIGKILL");
        launcherExit = await old.exited;
        deliberateRestarts++;
        return start();
      },
      startVictimRounds: (delayMs = 0) => victim!.startRounds(delayMs, ctx.endAt),
      jobs: () => jobsOf(db!),
    };

    const prepared = scenario.prepare ? await scenario.prepare(ctx) : (undefined as P);
    watch.start();
    watch.whenGone((p) => {
      if (p.label !== "API" || expectedDeaths.has(p.pid) || apiDeath || stopping) return;
      apiDeath = p;
      log(`the API process ${p.pid} died`);
      // A crash is the result: a few seconds more to see whether anything starts it again.
      setTimeout(() => ended.abort(), 5_000);
    });
    const safety = setInterval(() => {
      const over = watch.processes().find((p) => p.gone === null && p.peakKb > options.maxRssGb * GIGABYTE_KB);
      if (!over || safetyStop) return;
      safetyStop = `${over.label} ${over.pid} reached ${mb(over.peakKb).toLocaleString("en-US")} MB (over --max-rss-gb ${options.maxRssGb}): the run was stopped there`;
      log(safetyStop);
      stopping = true; // the kill below is ours, not a death
      // At once: the process may grow by gigabytes in the seconds the rest of the ending takes.
      void server?.stop(0);
      ended.abort();
    }, 500);
    cleanups.push(() => clearInterval(safety));
    probes = new Probes(() => server!.url, [{ name: "A", apiKey: victimOrg.apiKey }, { name: "B", apiKey: attackerOrg.apiKey }]);
    probes.start();
    ctx.phase("baseline");
    await ctx.sleep(3_000);
    const baseline = await victim.baseline();
    log(`baseline: A's receipt ${fmtMs(baseline.receiptMs)}, webhook ${fmtMs(baseline.webhookMs)}`);

    ctx.phase("attack");
    ctx.endAt = Date.now() + seconds * 1000;
    const timeUp = setTimeout(() => ended.abort(), seconds * 1000);
    victim.markAttackStart();
    if (scenario.victimDelayMs !== null) ctx.startVictimRounds(scenario.victimDelayMs ?? 5_000);
    const attacking = scenario.attack(ctx, prepared).then(
      (result) => { attack = result; },
      (e: Error) => { attackError = e.stack ?? e.message; log(`attack failed: ${e.message}`); },
    );
    const endedPromise = ctx.untilEnd();
    if (scenario.endWhenDone) {
      await Promise.race([attacking, endedPromise]);
      while (victim.busy() && !ended.signal.aborted) await ctx.sleep(500);
      ended.abort();
    }
    await endedPromise;
    clearTimeout(timeUp);
    // The attack's own bookkeeping (a last status read) may take a moment once the time is up.
    await Promise.race([attacking, new Promise((r) => setTimeout(r, 15_000))]);
  } finally {
    stopping = true;
    probes?.stop();
    await victim?.stop().catch(() => undefined);
    // The attack's fakes first (idle sessions would hold the server's shutdown), then the server.
    for (const fn of cleanups.reverse()) await Promise.resolve().then(fn).catch(() => undefined);
    if (server) {
      if (server.launcher.exitCode !== null || server.launcher.signalCode !== null) launcherExit = await server.exited;
      // Past the safety limit the server is not given a graceful stop: it is killed at once.
      await server.stop(safetyStop ? 0 : 40_000).catch(() => undefined);
    }
    watch.stop();
    for (const p of watch.alive()) kill(p);
    await db?.end().catch(() => undefined);
    if (!options.keep) await database.drop().catch((e: Error) => log(`could not drop ${database.name}: ${e.message}`));
  }

  const processes = watch.processes().map((p) => ({ label: p.label, pid: p.pid, peakMb: mb(p.peakKb), firstSeenS: round1(p.firstSeen), goneS: p.gone === null ? null : round1(p.gone) }));
  const apis = watch.processes().filter((p) => p.label === "API");
  const probeFigures = probes!.figures();
  const victimFigures = victim!.figures();
  const maxKb = Math.max(0, ...watch.processes().map((p) => p.peakKb));
  const attackRounds = victimFigures.rounds;
  // A round the end of the run cut short before it had waited 10 s neither meets nor misses.
  const within10s = (done: (r: Round) => number | null, waited: (r: Round) => number | undefined) => {
    const judged = attackRounds.filter((r) => done(r) !== null || (waited(r) ?? 0) >= 10_000);
    return judged.length === 0 ? null : judged.every((r) => done(r) !== null && done(r)! <= 10_000);
  };
  const probeP99 = Math.max(...["A", "B"].map((t) => probeFigures.overall[t].p99 ?? 0));
  const result: SoakResult = {
    scenario: scenario.name,
    title: scenario.title,
    root,
    commit: commitOf(root),
    startedAt: new Date(began).toISOString(),
    seconds,
    machine: { cpus: os.cpus().length, load1AtStart: round1(load1AtStart), load1AtEnd: round1(os.loadavg()[0]), memoryGb: Math.round(os.totalmem() / 2 ** 30) },
    startupS: round1(startupMs / 1000),
    probes: probeFigures,
    processes,
    maxProcessMb: mb(maxKb),
    apiRssMb: watch.apiTimeline,
    api: {
      died: apiDeath !== undefined,
      diedAtS: apiDeath?.gone ?? null,
      restarts: Math.max(0, apis.length - 1 - deliberateRestarts),
      fatal: fatalLine(logFile),
      launcherExit,
    },
    ...(safetyStop ? { safetyStop } : {}),
    victim: victimFigures,
    attack: attack?.figures ?? {},
    ...(attackError ? { attackError } : {}),
    checks: {
      probeP99Under1500ms: probeP99 < 1500,
      noProcessOver1GB: maxKb <= GIGABYTE_KB,
      apiNeverDiedOrRestarted: apiDeath === undefined && apis.length - 1 - deliberateRestarts <= 0,
      victimReceiptWithin10s: within10s((r) => r.receiptMs, (r) => r.receiptWaitedMs),
      victimWebhookWithin10s: within10s((r) => r.webhookMs, (r) => r.webhookWaitedMs),
      ...attack?.checks,
    },
    logFile,
  };
  if (!options.keep) rmSync(tmpDir, { recursive: true, force: true });
  printReport(result);
  if (options.out) appendFileSync(options.out, JSON.stringify(result) + "\n");
  return result;
}

function kill(p: WatchedProcess): void {
  try {
    process.kill(p.pid, "SIGKILL");
  } catch {
    // gone meanwhile
  }
}

async function jobsOf(db: pg.Pool): Promise<JobRow[]> {
  // graphile-worker's public view has no payload: its private tables have (a job is found by its receipt).
  const { rows } = await db.query(`select j.id::text, t.identifier as task, j.payload, q.queue_name as queue, j.attempts,
      j.max_attempts as "maxAttempts", j.locked_at as "lockedAt", j.locked_by as "lockedBy", j.run_at as "runAt", j.last_error as "lastError"
    from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
    left join graphile_worker._private_job_queues q on q.id = j.job_queue_id order by j.id`);
  return rows.map((r) => ({ ...r, lastError: r.lastError?.slice(0, 300) ?? null }));
}

/** The checkout's commit, with `+changes` when its work tree differs from it. */
function commitOf(root: string): string {
  try {
    const commit = execFileSync("git", ["-C", root, "rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
    const dirty = execFileSync("git", ["-C", root, "status", "--porcelain", "--untracked-files=no"], { encoding: "utf8" }).trim() !== "";
    return dirty ? `${commit}+changes` : commit;
  } catch {
    return "unknown";
  }
}

/** The log line that says why the server died (V8's out-of-memory report, a fatal log line). */
function fatalLine(logFile: string): string | null {
  let text: string;
  try {
    text = readFileSync(logFile, "utf8");
  } catch {
    return null;
  }
  const line = text.split("\n").find((l) => /heap out of memory|FATAL ERROR|"level":60|Maximum call stack/.test(l));
  return line ? line.slice(0, 300) : null;
}

const round1 = (n: number) => Math.round(n * 10) / 10;
const fmtMs = (v: number | null) => (v === null ? "not by the end" : `${(v / 1000).toFixed(1)} s`);
