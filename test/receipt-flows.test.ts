import { createRequire } from "node:module";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { CreateBucketCommand } from "@aws-sdk/client-s3";
import nodemailer from "nodemailer";
// @ts-expect-error s3rver ships no type declarations
import S3rver from "s3rver";
import sharp from "sharp";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { S3Config } from "../src/config.js";
import { startSmtpIntake, type SmtpIntake } from "../src/intake/smtp.js";
import { closeSandbox } from "../src/receipts/sandbox/index.js";
import { createStorage } from "../src/storage/index.js";
import { S3Storage } from "../src/storage/s3.js";
import { runJobs } from "./helpers/worker.js";
import { createTenant, dataOf, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { receiptPdf } from "./helpers/receipt-files.js";
import { accountsOf, call, CREATE, GET } from "./ledger-fixtures.js";

/**
 * The flows end to end, through the real routes, storage backends, SMTP listener and
 * worker tasks: a receipt uploaded and attached, and receipts mailed and texted in, extracted and
 * matched to the bank line imported before them.
 */
const tmp = mkdtempSync(path.join(os.tmpdir(), "receipt-flows-"));
afterAll(async () => {
  await closeSandbox();
  rmSync(tmp, { recursive: true, force: true });
});

const font = createRequire(import.meta.url).resolve("dejavu-fonts-ttf/ttf/DejaVuSansMono.ttf");
/** Black text on white paper with a margin (sharp draws text white on black). */
async function receiptImage(text: string): Promise<Buffer> {
  const ink = await sharp({ text: { text, fontfile: font, font: "DejaVu Sans Mono", dpi: 150 } }).negate().png().toBuffer();
  return sharp(ink).extend({ top: 40, bottom: 40, left: 40, right: 40, background: "#ffffff" }).png().toBuffer();
}
const upload = (h: Harness, t: Tenant, file: Buffer, filename: string) => request(h.handle.app).post("/uploads")
  .set("Authorization", t.apiKey).field("organizationId", t.organizationId)
  .attach("file", file, { filename, contentType: "application/octet-stream" });

/** Fetches a URL the service handed out (under PUBLIC_URL) from the app itself. */
const fetchFile = (h: Harness, url: string) => request(h.handle.app).get(new URL(url).pathname)
  .buffer(true).parse((res, done) => {
    const chunks: Buffer[] = [];
    res.on("data", (c: Buffer) => chunks.push(c));
    res.on("end", () => done(null, Buffer.concat(chunks)));
  });

const backends: Array<[string, () => Promise<{ s3?: S3Config; storageDir: string; close(): Promise<void> }>]> = [
  ["the local folder", async () => ({ storageDir: path.join(tmp, "local"), close: async () => {} })],
  ["an S3-compatible bucket (s3rver)", async () => {
    const server = new S3rver({ port: 0, address: "127.0.0.1", silent: true, directory: mkdtempSync(path.join(tmp, "s3rver-")) });
    const { port } = await server.run();
    const s3: S3Config = { bucket: "receipts", region: "us-east-1", endpoint: `http://127.0.0.1:${port}`,
      accessKeyId: "S3RVER", secretAccessKey: "S3RVER", forcePathStyle: true };
    await new S3Storage(s3).client.send(new CreateBucketCommand({ Bucket: s3.bucket }));
    return { s3, storageDir: path.join(tmp, "unused"), close: () => server.close() };
  }],
];

describe.each(backends)("upload and attach, with %s", (_name, backend) => {
  let h: Harness;
  let t: Tenant;
  let close: () => Promise<void>;
  beforeAll(async () => {
    const b = await backend();
    close = b.close;
    h = await startHarness({ storageDir: b.storageDir, s3: b.s3, publicUrl: "http://api.example", receiptUrlTtlSeconds: 2 });
    t = await createTenant(h);
  });
  afterAll(async () => {
    await h?.close();
    await close?.();
  });

  it("a PNG and a PDF uploaded and attached: the event has its documents, and each imageUrl serves the same bytes until it expires", async () => {
    const accounts = await accountsOf(h, t);
    const files = [
      { name: "lunch.png", bytes: await receiptImage("LUNCH SPOT\nTOTAL 12.00") },
      { name: "lunch.pdf", bytes: await receiptPdf(["LUNCH SPOT", "TOTAL 12.00"]) },
    ];
    const eventId = (await call(h, t, CREATE, { merchantName: "LUNCH SPOT", amount: "12.00", transactionDate: "2026-03-03",
      paymentAccountId: accounts.Chequing }, "createLedgerEvent")).eventId;
    const uploaded = [];
    for (const f of files) {
      const res = await upload(h, t, f.bytes, f.name);
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      uploaded.push(res.body);
      expect(await call(h, t, `mutation($org: UUID!, $e: UUID!, $k: String!, $f: String) {
        attachReceiptToEvent(organizationId: $org, eventId: $e, objectKey: $k, filename: $f) { success error receiptId } }`,
        { e: eventId, k: res.body.objectKey, f: f.name }, "attachReceiptToEvent")).toMatchObject({ success: true });
    }
    const event = await call(h, t, GET, { eventId }, "getLedgerEvent");
    expect(event.hasDocument).toBe(true);
    expect(event.receipts).toEqual(uploaded.map((u) => ({ id: expect.any(String), filename: u.filename, objectKey: u.objectKey,
      uploadedAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T.*Z$/) })));

    for (const [i, r] of event.receipts.entries()) {
      const receipt = await call(h, t, `query($org: UUID!, $id: UUID!) { getReceipt(organizationId: $org, receiptId: $id) { imageUrl contentType } }`,
        { id: r.id }, "getReceipt");
      expect(receipt.imageUrl).toMatch(/^http:\/\/api\.example\/files\//);
      const got = await fetchFile(h, receipt.imageUrl);
      expect(got.status).toBe(200);
      expect(got.headers["content-type"]).toMatch(i === 0 ? /^image\/png/ : /^application\/pdf/);
      expect(Buffer.compare(got.body as Buffer, files[i].bytes)).toBe(0);
    }
    const url = (await call(h, t, `query($org: UUID!, $id: UUID!) { getReceipt(organizationId: $org, receiptId: $id) { imageUrl } }`,
      { id: event.receipts[0].id }, "getReceipt")).imageUrl;
    await new Promise((resolve) => setTimeout(resolve, 3100));
    expect((await fetchFile(h, url)).status).toBe(403);
  });
});

describe("receipts mailed and texted in are extracted and matched to the imported bank line", () => {
  let h: Harness;
  let t: Tenant;
  let smtp: SmtpIntake;
  const INBOX = "books@flows.example";
  const PHONE = "16135550188";
  const SECRET = "flows-intake-secret";

  beforeAll(async () => {
    h = await startHarness({ storageDir: path.join(tmp, "intake"), s3: undefined, intakeSecret: SECRET });
    t = await createTenant(h);
    for (const [addressType, address] of [["email", INBOX], ["sms", PHONE]]) {
      expect(dataOf(await h.gql(`mutation($o: UUID!, $t: String!, $a: String!) { createIntakeAddress(organizationId: $o, addressType: $t, address: $a) { success } }`,
        { o: t.organizationId, t: addressType, a: address }, t.apiKey), "createIntakeAddress").success).toBe(true);
    }
    smtp = await startSmtpIntake({ port: 0, host: "127.0.0.1", pools: { owner: h.owner, auth: h.auth }, storage: createStorage(h.config) });
    // The bank lines come first: each receipt's, and a decoy with the same amount from another shop.
    const accounts = await accountsOf(h, t);
    const imported = dataOf(await h.gql(`mutation($o: UUID!, $p: UUID!, $rows: [BankStatementRowInput!]!) {
      importBankStatement(organizationId: $o, paymentAccountId: $p, rows: $rows) { success error importedCount } }`, {
      o: t.organizationId, p: accounts.Chequing, rows: [
        { transactionDate: "2026-10-06", description: "GREENLEAF HARDWARE #221 OTTAWA ON", amount: "-86.45", eventType: "expense" },
        { transactionDate: "2026-10-06", description: "PIZZA PALACE OTTAWA", amount: "-86.45", eventType: "expense" },
        { transactionDate: "2026-10-09", description: "BRIGHT STAR CAFE", amount: "-14.25", eventType: "expense" },
      ] }, t.apiKey), "importBankStatement");
    expect(imported).toMatchObject({ success: true, importedCount: 3 });
  });
  afterAll(async () => {
    await smtp?.close();
    await h?.close();
  });

  const work = () => runJobs(h);
  const receiptsBy = async (source: string) => (await h.owner.query(
    `select r.status, r.match_status, r.vendor_name, r.amount::text, to_char(r.receipt_date, 'YYYY-MM-DD') receipt_date, e.merchant_name
       from app_public.receipts r left join app_public.ledger_events e on e.id = r.event_id
      where r.organization_id = $1 and r.source = $2`, [t.organizationId, source])).rows;

  it("an emailed PDF over SMTP: a receipt with source email, linked to its vendor's line; the same message again creates nothing; an unknown address is refused at RCPT", async () => {
    const pdf = await receiptPdf(["GREENLEAF HARDWARE", "221 Bank St, Ottawa ON", "Date: 2026-10-05", "Paint 2L      39.99",
      "Brushes       36.51", "SUBTOTAL      76.50", "HST 13%        9.95", "TOTAL         86.45", "VISA ****4242"]);
    const mail = { from: "Greenleaf <receipts@greenleaf.example>", to: INBOX, subject: "Your receipt", messageId: "<r-1@greenleaf.example>",
      text: "Your receipt is attached.", attachments: [{ filename: "receipt.pdf", content: pdf }] };
    const transport = nodemailer.createTransport({ host: "127.0.0.1", port: smtp.port, secure: false, ignoreTLS: true });
    await transport.sendMail(mail);
    await work();
    expect(await receiptsBy("email")).toEqual([{ status: "processed", match_status: "matched", vendor_name: "GREENLEAF HARDWARE",
      amount: "86.45", receipt_date: "2026-10-05", merchant_name: "GREENLEAF HARDWARE #221 OTTAWA ON" }]);
    await transport.sendMail(mail);
    expect(await receiptsBy("email")).toHaveLength(1);
    await expect(transport.sendMail({ ...mail, to: "nobody@flows.example", messageId: "<r-2@greenleaf.example>" }))
      .rejects.toMatchObject({ responseCode: 550 });
    expect(await receiptsBy("email")).toHaveLength(1);
  });

  it("a texted photo: a receipt with source sms, read by OCR and linked", async () => {
    const photo = await receiptImage("BRIGHT STAR CAFE\n12 Elgin St\n10/08/2026 08:14\nLatte        5.25\nMuffin       9.00\nTOTAL       14.25\nTHANK YOU");
    const body = { to: "+1 (613) 555-0188", from: "+16135550100", messageId: "sms-1", body: "",
      media: [{ contentType: "image/png", filename: "photo.png", data: photo.toString("base64") }] };
    const res = await request(h.handle.app).post("/intake/sms").set("X-Intake-Secret", SECRET).send(body);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    await work();
    expect(await receiptsBy("sms")).toEqual([{ status: "processed", match_status: "matched", vendor_name: "BRIGHT STAR CAFE",
      amount: "14.25", receipt_date: "2026-10-08", merchant_name: "BRIGHT STAR CAFE" }]);
    const again = await request(h.handle.app).post("/intake/sms").set("X-Intake-Secret", SECRET).send(body);
    expect(again.body).toEqual({ receiptIds: [], duplicate: true });
  }, 60_000);
});
