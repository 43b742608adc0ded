import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export interface CliRun { code: number; stdout: string; stderr: string; json: any }

/** The operator CLI as `npm run cli -- …` runs it, against the given database; `json` when --json. */
export async function runCli(databaseUrl: string, ...args: string[]): Promise<CliRun> {
  const json = args.includes("--json");
  try {
    const { stdout, stderr } = await run(path.resolve("node_modules/.bin/tsx"), ["src/cli/main.ts", ...args], {
      env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: "silent" },
    });
    return { code: 0, stdout, stderr, json: json ? JSON.parse(stdout) : undefined };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr, json: json && err.stdout ? JSON.parse(err.stdout) : undefined };
  }
}
