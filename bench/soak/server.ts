import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, openSync } from "node:fs";

/**
 * The service as a user starts it: `npm start` in the checkout `root`, in a process group of its
 * own (so that whatever it leaves behind can be found), its stdout and stderr appended to `logFile`
 * (V8's "heap out of memory" goes to stderr).
 */
export interface SoakServer {
  url: string;
  launcher: ChildProcess;
  /** Resolves with the launcher's exit code (or its signal's name). */
  exited: Promise<number | string | null>;
  /** SIGTERM as an operator stops it; SIGKILL to its process group after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

export async function startSoakServer(root: string, env: NodeJS.ProcessEnv, logFile: string, port: number): Promise<SoakServer> {
  const log = openSync(logFile, "a");
  const launcher = spawn("npm", ["start", "--silent"], { cwd: root, env, stdio: ["ignore", log, log], detached: true });
  closeSync(log);
  const exited = new Promise<number | string | null>((resolve) => launcher.on("exit", (code, signal) => resolve(code ?? signal)));
  const url = `http://127.0.0.1:${port}`;
  const stop = async (graceMs = 40_000) => {
    if (launcher.exitCode !== null || launcher.signalCode !== null) return;
    launcher.kill("SIGTERM");
    const timer = setTimeout(() => killGroup(launcher), graceMs);
    await exited;
    clearTimeout(timer);
  };
  // A loaded machine and a first start that compiles TypeScript and migrates: up to 3 minutes.
  const readyBy = Date.now() + 180_000;
  while (Date.now() < readyBy) {
    if (launcher.exitCode !== null || launcher.signalCode !== null) throw new Error(`npm start exited (${await exited}) before it was ready; see ${logFile}`);
    const ready = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(5_000) }).then((r) => r.ok, () => false);
    if (ready) return { url, launcher, exited, stop };
    await new Promise((r) => setTimeout(r, 250));
  }
  killGroup(launcher);
  throw new Error(`npm start was not ready within 180 s; see ${logFile}`);
}

/** SIGKILL to the launcher's whole process group (npm, tsx, the server, its children). */
function killGroup(launcher: ChildProcess): void {
  try {
    process.kill(-launcher.pid!, "SIGKILL");
  } catch {
    // already gone
  }
}
