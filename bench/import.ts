import pg from "pg";
import { benchDatabase, databaseUrl, startServer, withPlans } from "./support.ts";

/**
 * `npm run bench -- import [--reuse] [--events N]`: importBankStatement and checkBankStatementDups
 * of 5,000-row statements into a bank account that already holds N events (default 1,000,000)
 * over three years, through the service in its own process (the whole HTTP request timed).
 * Each import is a new statement (new rows, all imported); the re-import of one (all skipped) and
 * the check of the same are timed too; then the same imports with 500 category rules (`--rules N`).
 * Then EXPLAIN ANALYZE of the matching statements.
 */
const DB = "accounting_bench_import";
const ROWS = 5000;
const RUNS = 7;

export async function run(args: string[]) {
  const events = Number(args[args.indexOf("--events") + 1] || 0) || 1_000_000;
  const reuse = args.includes("--reuse");
  const dbUrl = reuse ? databaseUrl(DB) : await benchDatabase(DB);
  const owner = new pg.Pool({ connectionString: dbUrl, max: 2 });
  let org = (await owner.query("select id from app_public.organizations where name = 'Bench Import'")).rows[0]?.id as string | undefined;
  if (!org) {
    org = (await owner.query("select id from app_private.create_organization('Bench Import')")).rows[0].id as string;
    const t0 = Date.now();
    // The account's history: set-based, triggers off (nothing derived is needed by the import).
    await owner.query(`
      set session_replication_role = replica;
      select setseed(0.42);
      insert into app_public.ledger_events (organization_id, event_type, direction, merchant_name, functional_amount,
          functional_currency, transaction_date, status, payment_account_id, source)
        select o.id, case when random() < 0.85 then 'expense' else 'income' end, case when random() < 0.85 then 'out' else 'in' end,
               'Merchant #' || (g::bigint * 7919) % 2000, round((1 + random() * 900)::numeric, 2), 'CAD',
               date '2025-12-31' - (g % 1095), 'confirmed', a.id, 'bank_import'
          from generate_series(1, ${events}) g
          cross join app_public.organizations o
          join app_public.accounts a on a.organization_id = o.id and a.name = 'Chequing'
         where o.name = 'Bench Import';
      set session_replication_role = origin;
      analyze app_public.ledger_events;`);
    console.log(`generated ${events.toLocaleString("en-US")} events in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  }
  const { rows: [{ chequing }] } = await owner.query(
    "select id chequing from app_public.accounts where organization_id = $1 and name = 'Chequing'", [org]);
  const { rows: [{ n }] } = await owner.query("select count(*)::int n from app_public.ledger_events where payment_account_id = $1", [chequing]);
  console.log(`account holds ${n.toLocaleString("en-US")} events`);
  const { rows: [{ key }] } = await owner.query("select app_private.create_api_key($1, 'bench') as key", [org]);

  // A statement over the account's last year: amounts of 1,000.01 and up are new (the history's are below 901).
  let seq = 0;
  let run = 0;
  const tag = Date.now().toString(36); // a rerun (--reuse) brings statements of its own
  const statement = () => (run++, Array.from({ length: ROWS }, (_, i) => ({
    transactionDate: new Date(Date.UTC(2025, 0, 1) + ((i * 73) % 365) * 86_400_000).toISOString().slice(0, 10),
    description: `BENCH VENDOR ${i % 300} ${"PURCHASE ".repeat(4)}${tag}-${run}`, amount: `-${(1000 + ((seq++ * 7) % 90_000) / 100).toFixed(2)}`,
    eventType: "expense", memo: `row ${i}`,
  })));

  const server = await startServer(dbUrl, { STATEMENT_TIMEOUT_MS: "60000" });
  const call = async (field: string, rows: unknown[]) => {
    const args = field === "importBankStatement" ? "importedCount skippedCount" : "results { isDuplicate }";
    const t0 = performance.now();
    const res = await fetch(`${server.url}/graphql`, {
      method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${key.secret}` },
      body: JSON.stringify({
        query: `mutation($org: UUID!, $p: UUID!, $rows: [BankStatementRowInput!]!) { ${field}(organizationId: $org, paymentAccountId: $p, rows: $rows) { success error ${args} } }`,
        variables: { org, p: chequing, rows },
      }),
    });
    const body = await res.json() as any;
    const ms = performance.now() - t0;
    const r = body.data?.[field];
    if (!r?.success) throw new Error(`${field}: ${JSON.stringify(body)}`);
    return { ms, r };
  };
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  try {
    const imports: number[] = [];
    const checks: number[] = [];
    const reimports: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const rows = statement();
      const check = await call("checkBankStatementDups", rows);
      checks.push(check.ms);
      const first = await call("importBankStatement", rows);
      if (first.r.importedCount !== ROWS) throw new Error(`expected ${ROWS} imported: ${JSON.stringify(first.r)}`);
      imports.push(first.ms);
      const again = await call("importBankStatement", rows);
      if (again.r.skippedCount !== ROWS) throw new Error(`expected ${ROWS} skipped: ${JSON.stringify(again.r)}`);
      reimports.push(again.ms);
    }
    const f = (xs: number[]) => `median ${median(xs).toFixed(0)} ms (runs: ${xs.map((x) => x.toFixed(0)).join(", ")})`;
    console.log(`checkBankStatementDups, ${ROWS} rows: ${f(checks)}`);
    console.log(`importBankStatement, ${ROWS} new rows: ${f(imports)}`);
    console.log(`importBankStatement, the same ${ROWS} rows again (all skipped): ${f(reimports)}`);

    // The same imports with the organization's rules in place: 500 of them, of the shapes
    // bookkeepers write (a vendor's prefix, a word anywhere, an amount range, a direction, a
    // priority), 300 matching a vendor of the statements and 200 matching nothing.
    const rules = Number(args[args.indexOf("--rules") + 1] || 0) || 500;
    await owner.query("delete from app_public.category_rules where organization_id = $1", [org]);
    // Written with triggers off: each new rule would classify the events waiting (a read of the
    // organization's events per rule), which is not what is measured here.
    const loader = await owner.connect();
    await loader.query("set session_replication_role = replica");
    await loader.query(`insert into app_public.category_rules (organization_id, vendor_pattern, account_id, priority, direction, amount_min, amount_max, created)
      select $1, case when k < 300 then 'bench vendor ' || k || ' %' else '%supplier ' || k || '%' end,
             (select id from app_public.accounts where organization_id = $1 and name = case when k % 2 = 0 then 'Cost of Goods Sold' else 'Bank Fees & Charges' end),
             case when k % 7 = 0 then 50 else 100 end, case when k % 5 = 0 then 'out' end,
             case when k % 3 = 0 then 1000 end, case when k % 11 = 0 then 2000 end, now() - k * interval '1 second'
        from generate_series(0, $2 - 1) k`, [org, rules]);
    await loader.query("set session_replication_role = origin");
    loader.release();
    const ruled: number[] = [];
    const distinct: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const rows = statement();
      const first = await call("importBankStatement", rows);
      if (first.r.importedCount !== ROWS) throw new Error(`expected ${ROWS} imported: ${JSON.stringify(first.r)}`);
      ruled.push(first.ms);
      // The worst case: every row a merchant of its own (each pattern tried on 5,000 names).
      const own = statement().map((r, j) => ({ ...r, description: `${r.description} ${j}` }));
      distinct.push((await call("importBankStatement", own)).ms);
    }
    const { rows: [classified] } = await owner.query(`select count(*) filter (where category_id is not null)::int classified, count(*)::int n
      from app_public.ledger_events where organization_id = $1 and import_batch_id in (select id from app_public.import_batches
        where organization_id = $1 order by created desc limit $2)`, [org, RUNS * 2]);
    console.log(`importBankStatement, ${ROWS} new rows (300 merchants) with ${rules} category rules: ${f(ruled)}`);
    console.log(`importBankStatement, ${ROWS} new rows (${ROWS} merchants) with ${rules} category rules: ${f(distinct)}`);
    console.log(`  the last ${RUNS * 2} imports: ${classified.classified} of ${classified.n} events classified by a rule`);
  } finally {
    await server.stop();
  }

  // EXPLAIN ANALYZE of the statements inside the check, as the API role runs them.
  await withPlans(dbUrl, { apiKeyId: key.apiKey.id, organizationId: org }, async (explain) => {
    const plans = await explain("select app_public.check_bank_statement_dups($1, $2, $3)", [org, chequing, JSON.stringify(statement())]);
    console.log("\n### checkBankStatementDups: the statements that read ledger_events\n");
    for (const p of plans.filter((p) => /ledger_events/.test(p))) console.log(p.split("\n").slice(0, 30).join("\n") + "\n");
  });
  await owner.end();
}
