import { slowOcrImage } from "../../../test/helpers/fakes/slow-receipts.js";
import type { JobRow, Scenario, SoakContext } from "../harness.js";
import { receiptState, uploadReceipt } from "./receipts.js";

/**
 * Issue 32, item 5: `kill -9` of the server process while it extracts a receipt, then `npm start`
 * again, as an operator (or a supervisor) would. Before: the job stayed locked by the dead worker
 * for graphile-worker's 4 hours and the receipt stayed `draft`. Times the job's next attempt from
 * the kill, read from the database. A's rounds start once the server is back.
 */
export const killWorker: Scenario<{ image: Buffer }> = {
  name: "kill-worker",
  title: "item 5: kill -9 of the server during an extraction, npm start again: until the job is retried",
  defaultSeconds: 120,
  victimDelayMs: null,
  prepare: async () => ({ image: await slowOcrImage() }),
  async attack(ctx, { image }) {
    const figures: Record<string, unknown> = {};
    const made = await uploadReceipt(ctx, ctx.attacker, { name: "dense.png", type: "image/png", bytes: image });
    if (!made.receiptId) throw new Error(made.error);
    const receiptId = made.receiptId;
    const jobOf = async () => (await ctx.jobs()).find((j) => j.task === "extract_receipt" && j.payload.receiptId === receiptId);

    let job: JobRow | undefined;
    const lockBy = Date.now() + 60_000;
    while (!ctx.signal.aborted && Date.now() < lockBy && !(job = await jobOf())?.lockedBy) await ctx.sleep(250);
    if (!job?.lockedBy) return { figures: { ...figures, extraction: "never started within 60 s" } };
    // Well into the extraction (the image takes the reader its whole OCR deadline).
    await ctx.sleep(3_000);
    job = await jobOf();
    if (!job?.lockedBy) return { figures: { ...figures, extraction: `ended before the kill: ${await receiptState(ctx, receiptId)}` } };
    figures.before = `attempt ${job.attempts}/${job.maxAttempts} locked by ${job.lockedBy}`;

    ctx.phase("killed");
    const killedAt = Date.now();
    const killed = await ctx.killApi();
    figures.killed = `API process ${killed.pid}`;
    figures.leftAfter2s = killed.leftovers;
    const readyMs = await ctx.restart();
    figures.restartReadyMs = readyMs;
    ctx.phase("restarted");
    ctx.startVictimRounds(0);

    const retried = await waitForRetry(ctx, jobOf, job);
    figures.jobRetried = retried.at === null ? `not within ${((Date.now() - killedAt) / 1000).toFixed(0)} s of the kill: ${retried.state}`
      : `${((retried.at - killedAt) / 1000).toFixed(1)} s after the kill (${((retried.at - killedAt - readyMs) / 1000).toFixed(1)} s after npm start was ready): ${retried.state}`;
    await ctx.untilEnd();
    figures.receiptAtEnd = await receiptState(ctx, receiptId);
    return { figures, checks: { jobRetriedWithinAMinute: retried.at !== null && retried.at - killedAt <= 60_000 } };
  },
};

/** Until the job is taken again (a new attempt, another worker) or gone (done), polled every second. */
async function waitForRetry(ctx: SoakContext, jobOf: () => Promise<JobRow | undefined>, before: JobRow): Promise<{ at: number | null; state: string }> {
  let state = "";
  while (!ctx.signal.aborted) {
    const job = await jobOf().catch(() => before);
    if (!job) return { at: Date.now(), state: "the job ended (done or failed for good)" };
    state = `attempt ${job.attempts}/${job.maxAttempts}, ${job.lockedBy ? `locked by ${job.lockedBy}` : "unlocked, waiting"}`;
    if (job.attempts > before.attempts || (job.lockedBy && job.lockedBy !== before.lockedBy)) return { at: Date.now(), state };
    await ctx.sleep(1_000);
  }
  return { at: null, state };
}
