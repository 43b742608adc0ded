import type { Scenario } from "../harness.js";
import { upload, type UploadAnswer } from "../http.js";
import { latency } from "../stats.js";

/**
 * Issue 32, item 7: 200 uploads of 19 MB at once from one API key (B's), kept up: each of the 200
 * clients sends its next upload as soon as one is answered, three in all (600 uploads, at most
 * 11.4 GB stored in the run's scratch folder), or until the time is up. Before: the probe's
 * latency rose to 17.3 s and /healthz to 3.85 s while the database answered in 0.34 s. What each
 * upload got (201, or a refusal such as 429/503 with Retry-After), and how long.
 */
const CLIENTS = 200;
const EACH = 3;
const SIZE = 19 * 2 ** 20;

export const uploads: Scenario<{ file: Buffer }> = {
  name: "uploads",
  title: "item 7: 200 parallel 19 MB uploads from one key (600 in all)",
  defaultSeconds: 120,
  endWhenDone: true,
  victimDelayMs: 3_000,
  // One PDF-typed buffer (the type is read from the first bytes) shared by every upload.
  prepare: async () => ({ file: Buffer.concat([Buffer.from("%PDF-1.4\n%"), Buffer.alloc(SIZE - 10, "soak upload filler\n")]) }),
  async attack(ctx, { file }) {
    const b = ctx.attacker;
    const started = Date.now();
    const answers: UploadAnswer[] = [];
    await Promise.all(Array.from({ length: CLIENTS }, async (_, client) => {
      for (let n = 0; n < EACH && !ctx.signal.aborted; n++) {
        answers.push(await upload(ctx.url, b.apiKey, b.id, { name: `big-${client}-${n}.pdf`, type: "application/pdf", bytes: file },
          Math.max(ctx.endAt - Date.now(), 1_000)));
      }
    }));
    const statuses: Record<string, number> = {};
    for (const a of answers) {
      const key = a.status ? `HTTP ${a.status}` : (a.error ?? "no answer").slice(0, 60);
      statuses[key] = (statuses[key] ?? 0) + 1;
    }
    const refused = answers.filter((a) => a.status >= 400);
    const times = latency(answers.map((a) => a.ms));
    return {
      figures: {
        uploads: `${answers.length} × ${SIZE / 2 ** 20} MB from one key, ${CLIENTS} at a time, in ${((Date.now() - started) / 1000).toFixed(1)} s`,
        answers: statuses,
        uploadTime: `p50 ${times.p50} ms, p99 ${times.p99} ms, max ${times.max} ms`,
        refusedWithRetryAfter: `${refused.filter((a) => a.retryAfter).length} of ${refused.length} refusals`,
        firstRefusal: refused[0] ? `${refused[0].status}: ${JSON.stringify(refused[0].body).slice(0, 200)}` : "none",
      },
      checks: { refusalsSayRetryAfter: refused.length === 0 ? null : refused.every((a) => a.retryAfter) },
    };
  },
};
