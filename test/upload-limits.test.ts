import { randomBytes } from "node:crypto";
import http from "node:http";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import type { AddressInfo, Socket } from "node:net";
import os from "node:os";
import path from "node:path";
import { PDFDocument } from "pdf-lib";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTenant, dataOf, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { until } from "./helpers/until.js";

const tmp = mkdtempSync(path.join(os.tmpdir(), "upload-limits-test-"));
const storageDir = path.join(tmp, "objects");
const BOUNDARY = "----upload-limits-test";
/** Enough of a file for its type to be decided and its storage to begin. */
const PDF_START = Buffer.concat([Buffer.from("%PDF-1.7\n"), Buffer.alloc(8000, 0x20)]);

/** An app listening on loopback, with the server's side of each connection by the client's port. */
interface Served { url: string; connections: Map<number, Socket>; server: http.Server }

let h: Harness;
let api: Served;
const tenants: Tenant[] = [];
const servers: http.Server[] = [];

async function serve(listener: http.RequestListener): Promise<Served> {
  const server = http.createServer(listener);
  servers.push(server);
  const connections = new Map<number, Socket>();
  server.on("connection", (s: Socket) => connections.set(s.remotePort!, s));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, connections, server };
}

beforeAll(async () => {
  h = await startHarness({ storageDir, s3: undefined, publicUrl: "http://files.example" });
  for (let i = 0; i < 5; i++) tenants.push(await createTenant(h));
  api = await serve(h.handle.app);
});
afterAll(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  await h?.close();
  rmSync(tmp, { recursive: true, force: true });
});

/** The form's head up to the file's first byte, the file name written as browsers write it (raw UTF-8). */
const formHead = (organizationId: string, filename: string) => Buffer.from(
  `--${BOUNDARY}\r\nContent-Disposition: form-data; name="organizationId"\r\n\r\n${organizationId}\r\n` +
  `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: application/octet-stream\r\n\r\n`, "utf8");
const FORM_TAIL = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);

interface Answer { status: number; headers: http.IncomingHttpHeaders; body: any }

/** An upload that starts streaming its file and then waits: it is under way until `finish` or `abort`. */
function heldUpload(t: Tenant, credential = t.apiKey) {
  const req = http.request(`${api.url}/uploads`, {
    method: "POST",
    headers: { authorization: credential, "content-type": `multipart/form-data; boundary=${BOUNDARY}` },
  });
  req.on("error", () => {});
  const answered = answerOf(req);
  answered.catch(() => {}); // an aborted one never gets an answer
  req.write(formHead(t.organizationId, "held.pdf"));
  req.write(PDF_START);
  return {
    answered,
    finish: () => { req.end(FORM_TAIL); return answered; },
    abort: () => req.destroy(),
  };
}

function answerOf(req: http.ClientRequest): Promise<Answer> {
  return new Promise((resolve, reject) => {
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: JSON.parse(Buffer.concat(chunks).toString() || "null") }));
    });
    req.on("error", reject);
  });
}

/**
 * A whole upload of a large file over a real connection, sent as curl and browsers send one (a
 * chunk at a time, stopping once an answer has come): the answer, how long it took, and how much
 * of the request the server read.
 */
async function wholeUpload(credential: string | undefined, organizationId: string, fileBytes: number, to: Served = api): Promise<Answer & { ms: number; serverRead: number }> {
  const started = Date.now();
  const body = Buffer.concat([formHead(organizationId, "big.pdf"), PDF_START, randomBytes(fileBytes - PDF_START.length), FORM_TAIL]);
  // A connection of its own, which the client would keep open for more (the server decides to close it).
  const agent = new http.Agent({ keepAlive: true });
  const req = http.request(`${to.url}/uploads`, {
    method: "POST",
    agent,
    headers: { ...(credential ? { authorization: credential } : {}), "content-type": `multipart/form-data; boundary=${BOUNDARY}`, "content-length": body.length },
  });
  let clientPort = 0;
  req.on("socket", (s) => s.on("connect", () => (clientPort = s.localPort!)));
  let answeredYet = false;
  const answered = answerOf(req).finally(() => (answeredYet = true));
  answered.catch(() => {});
  for (let at = 0; at < body.length && !answeredYet && !req.destroyed; at += 64 * 1024) {
    if (!req.write(body.subarray(at, at + 64 * 1024))) {
      await new Promise<void>((resolve) => {
        const go = () => { req.off("drain", go); req.off("close", go); resolve(); };
        req.on("drain", go);
        req.on("close", go);
        answered.then(go, go);
      });
    }
  }
  if (!answeredYet) req.end();
  const answer = await answered;
  const ms = Date.now() - started;
  const connection = to.connections.get(clientPort);
  // What the server read is known once it has closed the connection it said it would close.
  if (answer.headers.connection === "close") await until("the connection to close", () => connection?.destroyed === true, 10_000);
  agent.destroy();
  return { ...answer, ms, serverRead: connection?.bytesRead ?? NaN };
}

