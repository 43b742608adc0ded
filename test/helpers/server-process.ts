import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";

/** The service as `npm start` runs it (tsx src/main.ts), in its own process group, logs captured. */
export interface ServerProcess {
  child: ChildProcess;
  url: string;
  dataDir: string;
  logs: () => string;
  exited: Promise<number | null>;
  /** SIGTERM, as an operator stops it; resolves with the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL to every process of the group (launcher and server): for a server that hangs. */
  kill(): void;
}

export function startServerProcess(env: Record<string, string>, timeoutMs = 60_000, launcher = true): Promise<ServerProcess> {
  const dataDir = env.DATA_DIR ?? mkdtempSync(path.join(os.tmpdir(), "accounting-data-"));
  return startProcess("src/main.ts", { PORT: "0", SMTP_PORT: "0", LOG_LEVEL: "debug", NODE_ENV: "production", DATA_DIR: dataDir, ...env },
    (out) => out.match(/"url":"(http:\/\/[^"]+)\/graphql"/)?.[1], timeoutMs, launcher,
  ).then(({ ready: url, child, ...p }) => ({ ...p, child, url, dataDir, stop: () => { child.kill("SIGTERM"); return p.exited; } }));
}

/** `npm run worker` (tsx worker/main.ts), in its own process group, logs captured. */
export interface WorkerProcess { child: ChildProcess; logs: () => string; exited: Promise<number | null>; kill(): void }

export function startWorkerProcess(env: Record<string, string>, timeoutMs = 60_000, launcher = true): Promise<WorkerProcess> {
  return startProcess("worker/main.ts", { GRAPHILE_ENV: "production", NODE_ENV: "production", LOG_LEVEL: "info", ...env },
    // Our log line once run() has returned, and graphile-worker's once it LISTENs for new jobs.
    (out) => out.includes('"msg":"worker started"') && out.includes("Worker connected and looking for jobs") || undefined, timeoutMs, launcher);
}

/**
 * A script in its own process group, ready once `ready` finds what it waits for in its output:
 * under the tsx launcher as `npm start` runs it, or, with `launcher` false, the pinned Node with
 * tsx's loader and no launcher between (the tsx launcher relays a signal, and kills its child
 * outright when the child has not acknowledged it within 30 ms twice: a test of signals on a busy
 * machine would measure that, not the service).
 */
function startProcess<R>(script: string, env: Record<string, string>, ready: (out: string) => R | undefined, timeoutMs: number, launcher: boolean) {
  let out = "";
  const child = spawn(path.resolve(launcher ? "node_modules/.bin/tsx" : "node_modules/.bin/node"), launcher ? [script] : ["--import", "tsx", script], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true, // its own process group, so that kill() reaches the process under the launcher
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const kill = () => {
    try {
      process.kill(-child.pid!, "SIGKILL");
    } catch {
      // already gone
    }
  };
  return new Promise<{ ready: R; child: ChildProcess; logs: () => string; exited: Promise<number | null>; kill(): void }>((resolve, reject) => {
    const timer = setTimeout(() => { kill(); reject(new Error(`${script} did not start:\n${out}`)); }, timeoutMs);
    const onData = (d: Buffer) => {
      out += d.toString();
      const found = ready(out);
      if (found !== undefined) {
        clearTimeout(timer);
        resolve({ ready: found, child, logs: () => out, exited, kill });
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.on("exit", () => { clearTimeout(timer); reject(new Error(`${script} exited:\n${out}`)); });
  });
}

/** POST a GraphQL document; `signal` bounds the wait. */
export function postGraphql(url: string, body: unknown, auth?: string, signal?: AbortSignal): Promise<Response> {
  return fetch(`${url}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(auth ? { authorization: auth } : {}) },
    body: JSON.stringify(body),
    signal,
  });
}
