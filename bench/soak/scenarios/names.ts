import { receiptPdf } from "../../../test/helpers/receipt-files.js";
import type { Scenario } from "../harness.js";
import { gql, upload } from "../http.js";

/**
 * Issue 32, item 9: an upload named `reçu.pdf` was stored and served with its UTF-8 bytes read
 * as Latin-1, as `re\u00c3\u00a7u.pdf` (busboy reads file names as latin1 unless told otherwise). The name is sent both ways a client may
 * send it, and read back from the upload's answer, the receipt and the served file's
 * Content-Disposition.
 */
const NAME = "reçu.pdf";
const SPELLINGS: Record<string, string> = {
  "raw UTF-8 (browsers, curl)": `filename="${NAME}"`,
  "RFC 5987 filename*": `filename*=UTF-8''${encodeURIComponent(NAME)}`,
};

export const names: Scenario = {
  name: "names",
  title: "item 9: an upload named reçu.pdf, its name read back",
  defaultSeconds: 60,
  endWhenDone: true,
  victimDelayMs: 0,
  async attack(ctx) {
    const a = ctx.victim;
    const figures: Record<string, unknown> = {};
    let kept = true;
    for (const [spelling, filenameHeader] of Object.entries(SPELLINGS)) {
      const bytes = await receiptPdf(["NAMES SOAK", spelling, "TOTAL 1.00"]);
      const up = await upload(ctx.url, a.apiKey, a.id, { name: NAME, type: "application/pdf", bytes, filenameHeader });
      if (up.status !== 201) {
        figures[spelling] = { upload: `HTTP ${up.status}: ${JSON.stringify(up.body).slice(0, 200)}` };
        kept = false;
        continue;
      }
      const made = await gql(ctx.url, a.keyAuth, `mutation($o: UUID!, $k: String!) { createReceipt(organizationId: $o, objectKey: $k) { success error receiptId } }`,
        { o: a.id, k: up.body.objectKey });
      const got = await gql(ctx.url, a.keyAuth, `query($o: UUID!, $r: UUID!) { getReceipt(organizationId: $o, receiptId: $r) { filename imageUrl } }`,
        { o: a.id, r: made.createReceipt.receiptId });
      const served = await fetch(got.getReceipt.imageUrl, { signal: AbortSignal.timeout(30_000) });
      await served.arrayBuffer();
      const disposition = served.headers.get("content-disposition") ?? "";
      const exact = /filename\*=UTF-8''([^;]+)/i.exec(disposition)?.[1];
      const servedName = exact ? decodeURIComponent(exact) : null;
      figures[spelling] = { uploadAnswer: up.body.filename, objectKey: up.body.objectKey, receipt: got.getReceipt.filename, served: servedName, disposition };
      kept &&= up.body.filename === NAME && got.getReceipt.filename === NAME && servedName === NAME;
    }
    return { figures, checks: { namesKept: kept } };
  },
};
