import { existsSync, readFileSync } from "node:fs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startHarness, type Harness } from "./helpers/harness.js";
import { startServerProcess, type ServerProcess } from "./helpers/server-process.js";
import { until } from "./helpers/until.js";

/**
 * `npm start` runs its worker in a child process: a worker that dies is replaced and the API goes
 * on serving; the API gone, even killed outright, the worker goes too.
 */
let h: Harness;
let server: ServerProcess | undefined;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  server?.kill();
  await h?.close();
});

const childrenOf = (pid: number): number[] => {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
};
const commandOf = (pid: number) => (existsSync(`/proc/${pid}`) ? readFileSync(`/proc/${pid}/cmdline`, "utf8") : "");
const alive = (pid: number) => existsSync(`/proc/${pid}`) && !/^\S+\s+\S+\s+Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8").replace(/\(.*\)/, "x"));
/** The server under the launcher (tsx), and its worker child. */
function processes(launcher: number): { api: number; worker: number | undefined } {
  const [api] = childrenOf(launcher);
  return { api, worker: childrenOf(api).find((pid) => commandOf(pid).includes("worker/main")) };
}


it("replaces a worker killed outright while the API serves, and takes the worker along when the API is killed", async () => {
  server = await startServerProcess({ DATABASE_URL: h.databaseUrl, LOG_LEVEL: "info", WORKER: "on" });
  const launcher = server.child.pid!;
  const { api, worker: first } = await until("the worker process", () => { const p = processes(launcher); return p.worker ? p : undefined; });
  await until("the worker started", () => server!.logs().includes('"msg":"worker started"'));

  process.kill(first!, "SIGKILL");
  const second = await until("a new worker process", () => { const w = processes(launcher).worker; return w && w !== first ? w : undefined; });
  expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
  expect(server.logs()).toContain('"msg":"worker process died; restarting it"');

  process.kill(api, "SIGKILL");
  await until("the worker gone with its parent", () => !alive(second), 15_000).catch((e) => { throw new Error(e.message + server!.logs().slice(-3000)); });
});
