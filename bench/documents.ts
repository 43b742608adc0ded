import { execFileSync } from "node:child_process";
import path from "node:path";
import pg from "pg";
import { benchDatabase, databaseUrl, daysAgo, graphqlClient, latencyRow, startServer } from "./support.js";

/**
 * `npm run bench -- documents [--documents N] [--reuse]`: one organization with N invoices
 * (default 100,000) and a tenth as many bills, about 40% paid in full or in part, generated
 * set-based by bench/documents-data.sql. Then, against the service in its own process, p50/p95/p99
 * of 300 sequential requests each: listInvoices (default page; open ones due before a day; a
 * search), agingReport as of today and as of a day 90 days back (payments after it added back).
 */
const DB = "accounting_bench_documents";

export async function run(args: string[]) {
  const documents = Number(args[args.indexOf("--documents") + 1] || 0) || 100_000;
  const reuse = args.includes("--reuse");
  const dbUrl = reuse ? databaseUrl(DB) : await benchDatabase(DB);
  const owner = new pg.Pool({ connectionString: dbUrl, max: 2 });
  let org: string | undefined = reuse
    ? (await owner.query("select id from app_public.organizations where name = 'Bench Documents'")).rows[0]?.id : undefined;
  if (!org) {
    org = (await owner.query("select id from app_private.create_organization('Bench Documents')")).rows[0].id as string;
    const t0 = Date.now();
    execFileSync("psql", [dbUrl, "-q", "-v", "ON_ERROR_STOP=1", "-v", `org=${org}`, "-v", `documents=${documents}`,
      "-f", path.resolve("bench/documents-data.sql")], { stdio: ["ignore", "ignore", "inherit"] });
    console.log(`generated ${documents.toLocaleString("en-US")} invoices and their bills in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  }
  const { rows: [stats] } = await owner.query(`select count(*)::int documents, count(*) filter (where status in ('open', 'partially_paid'))::int owed,
      (select count(*)::int from app_public.payment_allocations where organization_id = $1) allocations
    from app_public.documents where organization_id = $1`, [org]);
  console.log(`data: ${JSON.stringify(stats)}`);
  const { rows: [{ key }] } = await owner.query("select app_private.create_api_key($1, 'bench') as key", [org]);
  const server = await startServer(dbUrl, { PG_POOL_MAX: "20" });
  const results: string[] = [];
  try {
    const post = graphqlClient(server.url, `Bearer ${key.secret}`);
    const LIST = `query($org: UUID!, $status: [String!], $dueBefore: String, $search: String) { listInvoices(organizationId: $org, status: $status,
      dueBefore: $dueBefore, search: $search) { items { id number contact { displayName } dueDate status total amountDue } totalCount } }`;
    const AGING = `query($org: UUID!, $asOf: Date) { agingReport(organizationId: $org, asOf: $asOf) { asOf
      rows { contact { displayName } current days1to30 days31to60 days61to90 over90 total } totals { total } } }`;
    const cases: [string, (i: number) => [string, Record<string, unknown>]][] = [
      ["listInvoices, default page (25, latest issued)", () => [LIST, { org }]],
      ["listInvoices, open and partly paid, due before a day", (i) => [LIST, { org, status: ["open", "partially_paid"], dueBefore: daysAgo(i % 600) }]],
      ["listInvoices, search on number or contact", (i) => [LIST, { org, search: `INV-${1000 + (i % 900)}` }]],
      ["agingReport, as of today", () => [AGING, { org }]],
      ["agingReport, as of 90 days back", () => [AGING, { org, asOf: daysAgo(90) }]],
    ];
    for (const [name, make] of cases) {
      const line = await latencyRow(name, (i) => post(...make(i)));
      results.push(line);
      console.log(line);
    }
    // What was measured adds up: the aging's total is what the open documents still owe.
    const aging = (await post(AGING, { org })).agingReport;
    const { rows: [owed] } = await owner.query(`select sum(total - amount_paid)::text due from app_public.documents
      where organization_id = $1 and kind = 'invoice' and status in ('open', 'partially_paid') and issue_date <= current_date`, [org]);
    console.log(`agingReport as of today: ${aging.rows.length} customers, total ${aging.totals.total}; owed on open invoices: ${owed.due}`);
    if (aging.totals.total !== owed.due) throw new Error("The aging report differs from the documents.");
    // And of a past day: each invoice issued by then, less the payments dated by then.
    const past = (await post(AGING, { org, asOf: daysAgo(90) })).agingReport;
    const { rows: [then] } = await owner.query(`select sum(d.total - coalesce((select sum(p.amount) from app_public.payment_allocations p
        where p.document_id = d.id and p.paid_on <= $2), 0))::text due
      from app_public.documents d where d.organization_id = $1 and d.kind = 'invoice' and d.status not in ('draft', 'void') and d.issue_date <= $2`,
    [org, daysAgo(90)]);
    console.log(`agingReport as of ${daysAgo(90)}: total ${past.totals.total}; owed then, from the documents and payments: ${then.due}`);
    if (past.totals.total !== then.due) throw new Error("The aging report of a past day differs from the documents.");
  } finally {
    await server.stop();
    await owner.end();
  }
  console.log("\nSummary:\n| request | p50 ms | p95 ms | p99 ms |\n|---|---|---|---|\n" + results.join("\n"));
}
