import autocannon from "autocannon";
import pg from "pg";
import { benchDatabase, databaseUrl, generateLedger, graphqlClient, latencyRow, startServer, withPlans } from "./support.js";

/**
 * `npm run bench -- ledger [--events N] [--reuse]`: one organization with N events (default
 * 1,000,000) over three years, about 80% confirmed, generated set-based by bench/ledger-data.sql.
 * Then, against the service in its own process: p50/p95 of listLedgerEvents (default page, and a
 * page filtered by status + date range + search), getLedgerEvent, dashboardSummary and
 * incomeStatement for one year, an event's suggestion from history, ledgerChanges pages of 200 over
 * the change feed (sequential requests), and confirmLedgerEvent throughput with 10
 * concurrent clients. Finally EXPLAIN ANALYZE of the statements inside the list and report
 * functions (auto_explain, nested statements). balanceSheet and trialBalance (the closing reports,
 * from the daily totals) are measured as of today and as of a day in the past year.
 * `--reuse` keeps an already generated database; `--confirm-only` measures only the confirm
 * throughput; `--closing-only` only the closing reports (latencies and plans); `--sales-tax-only`
 * only salesTaxReturn; `--feed-only` only ledgerChanges; `--search-only` only the filtered search. 60% of the classified events carry Ontario HST (a third journal line).
 */
const DB = "accounting_bench_ledger";

