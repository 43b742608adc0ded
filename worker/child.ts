import { type ChildProcess, fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { logger } from "../src/logger.js";
import { typescriptChildExecArgv } from "../src/typescript-child.js";

/**
 * `npm start`'s worker, in a child process of the API (`worker/main.ts`, as `npm run worker` runs
 * it): what background work reads comes from tenants' servers and senders, and a runaway there
 * (a heap blown by a hostile server, a parser stuck on a crafted file) must end the worker, never
 * the API. The child has a heap of its own, is restarted when it dies (after 1 s, doubling to
 * 30 s while it keeps dying young), and the jobs it held are run again by the next one once its
 * heartbeat is missed (worker/run.ts). It ends when this process ends, even killed outright:
 * it leaves when its IPC channel closes.
 */

/** The worker's V8 heap: its jobs hold at most a message or a file of 25 MB at a time. */
export const WORKER_HEAP_MB = 768;
/** A graceful stop of the child (jobs in flight finish or are released) may take this long. */
const STOP_GRACE_MS = 15_000;
const RESTART_FIRST_MS = 1_000;
const RESTART_MAX_MS = 30_000;
/** A child that ran this long died of something new: restart it at once again. */
const HEALTHY_AFTER_MS = 60_000;

const ENTRY = fileURLToPath(new URL(import.meta.url.endsWith(".ts") ? "./main.ts" : "./main.js", import.meta.url));

export interface WorkerChild {
  /** The current child's pid, if one is running. */
  pid(): number | undefined;
  stop(): Promise<void>;
}

export function startWorkerChild(env: NodeJS.ProcessEnv): WorkerChild {
  let child: ChildProcess | undefined;
  let stopping = false;
  let wait = RESTART_FIRST_MS;
  let restartTimer: NodeJS.Timeout | undefined;

  const start = () => {
    const startedAt = Date.now();
    const proc = child = fork(ENTRY, [], {
      env,
      execArgv: typescriptChildExecArgv(ENTRY, WORKER_HEAP_MB),
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    proc.on("error", (err) => logger.error({ err: { message: err.message } }, "worker process error"));
    proc.once("exit", (code, signal) => {
      if (child === proc) child = undefined;
      if (stopping) return;
      wait = Date.now() - startedAt > HEALTHY_AFTER_MS ? RESTART_FIRST_MS : wait;
      logger.error({ code, signal, restartInMs: wait }, "worker process died; restarting it");
      restartTimer = setTimeout(start, wait);
      wait = Math.min(wait * 2, RESTART_MAX_MS);
    });
  };
  start();

  return {
    pid: () => child?.pid,
    async stop() {
      stopping = true;
      clearTimeout(restartTimer);
      const proc = child;
      if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
      // A message, not a signal: the child ignores the signals a terminal or service manager sends to the whole group.
      if (proc.connected) proc.send("stop", () => undefined);
      else proc.kill("SIGTERM");
      const timer = setTimeout(() => proc.kill("SIGKILL"), STOP_GRACE_MS);
      await exited;
      clearTimeout(timer);
    },
  };
}
