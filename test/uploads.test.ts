import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { CreateBucketCommand, ListObjectsV2Command } from "@aws-sdk/client-s3";
import { PDFDocument } from "pdf-lib";
// @ts-expect-error s3rver ships no type declarations
import S3rver from "s3rver";
import sharp from "sharp";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inlineDisposition } from "../src/http/receipt-files.js";
import { fileUrls } from "../src/receipts/file-urls.js";
import { S3Storage } from "../src/storage/s3.js";
import { createTenant, startHarness, type Harness, type Tenant } from "./helpers/harness.js";

const tmp = mkdtempSync(path.join(os.tmpdir(), "uploads-test-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const png = () => sharp({ create: { width: 24, height: 16, channels: 3, background: "#ffffff" } }).png().toBuffer();
async function pdf(): Promise<Buffer> {
  const doc = await PDFDocument.create();
  doc.addPage().drawText("Coffee Shop  Total 4.50");
  return Buffer.from(await doc.save());
}

const upload = (h: Harness, credential: string | undefined, organizationId: string, file: Buffer, filename: string, contentType?: string) => {
  let r = request(h.handle.app).post("/uploads");
  if (credential) r = r.set("Authorization", credential);
  return r.field("organizationId", organizationId).attach("file", file, { filename, contentType: contentType ?? "application/octet-stream" });
};

const filesUnder = (dir: string) => {
  try {
    return readdirSync(dir, { recursive: true, withFileTypes: true }).filter((d) => d.isFile()).map((d) => d.name);
  } catch {
    return [];
  }
};
const uploadRows = async (h: Harness) => (await h.owner.query("select * from app_public.uploads")).rows;

describe("POST /uploads (local folder)", () => {
  let h: Harness;
  let a: Tenant;
  let b: Tenant;
  const storageDir = path.join(tmp, "local");
  beforeAll(async () => {
    h = await startHarness({ storageDir, s3: undefined, publicUrl: "http://files.example" });
    a = await createTenant(h);
    b = await createTenant(h);
  });
  afterAll(() => h?.close());

  it("stores a PNG and a PDF, typed from their bytes, under the organization's key space", async () => {
    const image = await png();
    const r = await upload(h, a.apiKey, a.organizationId, image, "my receipt.png");
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body).toEqual({ objectKey: expect.stringMatching(new RegExp(`^${a.organizationId}/uploads/[0-9a-f-]{36}/my-receipt\\.png$`)), filename: "my receipt.png", contentType: "image/png", size: image.length });
    expect(r.headers["x-ratelimit-limit"]).toBe("5000");

    const doc = await pdf();
    // The declared type and name say nothing: the bytes decide.
    const p = await upload(h, a.ownerJwt, a.organizationId, doc, "scan.jpg", "image/jpeg");
    expect(p.status, JSON.stringify(p.body)).toBe(201);
    expect(p.body).toMatchObject({ contentType: "application/pdf", size: doc.length, filename: "scan.jpg" });

    const rows = await uploadRows(h);
    expect(rows.map((x) => x.object_key).sort()).toEqual([r.body.objectKey, p.body.objectKey].sort());
    expect(rows.find((x) => x.object_key === p.body.objectKey)).toMatchObject({ organization_id: a.organizationId, content_type: "application/pdf", size: String(doc.length) });
    expect(rows[0].sha256).toMatch(/^[0-9a-f]{64}$/);
  });

  it("takes plain UTF-8 text and refuses an executable or binary whatever its name and declared type (415)", async () => {
    const t = await upload(h, a.apiKey, a.organizationId, Buffer.from("Café receipt\r\nTotal\t12.00\n"), "note.txt");
    expect(t.status).toBe(201);
    expect(t.body.contentType).toBe("text/plain");
    const before = filesUnder(storageDir).length;
    const elf = Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]), randomBytes(5000)]);
    const mz = Buffer.concat([Buffer.from("MZ"), randomBytes(5000)]);
    for (const [bytes, name] of [[elf, "receipt.png"], [mz, "receipt.png"], [Buffer.from("a\u0000b"), "x.txt"], [randomBytes(3000), "x.pdf"]] as const) {
      const r = await upload(h, a.apiKey, a.organizationId, bytes, name, "image/png");
      expect(r.status).toBe(415);
      expect(r.body.errors[0]).toMatchObject({ message: expect.stringMatching(/^Unsupported file type/), extensions: { code: "UNSUPPORTED_MEDIA_TYPE" } });
    }
    expect(filesUnder(storageDir).length).toBe(before);
  });

  it("refuses a file over 20 MiB (413) and keeps nothing", async () => {
    const rowsBefore = (await uploadRows(h)).length;
    const filesBefore = filesUnder(storageDir).length;
    const big = Buffer.concat([await png(), randomBytes(21 * 1024 * 1024)]);
    const r = await upload(h, a.apiKey, a.organizationId, big, "huge.png");
    expect(r.status).toBe(413);
    expect(r.body.errors[0].extensions.code).toBe("PAYLOAD_TOO_LARGE");
    expect(filesUnder(storageDir).length).toBe(filesBefore);
    expect((await uploadRows(h)).length).toBe(rowsBefore);
  });

  it("401 without a credential or with a bad one; another organization's id is refused and nothing is stored", async () => {
    const image = await png();
    const none = await upload(h, undefined, a.organizationId, image, "r.png");
    expect(none.status).toBe(401);
    expect(none.body).toEqual({ errors: [{ message: "Authentication Required.", extensions: { code: "UNAUTHENTICATED" } }] });
    const bad = await upload(h, `Bearer acct_${"x".repeat(40)}`, a.organizationId, image, "r.png");
    expect(bad.status).toBe(401);
    expect(bad.body.errors[0].message).toBe("Invalid API Key.");

    const before = { files: filesUnder(storageDir).length, rows: (await uploadRows(h)).length };
    const other = await upload(h, a.apiKey, b.organizationId, image, "r.png");
    expect(other.status).toBe(403);
    expect(other.body.errors[0]).toMatchObject({ message: "API Key Not Authorized For This Organization.", extensions: { code: "FORBIDDEN" } });
    const notMember = await upload(h, b.ownerJwt, a.organizationId, image, "r.png");
    expect(notMember.status).toBe(403);
    expect(notMember.body.errors[0].message).toBe("Not A Member Of This Organization.");
    const missing = await upload(h, a.ownerJwt, "00000000-0000-4000-8000-000000000000", image, "r.png");
    expect(missing.status).toBe(404);
    expect(missing.body.errors[0].message).toBe("Organization Not Found.");
    expect({ files: filesUnder(storageDir).length, rows: (await uploadRows(h)).length }).toEqual(before);
  });

  it("wants organizationId before file, one file, and multipart at all (400)", async () => {
    const image = await png();
    const wrongOrder = await request(h.handle.app).post("/uploads").set("Authorization", a.apiKey)
      .attach("file", image, "r.png").field("organizationId", a.organizationId);
    expect(wrongOrder.status).toBe(400);
    expect(wrongOrder.body.errors[0].message).toBe("Send organizationId before file in the form.");
    const two = await request(h.handle.app).post("/uploads").set("Authorization", a.apiKey)
      .field("organizationId", a.organizationId).attach("file", image, "r.png").attach("file", image, "s.png");
    expect(two.status).toBe(400);
    expect(two.body.errors[0].message).toBe("Send one file per request.");
    const json = await request(h.handle.app).post("/uploads").set("Authorization", a.apiKey).send({ organizationId: a.organizationId });
    expect(json.status).toBe(400);
    const noFile = await request(h.handle.app).post("/uploads").set("Authorization", a.apiKey).field("organizationId", a.organizationId);
    expect(noFile.status).toBe(400);
    expect(noFile.body.errors[0].message).toBe("A file is required (form field file).");
  });

  it("counts uploads in the API key's hourly quota: 429 with the headers past it", async () => {
    const app = await h.secondApp({ rateLimitPerHour: 2 });
    const t = await createTenant(h);
    const image = await png();
    const send = () => request(app.app).post("/uploads").set("Authorization", t.apiKey)
      .field("organizationId", t.organizationId).attach("file", image, "r.png");
    expect((await send()).status).toBe(201);
    const second = await send();
    expect(second.status).toBe(201);
    expect(second.headers["x-ratelimit-remaining"]).toBe("0");
    const third = await send();
    expect(third.status).toBe(429);
    expect(third.body).toEqual({ errors: [{ message: "Rate Limit Exceeded. 2 Requests/Hour.", extensions: { code: "RATE_LIMITED" } }] });
    expect(third.headers).toMatchObject({ "x-ratelimit-limit": "2", "x-ratelimit-remaining": "0", "retry-after": expect.stringMatching(/^\d+$/) });
    expect(Number(third.headers["x-ratelimit-reset"])).toBeGreaterThan(Date.now() / 1000);
  });

  it("serves a signed file URL with the same bytes and type; a tampered or expired one is 403", async () => {
    const image = await png();
    const up = (await upload(h, a.apiKey, a.organizationId, image, "receipt 1.png")).body;
    const url = fileUrls(h.config).sign({ objectKey: up.objectKey, contentType: up.contentType, filename: up.filename });
    expect(url.startsWith("http://files.example/files/")).toBe(true);
    const pathPart = new URL(url).pathname;
    const r = await request(h.handle.app).get(pathPart).buffer(true).parse((res, cb) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => cb(null, Buffer.concat(chunks)));
    });
    expect(r.status).toBe(200);
    expect(Buffer.compare(r.body as Buffer, image)).toBe(0);
    expect(r.headers["content-type"]).toBe("image/png");
    expect(r.headers["x-content-type-options"]).toBe("nosniff");
    expect(r.headers["content-security-policy"]).toContain("default-src 'none'");
    expect(r.headers["content-disposition"]).toBe("inline; filename=\"receipt 1.png\"; filename*=UTF-8''receipt%201.png");
    expect(inlineDisposition("a\"b\\c;é.pdf")).toBe("inline; filename=\"a_b_c__.pdf\"; filename*=UTF-8''a%22b%5Cc%3B%C3%A9.pdf");
    expect(r.headers["cache-control"]).toMatch(/^private, max-age=(8\d\d|900)$/);

    const token = pathPart.slice("/files/".length);
    const [payload, mac] = token.split(".");
    const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload, "base64url").toString()), k: `${b.organizationId}/x.png` })).toString("base64url");
    for (const bad of [`${forged}.${mac}`, `${payload}.${mac.slice(0, -2)}AA`, "garbage", `${payload}`]) {
      const t = await request(h.handle.app).get(`/files/${bad}`);
      expect(t.status).toBe(403);
      expect(t.body.errors[0].extensions.code).toBe("FORBIDDEN");
    }
    const expired = fileUrls(h.config, { now: () => Math.floor(Date.now() / 1000) - 3600 }).sign(up);
    expect((await request(h.handle.app).get(new URL(expired).pathname)).status).toBe(403);
    const gone = fileUrls(h.config).sign({ objectKey: `${a.organizationId}/uploads/none/x.png`, contentType: "image/png" });
    expect((await request(h.handle.app).get(new URL(gone).pathname)).status).toBe(404);
  });
});

