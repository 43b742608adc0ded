import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConnectionShare, tenantsOf } from "../src/db/connection-share.js";
import { Callers, requestWithPgClient } from "../src/db/caller.js";
import { literalSql, settingsStatement, sqlLiteral } from "../src/db/sql-text.js";
import { RequestTimeout, TIMEOUT_MESSAGE } from "../src/db/sql-errors.js";
import { requestCall, runCall } from "../plugins/sql-operations.js";
import { createTenant, dataOf, errorOf, startHarness, type Harness, type Tenant } from "./helpers/harness.js";

/**
 * No request can hold the service: a time budget per request (STATEMENT_TIMEOUT_MS), one
 * connection at a time per request, and a fair share of the pool per organization. A table lock taken by the owner stands in for a heavy query: it holds API statements
 * for as long as the test wants, and pg_stat_activity shows how many connections wait on it.
 */
let h: Harness;
let a: Tenant;
let b: Tenant;
const TIMEOUT = 1500;
beforeAll(async () => {
  h = await startHarness({ statementTimeoutMs: TIMEOUT, rateLimitPerHour: 1_000_000 });
  a = await createTenant(h);
  b = await createTenant(h);
});
afterAll(async () => {
  await h?.close();
});

/** Holds an exclusive lock on the ledger until the returned function is called. */
async function lockLedger(): Promise<() => Promise<void>> {
  const client: pg.PoolClient = await h.owner.connect();
  await client.query("begin");
  await client.query("lock table app_public.ledger_events in access exclusive mode");
  return async () => {
    await client.query("rollback");
    client.release();
  };
}

/** API connections waiting on a lock right now. */
async function waitingApiConnections(): Promise<number> {
  const { rows } = await h.owner.query(`select count(*)::int as n from pg_stat_activity
     where usename = 'accounting_authenticator' and wait_event_type = 'Lock' and datname = current_database()`);
  return rows[0].n;
}

/** The most connections seen waiting while `work` runs. */
async function peakWaiting(work: PromiseLike<unknown>): Promise<number> {
  let peak = 0;
  let done = false;
  void Promise.resolve(work).finally(() => { done = true; });
  while (!done) {
    peak = Math.max(peak, await waitingApiConnections());
    await new Promise((r) => setTimeout(r, 20));
  }
  return peak;
}

const LIST = "query($o: UUID!) { listLedgerEvents(organizationId: $o) { totalCount } }";
const CREATE = `mutation($o: UUID!) { createLedgerEvent(organizationId: $o, merchantName: "Blocked", amount: "1.00", transactionDate: "2026-01-02") { success error eventId } }`;

describe("a request that takes too long", () => {
  it("is a BAD_USER_INPUT error with a clear message in a query", async () => {
    const unlock = await lockLedger();
    try {
      const started = Date.now();
      const res = await h.gql(LIST, { o: a.organizationId }, a.apiKey);
      expect(errorOf(res)).toEqual({ message: TIMEOUT_MESSAGE, code: "BAD_USER_INPUT" });
      expect(Date.now() - started).toBeLessThan(TIMEOUT + 1000);
    } finally {
      await unlock();
    }
  });

  it("is success: false in a mutation, and nothing is written", async () => {
    const unlock = await lockLedger();
    try {
      const res = await h.gql(CREATE, { o: a.organizationId }, a.apiKey);
      expect(dataOf(res, "createLedgerEvent")).toEqual({ success: false, error: TIMEOUT_MESSAGE, eventId: null });
    } finally {
      await unlock();
    }
    const { rows } = await h.owner.query("select count(*)::int as n from app_public.ledger_events where merchant_name = 'Blocked'");
    expect(rows[0].n).toBe(0);
  });

  it("is not replayed for the same Idempotency-Key: the retry runs", async () => {
    const unlock = await lockLedger();
    try {
      const res = await h.gql(CREATE, { o: a.organizationId }, a.apiKey, { "Idempotency-Key": "retry-after-timeout" });
      expect(dataOf(res, "createLedgerEvent")).toMatchObject({ success: false, error: TIMEOUT_MESSAGE });
    } finally {
      await unlock();
    }
    await new Promise((r) => setTimeout(r, 100)); // the claim is released after the response
    const retry = await h.gql(CREATE, { o: a.organizationId }, a.apiKey, { "Idempotency-Key": "retry-after-timeout" });
    expect(retry.headers["idempotent-replayed"]).toBeUndefined();
    expect(dataOf(retry, "createLedgerEvent")).toMatchObject({ success: true });
    const replay = await h.gql(CREATE, { o: a.organizationId }, a.apiKey, { "Idempotency-Key": "retry-after-timeout" });
    expect(replay.headers["idempotent-replayed"]).toBe("true");
    await h.owner.query("delete from app_public.ledger_events where merchant_name = 'Blocked'");
  });

  it("is one budget for the whole request: twenty aliases wait on one connection, not twenty, and not twenty times", async () => {
    const aliases = Array.from({ length: 20 }, (_, i) => `l${i}: listLedgerEvents(organizationId: $o) { totalCount }`).join(" ");
    const unlock = await lockLedger();
    try {
      const started = Date.now();
      const res = h.gql(`query($o: UUID!) { ${aliases} }`, { o: a.organizationId }, a.apiKey);
      expect(await peakWaiting(res)).toBe(1);
      const body = (await res).body;
      expect(Date.now() - started).toBeLessThan(TIMEOUT + 1000);
      // Non-null root fields: the first failure nulls the whole response.
      expect(body.data).toBeNull();
      for (const e of body.errors) expect(e).toMatchObject({ message: TIMEOUT_MESSAGE, extensions: { code: "BAD_USER_INPUT" } });
      // Still one request as far as the rate limit is concerned.
      const after = await h.gql("{ myOrganizations { id } }", {}, a.apiKey);
      const remaining = Number(after.headers["x-ratelimit-remaining"]);
      const again = await h.gql("{ myOrganizations { id } }", {}, a.apiKey);
      expect(Number(again.headers["x-ratelimit-remaining"])).toBe(remaining - 1);
    } finally {
      await unlock();
    }
  });
});

