import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { buffer } from "node:stream/consumers";
import nodemailer from "nodemailer";
import MailComposer from "nodemailer/lib/mail-composer";
import { PDFDocument } from "pdf-lib";
import sharp from "sharp";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSmtpIntake, type SmtpIntake } from "../src/intake/smtp.js";
import { LocalStorage } from "../src/storage/local.js";
import { createTenant, dataOf, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { dispatchJobs } from "./helpers/worker.js";

const tmp = mkdtempSync(path.join(os.tmpdir(), "intake-test-"));
const storageDir = path.join(tmp, "objects");
const storage = new LocalStorage(storageDir);
const SECRET = "test-intake-secret";

let h: Harness;
let a: Tenant;
let smtp: SmtpIntake;
let pdfBytes: Buffer;
let logo: Buffer;
const INBOX = "receipts@alpha.example";
const PHONE = "14165550123";

beforeAll(async () => {
  h = await startHarness({ storageDir, s3: undefined, intakeSecret: SECRET });
  a = await createTenant(h);
  const CREATE = `mutation($o: UUID!, $t: String!, $a: String!) { createIntakeAddress(organizationId: $o, addressType: $t, address: $a) { success error } }`;
  expect(dataOf(await h.gql(CREATE, { o: a.organizationId, t: "email", a: "Receipts@Alpha.example" }, a.apiKey), "createIntakeAddress").success).toBe(true);
  expect(dataOf(await h.gql(CREATE, { o: a.organizationId, t: "sms", a: PHONE }, a.apiKey), "createIntakeAddress").success).toBe(true);
  smtp = await startSmtpIntake({ port: 0, host: "127.0.0.1", pools: { owner: h.owner, auth: h.auth }, storage });
  const doc = await PDFDocument.create();
  doc.addPage().drawText("Hardware Store  Total 19.99");
  pdfBytes = Buffer.from(await doc.save());
  logo = await sharp({ create: { width: 8, height: 8, channels: 3, background: "#336699" } }).png().toBuffer();
});
afterAll(async () => {
  await smtp?.close();
  await h?.close();
  rmSync(tmp, { recursive: true, force: true });
});

const receipts = async () => (await h.owner.query(
  "select id, source, object_key, filename, content_type, size, status from app_public.receipts where organization_id = $1 order by id",
  [a.organizationId])).rows;
const extractionJobs = async () => Number((await dispatchJobs(h), await h.owner.query(
  "select count(*) from graphile_worker.jobs where task_identifier = 'extract_receipt'")).rows[0].count);
const storedFiles = () => {
  try {
    return readdirSync(storageDir, { recursive: true, withFileTypes: true }).filter((d) => d.isFile()).length;
  } catch {
    return 0;
  }
};

/** A message with a PDF attachment and a logo shown inline in its HTML. */
const message = (to: string, messageId: string) => ({
  from: "Shop <billing@shop.example>",
  to,
  subject: "Your receipt",
  messageId,
  text: "Thanks for your purchase.",
  html: '<p>Thanks for your purchase.</p><img src="cid:logo@shop.example">',
  attachments: [
    { filename: "receipt.pdf", content: pdfBytes, contentType: "application/pdf" },
    { filename: "logo.png", content: logo, cid: "logo@shop.example" },
  ],
});

describe("SMTP intake", () => {
  const transport = () => nodemailer.createTransport({ host: "127.0.0.1", port: smtp.port, secure: false, ignoreTLS: true });

  it("turns the PDF attachment (not the inline logo) into one email receipt, queued for extraction, once per Message-ID", async () => {
    const jobsBefore = await extractionJobs();
    const info = await transport().sendMail(message(INBOX.toUpperCase(), "<r1@shop.example>"));
    expect(info.accepted).toHaveLength(1);
    expect(info.response).toMatch(/^250 /);
    const rows = await receipts();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ source: "email", filename: "receipt.pdf", content_type: "application/pdf", size: String(pdfBytes.length), status: "draft" });
    expect(rows[0].object_key).toMatch(new RegExp(`^${a.organizationId}/intake/[0-9a-f-]{36}/receipt\\.pdf$`));
    expect(Buffer.compare(await buffer(await storage.get(rows[0].object_key)), pdfBytes)).toBe(0);
    expect(await extractionJobs()).toBe(jobsBefore + 1);

    // The same message again (a retry): accepted, nothing new.
    const files = storedFiles();
    await transport().sendMail(message(INBOX, "<r1@shop.example>"));
    expect(await receipts()).toHaveLength(1);
    expect(storedFiles()).toBe(files);
  });

  it("refuses an unknown recipient at RCPT TO (550) and stores nothing", async () => {
    const files = storedFiles();
    const before = (await receipts()).length;
    const err = await transport().sendMail(message("nobody@alpha.example", "<r2@shop.example>")).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "EENVELOPE" });
    expect(String((err as { response?: string }).response ?? (err as Error).message)).toMatch(/550/);
    expect((await receipts()).length).toBe(before);
    expect(storedFiles()).toBe(files);
  });

  it("makes the text body the receipt when there is no allowed attachment", async () => {
    const before = (await receipts()).length;
    await transport().sendMail({ from: "a@b.example", to: INBOX, subject: "Taxi", text: "Taxi ride 23.40 CAD", messageId: "<r3@b.example>" });
    const rows = await receipts();
    expect(rows).toHaveLength(before + 1);
    expect(rows.at(-1)).toMatchObject({ source: "email", filename: "message.txt", content_type: "text/plain" });
    expect((await buffer(await storage.get(rows.at(-1).object_key))).toString()).toContain("Taxi ride 23.40 CAD");
  });
});

