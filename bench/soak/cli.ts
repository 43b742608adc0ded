import { spawn } from "node:child_process";

/** The operator CLI as README shows it: `npm run cli -- <command> …` in the checkout `root`. */
export interface CliRun { code: number | null; signal: string | null; stdout: string; stderr: string; ms: number; timedOut: boolean }

const KEEP_BYTES = 64 * 1024;

export function runCli(root: string, env: NodeJS.ProcessEnv, args: string[],
    options: { timeoutMs?: number; onStart?: (pid: number) => void } = {}): Promise<CliRun> {
  const started = performance.now();
  // Its own process group, so that a run past its time is stopped whole (npm, tsx, the CLI).
  const child = spawn("npm", ["run", "--silent", "cli", "--", ...args], { cwd: root, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  options.onStart?.(child.pid!);
  let stdout = "";
  let stderr = "";
  // The head of each stream is enough to read an answer or an error; a stack of megabytes is not kept.
  child.stdout!.on("data", (d: Buffer) => { if (stdout.length < KEEP_BYTES) stdout += d.toString(); });
  child.stderr!.on("data", (d: Buffer) => { if (stderr.length < KEEP_BYTES) stderr += d.toString(); });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    try { process.kill(-child.pid!, "SIGKILL"); } catch { /* gone */ }
  }, options.timeoutMs ?? 120_000);
  return new Promise((resolve) => child.on("close", (code, signal) => {
    clearTimeout(timer);
    resolve({ code, signal, stdout, stderr, ms: performance.now() - started, timedOut });
  }));
}

/** A command run with `--json` whose answer is needed: its JSON object, or an error saying why not. */
export async function cliJson<T = any>(root: string, env: NodeJS.ProcessEnv, args: string[]): Promise<T> {
  const run = await runCli(root, env, [...args, "--json"]);
  const line = run.stdout.trim().split("\n").pop() ?? "";
  let answer: any;
  try { answer = JSON.parse(line); } catch { /* below */ }
  if (run.code !== 0 || !answer || answer.error) {
    throw new Error(`cli ${args[0]} failed (exit ${run.code}): ${answer?.error ?? (run.stderr || run.stdout).slice(0, 500)}`);
  }
  return answer as T;
}