describe("a fair share of the pool per organization", () => {
  it("holds one organization to a quarter of the pool, API keys and JWT sessions (with or without X-Organization-Id) together, while another is served at once", async () => {
    const share = Math.max(2, Math.floor(h.config.apiPoolSize / 4));
    const unlock = await lockLedger();
    let heavy: Promise<unknown>;
    try {
      const requests = [
        ...Array.from({ length: 6 }, () => h.gql(LIST, { o: a.organizationId }, a.apiKey)),
        ...Array.from({ length: 3 }, () => h.gql(LIST, { o: a.organizationId }, a.ownerJwt, { "X-Organization-Id": a.organizationId })),
        // Without the header: the organization the operation names is still the share it draws on.
        ...Array.from({ length: 3 }, () => h.gql(LIST, { o: a.organizationId }, a.ownerJwt)),
      ];
      heavy = Promise.all(requests);
      await new Promise((r) => setTimeout(r, 300));
      const peak = peakWaiting(new Promise((r) => setTimeout(r, 400)));
      const started = Date.now();
      const other = await h.gql("{ myOrganizations { id } }", {}, b.apiKey);
      expect(Date.now() - started).toBeLessThan(200);
      expect(dataOf(other, "myOrganizations")).toEqual([{ id: b.organizationId }]);
      expect(await peak).toBe(share);
    } finally {
      await new Promise((r) => setTimeout(r, 200));
      await unlock();
    }
    // The ones that waited their turn within the budget are answered once the lock is gone.
    const answers = (await heavy) as { body: { data: unknown; errors?: unknown } }[];
    expect(answers.every((r) => r.body.errors === undefined)).toBe(true);
  });
});

