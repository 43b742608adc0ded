import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { buffer } from "node:stream/consumers";
import nodemailer from "nodemailer";
import MailComposer from "nodemailer/lib/mail-composer";
import { PDFDocument } from "pdf-lib";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeEmailReaders, IntakeBusy, MalformedMessage, MessageTookTooLong, parseEmail } from "../src/intake/email.js";
import { HTML_TO_TEXT_MAX_CHARS, TEXT_MAX_CHARS } from "../src/intake/mime-reader/limits.js";
import { MimeReaders } from "../src/intake/mime-reader/pool.js";
import { startSmtpIntake, type SmtpIntake } from "../src/intake/smtp.js";
import { LocalStorage } from "../src/storage/local.js";
import { createTenant, dataOf, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { startServerProcess } from "./helpers/server-process.js";

const tmp = mkdtempSync(path.join(os.tmpdir(), "email-limits-test-"));
const storageDir = path.join(tmp, "objects");
const storage = new LocalStorage(storageDir);
const SECRET = "test-intake-secret";
const INBOX = "receipts@limits.example";
const MB = 1024 * 1024;

/**
 * The event loop of this process (the API's, as far as SMTP and supertest go) may stall this long at
 * most: 15-50 ms on a quiet machine, against seconds to minutes when the parse ran here; the margin
 * is for a 2-core machine running other test files at once.
 */
const MAX_LOOP_DELAY_MS = 500;

let h: Harness;
let a: Tenant;
let smtp: SmtpIntake;
let pdfBytes: Buffer;

beforeAll(async () => {
  h = await startHarness({ storageDir, s3: undefined, intakeSecret: SECRET });
  a = await createTenant(h);
  const CREATE = `mutation($o: UUID!, $t: String!, $a: String!) { createIntakeAddress(organizationId: $o, addressType: $t, address: $a) { success error } }`;
  expect(dataOf(await h.gql(CREATE, { o: a.organizationId, t: "email", a: INBOX }, a.apiKey), "createIntakeAddress").success).toBe(true);
  smtp = await startSmtpIntake({ port: 0, host: "127.0.0.1", pools: { owner: h.owner, auth: h.auth }, storage });
  const doc = await PDFDocument.create();
  doc.addPage().drawText("Hardware Store  Total 19.99");
  pdfBytes = Buffer.from(await doc.save());
});
afterAll(async () => {
  await smtp?.close();
  await h?.close();
  await closeEmailReaders();
  rmSync(tmp, { recursive: true, force: true });
});

const receiptCount = async () => Number((await h.owner.query(
  "select count(*) from app_public.receipts where organization_id = $1", [a.organizationId])).rows[0].count);
const storedFiles = () => {
  try {
    return readdirSync(storageDir, { recursive: true, withFileTypes: true }).filter((d) => d.isFile()).length;
  } catch {
    return 0;
  }
};

/**
 * A table on one line, of host names and addresses: html-to-text's time grows with the square of
 * its length (2 MB took 20 s on the event loop before it was read on a thread with a limit).
 */
function table(bytes: number): string {
  const rows: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const row = `<tr><td>shop${i}.example.com</td><td>mail${i}@shop.example</td></tr>`;
    rows.push(row);
    size += row.length;
  }
  return `<table>${rows.join("")}</table>`;
}

const compose = (mail: ConstructorParameters<typeof MailComposer>[0]): Promise<Buffer> => new MailComposer(mail).compile().build();
const htmlOnly = (html: string, messageId: string, extra: ConstructorParameters<typeof MailComposer>[0] = {}) =>
  compose({ from: "Shop <billing@shop.example>", to: INBOX, subject: "Your order", messageId, html, ...extra });

/** Runs `work` while watching this process's event loop: its result, how long it took and the longest stall, in ms. */
async function measured<T>(work: () => Promise<T>) {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  const started = performance.now();
  let result: T;
  try {
    result = await work();
  } finally {
    await new Promise((resolve) => setTimeout(resolve, 50));
    histogram.disable();
  }
  return { result, elapsedMs: performance.now() - started, maxDelayMs: histogram.max / 1e6 };
}