/** Uploads whose storage has begun (their partial files), to know they are under way. */
const underWay = () => {
  try {
    return readdirSync(storageDir, { recursive: true }).filter((f) => String(f).endsWith(".partial")).length;
  } catch {
    return 0;
  }
};
const uploadRows = async () => Number((await h.owner.query("select count(*) from app_public.uploads")).rows[0].count);

/**
 * A 19 MB upload from `t`'s API key refused for being busy: at once, with Retry-After, the
 * connection closed and the file not read.
 */
async function expectRefusedBusy(t: Tenant, status: number, message: string, code: string) {
  const refused = await wholeUpload(t.apiKey, t.organizationId, 19 * 1024 * 1024);
  expect(refused.status).toBe(status);
  expect(refused.headers["retry-after"]).toBe("5");
  expect(refused.headers.connection).toBe("close");
  expect(refused.body).toEqual({ errors: [{ message, extensions: { code } }] });
  expect(refused.ms).toBeLessThan(3000);
  expect(refused.serverRead).toBeLessThan(1024 * 1024);
}

describe("POST /uploads under way at once", () => {
  it("takes 4 from one API key and answers the 5th 429 with Retry-After before reading its body; the owner's own token still gets in", async () => {
    const [a] = tenants;
    const held = Array.from({ length: 4 }, () => heldUpload(a));
    await until("4 uploads under way", () => underWay() === 4, 10_000);
    const rowsBefore = await uploadRows();

    // A 19 MB file: refused at once, the connection closed, not the file read.
    await expectRefusedBusy(a, 429, "Too many uploads under way for this credential (at most 4 at once); retry when one has finished.", "RATE_LIMITED");

    // Another credential of the same organization has places of its own.
    const other = await wholeUpload(a.ownerJwt, a.organizationId, 64 * 1024);
    expect(other.status, JSON.stringify(other.body)).toBe(201);

    // One finishes: its place is free again.
    expect((await held[0].finish()).status).toBe(201);
    const next = await wholeUpload(a.apiKey, a.organizationId, 64 * 1024);
    expect(next.status, JSON.stringify(next.body)).toBe(201);

    // Uploads cut off by their client give their places back and leave nothing.
    for (const u of held.slice(1)) u.abort();
    await until("the aborted uploads to be cleaned up", () => underWay() === 0, 10_000);
    expect(await uploadRows()).toBe(rowsBefore + 3);
    const after = await Promise.all(Array.from({ length: 4 }, () => wholeUpload(a.apiKey, a.organizationId, 64 * 1024)));
    expect(after.map((r) => r.status)).toEqual([201, 201, 201, 201]);
  });

  it("refuses a caller without a credential (401) or over its hourly quota (429) before reading its file", async () => {
    const [a] = tenants;
    const anonymous = await wholeUpload(undefined, a.organizationId, 19 * 1024 * 1024);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.connection).toBe("close");
    expect(anonymous.serverRead).toBeLessThan(1024 * 1024);

    const limited = await serve((await h.secondApp({ rateLimitPerHour: 1 })).app);
    const t = await createTenant(h);
    expect((await wholeUpload(t.apiKey, t.organizationId, 64 * 1024, limited)).status).toBe(201);
    const over = await wholeUpload(t.apiKey, t.organizationId, 19 * 1024 * 1024, limited);
    expect(over.status).toBe(429);
    expect(over.body.errors[0].extensions.code).toBe("RATE_LIMITED");
    expect(over.headers).toMatchObject({ connection: "close", "retry-after": expect.stringMatching(/^\d+$/) });
    expect(over.serverRead).toBeLessThan(1024 * 1024);
  });

  it("takes 8 from one organization, whatever its keys, and answers the 9th 429 with Retry-After", async () => {
    const t = await createTenant(h);
    const keys = [t.apiKey];
    for (let i = 0; i < 2; i++) {
      const { rows: [{ key }] } = await h.owner.query("select app_private.create_api_key($1, 'another') as key", [t.organizationId]);
      keys.push(`Bearer ${key.secret}`);
    }
    const held = keys.slice(0, 2).flatMap((k) => Array.from({ length: 4 }, () => heldUpload(t, k)));
    await until("8 uploads under way", () => underWay() === 8, 10_000);
    const refused = await wholeUpload(keys[2], t.organizationId, 19 * 1024 * 1024);
    expect(refused.status).toBe(429);
    expect(refused.headers).toMatchObject({ "retry-after": "5", connection: "close" });
    expect(refused.body).toEqual({ errors: [{
      message: "Too many uploads under way for this organization (at most 8 at once); retry when one has finished.",
      extensions: { code: "RATE_LIMITED" },
    }] });
    expect(refused.ms).toBeLessThan(3000);
    // Naming an organization the key cannot use takes none of that organization's places.
    const foreign = await wholeUpload(tenants[0].apiKey, t.organizationId, 64 * 1024);
    expect(foreign.status).toBe(403);
    for (const u of held) u.abort();
    await until("the aborted uploads to be cleaned up", () => underWay() === 0, 10_000);
    expect((await wholeUpload(keys[2], t.organizationId, 64 * 1024)).status).toBe(201);
  });

  it("takes 16 in all and answers the next 503 with Retry-After, whoever sends it", async () => {
    const held = tenants.slice(0, 4).flatMap((t) => Array.from({ length: 4 }, () => heldUpload(t)));
    await until("16 uploads under way", () => underWay() === 16, 10_000);
    const late = tenants[4];
    await expectRefusedBusy(late, 503, "The service is taking too many uploads at once; retry shortly.", "SERVICE_UNAVAILABLE");

    expect((await held[0].finish()).status).toBe(201);
    const next = await wholeUpload(late.apiKey, late.organizationId, 64 * 1024);
    expect(next.status, JSON.stringify(next.body)).toBe(201);
    for (const u of held.slice(1)) u.abort();
    await until("the aborted uploads to be cleaned up", () => underWay() === 0, 10_000);
  });
});

