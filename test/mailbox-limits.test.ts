import { ImapFlow } from "imapflow";
import { afterAll, beforeAll, expect, it } from "vitest";
import { AnswerLimits } from "../src/sources/mailbox/answer-limits.js";
import { SourceError } from "../src/sources/errors.js";
import { startHostileImap, type HostileImap } from "./helpers/fakes/imap.js";
import { createTenant, dataOf, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { runJobs } from "./helpers/worker.js";
import { until } from "./helpers/until.js";

/**
 * A tenant's mailbox server cannot make the worker hold what it sends: imapflow keeps every
 * reply of a command, so a server answering one FETCH with endless lines grew the process
 * without end. Each answer is bounded in bytes and time, and the breach is the source's error.
 */
let h: Harness;
let t: Tenant;
let endless: HostileImap;
let trickle: HostileImap;

beforeAll(async () => {
  h = await startHarness({ outboundAllowLoopback: true });
  t = await createTenant(h);
  endless = await startHostileImap({ mode: "endless-fetch" });
  trickle = await startHostileImap({ mode: "trickle", lineEveryMs: 100 });
});

afterAll(async () => {
  await endless?.close();
  await trickle?.close();
  await h?.close();
});

const CONNECT = `mutation($o: UUID!, $port: Int) {
  connectMailbox(organizationId: $o, host: "127.0.0.1", port: $port, secure: false, username: "u", password: "pw-secret") {
    success error mailbox { id status lastError } } }`;

it("cuts off a server that answers the message list without end, and marks the mailbox with the reason", async () => {
  const connected = dataOf(await h.gql(CONNECT, { o: t.organizationId, port: endless.port }, t.ownerJwt), "connectMailbox");
  expect(connected).toMatchObject({ success: true });
  const rssBefore = process.memoryUsage().rss;
  const started = Date.now();
  await runJobs(h, 1);
  const took = Date.now() - started;

  expect(endless.fetches()).toBe(1);
  // Served a few MB at most before the cut, in well under the scan's deadline.
  expect(endless.bytesSent()).toBeLessThan(64 * 1024 * 1024);
  expect(took).toBeLessThan(30_000);
  expect(process.memoryUsage().rss - rssBefore).toBeLessThan(200 * 1024 * 1024);
  const { rows: [source] } = await h.owner.query(
    "select status, last_error from app_public.receipt_sources where id = $1", [connected.mailbox.id]);
  expect(source).toEqual({
    status: "error",
    last_error: `The mailbox server 127.0.0.1:${endless.port} sent more than 4 MB in answer to one request (the list of messages) and was cut off.`,
  });
  const { rows: [job] } = await h.owner.query(
    "select status, error from app_private.job_results where job_name = 'scan_mailbox' order by id desc limit 1");
  expect(job.status).toBe("failed");
  expect(job.error).not.toContain("pw-secret");
});

it("stops a scan in flight when its mailbox is disconnected", async () => {
  const connected = dataOf(await h.gql(CONNECT, { o: t.organizationId, port: trickle.port }, t.ownerJwt), "connectMailbox");
  expect(connected).toMatchObject({ success: true });
  const scanning = runJobs(h, 1);
  await until("the scan's fetch", () => trickle.fetches() > 0, 10_000); // the scan waits on the trickling answer
  const started = Date.now();
  expect(dataOf(await h.gql(`mutation($o: UUID!, $m: UUID!) { disconnectMailbox(organizationId: $o, mailboxId: $m) { success } }`,
    { o: t.organizationId, m: connected.mailbox.id }, t.ownerJwt), "disconnectMailbox")).toEqual({ success: true });
  await scanning;
  expect(Date.now() - started).toBeLessThan(10_000);
  const { rows: [job] } = await h.owner.query(
    "select status, result from app_private.job_results where job_name = 'scan_mailbox' order by id desc limit 1");
  expect(job).toMatchObject({ status: "succeeded", result: { receiptSourceId: connected.mailbox.id, disconnected: true } });
});

it("cuts off a command whose answer trickles past its time limit", async () => {
  const client = new ImapFlow({ host: "127.0.0.1", port: trickle.port, secure: false, auth: { user: "u", pass: "p" }, logger: false });
  client.on("error", () => {});
  const limits = new AnswerLimits(client, `127.0.0.1:${trickle.port}`, 1024 * 1024);
  try {
    await limits.run({ bytes: 1024 * 1024, ms: 5_000, what: "logging in" }, () => client.connect());
    await client.mailboxOpen("INBOX", { readOnly: true });
    const started = Date.now();
    const failed = await limits.run({ bytes: 1024 * 1024, ms: 500, what: "the list of messages" },
      () => client.fetchAll("1:3", { uid: true, envelope: true }, { uid: true })).catch((e) => limits.failure(e));
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(failed).toBeInstanceOf(SourceError);
    expect((failed as Error).message).toBe(
      `The mailbox server 127.0.0.1:${trickle.port} did not finish answering a request (the list of messages) within 0.5 s and was cut off.`);
  } finally {
    limits.stop();
    client.close();
  }
});

it("cuts off a connection past its byte budget in all", async () => {
  const client = new ImapFlow({ host: "127.0.0.1", port: endless.port, secure: false, auth: { user: "u", pass: "p" }, logger: false });
  client.on("error", () => {});
  const limits = new AnswerLimits(client, `127.0.0.1:${endless.port}`, 2 * 1024 * 1024);
  try {
    await client.connect();
    await client.mailboxOpen("INBOX", { readOnly: true });
    const failed = await limits.run({ bytes: 64 * 1024 * 1024, ms: 60_000, what: "the list of messages" },
      () => client.fetchAll("1:3", { uid: true }, { uid: true })).catch((e) => limits.failure(e));
    expect((failed as Error).message).toBe(`The mailbox server 127.0.0.1:${endless.port} sent more than 2 MB over one connection and was cut off.`);
    expect(limits.received()).toBeLessThan(8 * 1024 * 1024);
  } finally {
    limits.stop();
    client.close();
  }
});
