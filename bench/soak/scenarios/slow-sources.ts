import { startHostileImap } from "../../../test/helpers/fakes/imap.js";
import { oneWordText, slowOcrImage } from "../../../test/helpers/fakes/slow-receipts.js";
import type { Scenario } from "../harness.js";
import { receiptState, uploadReceipt } from "./receipts.js";
import { connectMailbox, describeConnect, describeJobs, disconnectMailbox, mailboxes, syncMailbox } from "./sources.js";

/**
 * Issue 32, item 4: background work starved across tenants. B's two mailboxes on an IMAP server
 * that sends one line every 30 s hold the worker's job slots; B's image that runs past the OCR
 * deadline and its 100 KB one-word text hold the document reader. Meanwhile A's tiny receipt and
 * webhook wait (before: 15 and 19 minutes). B disconnects one mailbox 30 s in (before: the scan
 * went on).
 */
export const slowSources: Scenario<{ image: Buffer }> = {
  name: "slow-sources",
  title: "item 4: B's mailboxes on a server sending a line every 30 s, an image past the OCR deadline and a 100 KB one-word text from B",
  defaultSeconds: 120,
  victimDelayMs: 10_000,
  prepare: async () => ({ image: await slowOcrImage() }),
  async attack(ctx, { image }) {
    const imap = await startHostileImap({ mode: "trickle", lineEveryMs: 30_000 });
    ctx.onCleanup(() => imap.close());
    const b = ctx.attacker;
    const figures: Record<string, unknown> = {};
    const boxes = await Promise.all([connectMailbox(ctx, b, imap.port, "b1@hostile.test"), connectMailbox(ctx, b, imap.port, "b2@hostile.test")]);
    figures.connect = boxes.map(describeConnect);
    figures.sync = await Promise.all(boxes.filter((m) => m.id).map((m) => syncMailbox(ctx, b, m.id!)));
    const slow = await Promise.all([
      uploadReceipt(ctx, b, { name: "dense.png", type: "image/png", bytes: image }),
      uploadReceipt(ctx, b, { name: "one-word.txt", type: "text/plain", bytes: oneWordText() }),
    ]);
    figures.attackerReceipts = slow.map((r) => r.error ?? "made");
    ctx.log(`B: ${boxes.filter((m) => m.id).length} mailboxes scanning, ${slow.filter((r) => r.receiptId).length} slow receipts queued`);

    await ctx.sleep(30_000);
    const first = boxes[0].id;
    if (first && !ctx.signal.aborted) {
      figures.disconnectFirstMailboxAt30s = await disconnectMailbox(ctx, b, first).catch((e: Error) => e.message);
    }
    await ctx.untilEnd();

    figures.mailboxes = await mailboxes(ctx, b).then((list) => list.map((m) => `${m.status}${m.lastError ? `: ${m.lastError}` : ""}`), (e: Error) => e.message);
    figures.attackerReceiptStates = await Promise.all(slow.map((r) => (r.receiptId ? receiptState(ctx, r.receiptId) : r.error)));
    const jobs = await ctx.jobs();
    figures.jobs = describeJobs(jobs, ["scan_mailbox", "extract_receipt", "deliver_webhooks", "match_receipts"]);
    const disconnectedScanRunning = jobs.some((j) => j.task === "scan_mailbox" && j.lockedBy && JSON.stringify(j.payload).includes(first ?? "-"));
    figures.disconnectedMailboxScanStillLocked = disconnectedScanRunning;
    return { figures, checks: { disconnectStoppedScan: first ? !disconnectedScanRunning : null } };
  },
};
