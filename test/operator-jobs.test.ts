import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { createTenant, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { runJobs } from "./helpers/worker.js";
import { accountsOf, bookEvent, call, CONFIRM, createEvent } from "./ledger-fixtures.js";

/** Operator jobs (issue 13): enqueue, list_jobs, retry_job, and what the jobs record. */
let h: Harness;
let t: Tenant;
beforeAll(async () => {
  h = await startHarness();
  t = await createTenant(h);
  const acc = await accountsOf(h, t);
  for (const [merchantName, amount, day] of [["Staples", "12.50", "2026-10-01"], ["Bell", "80.00", "2026-10-02"], ["Staples", "7.25", "2026-10-02"]]) {
    // Bell's bill carries Ontario HST: a sales tax line and a row of the sales tax totals.
    const id = await bookEvent(h, t, { merchantName, amount, transactionDate: day },
      { categoryId: acc["Cost of Goods Sold"], paymentId: acc["Chequing"], ...(merchantName === "Bell" ? { taxCode: "HST_ON" } : {}) });
    await call(h, t, CONFIRM, { eventId: id }, "confirmLedgerEvent");
  }
  await createEvent(h, t, { merchantName: "Pending", amount: "3.00", transactionDate: "2026-10-03" });
});
afterAll(() => h?.close());

const cli = (...args: string[]) => runCli(h.databaseUrl, ...args);
const lastResult = async (job: string) => (await h.owner.query(
  "select status, result, error, attempt from app_private.job_results where job_name = $1 order by id desc limit 1", [job])).rows[0];

describe("operator jobs", () => {
  it("rebuild_daily_totals reports equality, and puts right totals that went wrong", async () => {
    const queued = await cli("enqueue", "rebuild_daily_totals", "--org-name", t.name, "--json");
    expect(queued).toMatchObject({ code: 0, json: { task: "rebuild_daily_totals", organizationId: t.organizationId } });
    const listed = await cli("list_jobs", "--json");
    expect(listed.json.jobs).toContainEqual(expect.objectContaining({ id: queued.json.jobId, task: "rebuild_daily_totals", state: "waiting", organization: t.name }));
    await runJobs(h, 1);
    const first = await lastResult("rebuild_daily_totals");
    expect(first).toMatchObject({ status: "succeeded", result: { equal: true, accountDaysRepaired: 0, statusDaysRepaired: 0, salesTaxDays: 1,
      salesTaxDaysRepaired: 0, organizationId: t.organizationId } });
    expect(first.result.accountDays).toBeGreaterThanOrEqual(4); // two days, two accounts each
    expect(first.result.ms).toEqual(expect.any(Number));
    const shown = await cli("job_results", "rebuild_daily_totals", "--job", queued.json.jobId, "--json");
    expect(shown.json.results).toEqual([expect.objectContaining({ jobId: queued.json.jobId, status: "succeeded", organization: t.name,
      result: expect.objectContaining({ equal: true }) })]);

    // What the triggers keep, damaged behind their back: one total off by a cent, one count lost, one row too many.
    const totals = "select account_id, day, debit, credit from app_public.account_daily_totals where organization_id = $1 order by 1, 2";
    const before = (await h.owner.query(totals, [t.organizationId])).rows;
    await h.owner.query("update app_public.account_daily_totals set debit = debit + 0.01 where organization_id = $1 and day = '2026-10-01' and debit > 0", [t.organizationId]);
    await h.owner.query("delete from app_public.ledger_event_daily_counts where organization_id = $1 and day = '2026-10-03'", [t.organizationId]);
    const taxTotals = "select day, tax_type, collected, input_tax_credits, events from app_public.sales_tax_daily_totals where organization_id = $1";
    const taxBefore = (await h.owner.query(taxTotals, [t.organizationId])).rows;
    await h.owner.query("update app_public.sales_tax_daily_totals set input_tax_credits = input_tax_credits - 1, events = 7 where organization_id = $1", [t.organizationId]);
    await h.owner.query(`insert into app_public.account_daily_totals (organization_id, account_id, day, debit, credit)
      select organization_id, account_id, '2020-01-01', 5, 0 from app_public.account_daily_totals where organization_id = $1 limit 1`, [t.organizationId]);
    await cli("enqueue", "rebuild_daily_totals", "--org-name", t.name);
    await runJobs(h, 1);
    expect(await lastResult("rebuild_daily_totals")).toMatchObject({ status: "succeeded", result: { equal: false, accountDaysRepaired: 2, statusDaysRepaired: 1, salesTaxDaysRepaired: 1 } });
    expect((await h.owner.query(taxTotals, [t.organizationId])).rows).toEqual(taxBefore);
    expect(taxBefore).toEqual([{ day: expect.any(Date), tax_type: "GST_HST", collected: "0.00", input_tax_credits: "9.20", events: 1 }]);
    const after = (await h.owner.query(totals + "", [t.organizationId])).rows.filter((r) => Number(r.debit) !== 0 || Number(r.credit) !== 0);
    expect(after).toEqual(before);
    // Run again: nothing left to put right.
    await cli("enqueue", "rebuild_daily_totals", "--org-name", t.name);
    await runJobs(h, 1);
    expect((await lastResult("rebuild_daily_totals")).result).toMatchObject({ equal: true });
  });

  it("a failing job is listed with --failed and runs again with retry_job; bad input changes nothing", async () => {
    // A file that is not in storage: a failure retrying cannot mend, recorded and out of the queue.
    const missing = await cli("enqueue", "import_processor_balance", "--org-name", t.name, "--payload",
      JSON.stringify({ objectKey: `processor-imports/${t.organizationId}/none.csv` }), "--json");
    expect(missing.code).toBe(0);
    await runJobs(h, 1);
    expect(await lastResult("import_processor_balance")).toMatchObject({ status: "failed", attempt: 1, error: expect.stringMatching(/No stored object/) });
    expect((await cli("retry_job", missing.json.jobId)).stderr).toMatch(new RegExp(`No job ${missing.json.jobId} waiting in the queue`));
    // Another organization's export is refused before anything is queued.
    const other = await createTenant(h);
    expect((await cli("enqueue", "import_processor_balance", "--org-name", t.name, "--payload",
      JSON.stringify({ objectKey: `processor-imports/${other.organizationId}/x.csv` }))).stderr).toMatch(/must be one of this organization's stored exports/);

    // A repair that waits on a posting's lock gives up (lock_timeout) and is retried, not the posting.
    await h.owner.query(`update app_public.account_daily_totals set debit = debit + 1 where organization_id = $1 and day = '2026-10-02'
      and account_id = (select id from app_public.accounts where organization_id = $1 and name = 'Cost of Goods Sold')`, [t.organizationId]);
    const holder = await h.owner.connect();
    let queued: { json: { jobId: string } };
    try {
      await holder.query("begin");
      await holder.query("select * from app_public.account_daily_totals where organization_id = $1 for update", [t.organizationId]);
      queued = await cli("enqueue", "rebuild_daily_totals", "--org-name", t.name, "--json");
      await runJobs(h, 1);
    } finally {
      await holder.query("rollback");
      holder.release();
    }
    const failed = await cli("list_jobs", "--failed", "--json");
    const job = failed.json.jobs.find((j: { id: string }) => j.id === queued.json.jobId);
    expect(job).toMatchObject({ task: "rebuild_daily_totals", state: "retrying", attempts: 1, organization: t.name, lastError: expect.stringMatching(/lock timeout/) });
    expect((await cli("list_jobs", "--failed")).stdout).toMatch(new RegExp(`^${queued.json.jobId}\trebuild_daily_totals\t${t.name}\tretrying\t1/5`, "m"));
    const retried = await cli("retry_job", queued.json.jobId, "--json");
    expect(retried).toMatchObject({ code: 0, json: { job: { id: queued.json.jobId, task: "rebuild_daily_totals", attempts: 0 } } });
    await runJobs(h, 1);
    expect(await lastResult("rebuild_daily_totals")).toMatchObject({ status: "succeeded", result: { equal: false, accountDaysRepaired: 1 } });
    expect((await cli("retry_job", "999999999")).stderr).toMatch(/No job 999999999 waiting in the queue/);

    // An organization deleted after its job was queued: failed for good, recorded, out of the queue.
    const gone = await createTenant(h);
    const goneJob = await cli("enqueue", "rebuild_daily_totals", "--org-name", gone.name, "--json");
    await h.owner.query("delete from app_public.organizations where id = $1", [gone.organizationId]);
    await runJobs(h, 1);
    expect((await cli("job_results", "--job", goneJob.json.jobId, "--json")).json.results).toEqual([
      expect.objectContaining({ status: "failed", error: "Organization Not Found." })]);
    expect((await cli("list_jobs", "--json")).json.jobs.map((j: { id: string }) => j.id)).not.toContain(goneJob.json.jobId);

    const jobsBefore = (await h.owner.query("select count(*)::int n from graphile_worker.jobs")).rows[0].n;
    expect((await cli("enqueue", "drop_everything", "--org-name", t.name)).stderr).toMatch(/Unknown task "drop_everything": one of import_processor_balance, match_receipts, reextract_receipts, rebuild_daily_totals/);
    expect((await cli("enqueue", "match_receipts", "--org-name", t.name, "--payload", "{not json")).stderr).toMatch(/--payload must be JSON/);
    expect((await cli("enqueue", "match_receipts", "--org-name", t.name, "--payload", "[1]")).stderr).toMatch(/The payload must be a JSON object/);
    expect((await cli("enqueue", "match_receipts", "--org-name", "No Such Org")).code).toBe(1);
    expect((await h.owner.query("select count(*)::int n from graphile_worker.jobs")).rows[0].n).toBe(jobsBefore);
  });

  it("match_receipts and reextract_receipts run for the organization and record what they did", async () => {
    await cli("enqueue", "match_receipts", "--org-name", t.name);
    await cli("enqueue", "reextract_receipts", "--org-name", t.name, "--payload", '{"all": true}');
    await runJobs(h, 2);
    expect(await lastResult("match_receipts")).toMatchObject({ status: "succeeded" });
    expect(await lastResult("reextract_receipts")).toMatchObject({ status: "succeeded", result: { organizationId: t.organizationId, all: true, queued: 0 } });
  });
});
