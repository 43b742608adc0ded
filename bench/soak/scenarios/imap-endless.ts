import { startHostileImap } from "../../../test/helpers/fakes/imap.js";
import type { Scenario } from "../harness.js";
import { connectMailbox, describeConnect, describeJobs, keepReading, mailboxes, refusedWithReason, syncMailbox } from "./sources.js";

/**
 * Issue 32, item 1: B's mailbox on an IMAP server that answers the header fetch with `* n FETCH`
 * lines for ever. Before: imapflow kept every reply, the API process grew to 4.2 GB and died,
 * and the dead scan stayed locked for 4 hours. Watches the mailbox's status and the fake's output.
 */
export const imapEndless: Scenario = {
  name: "imap-endless",
  title: "item 1: a tenant's IMAP server answers the header fetch with endless * n FETCH lines",
  defaultSeconds: 120,
  async attack(ctx) {
    const imap = await startHostileImap({ mode: "endless-fetch" });
    ctx.onCleanup(() => imap.close());
    const b = ctx.attacker;
    const connected = await connectMailbox(ctx, b, imap.port, "b@hostile.test");
    ctx.log(`connectMailbox: ${describeConnect(connected)}`);
    const figures: Record<string, unknown> = { connect: describeConnect(connected) };
    if (!connected.id) return { figures, checks: { sourceRefusedWithReason: refusedWithReason(connected) } };
    figures.sync = await syncMailbox(ctx, b, connected.id);
    const state = keepReading(ctx, async () => (await mailboxes(ctx, b)).find((m) => m.id === connected.id));
    await state.done;
    const last = state.latest();
    figures.mailbox = last ? `${last.status}${last.lastError ? `: ${last.lastError}` : ""}` : "never read";
    figures.fakeServerSentMb = Math.round(imap.bytesSent() / 2 ** 20);
    figures.fetchesAsked = imap.fetches();
    figures.scanJobs = await ctx.jobs().then((j) => describeJobs(j, ["scan_mailbox"]), (e: Error) => [e.message]);
    return { figures, checks: { sourceRefusedWithReason: last?.status === "error" && Boolean(last.lastError) } };
  },
};