describe("UTF-8 file names", () => {
  it("drops an upload that stops arriving (408), and gives its place back", async () => {
    const t = await createTenant(h);
    const started = Date.now();
    const held = heldUpload(t);
    const answer = await held.answered;
    expect(answer.status).toBe(408);
    expect(answer.body.errors[0].message).toBe("The upload is arriving too slowly (less than 128 KB in 10 s).");
    expect(Date.now() - started).toBeLessThan(25_000);
    await until("its place given back", () => underWay() === 0, 10_000);
  }, 30_000);

  it("keeps reçu.pdf as sent (a decomposed ç too) and serves it back under that name", async () => {
    const [a] = tenants;
    const doc = await PDFDocument.create();
    doc.addPage().drawText("Boulangerie  Total 7.25");
    const pdf = Buffer.from(await doc.save());
    const send = (filename: string) => request(h.handle.app).post("/uploads").set("Authorization", a.apiKey)
      .set("Content-Type", `multipart/form-data; boundary=${BOUNDARY}`)
      .send(Buffer.concat([formHead(a.organizationId, filename), pdf, FORM_TAIL]));

    const up = await send("reçu.pdf");
    expect(up.status, JSON.stringify(up.body)).toBe(201);
    expect(up.body.filename).toBe("reçu.pdf");
    expect(up.body.objectKey).toMatch(/\/re-u\.pdf$/);
    const row = (await h.owner.query("select filename from app_public.uploads where object_key = $1", [up.body.objectKey])).rows[0];
    expect(row.filename).toBe("reçu.pdf");
    // A Mac sends the ç decomposed (c and a combining cedilla): the same name.
    expect((await send("rec\u0327u.pdf")).body.filename).toBe("reçu.pdf");

    // createReceipt takes the upload's name; the receipt's link serves the file under it.
    const created = dataOf(await h.gql(`mutation($o: UUID!, $k: String!) { createReceipt(organizationId: $o, objectKey: $k) { success error receiptId } }`,
      { o: a.organizationId, k: up.body.objectKey }, a.apiKey), "createReceipt");
    expect(created.success, created.error).toBe(true);
    const receipt = dataOf(await h.gql(`query($o: UUID!, $r: UUID!) { getReceipt(organizationId: $o, receiptId: $r) { filename imageUrl } }`,
      { o: a.organizationId, r: created.receiptId }, a.apiKey), "getReceipt");
    expect(receipt.filename).toBe("reçu.pdf");
    const file = await request(h.handle.app).get(new URL(receipt.imageUrl).pathname);
    expect(file.status).toBe(200);
    expect(file.headers["content-disposition"]).toBe("inline; filename=\"re_u.pdf\"; filename*=UTF-8''re%C3%A7u.pdf");
  });
});