export async function run(args: string[]) {
  const events = Number(args[args.indexOf("--events") + 1] || 0) || 1_000_000;
  const reuse = args.includes("--reuse");
  const confirmOnly = args.includes("--confirm-only"); // for iterating on the write path
  const closingOnly = args.includes("--closing-only"); // for iterating on the closing reports
  const salesTaxOnly = args.includes("--sales-tax-only"); // the sales tax return alone
  const feedOnly = args.includes("--feed-only"); // ledgerChanges alone
  const searchOnly = args.includes("--search-only"); // the filtered search alone
  const dbUrl = reuse ? databaseUrl(DB) : await benchDatabase(DB);
  const owner = new pg.Pool({ connectionString: dbUrl, max: 2 });
  let org: string;
  const existing = await owner.query(`select o.id from app_public.organizations o where o.name = 'Bench Ledger'
    and exists (select 1 from app_public.ledger_events e where e.organization_id = o.id)`);
  if (reuse && existing.rows[0]) {
    org = existing.rows[0].id;
  } else {
    org = await generateLedger(owner, dbUrl, "Bench Ledger", events);
  }
  const { rows: [stats] } = await owner.query(`select count(*)::int n, count(*) filter (where status = 'confirmed')::int confirmed,
      min(transaction_date)::text first, max(transaction_date)::text last,
      (select count(*)::int from app_public.journal_lines where organization_id = $1) lines,
      (select count(*)::int from app_public.account_daily_totals where organization_id = $1) totals
    from app_public.ledger_events where organization_id = $1`, [org]);
  console.log(`data: ${JSON.stringify(stats)}`);
  const { rows: [{ key }] } = await owner.query("select app_private.create_api_key($1, 'bench') as key", [org]);
  const auth = `Bearer ${key.secret}`;

  const today = new Date();
  const daysAgo = (n: number) => new Date(today.getTime() - n * 86400_000).toISOString().slice(0, 10);
  const sampleIds: string[] = (await owner.query(
    "select id from app_public.ledger_events where organization_id = $1 order by md5(id::text) limit 300", [org])).rows.map((r) => r.id);
  const waitingIds: string[] = (await owner.query(
    `select id from app_public.ledger_events where organization_id = $1 and status = 'needs_review' and category_id is null
      order by md5(id::text) limit 300`, [org])).rows.map((r) => r.id);
  const toConfirm: string[] = (await owner.query(
    `select id from app_public.ledger_events where organization_id = $1 and status = 'needs_review'
       and category_id is not null and payment_account_id is not null order by md5(id::text) limit 6000`, [org])).rows.map((r) => r.id);

  // Cursors spread over the change feed (each page read after one of them).
  const feedCursors: string[] = (await owner.query(`select txid::text || '.' || id::text c from app_public.ledger_change_feed
     where organization_id = $1 order by md5(id::text) limit 300`, [org])).rows.map((r) => r.c);
  const server = await startServer(dbUrl, { PG_POOL_MAX: "20" });
  const results: string[] = [];
  try {
    const request = graphqlClient(server.url, auth);
    const post = async (query: string, variables: Record<string, unknown>) => {
      const data = await request(query, variables);
      if (data.ledgerChanges) nextCursor = data.ledgerChanges.nextCursor;
      return data;
    };
    const ITEM = "id merchantName functionalAmount transactionDate status category { id name } paymentAccount { id name } journalEntry { id totalAmount } receipts { id }";
    const FEED = `query($org: UUID!, $after: String) {
      ledgerChanges(organizationId: $org, after: $after, limit: 200) { nextCursor hasMore changes { cursor eventId kind at event { ${ITEM} } } } }`;
    let nextCursor = feedCursors[0];
    const LIST = `query($org: UUID!, $status: [String!], $dateFrom: String, $dateTo: String, $search: String) {
      listLedgerEvents(organizationId: $org, status: $status, dateFrom: $dateFrom, dateTo: $dateTo, search: $search) { items { ${ITEM} } totalCount pageSize offset } }`;
    const RETURN = `query($org: UUID!, $s: Date!, $e: Date!, $type: String!) { salesTaxReturn(organizationId: $org, startDate: $s, endDate: $e, taxType: $type) {
      salesAndRevenue taxCollected adjustments totalTaxCollected inputTaxCredits totalItcs netTax events } }`;
    const salesTax: [string, (i: number) => [string, Record<string, unknown>]][] = [
      ["salesTaxReturn GST_HST, a quarter (of the past three years)", (i) => [RETURN, { org, s: daysAgo(91 + (i * 13) % 1000), e: daysAgo((i * 13) % 1000), type: "GST_HST" }]],
      ["salesTaxReturn GST_HST, a year", () => [RETURN, { org, s: daysAgo(365), e: daysAgo(0), type: "GST_HST" }]],
    ];
    const feed: typeof salesTax = [
      ["ledgerChanges, a page of 200 after a random cursor (of 1.8M changes)", (i) => [FEED, { org, after: feedCursors[i % feedCursors.length] }]],
      // An integration catching up: each page after the last one's nextCursor.
      ["ledgerChanges, the next page of 200 (following nextCursor)", () => [FEED, { org, after: nextCursor }]],
    ];
    const search: typeof feed = [
      ["listLedgerEvents, status + 1-month date range + search", (i) => [LIST, {
        org, status: ["needs_review", "confirmed"], dateFrom: daysAgo(60 + (i % 300)), dateTo: daysAgo(30 + (i % 300)), search: "staples" }]],
    ];
    const cases: [string, (i: number) => [string, Record<string, unknown>]][] = [
      ["listLedgerEvents, default page (25, transactionDate desc)", () => [LIST, { org }]],
      ...search,
      ["getLedgerEvent", (i) => [`query($org: UUID!, $id: UUID!) { getLedgerEvent(organizationId: $org, eventId: $id) { ${ITEM} } }`, { org, id: sampleIds[i % sampleIds.length] }]],
      ["getLedgerEvent, waiting for review with no category (a suggestion)", (i) => [`query($org: UUID!, $id: UUID!) { getLedgerEvent(organizationId: $org, eventId: $id) { ${ITEM} suggestedCategory { account { id name } confidence basis } } }`, { org, id: waitingIds[i % waitingIds.length] }]],
      ["listLedgerEvents, needs_review (25, with suggestions)", () => [`query($org: UUID!) { listLedgerEvents(organizationId: $org, status: ["needs_review"]) { items { ${ITEM} suggestedCategory { account { id } confidence basis } } totalCount } }`, { org }]],
      ["dashboardSummary, one year", () => [`query($org: UUID!, $s: Date, $e: Date) { dashboardSummary(organizationId: $org, startDate: $s, endDate: $e) { totalRevenue totalExpenses netIncome receiptCount unreviewedCount } }`, { org, s: daysAgo(365), e: daysAgo(0) }]],
      ["incomeStatement, one year", () => [`query($org: UUID!, $s: Date, $e: Date) { incomeStatement(organizationId: $org, startDate: $s, endDate: $e) { incomeAccounts { accountId accountName total } expenseAccounts { accountId accountName total } totalIncome totalExpenses netIncome } }`, { org, s: daysAgo(365), e: daysAgo(0) }]],
      ["accountBalances", () => [`query($org: UUID!) { accountBalances(organizationId: $org) { accountId accountName balance } }`, { org }]],
      ...feed,
      ...salesTax,
    ];
    const BALANCE_SHEET = `query($org: UUID!, $asOf: Date) { balanceSheet(organizationId: $org, asOf: $asOf) { asOf fiscalYearStart
      assets { accountId accountName balance } liabilities { accountId accountName balance } equity { accountId accountName balance }
      totalAssets totalLiabilities totalEquity currentYearEarnings } }`;
    const TRIAL_BALANCE = `query($org: UUID!, $asOf: Date) { trialBalance(organizationId: $org, asOf: $asOf) { asOf
      rows { accountId accountName classification debit credit } totalDebit totalCredit } }`;
    const closing: typeof cases = [
      ["balanceSheet, as of today", () => [BALANCE_SHEET, { org }]],
      ["balanceSheet, as of a day in the past year", (i) => [BALANCE_SHEET, { org, asOf: daysAgo(1 + (i * 7) % 365) }]],
      ["trialBalance, as of today", () => [TRIAL_BALANCE, { org }]],
      ["trialBalance, as of a day in the past year", (i) => [TRIAL_BALANCE, { org, asOf: daysAgo(1 + (i * 7) % 365) }]],
    ];
    for (const [name, make] of confirmOnly ? [] : closingOnly ? closing : salesTaxOnly ? salesTax : feedOnly ? feed : searchOnly ? search : [...cases, ...closing]) {
      const line = await latencyRow(name, (i) => post(...make(i)));
      results.push(line);
      console.log(line);
    }

    if (!confirmOnly && !feedOnly && !searchOnly) {
      // What was measured adds up: assets = liabilities + equity + current-year earnings, debits = credits.
      const bs = (await post(BALANCE_SHEET, { org })).balanceSheet;
      const tb = (await post(TRIAL_BALANCE, { org })).trialBalance;
      console.log(`balanceSheet as of ${bs.asOf} (fiscal year from ${bs.fiscalYearStart}): assets ${bs.totalAssets} = liabilities ${bs.totalLiabilities}`
        + ` + equity ${bs.totalEquity} + current-year earnings ${bs.currentYearEarnings}; trialBalance: ${tb.rows.length} rows,`
        + ` debits ${tb.totalDebit}, credits ${tb.totalCredit}`);
      const cents = (m: string) => Math.round(Number(m) * 100);
      if (cents(bs.totalAssets) !== cents(bs.totalLiabilities) + cents(bs.totalEquity) + cents(bs.currentYearEarnings) || tb.totalDebit !== tb.totalCredit) {
        throw new Error("The closing reports do not balance.");
      }
    }

    if (!confirmOnly && !closingOnly && !feedOnly && !searchOnly) {
      // The return's figures are those of the journal's tax lines, summed directly.
      const [s, e] = [daysAgo(91), daysAgo(0)];
      const got = (await post(RETURN, { org, s, e, type: "GST_HST" })).salesTaxReturn;
      const { rows: [want] } = await owner.query(`select coalesce(sum(credit - debit) filter (where tax_on_sale), 0)::text collected,
          coalesce(sum(debit - credit) filter (where not tax_on_sale), 0)::text itcs
        from app_public.journal_lines where organization_id = $1 and tax_type = 'GST_HST' and not voided and txn_date between $2 and $3`, [org, s, e]);
      console.log(`salesTaxReturn ${s}..${e}: collected ${got.taxCollected}, ITCs ${got.inputTaxCredits}, net ${got.netTax}, ${got.events} events; `
        + `from the journal lines: collected ${want.collected}, ITCs ${want.itcs}`);
      if (got.taxCollected !== want.collected || got.inputTaxCredits !== want.itcs) throw new Error("salesTaxReturn differs from the journal.");
    }

    // Throughput: autocannon, 10 connections, each request confirming the next distinct classified event.
    if (!closingOnly && !salesTaxOnly && !feedOnly && !searchOnly) {
      const CONFIRM = "mutation($org: UUID!, $id: UUID!) { confirmLedgerEvent(organizationId: $org, eventId: $id) { success error journalEntryId } }";
      for (const id of toConfirm.splice(0, 100)) await post(CONFIRM, { org, id }); // warm-up
      let next = 0;
      // autocannon's own start/finish and per-second averages are quantized to whole seconds: time
      // the run from the first to the last response instead.
      let first = 0;
      let last = 0;
      const r = await autocannon({
        url: `${server.url}/graphql`, connections: 10, amount: toConfirm.length,
        requests: [{
          method: "POST", headers: { "content-type": "application/json", authorization: auth },
          setupRequest: (req: any) => ({ ...req, body: JSON.stringify({ query: CONFIRM, variables: { org, id: toConfirm[next++ % toConfirm.length] } }) }),
          onResponse: () => { last = performance.now(); if (!first) first = last; },
        }],
      });
      const { rows: [check] } = await owner.query(
        "select count(*)::int n from app_public.journal_entries where event_id = any ($1) and voided_at is null", [toConfirm]);
      const perSecond = (r.requests.total - 1) / ((last - first) / 1000);
      const line = `confirmLedgerEvent, autocannon 10 connections: ${perSecond.toFixed(0)} confirms/s, p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms (${r.requests.total} requests, ${r.non2xx} non-2xx; ${check.n} of ${toConfirm.length} events now have exactly one live entry)`;
      results.push(line);
      console.log(line);
    }
  } finally {
    await server.stop();
  }

  if (confirmOnly || feedOnly || searchOnly) {
    await owner.end();
    if (feedOnly || searchOnly) console.log("\nSummary:\n| request | p50 ms | p95 ms | p99 ms |\n|---|---|---|---|\n" + results.join("\n"));
    return;
  }
  // EXPLAIN ANALYZE of the statements the functions run, as the API role sees them (RLS on).
  await withPlans(dbUrl, { apiKeyId: key.apiKey.id, organizationId: org }, async (run) => {
    const explain = async (label: string, sql: string, params: unknown[]) => {
      const plans = await run(sql, params);
      console.log(`\n### ${label}\n`);
      for (const p of plans.filter((p) => !/Function Scan|Result  \(/.test(p.split("\n")[1] ?? "") || plans.length === 1)) console.log(p.replace(/^duration: [^\n]*\n/, "") + "\n");
    };
    if (salesTaxOnly) {
      await explain("salesTaxReturn a quarter", "select app_public.sales_tax_return($1, $2, $3, 'GST_HST')", [org, daysAgo(91), daysAgo(0)]);
      return;
    }
    if (!closingOnly) {
      await explain("listLedgerEvents default page", "select app_public.list_ledger_events($1)", [org]);
      await explain("listLedgerEvents status + date range + search", "select app_public.list_ledger_events($1, status => $2, date_from => $3, date_to => $4, search => $5)",
        [org, JSON.stringify(["needs_review", "confirmed"]), daysAgo(60), daysAgo(30), "staples"]);
      await explain("dashboardSummary one year", "select app_public.dashboard_summary($1, $2, $3)", [org, daysAgo(365), daysAgo(0)]);
      await explain("incomeStatement one year", "select app_public.income_statement($1, $2, $3)", [org, daysAgo(365), daysAgo(0)]);
    }
    await explain("balanceSheet as of today", "select app_public.balance_sheet($1, $2)", [org, daysAgo(0)]);
    await explain("trialBalance as of today", "select app_public.trial_balance($1, $2)", [org, daysAgo(0)]);
  });
  await owner.end();
  console.log("\nSummary:\n| request | p50 ms | p95 ms | p99 ms |\n|---|---|---|---|\n" + results.join("\n"));
}