describe("requestWithPgClient", () => {
  it("gives a transaction what is left of the budget once it holds a connection, the pool's wait included", async () => {
    const share = new ConnectionShare(2);
    // Stands in for the adaptor: waits 300 ms for a pool connection, then hands over a client
    // that records what it is sent.
    const sent: string[] = [];
    let handedOver = 0;
    const adaptor = (async (_settings: unknown, callback: (c: unknown) => unknown) => {
      await new Promise((r) => setTimeout(r, 300));
      handedOver = Date.now();
      return callback({ query: async ({ text }: { text: string }) => { sent.push(text); return { rows: [] }; } });
    }) as any;
    const withPgClient = requestWithPgClient(adaptor, share, ["t"], 1000, { role: "x", "app.note": "it's" });
    const started = Date.now();
    expect(await withPgClient({ role: "x", "app.note": "it's" }, async () => "done")).toBe("done");
    // One round trip begins the transaction and makes the settings (quotes doubled), then commit.
    expect(sent[0]).toMatch(/^begin; select set_config\('role', 'x', true\), set_config\('app.note', 'it''s', true\), set_config\('statement_timeout', '\d+', true\)$/);
    expect(sent.slice(1)).toEqual(["commit"]);
    const timeout = Number(/'statement_timeout', '(\d+)'/.exec(sent[0])![1]);
    // What was left when the connection came (however late a loaded machine ran the timer).
    const left = 1000 - (handedOver - started);
    expect(left).toBeLessThan(720); // the 300 ms wait counted (timers may fire a millisecond early)
    expect(timeout).toBeLessThanOrEqual(left + 5);
    expect(timeout).toBeGreaterThan(left - 100);

    // A backslash is escaped however standard_conforming_strings is set.
    expect(settingsStatement({ a: "x\\y'z" })).toBe("select set_config('a', E'x\\\\y''z', true)");

    // A failure rolls back and is the caller's.
    sent.length = 0;
    await expect(withPgClient({ role: "x" }, async () => { throw new Error("no"); })).rejects.toThrow("no");
    expect(sent.slice(1)).toEqual(["rollback"]);

    // A transaction asked for inside is a savepoint of ours.
    sent.length = 0;
    await withPgClient({ role: "x" }, (c: any) => c.withTransaction(async () => "inner"));
    expect(sent.slice(1)).toEqual(["savepoint tx1", "release savepoint tx1", "commit"]);
  });

  it("rolls back when the settings statement itself fails, so the connection goes back clean", async () => {
    const sent: string[] = [];
    const adaptor = (async (_settings: unknown, callback: (c: unknown) => unknown) => callback({
      query: async ({ text }: { text: string }) => {
        sent.push(text);
        if (text.startsWith("begin;")) throw new Error("role does not exist");
        return { rows: [] };
      },
    })) as any;
    const withPgClient = requestWithPgClient(adaptor, new ConnectionShare(2), ["t"], 1000, { role: "gone" });
    await expect(withPgClient({ role: "gone" }, async () => "never")).rejects.toThrow("role does not exist");
    expect(sent.slice(1)).toEqual(["rollback"]);
  });

  it("sends a statement with its begin, settings and commit in one round trip, and rolls back when it fails", async () => {
    const sent: string[] = [];
    let fail = false;
    const rawClient = {
      query: async (text: string) => {
        sent.push(text);
        if (fail && text.startsWith("begin;")) throw new Error("function failed");
        return [{ rows: [] }, { rows: [{}] }, { rows: [{ result: { ok: true } }] }, { rows: [], command: "COMMIT" }];
      },
    };
    const adaptor = (async (_settings: unknown, callback: (c: unknown) => unknown) => callback({ rawClient })) as any;
    const withPgClient = requestWithPgClient(adaptor, new ConnectionShare(2), ["t"], 1000, { role: "x" });
    expect(await withPgClient.statement({ role: "x" }, "select f() as result")).toEqual([{ result: { ok: true } }]);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatch(/^begin;\nselect set_config\('role', 'x', true\), set_config\('statement_timeout', '\d+', true\);\nselect f\(\) as result\n;commit$/);

    sent.length = 0;
    fail = true;
    await expect(withPgClient.statement({ role: "x" }, "select f() as result")).rejects.toThrow("function failed");
    expect(sent.slice(1)).toEqual(["rollback"]);

    // More than one statement (here PostgreSQL would answer five results) is refused and rolled back.
    const five = { query: async (text: string) => { sent.push(text); return [{}, {}, {}, {}, { command: "COMMIT" }]; } };
    const twice = requestWithPgClient((async (_s: unknown, cb: (c: unknown) => unknown) => cb({ rawClient: five })) as any, new ConnectionShare(2), ["t"], 1000, { role: "x" });
    sent.length = 0;
    await expect(twice.statement({ role: "x" }, "select 1; select 2")).rejects.toThrow("exactly one statement");
    expect(sent.slice(1)).toEqual(["rollback"]);
  });

  it("writes values as literals PostgreSQL reads as it reads the same values sent as parameters, and refuses a NUL", async () => {
    const json = JSON.stringify({ memo: 'say "hi" \\ C:\\dir\\', n: -1.5e3, list: ["it's", "会計 🧾"], nested: { empty: "" } });
    const values: [string | number | boolean, string][] = [
      ["it's", "text"], ["back\\slash\\", "text"], ["E'x'", "text"], ["$1 $$ -- /* ;commit", "text"], ["naïve 会計 🧾", "text"],
      ["", "text"], [" ", "text"], [json, "jsonb"], [json, "json"], ["9b2a1c6e-6a43-4f8e-9d65-0c1f1c2b3a4d", "uuid"],
      [12.5, "numeric"], ["0.10", "numeric"], [-3, "integer"], [1e21, "numeric"], [true, "boolean"], [false, "boolean"],
      ["2026-02-28", "date"], ['["a","b\\\\"]', "jsonb"],
    ];
    const columns = values.map(([v, type], i) => `$${i + 1}::${type} as p${i}, ${sqlLiteral(v)}::${type} as l${i}`);
    const { rows: [row] } = await h.owner.query(`select ${columns.join(", ")}`, values.map(([v]) => v));
    for (let i = 0; i < values.length; i++) expect({ i, value: row[`l${i}`] }).toEqual({ i, value: row[`p${i}`] });
    expect(row.l0).toBe("it's");
    expect(sqlLiteral(null)).toBe("null");
    expect(() => sqlLiteral("a\0b")).toThrow("NUL");
  });

  it("sends a call's arguments as literals up to 16,384 characters and as parameters past them, with the same result", async () => {
    const client = await h.owner.connect();
    try {
      await client.query(`create function pg_temp.echo(note text, n integer default 7) returns jsonb language sql
        as $$ select jsonb_build_object('note', note, 'n', n) $$`);
      const op = { sqlFunction: "pg_temp.echo", args: ["note", "n"], passedAsJson: [], failuresAsErrors: false };
      const unit = "it's \\ 会";
      const short = requestCall(op, { note: unit });
      expect(short.values).toBeUndefined();
      expect(short.text).toContain(sqlLiteral(unit));
      expect(await runCall(client as any, short)).toEqual({ note: unit, n: 7 });

      const atLimit = "x".repeat(16_384 - 2);
      expect(requestCall(op, { note: atLimit, n: 12 }).values).toBeUndefined();
      const long = unit.repeat(2_100);
      const past = requestCall(op, { note: long, n: 3 });
      expect(past.values).toEqual([long, 3]);
      expect(past.text).not.toContain("it's");
      expect(await runCall(client as any, past)).toEqual({ note: long, n: 3 });
    } finally {
      client.release(true);
    }
  });

  it("draws a JWT session on its user's share and on the share of the organization its operation names", () => {
    const user = { kind: "user", userId: "u1" } as const;
    expect(tenantsOf(user, "org-1")).toEqual(["user:u1", "org-1"]);
    expect(tenantsOf({ ...user, organizationId: "org-2" }, undefined)).toEqual(["user:u1", "org-2"]);
    expect(tenantsOf(user, undefined)).toEqual(["user:u1"]);
    expect(tenantsOf({ kind: "apiKey", apiKeyId: "k", organizationId: "org-3" }, "org-9")).toEqual(["org-3"]);
  });
});

