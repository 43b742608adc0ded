import { chmodSync, existsSync, mkdirSync, mkdtempSync as mkdtemp, readFileSync, rmSync, writeFileSync } from "node:fs";
import { freePort } from "./helpers/ports.js";
import os from "node:os";
import path from "node:path";
import { spawn } from "node:child_process";
import pg from "pg";
import { recoverLeftoverPostmaster } from "../src/db/embedded.js";
import { afterAll, describe, expect, it, vi } from "vitest";
import { postGraphql, startServerProcess, type ServerProcess } from "./helpers/server-process.js";

/**
 * `npm start` with its embedded PostgreSQL, as an operator meets it: a crash and a restart, a
 * stop while a request is in flight, a database that cannot start.
 */
const dirs: string[] = [];
const servers: ServerProcess[] = [];
afterAll(() => {
  for (const s of servers) s.kill();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A data folder the OS user `postgres` can enter (the embedded server runs as it under root). */
function mkdtempSync(prefix: string): string {
  const dir = mkdtemp(prefix);
  chmodSync(dir, 0o755);
  return dir;
}

async function embeddedServer(dataDir: string, pgPort: number): Promise<ServerProcess> {
  const s = await startServerProcess({ DATA_DIR: dataDir, EMBEDDED_PG_PORT: String(pgPort), DATABASE_URL: "", WORKER: "off", LOG_LEVEL: "info" }, 120_000);
  servers.push(s);
  return s;
}

const ownerUrl = (dataDir: string, pgPort: number) =>
  `postgres://postgres:${encodeURIComponent(readFileSync(path.join(dataDir, "postgres-password"), "utf8").trim())}@127.0.0.1:${pgPort}/accounting`;

/** The postmaster of a data folder, while it runs. */
function postmasterPid(dataDir: string): number | undefined {
  const file = path.join(dataDir, "postgres", "postmaster.pid");
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, "utf8").split("\n")[0]);
  return existsSync(`/proc/${pid}`) ? pid : undefined;
}

/** The server process under the launcher (`tsx`): what `kill -9` of the running service hits. */
function serverPid(launcherPid: number): number {
  const children = readFileSync(`/proc/${launcherPid}/task/${launcherPid}/children`, "utf8").trim().split(/\s+/).map(Number);
  expect(children).toHaveLength(1);
  return children[0];
}

async function withOwner<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

