import v8 from "node:v8";
import vm from "node:vm";
import { ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeSandbox } from "../src/receipts/sandbox/index.js";
import { StoreAnswers } from "../src/sources/cloud-drive/answer-limits.js";
import { testCloudDrive } from "../src/sources/cloud-drive/client.js";
import { MAX_PAGES_PER_SCAN } from "../src/sources/cloud-drive/scan.js";
import { startEndlessS3, type EndlessS3 } from "./helpers/fakes/s3.js";
import { createTenant, dataOf, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { runJobs } from "./helpers/worker.js";
import { until } from "./helpers/until.js";

/**
 * A tenant's S3-compatible store cannot make the API or the worker hold what it sends: the AWS
 * SDK reads a listing whole before parsing it, so an endpoint answering with a listing that
 * never ends grew the process by gigabytes. Every answer is bounded in bytes and time, a
 * listing must move forward, and a breach is the connection test's or the source's error.
 */
const MB = 1024 * 1024;
/** A full collection, so that what is measured after one is what is still referenced. */
v8.setFlagsFromString("--expose-gc");
const collectGarbage = vm.runInNewContext("gc") as () => void;
const CONNECT = `mutation($o: UUID!, $endpoint: String) {
  connectCloudDrive(organizationId: $o, endpoint: $endpoint, bucket: "receipts", prefix: "in/", accessKeyId: "AKIA-HOSTILE", secretAccessKey: "drive-secret-42") {
    success error cloudDrive { id status lastError } } }`;

let h: Harness;
let endless: EndlessS3;
let pages: EndlessS3;
let repeating: EndlessS3;
let bottomless: EndlessS3;
let headers: EndlessS3;
let trickle: EndlessS3;

beforeAll(async () => {
  h = await startHarness({ outboundAllowLoopback: true });
  [endless, pages, repeating, bottomless, headers, trickle] = await Promise.all([
    startEndlessS3(),
    startEndlessS3({ listing: "endless-pages", keysPerPage: 3 }),
    startEndlessS3({ listing: "same-page", keysPerPage: 3 }),
    startEndlessS3({ listing: "endless-pages", keysPerPage: 1, objects: "endless" }),
    startEndlessS3({ listing: "endless-headers" }),
    startEndlessS3({ listing: "trickle", entryEveryMs: 50 }),
  ]);
});
afterAll(async () => {
  await closeSandbox();
  await Promise.all([endless, pages, repeating, bottomless, headers, trickle].map((fake) => fake?.close()));
  await h?.close();
});


const cutOff = (fake: EndlessS3) =>
  `The store at ${fake.endpoint} sent more than 4 MB in answer to one request (the list of objects) and was cut off.`;

/** A drive connected against `connectTo` (a store whose first page is valid), then pointed at `fake`. */
async function driveOn(t: Tenant, fake: EndlessS3, connectTo = pages): Promise<string> {
  const connected = dataOf(await h.gql(CONNECT, { o: t.organizationId, endpoint: connectTo.endpoint }, t.ownerJwt), "connectCloudDrive");
  expect(connected).toMatchObject({ success: true, error: null });
  const id = connected.cloudDrive.id as string;
  if (fake !== connectTo) {
    await h.owner.query("update app_public.receipt_sources set settings = settings || jsonb_build_object('endpoint', $2::text) where id = $1",
      [id, fake.endpoint]);
  }
  return id;
}
const sourceRow = async (id: string) => (await h.owner.query(
  "select status, last_error, next_scan_at > now() as backs_off from app_public.receipt_sources where id = $1", [id])).rows[0];
const lastScan = async (id: string) => (await h.owner.query(
  `select status, result, error from app_private.job_results
    where job_name = 'scan_cloud_drive' and payload->>'receiptSourceId' = $1 order by id desc limit 1`, [id])).rows[0];

describe("the connection test", () => {
  it("cuts off a listing that never ends, says so, and stores nothing", async () => {
    const t = await createTenant(h);
    const started = Date.now();
    const result = dataOf(await h.gql(CONNECT, { o: t.organizationId, endpoint: endless.endpoint }, t.ownerJwt), "connectCloudDrive");
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(result).toEqual({ success: false, cloudDrive: null, error: cutOff(endless) });
    expect(endless.listings()).toBe(1); // not retried
    expect((await h.owner.query("select count(*)::int n from app_public.receipt_sources where organization_id = $1",
      [t.organizationId])).rows[0].n).toBe(0);
    await until("the fake's connections closed", () => endless.openConnections() === 0, 5_000); // its connection closed, not kept for another call
  });

  it("keeps nothing of what it was sent: 400 MB served to 50 tests, the process grows by far less and holds none of it", async () => {
    const settings = { endpoint: endless.endpoint, bucket: "receipts", prefix: "", region: "us-east-1", accessKeyId: "k" };
    // Buffers are freed by their finalizers after a collection: a second one, a turn later, sees them gone.
    const held = async () => {
      collectGarbage();
      await new Promise((resolve) => setImmediate(resolve));
      collectGarbage();
      const { heapUsed, arrayBuffers } = process.memoryUsage();
      return heapUsed + arrayBuffers;
    };
    const round = () => Promise.all(Array.from({ length: 10 }, () => testCloudDrive(settings, "s", { allowLoopback: true })));
    await round(); // what is made once, on first use, is not what a test keeps
    await until("the fake's connections closed", () => endless.openConnections() === 0, 5_000); // nor what the fake (in this process) still sends
    const servedBefore = endless.bytesSent();
    const heldBefore = await held();
    const rssBefore = process.memoryUsage().rss;
    let peak = rssBefore;
    // Ten at a time, as parallel connection attempts would come.
    for (let i = 0; i < 5; i++) {
      expect(new Set(await round())).toEqual(new Set([cutOff(endless)]));
      peak = Math.max(peak, process.memoryUsage().rss);
    }
    const served = endless.bytesSent() - servedBefore;
    await until("the fake's connections closed", () => endless.openConnections() === 0, 5_000);
    const kept = (await held()) - heldBefore;
    console.log(`50 connection tests: served ${Math.round(served / MB)} MB, RSS peak +${Math.round((peak - rssBefore) / MB)} MB, `
      + `held after them (heap and buffers, after a collection) ${(kept / MB).toFixed(1)} MB`);
    expect(served).toBeGreaterThan(200 * MB);
    expect(peak - rssBefore).toBeLessThan(served / 2);
    // Tests that kept their answers would hold 4 MB each, 200 MB in all; what is left is noise.
    expect(kept).toBeLessThan(16 * MB);
  });

  it("cuts off headers that never end", async () => {
    const t = await createTenant(h);
    const started = Date.now();
    expect(dataOf(await h.gql(CONNECT, { o: t.organizationId, endpoint: headers.endpoint }, t.ownerJwt), "connectCloudDrive")).toEqual({
      success: false, cloudDrive: null, error: `The store at ${headers.endpoint} sent more than 16 KB of headers in one answer and was cut off.` });
    expect(Date.now() - started).toBeLessThan(5_000);
    await until("the fake's connections closed", () => headers.openConnections() === 0, 5_000);
  });

  it("cuts off an answer that trickles past its time", async () => {
    // The limit is a minute; here half a second, with the same code.
    const client = new S3Client({ endpoint: trickle.endpoint, region: "us-east-1", forcePathStyle: true,
      credentials: { accessKeyId: "k", secretAccessKey: "s" } });
    const answers = new StoreAnswers(client, trickle.endpoint, { answerMs: 500, objectMs: 500 });
    try {
      const started = Date.now();
      const failed = await client.send(new ListObjectsV2Command({ Bucket: "receipts" })).catch((e) => answers.failure(e));
      expect(Date.now() - started).toBeLessThan(3_000);
      expect((failed as Error).message).toBe(
        `The store at ${trickle.endpoint} did not finish answering a request (the list of objects) within 0.5 s and was cut off.`);
    } finally {
      client.destroy();
    }
    await until("the fake's connections closed", () => trickle.openConnections() === 0, 5_000);
  });
});

describe("a scan", () => {
  it("cuts off a listing that never ends: the drive shows the reason and backs off", async () => {
    const t = await createTenant(h);
    const id = await driveOn(t, endless);
    const started = Date.now();
    await runJobs(h, 1);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(await sourceRow(id)).toEqual({ status: "error", last_error: cutOff(endless), backs_off: true });
    const scan = await lastScan(id);
    expect(scan).toMatchObject({ status: "failed", error: cutOff(endless), result: { receiptSourceId: id, scanned: 0 } });
    expect(JSON.stringify(scan)).not.toContain("drive-secret-42");
    await until("the fake's connections closed", () => endless.openConnections() === 0, 5_000);
  });

  it("refuses a listing that repeats its pages, with the reason", async () => {
    const t = await createTenant(h);
    const id = await driveOn(t, repeating, repeating);
    const before = repeating.listings();
    await runJobs(h, 1);
    const reason = `The store at ${repeating.endpoint} listed "in/receipt-000000001.pdf" again or out of order: a listing that does not move forward would never end.`;
    expect(await sourceRow(id)).toEqual({ status: "error", last_error: reason, backs_off: true });
    // The first page's three objects were asked for (and are missing); the second page gave it away.
    expect(await lastScan(id)).toMatchObject({ status: "failed", error: reason, result: { scanned: 3 } });
    expect(repeating.listings() - before).toBe(2);
  });

  it("reads at most its pages of a listing without end, and leaves the rest to the next scan", async () => {
    const t = await createTenant(h);
    const id = await driveOn(t, pages);
    const before = pages.listings();
    const started = Date.now();
    await runJobs(h, 1);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(pages.listings() - before).toBe(MAX_PAGES_PER_SCAN);
    expect(await lastScan(id)).toMatchObject({ status: "succeeded", result: { scanned: 3 * MAX_PAGES_PER_SCAN, more: true } });
    expect(await sourceRow(id)).toEqual({ status: "connected", last_error: null, backs_off: false });
    const { rows: [{ cursor }] } = await h.owner.query("select cursor from app_public.receipt_sources where id = $1", [id]);
    expect(cursor).toEqual({ startAfter: `in/receipt-${String(3 * MAX_PAGES_PER_SCAN).padStart(9, "0")}.pdf` });
  });

  it("refuses objects whose bodies never end at the receipt size, holding none of them", async () => {
    const t = await createTenant(h);
    const id = await driveOn(t, bottomless, bottomless);
    const servedBefore = bottomless.bytesSent();
    const rssBefore = process.memoryUsage().rss;
    const started = Date.now();
    await runJobs(h, 1);
    const took = Date.now() - started;
    const served = bottomless.bytesSent() - servedBefore;
    const grown = process.memoryUsage().rss - rssBefore;
    console.log(`scan of ${MAX_PAGES_PER_SCAN} endless objects: served ${Math.round(served / MB)} MB in ${took} ms, RSS grew ${Math.round(grown / MB)} MB`);
    expect(await lastScan(id)).toMatchObject({ status: "succeeded",
      result: { scanned: MAX_PAGES_PER_SCAN, refused: MAX_PAGES_PER_SCAN, created: 0, failed: 0, more: true } });
    expect(served).toBeGreaterThan(200 * MB);
    expect(grown).toBeLessThan(served / 4);
    await until("the fake's connections closed", () => bottomless.openConnections() === 0, 5_000);
  });
});
