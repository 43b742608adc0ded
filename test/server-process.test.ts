import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createTenant, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { postGraphql, startServerProcess, type ServerProcess } from "./helpers/server-process.js";

let h: Harness;
let t: Tenant;
let servers: ServerProcess[] = [];
beforeAll(async () => {
  h = await startHarness();
  t = await createTenant(h);
  servers = await Promise.all([1, 2].map(() => startServerProcess({ DATABASE_URL: h.databaseUrl, RATE_LIMIT_PER_HOUR: "4" })));
});
afterAll(async () => {
  for (const s of servers) s.kill();
  await h?.close();
});

const gql = (url: string, query: string, auth?: string) => postGraphql(url, { query }, auth);

describe("two server processes on one database", () => {
  it("share one rate-limit quota", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await gql(servers[i % 2].url, "{ myOrganizations { id } }", t.apiKey)).status);
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
  });

  it("an API key secret and a JWT appear nowhere in the logs or the database after use", async () => {
    const secret = t.apiKey.slice("Bearer ".length);
    const token = t.ownerJwt.slice("JWT ".length);
    const responses = [
      await gql(servers[0].url, "{ myOrganizations { id } }", t.ownerJwt),
      await gql(servers[1].url, "{ nope }", t.apiKey),
      await gql(servers[1].url, "{ myOrganizations { id } }", `Bearer ${secret.slice(0, -1)}x`),
    ];
    // Log lines are written in batches, within a quarter of a second (src/logger.ts): wait for
    // each of these requests' lines.
    const logs = await vi.waitFor(() => {
      const text = servers.map((s) => s.logs()).join("\n");
      for (const r of responses) expect(text).toContain(`"requestId":"${r.headers.get("x-request-id")}"`);
      return text;
    }, { timeout: 5000 });
    expect(logs).not.toContain(secret);
    expect(logs).not.toContain(secret.slice(5));
    expect(logs).not.toContain(token);
    const { rows: tables } = await h.owner.query(`
      select format('%I.%I', table_schema, table_name) as t from information_schema.tables
       where table_schema not in ('pg_catalog', 'information_schema') and table_type = 'BASE TABLE'`);
    for (const { t: table } of tables) {
      const { rows } = await h.owner.query(`select count(*)::int as n from ${table} x where x::text like $1 or x::text like $2`,
        [`%${secret.slice(5)}%`, `%${token}%`]);
      expect({ table, n: rows[0].n }).toEqual({ table, n: 0 });
    }
  });

  it("SIGTERM finishes the request in flight, then stops cleanly", async () => {
    const s = servers[0];
    const inFlight = gql(s.url, "{ myOrganizations { id } }", t.ownerJwt);
    await new Promise((r) => setTimeout(r, 5));
    s.child.kill("SIGTERM");
    expect((await inFlight).status).toBe(200);
    expect(await s.exited).toBe(0);
    // Written before it exited; read from its stdout a moment later, perhaps.
    await vi.waitFor(() => expect(s.logs()).toContain('"msg":"stopped"'), { timeout: 5000 });
    await expect(gql(s.url, "{ __typename }")).rejects.toThrow();
  });
});
