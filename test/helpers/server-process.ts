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

export function startServerProcess(env: Record<string, string>, timeoutMs = 60_000): Promise<ServerProcess> {
  let out = "";
  const dataDir = env.DATA_DIR ?? mkdtempSync(path.join(os.tmpdir(), "accounting-data-"));
  const child = spawn(path.resolve("node_modules/.bin/tsx"), ["src/main.ts"], {
    env: { ...process.env, PORT: "0", SMTP_PORT: "0", LOG_LEVEL: "debug", NODE_ENV: "production", DATA_DIR: dataDir, ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true, // its own process group, so that kill() reaches the server under the launcher
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const kill = () => {
    try {
      process.kill(-child.pid!, "SIGKILL");
    } catch {
      // already gone
    }
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { kill(); reject(new Error(`server did not start:\n${out}`)); }, timeoutMs);
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = out.match(/"url":"(http:\/\/[^"]+)\/graphql"/);
      if (m) {
        clearTimeout(timer);
        resolve({
          child, url: m[1], dataDir, logs: () => out, exited, kill,
          stop: () => { child.kill("SIGTERM"); return exited; },
        });
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.on("exit", () => { clearTimeout(timer); reject(new Error(`server exited:\n${out}`)); });
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
