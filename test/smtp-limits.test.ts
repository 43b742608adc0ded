import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import nodemailer from "nodemailer";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSmtpIntake, type SmtpIntake } from "../src/intake/smtp.js";
import { addressKey, networkKey, SESSIONS_PER_ADDRESS } from "../src/intake/smtp-sessions.js";
import { LocalStorage } from "../src/storage/local.js";
import { createTenant, dataOf, startHarness, type Harness, type Tenant } from "./helpers/harness.js";

const tmp = mkdtempSync(path.join(os.tmpdir(), "smtp-limits-test-"));
const storage = new LocalStorage(path.join(tmp, "objects"));
const INBOX = "receipts@limits.example";
/** A second loopback address, so that a test has a sender other than 127.0.0.1. */
const OTHER_ADDRESS = "127.0.0.2";

let h: Harness;
let a: Tenant;
const listeners: SmtpIntake[] = [];
const sockets: net.Socket[] = [];

beforeAll(async () => {
  h = await startHarness({ storageDir: path.join(tmp, "objects"), s3: undefined });
  a = await createTenant(h);
  const created = await h.gql(`mutation($o: UUID!) { createIntakeAddress(organizationId: $o, addressType: "email", address: "${INBOX}") { success error } }`,
    { o: a.organizationId }, a.apiKey);
  expect(dataOf(created, "createIntakeAddress").success).toBe(true);
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  for (const l of listeners) await l.close();
  await h?.close();
  rmSync(tmp, { recursive: true, force: true });
});

const listen = async (sessionLimits?: Parameters<typeof startSmtpIntake>[0]["sessionLimits"]) => {
  const l = await startSmtpIntake({ port: 0, host: "127.0.0.1", pools: { owner: h.owner, auth: h.auth }, storage, sessionLimits });
  listeners.push(l);
  return l;
};

/** A bare SMTP client: each command's reply line by line, the moment the server closes, what it said last. */
interface RawSession {
  greeting: Promise<string>;
  command(line: string): Promise<string>;
  write(data: string): void;
  closed: Promise<{ at: number; last: string }>;
}

