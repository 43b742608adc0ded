import { deliverSmtp } from "../../../test/helpers/fakes/smtp-client.js";
import { openIdleSmtpSessions } from "../../../test/helpers/fakes/smtp-idle.js";
import type { Scenario } from "../harness.js";

/**
 * Issue 32, item 6: 20 SMTP sessions that only send NOOP every 20 s, while a real sender tries to
 * deliver a receipt to A's intake address every 5 s. Before: every real sender got 421 for as long
 * as the idle sessions stayed. The idle sessions come from `--idle-source` (default 127.0.0.1, the
 * real sender's own address: a per-address cap then refuses both; 127.0.0.2 tells them apart).
 */
export const smtpIdle: Scenario = {
  name: "smtp-idle",
  title: "item 6: 20 idle SMTP sessions (NOOP every 20 s) while a real sender delivers",
  defaultSeconds: 90,
  async attack(ctx) {
    const idleSource = ctx.options.idleSource ?? "127.0.0.1";
    const idle = await openIdleSmtpSessions({ port: ctx.smtpPort, count: 20, noopEveryMs: 20_000, localAddress: idleSource });
    ctx.onCleanup(() => idle.close());
    const figures: Record<string, unknown> = { idleSessions: `from ${idleSource}: ${idle.admitted()} admitted, ${idle.refused()} refused` };
    ctx.log(figures.idleSessions as string);
    const attempts: { at: number; code: number | null; stage: string; ms: number }[] = [];
    const began = Date.now();
    for (let n = 0; !ctx.signal.aborted; n++) {
      const message = Buffer.from([
        "From: shop@sender.soak.test", `To: ${ctx.intakeAddress}`, "Subject: Your receipt", `Message-ID: <real-${began}-${n}@sender.soak.test>`,
        "Content-Type: text/plain; charset=utf-8", "", `CORNER SHOP\r\nTOTAL 3.${String(n % 100).padStart(2, "0")}\r\n`,
      ].join("\r\n"));
      const answer = await deliverSmtp({ port: ctx.smtpPort, from: "shop@sender.soak.test", to: [ctx.intakeAddress], message, timeoutMs: 30_000 });
      attempts.push({ at: (Date.now() - began) / 1000, code: answer.code, stage: answer.stage, ms: answer.ms });
      await ctx.sleep(5_000);
    }
    const delivered = attempts.filter((a) => a.stage === "done" && a.code === 250);
    const codes: Record<string, number> = {};
    for (const a of attempts) codes[`${a.code ?? "none"} at ${a.stage}`] = (codes[`${a.code ?? "none"} at ${a.stage}`] ?? 0) + 1;
    figures.realSender = `${delivered.length} of ${attempts.length} delivered; replies: ${JSON.stringify(codes)}`;
    figures.firstDeliveredAt = delivered[0] ? `${delivered[0].at.toFixed(0)} s` : "never";
    figures.idleAtEnd = `${idle.open()} open, ${idle.closedByServer()} closed by the server`;
    return { figures, checks: { realSenderAlwaysGotIn: attempts.length > 0 && delivered.length === attempts.length } };
  },
};