const postEmail = (body: Buffer) =>
  request(h.handle.app).post("/intake/email").set("Content-Type", "message/rfc822").set("X-Intake-Secret", SECRET).send(body);

describe("an HTML-only e-mail with a table of several MB", () => {
  it("over SMTP: refused 554 with nothing stored, while the event loop stays free", async () => {
    const raw = await htmlOnly(table(8 * MB), "<table-smtp@shop.example>");
    const before = { receipts: await receiptCount(), files: storedFiles() };
    const transport = nodemailer.createTransport({ host: "127.0.0.1", port: smtp.port, secure: false, ignoreTLS: true });
    try {
      const { result: err, maxDelayMs, elapsedMs } = await measured(() =>
        transport.sendMail({ envelope: { from: "billing@shop.example", to: [INBOX] }, raw }).catch((e: unknown) => e));
      expect(String((err as { response?: string }).response)).toMatch(/^554 /);
      expect(maxDelayMs, `event loop stalled ${maxDelayMs} ms`).toBeLessThan(MAX_LOOP_DELAY_MS);
      expect(elapsedMs).toBeLessThan(10_000);
      console.info(`SMTP, ${(raw.length / MB).toFixed(1)} MB HTML table: refused in ${Math.round(elapsedMs)} ms, longest stall ${Math.round(maxDelayMs)} ms`);
    } finally {
      transport.close();
    }
    expect(await receiptCount()).toBe(before.receipts);
    expect(storedFiles()).toBe(before.files);
  });

  it.each([2, 8])("POST /intake/email, %i MB: 400 saying why, while /healthz answers at once", async (size) => {
    const raw = await htmlOnly(table(size * MB), `<table-http-${size}@shop.example>`);
    const before = { receipts: await receiptCount(), files: storedFiles() };
    let slowestHealthMs = 0;
    let probing = true;
    const probes = (async () => {
      while (probing) {
        const t = performance.now();
        expect((await request(h.handle.app).get("/healthz")).status).toBe(200);
        slowestHealthMs = Math.max(slowestHealthMs, performance.now() - t);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    const { result: r, maxDelayMs, elapsedMs } = await measured(() => postEmail(raw)).finally(() => { probing = false; });
    await probes;
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.errors[0]).toEqual({
      message: `The message has no attachment or plain text, and its HTML body is longer than ${HTML_TO_TEXT_MAX_CHARS / 1024} KiB, too long to read as text: send the receipt as an attachment.`,
      extensions: { code: "BAD_USER_INPUT" },
    });
    expect(maxDelayMs, `event loop stalled ${maxDelayMs} ms`).toBeLessThan(MAX_LOOP_DELAY_MS);
    expect(slowestHealthMs).toBeLessThan(MAX_LOOP_DELAY_MS);
    console.info(`POST /intake/email, ${(raw.length / MB).toFixed(1)} MB HTML table: 400 in ${Math.round(elapsedMs)} ms, longest stall ${Math.round(maxDelayMs)} ms, slowest /healthz ${Math.round(slowestHealthMs)} ms`);
    expect(await receiptCount()).toBe(before.receipts);
    expect(storedFiles()).toBe(before.files);
  });

  it("with a PDF attached: accepted, the PDF the receipt, the HTML left unread", async () => {
    const raw = await htmlOnly(table(2 * MB), "<table-pdf@shop.example>", {
      attachments: [{ filename: "order.pdf", content: pdfBytes, contentType: "application/pdf" }],
    });
    const r = await postEmail(raw);
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    expect(r.body.receiptIds).toHaveLength(1);
    const { rows: [row] } = await h.owner.query("select filename, content_type from app_public.receipts where id = $1", [r.body.receiptIds[0]]);
    expect(row).toEqual({ filename: "order.pdf", content_type: "application/pdf" });
  });
});

describe("what the reader keeps", () => {
  const storedText = async (receiptId: string) => {
    const { rows: [row] } = await h.owner.query("select object_key, filename from app_public.receipts where id = $1", [receiptId]);
    expect(row.filename).toBe("message.txt");
    return (await buffer(await storage.get(row.object_key))).toString("utf8");
  };

  it("a short HTML-only receipt still becomes its text", async () => {
    const r = await postEmail(await htmlOnly("<h1>City Cabs</h1><p>Taxi ride <b>23.40 CAD</b></p>", "<short-html@shop.example>"));
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    expect(await storedText(r.body.receiptIds[0])).toMatch(/CITY CABS\s+Taxi ride 23\.40 CAD/);
  });

  it("a long text body is cut to what extraction reads", async () => {
    const line = "Coffee beans 1 kg ........ 18.50\n";
    const r = await postEmail(await compose({ from: "a@shop.example", to: INBOX, subject: "Long", messageId: "<long-text@shop.example>",
      text: line.repeat(Math.ceil((TEXT_MAX_CHARS * 3) / line.length)) }));
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    const text = await storedText(r.body.receiptIds[0]);
    expect(text.length).toBeLessThanOrEqual(TEXT_MAX_CHARS + 1);
    expect(text.length).toBeGreaterThan(TEXT_MAX_CHARS - line.length);
  });

  it("refuses a message of too many MIME parts, or a part with oversized headers, saying so", async () => {
    const many = await compose({ from: "a@shop.example", to: INBOX, subject: "Parts", text: "x",
      attachments: Array.from({ length: 300 }, (_, i) => ({ filename: `f${i}.txt`, content: `part ${i}` })) });
    const r1 = await postEmail(many);
    expect(r1.status).toBe(400);
    expect(r1.body.errors[0].message).toBe("The message could not be read: Max allowed child nodes exceeded");

    const longHeader = await compose({ from: "a@shop.example", to: INBOX, subject: "Headers", text: "x",
      headers: { "X-Padding": "a ".repeat(200 * 1024) } });
    const r2 = await postEmail(longHeader);
    expect(r2.status).toBe(400);
    expect(r2.body.errors[0].message).toBe("The message could not be read: Max header size for a MIME node exceeded");
  });
});

describe("the reader threads", () => {
  /** Many HTML parts just under the conversion limit, each converted: seconds of work within every size limit. */
  const slowMessage = () => compose({
    from: "a@shop.example", to: INBOX, subject: "Slow", text: "x",
    attachments: Array.from({ length: 12 }, (_, i) => ({ filename: `p${i}.html`, contentType: "text/html", contentDisposition: "inline" as const, content: table(HTML_TO_TEXT_MAX_CHARS - 1024) })),
  });

  it("a message past the deadline is refused as taking too long; the killed thread is replaced", async () => {
    const readers = new MimeReaders({ threads: 1, heapMb: 256, deadlineMs: 500 });
    try {
      const small = await htmlOnly("<p>Lunch 12.00</p>", "<small@shop.example>");
      expect((await parseEmail(small, { readers })).text).toContain("Lunch 12.00"); // the thread started
      const { result: err, elapsedMs, maxDelayMs } = await measured(async () => parseEmail(await slowMessage(), { readers }).catch((e: unknown) => e));
      expect(err).toBeInstanceOf(MessageTookTooLong);
      expect(err).toBeInstanceOf(MalformedMessage);
      expect((err as Error).message).toBe("The message took too long to read (more than 0.5 s).");
      expect(elapsedMs).toBeLessThan(3_000);
      expect(maxDelayMs).toBeLessThan(MAX_LOOP_DELAY_MS);
      expect((await parseEmail(small, { readers })).text).toContain("Lunch 12.00");
    } finally {
      await readers.close();
    }
  });

  it("a message past the heap cap is refused; the thread is replaced", async () => {
    const readers = new MimeReaders({ threads: 1, heapMb: 32, deadlineMs: 10_000 });
    try {
      // Its HTML is held whole, as a string, in the thread's heap.
      const big = await htmlOnly(`<p>${"receipt ".repeat((20 * MB) / 8)}</p>`, "<big@shop.example>");
      const err = await parseEmail(big, { readers }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(MalformedMessage);
      expect((err as Error).message).toBe("The message needs more than 32 MiB of memory to read.");
      expect((await parseEmail(await htmlOnly("<p>Lunch 12.00</p>", "<small2@shop.example>"), { readers })).text).toContain("Lunch 12.00");
    } finally {
      await readers.close();
    }
  });

  it("reads more messages than threads, in turn, attachments intact", async () => {
    const readers = new MimeReaders({ threads: 2, heapMb: 256, deadlineMs: 10_000 });
    try {
      const messages = await Promise.all(Array.from({ length: 5 }, (_, i) => compose({
        from: "a@shop.example", to: INBOX, subject: `n${i}`, text: `message ${i}`,
        attachments: [{ filename: `r${i}.pdf`, content: pdfBytes }, { filename: "tiny.txt", content: `tiny ${i}` }],
      })));
      const parsed = await Promise.all(messages.map((m) => parseEmail(m, { readers })));
      parsed.forEach((p, i) => {
        expect(p.text.trim()).toBe(`message ${i}`);
        expect(p.parts.map((part) => part.filename)).toEqual([`r${i}.pdf`, "tiny.txt"]);
        expect(Buffer.compare(p.parts[0].content as Buffer, pdfBytes)).toBe(0);
        expect((p.parts[1].content as Buffer).toString()).toBe(`tiny ${i}`);
      });
    } finally {
      await readers.close();
    }
  });

  it("senders that trickle hold no reader, and what arrives at once is bounded: past it, try again", async () => {
    const { PassThrough } = await import("node:stream");
    // Four messages still arriving: more than the three readers.
    const trickling = Array.from({ length: 4 }, () => new PassThrough());
    const pending = trickling.map((stream) => parseEmail(stream).then(() => undefined, (e: unknown) => e));
    for (const stream of trickling) stream.write(`From: a@shop.example\r\nTo: ${INBOX}\r\n`);
    const started = Date.now();
    const parsed = await parseEmail(await compose({ from: "b@shop.example", to: INBOX, subject: "s", text: "here at once" }));
    expect(parsed.text.trim()).toBe("here at once");
    expect(Date.now() - started).toBeLessThan(5_000);

    // The four grow to 24 MiB each, 96 MiB in all: a fifth large one still fits, a sixth does not.
    const chunk = Buffer.alloc(MB, 0x61);
    for (let i = 0; i < 24; i++) for (const stream of trickling) stream.write(chunk);
    const fifth = new PassThrough();
    const fifthPending = parseEmail(fifth).then(() => undefined, (e: unknown) => e);
    for (let i = 0; i < 24; i++) fifth.write(chunk);
    await new Promise((resolve) => setImmediate(resolve));
    const busy = await parseEmail(Buffer.alloc(10 * MB, 0x62)).then(() => undefined, (e: unknown) => e as Error);
    expect(busy).toBeInstanceOf(IntakeBusy);
    expect(busy?.message).toBe("Too many messages are arriving at once; try again in a minute.");

    // Senders gone: their bytes are given back, and the next message is read.
    for (const stream of [...trickling, fifth]) stream.destroy(new Error("the sender went away"));
    for (const e of await Promise.all([...pending, fifthPending])) expect(e).toBeInstanceOf(MalformedMessage);
    expect((await parseEmail(await compose({ from: "c@shop.example", to: INBOX, subject: "s", text: "after" }))).text.trim()).toBe("after");
  }, 30_000);

  it("one sender holds at most one message's worth of what is arriving; others still get in", async () => {
    const { PassThrough } = await import("node:stream");
    const first = new PassThrough();
    const pending = parseEmail(first, { sender: "203.0.113.9" }).then(() => undefined, (e: unknown) => e);
    for (let i = 0; i < 20; i++) first.write(Buffer.alloc(MB, 0x61));
    await new Promise((resolve) => setImmediate(resolve));
    const second = await parseEmail(Buffer.alloc(6 * MB, 0x62), { sender: "203.0.113.9" }).then(() => undefined, (e: unknown) => e);
    expect(second).toBeInstanceOf(IntakeBusy);
    const other = await parseEmail(await compose({ from: "d@shop.example", to: INBOX, subject: "s", text: "another sender" }), { sender: "198.51.100.7" });
    expect(other.text.trim()).toBe("another sender");
    first.destroy(new Error("gone"));
    expect(await pending).toBeInstanceOf(MalformedMessage);
    const again = await parseEmail(await compose({ from: "e@shop.example", to: INBOX, subject: "s", text: "room again" }), { sender: "203.0.113.9" });
    expect(again.text.trim()).toBe("room again");
  });

  it("a POST /intake/email whose client goes away mid-message frees its reader", async () => {
    const server = http.createServer(h.handle.app).listen(0, "127.0.0.1");
    await new Promise((resolve) => server.once("listening", resolve));
    const { port } = server.address() as AddressInfo;
    try {
      // More abandoned messages than reader threads: each must give its slot back.
      for (let i = 0; i < 4; i++) {
        const req = http.request({ host: "127.0.0.1", port, method: "POST", path: "/intake/email",
          headers: { "Content-Type": "message/rfc822", "X-Intake-Secret": SECRET, "Content-Length": String(MB) } });
        req.on("error", () => undefined);
        req.write(`From: a@shop.example\r\nTo: ${INBOX}\r\nSubject: gone\r\n\r\n`);
        await new Promise((resolve) => setTimeout(resolve, 100));
        req.destroy();
      }
      const r = await postEmail(await htmlOnly("<p>Parking 4.00</p>", "<after-abandoned@shop.example>"));
      expect(r.status, JSON.stringify(r.body)).toBe(202);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  }, 20_000);
});

describe("under npm start (tsx, its own process)", () => {
  it("an 8 MB HTML table over SMTP is refused while /healthz keeps answering; a short one is received", async () => {
    const server = await startServerProcess({
      DATABASE_URL: h.databaseUrl, INTAKE_SECRET: SECRET, HOST: "127.0.0.1", LOG_LEVEL: "info",
      // As `npm start` runs it.
      NODE_OPTIONS: "--max-semi-space-size=32 --experimental-async-context-frame",
    });
    const transport = nodemailer.createTransport({ host: "127.0.0.1", port: Number(server.logs().match(/"smtpPort":(\d+)/)![1]), secure: false, ignoreTLS: true });
    try {
      const raw = await htmlOnly(table(8 * MB), "<table-process@shop.example>");
      let slowestHealthMs = 0;
      let probing = true;
      const probes = (async () => {
        while (probing) {
          const t = performance.now();
          expect((await fetch(`${server.url}/healthz`, { signal: AbortSignal.timeout(10_000) })).status).toBe(200);
          slowestHealthMs = Math.max(slowestHealthMs, performance.now() - t);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      })();
      const started = performance.now();
      const err = await transport.sendMail({ envelope: { from: "billing@shop.example", to: [INBOX] }, raw })
        .catch((e: unknown) => e).finally(() => { probing = false; });
      const elapsedMs = performance.now() - started;
      await probes;
      expect(String((err as { response?: string }).response)).toMatch(/^554 /);
      expect(slowestHealthMs).toBeLessThan(MAX_LOOP_DELAY_MS);
      console.info(`npm start, SMTP, ${(raw.length / MB).toFixed(1)} MB HTML table: refused in ${Math.round(elapsedMs)} ms, slowest /healthz ${Math.round(slowestHealthMs)} ms`);

      const before = await receiptCount();
      const info = await transport.sendMail({ from: "billing@shop.example", to: INBOX, subject: "Parking", messageId: "<process-short@shop.example>", html: "<p>Garage 7.25</p>" });
      expect(info.response).toMatch(/^250 /);
      expect(await receiptCount()).toBe(before + 1);
    } finally {
      transport.close();
      await server.stop();
      rmSync(server.dataDir, { recursive: true, force: true });
    }
  }, 90_000);
});