function rawSession(port: number, localAddress = "127.0.0.1"): RawSession {
  const socket = net.connect({ port, host: "127.0.0.1", localAddress });
  sockets.push(socket);
  socket.on("error", () => {});
  const waiting: ((line: string) => void)[] = [];
  let buffered = "";
  let last = "";
  socket.on("data", (d: Buffer) => {
    buffered += d.toString();
    for (let i = buffered.indexOf("\r\n"); i >= 0; i = buffered.indexOf("\r\n")) {
      const line = buffered.slice(0, i);
      buffered = buffered.slice(i + 2);
      last = line;
      // A multi-line reply (250-…) ends with its last line (250 …).
      if (/^\d{3} /.test(line) || !/^\d{3}-/.test(line)) waiting.shift()?.(line);
    }
  });
  const closed = new Promise<{ at: number; last: string }>((resolve) => socket.on("close", () => {
    for (const w of waiting.splice(0)) w("(closed)");
    resolve({ at: Date.now(), last });
  }));
  const reply = () => new Promise<string>((resolve) => waiting.push(resolve));
  const greeting = reply();
  return {
    greeting,
    command: (line) => {
      const r = reply();
      socket.write(`${line}\r\n`);
      return r;
    },
    write: (data) => socket.write(data),
    closed,
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A real mail client (nodemailer) sending one small message from `localAddress`. */
const send = (port: number, localAddress: string, messageId: string) => nodemailer.createTransport({
  host: "127.0.0.1", port, secure: false, ignoreTLS: true, localAddress,
}).sendMail({ from: "shop@sender.example", to: INBOX, subject: "Receipt", text: `Coffee 4.50 ${messageId}`, messageId });

describe("SMTP intake: no sender holds it shut", () => {
  it(`takes ${SESSIONS_PER_ADDRESS} sessions from one address and answers the next 421 at connect, while another address still delivers`, async () => {
    const smtp = await listen();
    const held = Array.from({ length: SESSIONS_PER_ADDRESS }, () => rawSession(smtp.port));
    for (const s of held) expect(await s.greeting).toMatch(/^220 /);
    for (const s of held) expect(await s.command("EHLO holder.example")).toMatch(/^250 /);

    const extra = rawSession(smtp.port);
    expect(await extra.greeting).toBe(`421 Too many sessions from your address (at most ${SESSIONS_PER_ADDRESS}), try again later`);
    await extra.closed;

    // Another address is not held back by the first one's sessions: a real client delivers.
    const info = await send(smtp.port, OTHER_ADDRESS, "<other-address@sender.example>");
    expect(info.response).toMatch(/^250 Accepted: 1 receipt/);
    // The holder's sessions still work.
    expect(await held[0].command("NOOP")).toMatch(/^250 /);

    // A place given back is a place for the same address again.
    expect(await held[0].command("QUIT")).toMatch(/^221 /);
    await held[0].closed;
    const again = rawSession(smtp.port);
    expect(await again.greeting).toMatch(/^220 /);
    await again.command("QUIT");
  });

  it("caps one network's sessions too, whatever its addresses (421 at connect)", async () => {
    const smtp = await listen({ perNetwork: 3 });
    const held = [rawSession(smtp.port, "127.0.0.3"), rawSession(smtp.port, "127.0.0.4"), rawSession(smtp.port, "127.0.0.5")];
    for (const s of held) expect(await s.greeting).toMatch(/^220 /);
    const extra = rawSession(smtp.port, "127.0.0.6");
    expect(await extra.greeting).toBe("421 Too many sessions from your network (at most 3), try again later");
    await extra.closed;
    for (const s of held) await s.command("QUIT");
    await Promise.all(held.map((s) => s.closed));
    const again = rawSession(smtp.port, "127.0.0.6");
    expect(await again.greeting).toMatch(/^220 /);
    await again.command("QUIT");
  });

  it("counts an IPv6 sender by its /64 and an IPv4-mapped one as the IPv4 address", () => {
    expect(addressKey("2001:db8:1:2:3:4:5:6")).toBe(addressKey("2001:db8:1:2::9"));
    expect(addressKey("2001:db8:1:2:3:4:5:6")).not.toBe(addressKey("2001:db8:1:3::9"));
    expect(addressKey("::ffff:127.0.0.2")).toBe("127.0.0.2");
    expect(addressKey("127.0.0.1")).not.toBe(addressKey("127.0.0.2"));
    // Networks: an IPv4 /24 and an IPv6 /48 (a home /56 is 256 /64s, one sender).
    expect(networkKey("203.0.113.7")).toBe(networkKey("203.0.113.200"));
    expect(networkKey("203.0.113.7")).not.toBe(networkKey("203.0.114.7"));
    expect(networkKey("2001:db8:1:2::9")).toBe(networkKey("2001:db8:1:ff00::1"));
    expect(networkKey("2001:db8:1:2::9")).not.toBe(networkKey("2001:db8:2:2::9"));
    expect(networkKey("::ffff:127.0.0.2")).toBe("127.0.0.0/24");
  });

  it("closes a session that only sends NOOP, RSET, HELP and VRFY once the idle time is up (421)", async () => {
    const idleMs = 1500;
    const smtp = await listen({ idleMs });
    const s = rawSession(smtp.port);
    const start = Date.now();
    expect(await s.greeting).toMatch(/^220 /);
    await s.command("EHLO idler.example");
    let stop = false;
    const chatter = (async () => {
      for (let i = 0; !stop; i++) {
        await s.command(["NOOP", "RSET", "HELP", `VRFY ${INBOX}`][i % 4]);
        await sleep(200);
      }
    })();
    const { at, last } = await s.closed;
    stop = true;
    await chatter;
    expect(last).toBe("421 Idle without a message for too long, closing connection");
    // Closed at the idle time, however often it chattered meanwhile.
    expect(at - start).toBeGreaterThanOrEqual(idleMs - 50);
    expect(at - start).toBeLessThan(idleMs + 1500);
  });

  it("restarts the idle clock on MAIL and RCPT, and ends every session at its lifetime", async () => {
    const smtp = await listen({ idleMs: 1200, lifetimeMs: 4000 });
    const s = rawSession(smtp.port);
    const start = Date.now();
    expect(await s.greeting).toMatch(/^220 /);
    await s.command("EHLO mover.example");
    // Progress every 800 ms: past the idle time several times over, the session stays.
    let stop = false;
    const moving = (async () => {
      for (let i = 0; !stop; i++) {
        const reply = await s.command(i % 2 === 0 ? "MAIL FROM:<shop@sender.example>" : `RCPT TO:<${INBOX}>`);
        if (reply === "(closed)") break;
        if (i % 2 === 1) await s.command("RSET");
        await sleep(800);
      }
    })();
    await sleep(2500);
    expect(await s.command("NOOP")).toMatch(/^250 /);
    const { at, last } = await s.closed;
    stop = true;
    await moving;
    expect(last).toBe("421 Session time limit reached, reconnect to continue");
    expect(at - start).toBeGreaterThanOrEqual(4000 - 50);
    expect(at - start).toBeLessThan(4000 + 1500);
  });

  it("a sender that leaves in the middle of DATA does not keep the parser waiting: later messages still arrive", async () => {
    const smtp = await listen();
    // More than the parser takes at once, each gone before the end of its message.
    const leavers = Array.from({ length: 4 }, () => rawSession(smtp.port, OTHER_ADDRESS));
    for (const s of leavers) {
      expect(await s.greeting).toMatch(/^220 /);
      await s.command("EHLO leaver.example");
      expect(await s.command("MAIL FROM:<shop@sender.example>")).toMatch(/^250 /);
      expect(await s.command(`RCPT TO:<${INBOX}>`)).toMatch(/^250 /);
      expect(await s.command("DATA")).toMatch(/^354 /);
      s.write("From: shop@sender.example\r\nTo: receipts@limits.example\r\nSubject: half\r\n\r\nThe first half of a message that never ends");
    }
    await sleep(200);
    for (const s of sockets.slice(-leavers.length)) s.destroy();
    await Promise.all(leavers.map((s) => s.closed));
    const info = await Promise.race([
      send(smtp.port, "127.0.0.1", "<after-leavers@sender.example>"),
      sleep(15_000).then(() => { throw new Error("the message after the leavers was not answered in 15 s"); }),
    ]);
    expect(info.response).toMatch(/^250 Accepted: 1 receipt/);
  });
});