describe("npm start with the embedded PostgreSQL", () => {
  it("comes back up with its data after kill -9 of the server while it serves", async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), "accounting-crash-"));
    dirs.push(dataDir);
    const pgPort = await freePort();
    const first = await embeddedServer(dataDir, pgPort);
    await withOwner(ownerUrl(dataDir, pgPort), (c) => c.query("select app_private.create_organization('Survives A Crash')"));
    const orphan = postmasterPid(dataDir)!;
    expect(orphan).toBeGreaterThan(0);

    process.kill(serverPid(first.child.pid!), "SIGKILL");
    await first.exited;
    expect(postmasterPid(dataDir)).toBe(orphan); // the database outlived the server, holding the folder

    const second = await embeddedServer(dataDir, pgPort);
    expect(second.logs()).toContain("stopping the embedded PostgreSQL an earlier start left running");
    const names = await withOwner(ownerUrl(dataDir, pgPort), (c) => c.query("select name from app_public.organizations"));
    expect(names.rows).toEqual([{ name: "Survives A Crash" }]);
    expect(await second.stop()).toBe(0);
    expect(postmasterPid(dataDir)).toBeUndefined();
  });

  it("stops itself and its database when its launcher is killed outright (kill -9 of npm start)", async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), "accounting-launcher-"));
    dirs.push(dataDir);
    const server = await embeddedServer(dataDir, await freePort());
    const serving = serverPid(server.child.pid!);
    expect(postmasterPid(dataDir)).toBeGreaterThan(0);
    process.kill(server.child.pid!, "SIGKILL"); // the launcher (tsx), as `kill -9` of `npm start` leaves it
    // Within the server's own shutdown deadline (STATEMENT_TIMEOUT_MS + 20 s), which a loaded
    // machine stopping PostgreSQL can come near.
    const started = Date.now();
    while (existsSync(`/proc/${serving}`) && Date.now() - started < 30_000) await new Promise((r) => setTimeout(r, 200));
    expect(existsSync(`/proc/${serving}`), `still running after ${Date.now() - started} ms; its log:\n${server.logs()}`).toBe(false);
    expect(postmasterPid(dataDir)).toBeUndefined();
  });

  it("SIGTERM lets the request in flight finish, then stops the server and, last, the database", async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), "accounting-stop-"));
    dirs.push(dataDir);
    const pgPort = await freePort();
    const server = await embeddedServer(dataDir, pgPort);
    const url = ownerUrl(dataDir, pgPort);
    const { org, key } = await withOwner(url, async (c) => {
      const { rows: [o] } = await c.query("select id from app_private.create_organization('Stops Cleanly')");
      const { rows: [k] } = await c.query("select app_private.create_api_key($1, 'k')->>'secret' as secret", [o.id]);
      return { org: o.id as string, key: `Bearer ${k.secret}` };
    });
    const created = await (await postGraphql(server.url, { query: `mutation { createLedgerEvent(organizationId: "${org}", merchantName: "Slow", amount: "5.00", transactionDate: "2026-11-01") { eventId } }` }, key)).json();
    const eventId = created.data.createLedgerEvent.eventId;

    // A slow request: the event's row is locked, so rejecting it waits.
    const locker = new pg.Client({ connectionString: url });
    await locker.connect();
    await locker.query("begin");
    await locker.query("select 1 from app_public.ledger_events where id = $1 for update", [eventId]);
    const inFlight = postGraphql(server.url, { query: `mutation { rejectLedgerEvent(organizationId: "${org}", eventId: "${eventId}") { success error } }` }, key);
    await new Promise((r) => setTimeout(r, 300));
    server.child.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 700));
    expect(postmasterPid(dataDir)).toBeGreaterThan(0); // still up while the request waits
    await locker.query("commit");
    await locker.end();

    expect(await (await inFlight).json()).toEqual({ data: { rejectLedgerEvent: { success: true, error: null } } });
    expect(await server.exited).toBe(0);
    // Written before it exited; read from its stdout a moment later, perhaps.
    await vi.waitFor(() => expect(server.logs()).toContain('"msg":"stopped"'), { timeout: 5000 });
    expect(postmasterPid(dataDir)).toBeUndefined();
  });

  it("never stops a process that is not the postmaster of its folder: a reused pid makes the pid file stale", async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), "accounting-stale-"));
    dirs.push(dataDir);
    mkdirSync(path.join(dataDir, "postgres"), { mode: 0o700 });
    // Looks like a postgres process, but is no postmaster of this folder.
    const other = spawn("sleep", ["30"], { argv0: "postgres: checkpointer" });
    try {
      writeFileSync(path.join(dataDir, "postgres", "postmaster.pid"), `${other.pid}\n${path.join(dataDir, "postgres")}\n`);
      await recoverLeftoverPostmaster(path.join(dataDir, "postgres"));
      expect(existsSync(path.join(dataDir, "postgres", "postmaster.pid"))).toBe(false);
      expect(other.exitCode).toBeNull();
      expect(other.signalCode).toBeNull();
    } finally {
      other.kill();
    }
  });

  it("says why when the database cannot start, and exits 1", async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), "accounting-broken-"));
    dirs.push(dataDir);
    // A data folder of a PostgreSQL version that does not exist.
    mkdirSync(path.join(dataDir, "postgres"), { mode: 0o700 });
    writeFileSync(path.join(dataDir, "postgres", "PG_VERSION"), "99\n");
    const start = startServerProcess({ DATA_DIR: dataDir, EMBEDDED_PG_PORT: String(await freePort()), DATABASE_URL: "", WORKER: "off", LOG_LEVEL: "info" });
    const error = await start.then(() => undefined, (e: Error) => e.message);
    expect(error).toContain('"msg":"cannot start"');
    expect(error).toContain("The embedded PostgreSQL in");
    expect(error).not.toContain("Cannot read properties of undefined");
  });
});
