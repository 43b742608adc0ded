import { htmlTableMessage } from "../../../test/helpers/fakes/html-mail.js";
import { deliverSmtp } from "../../../test/helpers/fakes/smtp-client.js";
import type { Scenario } from "../harness.js";

/**
 * Issue 32, item 2: HTML-only e-mail with a large `<table>`, which needs no login: 2 MB through
 * POST /intake/email, then 4 MB and 8 MB over SMTP to A's intake address, one after the other.
 * Before: the HTML-to-text conversion ran on the API's main thread (2 MB: 5.6 s stall; 4 MB:
 * 37.6 s; 8 MB: 173.6 s and 1.79 GB). Each message's answer and time; the phases' probe figures
 * show the stall each caused.
 */
interface Messages { http2: Buffer; smtp4: Buffer; smtp8: Buffer }

export const smtpHtml: Scenario<Messages> = {
  name: "smtp-html",
  title: "item 2: HTML-only e-mail with a large <table>: 2 MB by POST /intake/email, 4 and 8 MB by SMTP",
  defaultSeconds: 120,
  // Sizes are the HTML's (the messages are about 4% larger, quoted-printable).
  prepare: async (ctx) => ({
    http2: htmlTableMessage({ bytes: 2 * 2 ** 20, to: ctx.intakeAddress }),
    smtp4: htmlTableMessage({ bytes: 4 * 2 ** 20, to: ctx.intakeAddress }),
    smtp8: htmlTableMessage({ bytes: 8 * 2 ** 20, to: ctx.intakeAddress }),
  }),
  async attack(ctx, messages) {
    const figures: Record<string, unknown> = {};
    const left = () => Math.max(ctx.endAt - Date.now(), 1_000);

    ctx.phase("http 2 MB");
    const started = Date.now();
    figures["POST /intake/email 2 MB"] = await fetch(`${ctx.url}/intake/email`, {
      method: "POST", body: new Uint8Array(messages.http2), signal: AbortSignal.timeout(left()),
      headers: { "content-type": "message/rfc822", "x-intake-secret": ctx.intakeSecret },
    }).then(async (r) => `HTTP ${r.status} after ${Date.now() - started} ms: ${(await r.text()).slice(0, 200)}`,
      (e: Error) => `no answer after ${Date.now() - started} ms (${e.message})`);

    for (const [name, message] of [["SMTP 4 MB", messages.smtp4], ["SMTP 8 MB", messages.smtp8]] as const) {
      if (ctx.signal.aborted) {
        figures[name] = "not sent: the run had ended";
        continue;
      }
      ctx.phase(name);
      const answer = await deliverSmtp({ port: ctx.smtpPort, from: "sender@soak.test", to: [ctx.intakeAddress], message, timeoutMs: left() });
      figures[name] = answer.code === null
        ? `no reply at ${answer.stage} after ${Math.round(answer.ms)} ms (${answer.error})`
        : `${answer.code} at ${answer.stage} after ${Math.round(answer.ms)} ms: ${answer.text.slice(0, 160)}`;
    }
    ctx.phase("after");
    const answered = Object.values(figures).every((v) => /^(HTTP \d|\d{3} at )/.test(String(v)));
    return { figures, checks: { everyMessageAnswered: answered } };
  },
};