describe("POST /intake/email", () => {
  const raw = (to: string, messageId: string) => new MailComposer({ ...message(to, messageId), attachments: [{ filename: "bill.pdf", content: Buffer.concat([pdfBytes, Buffer.from("\n% another\n")]) }] }).compile().build();
  const post = (body: Buffer, secret?: string) => {
    let r = request(h.handle.app).post("/intake/email").set("Content-Type", "message/rfc822");
    if (secret !== undefined) r = r.set("X-Intake-Secret", secret);
    return r.send(body);
  };

  it("202 with the receipt ids; the same Message-ID again is a duplicate", async () => {
    const body = await raw(`"Receipts" <${INBOX}>`, "<http-1@shop.example>");
    const r = await post(body, SECRET);
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    expect(r.body).toEqual({ receiptIds: [expect.stringMatching(/^[0-9a-f-]{36}$/)], duplicate: false });
    const row = (await receipts()).find((x) => x.id === r.body.receiptIds[0]);
    expect(row).toMatchObject({ source: "email", filename: "bill.pdf", content_type: "application/pdf" });
    expect(await post(body, SECRET).then((x) => x.body)).toEqual({ receiptIds: [], duplicate: true });
  });

  it("401 for a missing or wrong secret, 404 for an unknown recipient; nothing stored", async () => {
    const files = storedFiles();
    const before = (await receipts()).length;
    const body = await raw(INBOX, "<http-2@shop.example>");
    for (const secret of [undefined, "wrong", SECRET + "x"]) {
      const r = await post(body, secret);
      expect(r.status).toBe(401);
      expect(r.body.errors[0].extensions.code).toBe("UNAUTHENTICATED");
    }
    const unknown = await post(await raw("someone@else.example", "<http-3@shop.example>"), SECRET);
    expect(unknown.status).toBe(404);
    expect(unknown.body.errors[0]).toMatchObject({ message: "No recipient is an active intake address.", extensions: { code: "NOT_FOUND" } });
    expect((await receipts()).length).toBe(before);
    expect(storedFiles()).toBe(files);
  });
});

describe("POST /intake/sms", () => {
  const post = (body: unknown, secret = SECRET) =>
    request(h.handle.app).post("/intake/sms").set("X-Intake-Secret", secret).send(body as object);

  it("turns a base64 PNG into an sms receipt; the same messageId again is a duplicate", async () => {
    const sms = { to: "+1 (416) 555-0123", from: "+15145550000", messageId: "SM-1", body: "lunch", media: [{ contentType: "image/jpeg", filename: "photo.png", data: logo.toString("base64") }] };
    const r = await post(sms);
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    expect(r.body.duplicate).toBe(false);
    expect(r.body.receiptIds).toHaveLength(1);
    const row = (await receipts()).find((x) => x.id === r.body.receiptIds[0]);
    expect(row).toMatchObject({ source: "sms", filename: "photo.png", content_type: "image/png", size: String(logo.length) });
    expect(await post(sms).then((x) => x.body)).toEqual({ receiptIds: [], duplicate: true });
  });

  it("401 with a wrong secret, 404 for an unknown number, 400 for bad media", async () => {
    expect((await post({ to: PHONE, body: "x" }, "nope")).status).toBe(401);
    expect((await post({ to: "15550000000", messageId: "SM-2", body: "x" })).status).toBe(404);
    const bad = await post({ to: PHONE, messageId: "SM-3", media: [{ data: "***" }] });
    expect(bad.status).toBe(400);
    expect(bad.body.errors[0].message).toBe("media[0].data must be base64.");
  });
});