describe("POST /uploads (S3 through s3rver)", () => {
  let h: Harness;
  let a: Tenant;
  let server: { run(): Promise<{ port: number }>; close(): Promise<void> };
  let s3: S3Storage;
  beforeAll(async () => {
    server = new S3rver({ port: 0, address: "127.0.0.1", silent: true, directory: mkdtempSync(path.join(tmp, "s3rver-")) });
    const { port } = await server.run();
    const options = { bucket: "receipts", region: "us-east-1", endpoint: `http://127.0.0.1:${port}`, accessKeyId: "S3RVER", secretAccessKey: "S3RVER", forcePathStyle: true };
    s3 = new S3Storage(options);
    await s3.client.send(new CreateBucketCommand({ Bucket: "receipts" }));
    h = await startHarness({ storageDir: path.join(tmp, "unused"), s3: options });
    a = await createTenant(h);
  });
  afterAll(async () => {
    await h?.close();
    s3?.client.destroy();
    await server?.close();
  });
  const keys = async () => ((await s3.client.send(new ListObjectsV2Command({ Bucket: "receipts" }))).Contents ?? []).map((o) => o.Key);

  it("streams a PDF to the bucket and serves it back through the service", async () => {
    const doc = await pdf();
    const r = await upload(h, a.apiKey, a.organizationId, doc, "invoice.pdf");
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body).toMatchObject({ contentType: "application/pdf", size: doc.length });
    expect(await keys()).toEqual([r.body.objectKey]);
    const url = fileUrls(h.config).sign(r.body);
    const got = await request(h.handle.app).get(new URL(url).pathname).buffer(true).parse((res, cb) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => cb(null, Buffer.concat(chunks)));
    });
    expect(got.status).toBe(200);
    expect(got.headers["content-type"]).toBe("application/pdf");
    expect(Buffer.compare(got.body as Buffer, doc)).toBe(0);
    expect(readdirSync(tmp)).not.toContain("unused");
  });

  it("refuses a 21 MiB file and an executable, leaving the bucket and the table as they were", async () => {
    const before = await keys();
    const big = Buffer.concat([await png(), randomBytes(21 * 1024 * 1024)]);
    expect((await upload(h, a.apiKey, a.organizationId, big, "big.png")).status).toBe(413);
    const elf = Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]), randomBytes(5000)]);
    expect((await upload(h, a.apiKey, a.organizationId, elf, "r.png", "image/png")).status).toBe(415);
    expect(await keys()).toEqual(before);
    expect((await uploadRows(h)).length).toBe(before.length);
  });
});