describe("Callers", () => {
  it("runs every statement of a caller's access with that caller's settings, whatever settings it is handed", async () => {
    const db = new Callers(h.auth, 5000, new ConnectionShare(2)).open({ kind: "apiKey", apiKeyId: a.apiKeyId, organizationId: a.organizationId });
    const who = "select json_build_object('user', current_user, 'org', current_setting('app.organization_id', true)) as result";
    const expected = { user: "accounting_visitor", org: a.organizationId };
    // GraphQL hands over the context's settings; another's (or none) must change nothing.
    expect(await db.withPgClient({ "app.organization_id": b.organizationId }, async (c) => (await c.query<{ result: unknown }>({ text: who })).rows[0].result))
      .toEqual(expected);
    expect((await db.withPgClient.statement(null, who))[0].result).toEqual(expected);
    expect(await db.call({ text: who, values: [] })).toEqual(expected);
    expect(await db.call({ text: literalSql(who) })).toEqual(expected);
    // Another organization's rows are out of reach, as through GraphQL.
    expect(await db.call({ text: "select count(*)::int as result from app_public.organizations where id = $1", values: [b.organizationId] })).toBe(0);
  });
});

describe("ConnectionShare", () => {
  it("lets waiters in first come, first served, and times out a waiter at its deadline", async () => {
    const share = new ConnectionShare(2);
    const order: number[] = [];
    const r1 = await share.acquire("t", Date.now() + 1000);
    const r2 = await share.acquire("t", Date.now() + 1000);
    const third = share.acquire("t", Date.now() + 1000).then((release) => { order.push(3); return release; });
    const fourth = share.acquire("t", Date.now() + 1000).then((release) => { order.push(4); return release; });
    const late = share.acquire("t", Date.now() + 50);
    await expect(late).rejects.toBeInstanceOf(RequestTimeout);
    expect(share.held("t")).toBe(2);
    r1();
    r1(); // releasing twice frees one slot only
    r2();
    (await third)();
    (await fourth)();
    expect(order).toEqual([3, 4]);
    expect(share.held("t")).toBe(0);
    expect(share.held("other")).toBe(0);
  });
});
