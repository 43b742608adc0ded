import path from "node:path";
import { writeBankCsv } from "../../../test/helpers/fakes/bank-csv.js";
import { runCli } from "../cli.js";
import type { Scenario } from "../harness.js";

/**
 * Issue 32, item 8: `import_bank_csv --json` of a generated 200 MB statement (about 4.5 million
 * rows). Before: past ~125k rows an uncaught RangeError (`Math.max(...rows)`), a stack and no
 * `{"error"}` on stdout, after reaching 2.37 GB. The CLI's processes are sampled with the
 * server's (their peak RSS is in the process table); the run is stopped at the time limit.
 */
export const cliLarge: Scenario<{ file: string; rows: number; bytes: number }> = {
  name: "cli-large",
  title: "item 8: import_bank_csv --json of a generated ~200 MB CSV",
  defaultSeconds: 120,
  endWhenDone: true,
  victimDelayMs: 3_000,
  prepare: async (ctx) => {
    const file = path.join(ctx.tmpDir, "statement-200mb.csv");
    const written = await writeBankCsv(file, 200 * 2 ** 20);
    ctx.log(`wrote ${file}: ${written.rows.toLocaleString("en-US")} rows, ${(written.bytes / 2 ** 20).toFixed(0)} MB`);
    return { file, ...written };
  },
  async attack(ctx, csv) {
    const b = ctx.attacker;
    const run = await runCli(ctx.root, ctx.env, ["import_bank_csv", csv.file, "--org-name", b.name, "--payment-account", "Chequing", "--json"],
      { timeoutMs: Math.max(ctx.endAt - Date.now(), 1_000), onStart: (pid) => ctx.watchProcess(pid) });
    const last = run.stdout.trim().split("\n").pop() ?? "";
    let answer: Record<string, unknown> | undefined;
    try { answer = JSON.parse(last); } catch { /* not JSON */ }
    const { rows } = await ctx.db.query("select count(*)::int as n from app_public.ledger_events where organization_id = $1", [b.id]);
    const written = rows[0].n as number;
    const imported = typeof answer?.importedCount === "number" ? answer.importedCount : 0;
    return {
      figures: {
        file: `${csv.rows.toLocaleString("en-US")} rows, ${(csv.bytes / 2 ** 20).toFixed(0)} MB`,
        exit: run.timedOut ? `killed at the time limit after ${(run.ms / 1000).toFixed(1)} s` : `code ${run.code ?? run.signal} after ${(run.ms / 1000).toFixed(1)} s`,
        stdout: run.stdout.trim().slice(0, 300) || "(empty)",
        stderr: run.stderr.trim().slice(0, 300) || "(empty)",
        eventsWritten: written,
      },
      checks: {
        failureIsJsonError: run.code === 0 || run.timedOut ? null : typeof answer?.error === "string",
        nothingHalfWritten: written === 0 || written === imported,
      },
    };
  },
};
