import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createUser, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { createEvent, tenantWithAccounts, type Accounts } from "./ledger-fixtures.js";

/**
 * The request paths run no SQL-language function as a call of its own (docs/architecture.md, SQL
 * functions): PostgreSQL plans such a function's body again in every statement that calls it.
 * A helper in SQL must be one PostgreSQL inlines; anything else is PL/pgSQL, whose plans are kept.
 * Each path runs as the server runs it (the caller's role and settings, the SQL function by
 * name) in one transaction with `track_functions = all`, which counts every function called as a
 * function (an inlined one is not a call); the SQL-language ones among them must be none.
 */
let h: Harness;
let t: Tenant;
let acc: Accounts;
beforeAll(async () => {
  h = await startHarness();
  ({ t, acc } = await tenantWithAccounts(h, { "Office Supplies": ["expense", "expense"] }));
});
afterAll(async () => { await h?.close(); });

/** Calls of SQL-language functions counted so far by the connection's backend and not yet reported. */
async function counted(client: pg.PoolClient): Promise<Record<string, number>> {
  const { rows } = await client.query(`select f.schemaname || '.' || f.funcname as name, f.calls::int
      from pg_stat_xact_user_functions f join pg_proc p on p.oid = f.funcid join pg_language l on l.oid = p.prolang
     where l.lanname = 'sql'`);
  return Object.fromEntries(rows.map((r) => [r.name, r.calls]));
}

/** The SQL-language functions `work` called as functions, with their counts, run as the tenant's API key. */
async function sqlFunctionsCalled(work: string[]): Promise<Record<string, number>> {
  const client = await h.owner.connect();
  try {
    await client.query("begin");
    await client.query("set local track_functions = 'all'"); // a superuser's setting (see trackable)
    const { rows: [{ key }] } = await client.query("select id as key from app_public.api_keys where organization_id = $1", [t.organizationId]);
    await client.query(`select set_config('role', 'accounting_visitor', true), set_config('app.api_key_id', $1, true),
      set_config('app.organization_id', $2, true)`, [key, t.organizationId]);
    // What the connection's earlier transactions counted may not be reported yet: only the difference counts.
    const before = await counted(client);
    for (const statement of work) await client.query(statement);
    const after = await counted(client);
    return Object.fromEntries(Object.entries(after).filter(([name, calls]) => calls > (before[name] ?? 0))
      .map(([name, calls]) => [name, calls - (before[name] ?? 0)]));
  } finally {
    await client.query("rollback");
    client.release();
  }
}

/**
 * Only a superuser may count function calls (`track_functions`): CI's database owner is one; an
 * owner that only bypasses row-level security (docs/operating.md) skips these tests, saying why.
 */
async function trackable(ctx: { skip: (note?: string) => void }) {
  const { rows: [{ rolsuper }] } = await h.owner.query("select rolsuper from pg_roles where rolname = current_user");
  if (!rolsuper) ctx.skip("track_functions can only be set by a superuser; the test database's owner is not one");
}

describe("the request paths plan nothing again per statement", () => {
  it("classifying with a tax code, confirming it, reading it back, and the reports", async (ctx) => {
    await trackable(ctx);
    const org = `'${t.organizationId}'::uuid`;
    const eventId = await createEvent(h, t, { merchantName: "Staples", amount: "113.00", transactionDate: "2026-03-02" });
    const called = await sqlFunctionsCalled([
      `select app_public.update_staged_entry(organization_id => ${org}, event_id => '${eventId}', category_id => '${acc["Office Supplies"]}',
         payment_id => '${acc["Chequing"]}', tax_code => 'HST_ON')`,
      `select app_public.confirm_ledger_event(organization_id => ${org}, event_id => '${eventId}')`,
      `select app_public.get_ledger_event(organization_id => ${org}, event_id => '${eventId}')`,
      `select app_public.dashboard_summary(organization_id => ${org})`,
      `select app_public.trial_balance(organization_id => ${org})`,
      `select app_public.balance_sheet(organization_id => ${org})`,
      `select app_public.income_statement(organization_id => ${org})`,
      `select app_public.sales_tax_return(organization_id => ${org}, start_date => '2026-01-01', end_date => '2026-03-31', tax_type => 'GST_HST')`,
    ]);
    // An inlined function of constants is folded to its value when its statement is planned, and
    // that evaluation is counted (once a plan): these three are one expression each.
    const folded = ["app_private.min_date", "app_private.max_date", "app_private.money"];
    expect(Object.keys(called).filter((name) => !folded.includes(name))).toEqual([]);
  });

  it("a JWT's check of its user and organization", async (ctx) => {
    await trackable(ctx);
    const user = await createUser(h);
    const called = await sqlFunctionsCalled([
      "reset role",
      `select app_private.authenticate_user_in('${user}', '${t.organizationId}')`,
    ]);
    expect(called).toEqual({});
  });
});
