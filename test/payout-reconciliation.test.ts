import { afterAll, beforeAll, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { createTenant, startHarness, type Harness } from "./helpers/harness.js";
import { accountsOf } from "./ledger-fixtures.js";

let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(() => h?.close());

/** An operator command's --json output, as `npm run cli -- …` prints it against this test file's database. */
async function cli(...argv: string[]): Promise<any> {
  const r = await runCli(h.databaseUrl, ...argv, "--json");
  if (r.code !== 0) throw new Error(r.stderr || r.stdout);
  return r.json;
}

// docs/api.md, Bank statement imports (the transfer rule) and Processor imports: the processor's
// payouts, booked by the processor import as transfers from the clearing account into chequing, are
// the bank's PROCESSOR PAYOUT deposits a day later.
it("skips the bank's three PROCESSOR PAYOUT deposits when the processor import booked the payouts", async () => {
  const t = await createTenant(h);
  const acc = await accountsOf(h, t);
  const processor = await cli("import_processor_balance", "data/samples/processor/processor_balance_sample.csv", "--org-name", t.name);
  expect(processor.created).toBe(59);

  const bank = await cli("import_bank_csv", "data/samples/bank/rbc_chequing_sample.csv", "--org-name", t.name, "--payment-account", "Chequing");
  expect([bank.importedCount, bank.skippedCount]).toEqual([22, 3]);
  const skipped = bank.rows.filter((r: any) => r.duplicate === "duplicate");
  expect(skipped.map((r: any) => [r.transactionDate, r.amount])).toEqual([
    ["2025-09-16", "1056.54"], ["2025-10-02", "684.22"], ["2025-10-21", "1057.01"]]);
  // Each deposit is matched to its own payout.
  const { rows: payouts } = await h.owner.query(
    `select id from app_public.ledger_events where organization_id = $1 and event_type = 'transfer' and category_id = $2
      order by transaction_date`, [t.organizationId, acc["Chequing"]]);
  expect(skipped.map((r: any) => r.matchingEventId)).toEqual(payouts.map((p) => p.id));
  expect(await cli("import_bank_csv", "data/samples/bank/rbc_chequing_sample.csv", "--org-name", t.name, "--payment-account", "Chequing"))
    .toMatchObject({ importedCount: 0, skippedCount: 25 });
});
