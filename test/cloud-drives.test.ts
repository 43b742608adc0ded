import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { CreateBucketCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
// @ts-expect-error s3rver ships no type declarations
import S3rver from "s3rver";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { closeSandbox } from "../src/receipts/sandbox/index.js";
import { sealedBox, sourceSecretContext } from "../src/secrets/sealed-box.js";
import { testCloudDrive } from "../src/sources/cloud-drive/client.js";
import { scanCloudDrive } from "../src/sources/cloud-drive/scan.js";
import { deadline } from "../src/sources/errors.js";
import { emptyScanReport } from "../src/sources/scan-report.js";
import { createStorage } from "../src/storage/index.js";
import { runJobs } from "./helpers/worker.js";
import { createTenant, dataOf, errorOf, gqlTo, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { receiptPdf } from "./helpers/receipt-files.js";
import { importBankLines } from "./ledger-fixtures.js";

/**
 * Cloud-drive folders as receipt sources (docs/api.md, Receipt sources), against a real
 * S3-compatible server (s3rver) started here on loopback: new objects under the prefix become
 * receipts, objects are remembered by key and ETag, and refused types are counted.
 */
const DRIVE = `id endpoint bucket prefix region accessKeyId status lastError lastScannedAt created`;
const CONNECT = `mutation($o: UUID!, $endpoint: String, $bucket: String!, $prefix: String, $key: String!, $secret: String!, $region: String) {
  connectCloudDrive(organizationId: $o, endpoint: $endpoint, bucket: $bucket, prefix: $prefix, accessKeyId: $key, secretAccessKey: $secret, region: $region) {
    success error cloudDrive { ${DRIVE} } } }`;
const LIST = `query($o: UUID!) { listCloudDrives(organizationId: $o) { ${DRIVE} } }`;
const SYNC = `mutation($o: UUID!, $d: UUID!) { syncCloudDrive(organizationId: $o, cloudDriveId: $d) { success error scanId } }`;
const DISCONNECT = `mutation($o: UUID!, $d: UUID!) { disconnectCloudDrive(organizationId: $o, cloudDriveId: $d) { success error } }`;

const BUCKET = "team-receipts";
let h: Harness;
let t: Tenant;
let s3: { server: any; endpoint: string; client: S3Client; directory: string };

beforeAll(async () => {
  h = await startHarness({ outboundAllowLoopback: true });
  t = await createTenant(h);
  const directory = mkdtempSync(path.join(os.tmpdir(), "cloud-drive-"));
  const server = new S3rver({ port: 0, address: "127.0.0.1", silent: true, directory });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({ endpoint, region: "us-east-1", forcePathStyle: true, credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" } });
  await client.send(new CreateBucketCommand({ Bucket: BUCKET }));
  s3 = { server, endpoint, client, directory };
});
afterAll(async () => {
  await closeSandbox();
  s3?.client.destroy();
  await s3?.server.close();
  if (s3) rmSync(s3.directory, { recursive: true, force: true });
  await h?.close();
});

const put = (key: string, body: Buffer | string) => s3.client.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body }));
const connect = (vars: Record<string, unknown>, credential = t.ownerJwt) => h.gql(CONNECT,
  { o: t.organizationId, endpoint: s3.endpoint, bucket: BUCKET, prefix: "scans/", key: "S3RVER", secret: "S3RVER", ...vars }, credential);
const work = () => runJobs(h);
const lastScan = async (driveId: string) => (await h.owner.query(
  `select status, result, error from app_private.job_results
    where job_name = 'scan_cloud_drive' and payload->>'receiptSourceId' = $1 order by id desc limit 1`, [driveId])).rows[0];
const driveReceipts = async () => (await h.owner.query(
  `select r.status, r.match_status, r.vendor_name, r.amount::text, r.filename, e.merchant_name
     from app_public.receipts r left join app_public.ledger_events e on e.id = r.event_id
    where r.organization_id = $1 and r.source = 'cloud_drive' order by r.created, r.filename`, [t.organizationId])).rows;

describe("connectCloudDrive", () => {
  it("refuses wrong credentials, an unknown bucket and plain http without the development flag, storing nothing", async () => {
    // s3rver knows one access key (S3RVER), and checks it.
    expect(dataOf(await connect({ key: "AKIA-NOT-KNOWN" }), "connectCloudDrive")).toEqual({ success: false, cloudDrive: null,
      error: `The store at ${s3.endpoint} refused the credentials for bucket "${BUCKET}": check the access key id and secret.` });
    expect(dataOf(await connect({ bucket: "no-such-bucket" }), "connectCloudDrive"))
      .toMatchObject({ success: false, error: `The bucket "no-such-bucket" does not exist at ${s3.endpoint}.` });
    expect(dataOf(await connect({ bucket: "Bad_Bucket" }), "connectCloudDrive"))
      .toMatchObject({ success: false, error: "Bucket must be 3 to 63 lower-case letters, digits, dots or hyphens." });
    expect(errorOf(await connect({}, t.apiKey)).message).toBe("API Keys Cannot Perform Admin Operations.");

    const strict = await h.secondApp({ outboundAllowLoopback: false });
    const via = (vars: Record<string, unknown>) =>
      gqlTo(strict, CONNECT, { o: t.organizationId, bucket: BUCKET, key: "S3RVER", secret: "S3RVER", ...vars }, t.ownerJwt);
    const errors = [];
    for (const endpoint of [s3.endpoint, "https://10.0.0.1", "https://169.254.169.254", `https://127.0.0.1:${new URL(s3.endpoint).port}`]) {
      errors.push(dataOf(await via({ endpoint }), "connectCloudDrive").error);
    }
    expect(errors).toEqual([
      "The endpoint must be an https URL.",
      "The host 10.0.0.1 is not allowed: 10.0.0.1 is a private address.",
      "The host 169.254.169.254 is not allowed: 169.254.169.254 is a link-local (cloud metadata) address.",
      "The host 127.0.0.1 is not allowed: 127.0.0.1 is a loopback address.",
    ]);
    // A name is checked by what it resolves to (the resolver is stubbed: no packet leaves).
    const resolve = vi.fn(async () => [{ address: "192.168.1.20", family: 4 }]);
    expect(await testCloudDrive({ endpoint: "https://files.attacker.example", bucket: BUCKET, prefix: "", region: "us-east-1", accessKeyId: "k" }, "s",
      { allowLoopback: false, resolve })).toBe("The host files.attacker.example is not allowed: 192.168.1.20 is a private address.");
    expect((await h.owner.query("select count(*)::int n from app_public.receipt_sources")).rows[0].n).toBe(0);
  });
});

describe("a cloud drive scanned by the worker", () => {
  let driveId: string;

  it("makes receipts of the objects under the prefix, counts the refused one, and leaves the others", async () => {
    expect(await importBankLines(h, t, [
      { transactionDate: "2026-11-10", description: "MAPLE FUEL STATION 4410", amount: "-61.30", eventType: "expense" },
    ])).toMatchObject({ success: true });
    await put("scans/fuel.pdf", await receiptPdf(["MAPLE FUEL STATION", "Date: 2026-11-10", "Diesel     61.30", "TOTAL      61.30"]));
    await put("scans/2026/parking.pdf", await receiptPdf(["CITY PARKING", "Date: 2026-11-11", "TOTAL 9.00"]));
    await put("scans/notes.docx", Buffer.from("PK\u0003\u0004 not a receipt"));
    await put("other/elsewhere.pdf", await receiptPdf(["OUTSIDE THE PREFIX", "TOTAL 1.00"]));

    const connected = dataOf(await connect({}), "connectCloudDrive");
    expect(connected).toMatchObject({ success: true, error: null, cloudDrive: {
      endpoint: s3.endpoint, bucket: BUCKET, prefix: "scans/", region: "us-east-1", accessKeyId: "S3RVER", status: "connected" } });
    expect(JSON.stringify(connected)).not.toContain("secret");
    driveId = connected.cloudDrive.id;

    await work();
    expect(await lastScan(driveId)).toEqual({ status: "succeeded", error: null,
      result: { receiptSourceId: driveId, scanned: 3, created: 2, duplicates: 0, refused: 1, skipped: 0, failed: 0, more: false } });
    expect(await driveReceipts()).toEqual(expect.arrayContaining([
      { status: "processed", match_status: "matched", vendor_name: "MAPLE FUEL STATION", amount: "61.30", filename: "fuel.pdf", merchant_name: "MAPLE FUEL STATION 4410" },
      { status: "processed", match_status: "unmatched", vendor_name: "CITY PARKING", amount: "9.00", filename: "parking.pdf", merchant_name: null },
    ]));
    expect(await driveReceipts()).toHaveLength(2);
  });

  it("creates nothing on a re-scan, and reads a replaced object again", async () => {
    const sync = dataOf(await h.gql(SYNC, { o: t.organizationId, d: driveId }, t.ownerJwt), "syncCloudDrive");
    expect(sync).toMatchObject({ success: true, error: null, scanId: expect.stringMatching(/^\d+$/) });
    await work();
    expect((await lastScan(driveId)).result).toMatchObject({ scanned: 3, created: 0, refused: 0, skipped: 3 });

    await put("scans/2026/parking.pdf", await receiptPdf(["CITY PARKING", "Date: 2026-11-11", "Corrected", "TOTAL 12.00"]));
    dataOf(await h.gql(SYNC, { o: t.organizationId, d: driveId }, t.ownerJwt), "syncCloudDrive");
    await work();
    expect((await lastScan(driveId)).result).toMatchObject({ scanned: 3, created: 1, skipped: 2 });
    expect((await driveReceipts()).map((r) => [r.filename, r.amount]).sort()).toEqual([["fuel.pdf", "61.30"], ["parking.pdf", "12.00"], ["parking.pdf", "9.00"]]);
  });

  it("goes on where a scan stopped at its limit, and starts the next pass from the beginning", async () => {
    const org = await createTenant(h);
    const id = randomUUID();
    await h.owner.query(`insert into app_public.receipt_sources (id, organization_id, kind, settings, secret_sealed)
      values ($1, $2, 'cloud_drive', $3, 'v1:unused')`, [id, org.organizationId,
      { endpoint: s3.endpoint, bucket: BUCKET, prefix: "batch/", region: "us-east-1", accessKeyId: "S3RVER" }]);
    for (const name of ["a", "b", "c"]) await put(`batch/${name}.pdf`, await receiptPdf([`SHOP ${name.toUpperCase()}`, "TOTAL 1.00"]));
    const scan = async () => {
      const { rows: [{ cursor }] } = await h.owner.query("select cursor from app_public.receipt_sources where id = $1", [id]);
      const report = emptyScanReport();
      const limit = deadline(60_000, "The scan");
      await scanCloudDrive(h.owner, createStorage(h.config), { allowLoopback: true },
        { id, organizationId: org.organizationId, secret: "S3RVER", cursor, settings: (await h.owner.query(
          "select settings from app_public.receipt_sources where id = $1", [id])).rows[0].settings }, report, limit, { objects: 2, pages: 10 });
      limit.clear();
      const { rows: [after] } = await h.owner.query("select cursor from app_public.receipt_sources where id = $1", [id]);
      return [report.created, report.more, after.cursor.startAfter];
    };
    expect(await scan()).toEqual([2, true, "batch/b.pdf"]);
    expect(await scan()).toEqual([1, false, null]);
    expect(await scan()).toEqual([0, false, null]);
  });

  it("shows a scan that fails on the drive, lists and disconnects it; the secret is never in a table in clear", async () => {
    const listed = dataOf(await h.gql(LIST, { o: t.organizationId }, t.ownerJwt), "listCloudDrives");
    expect(listed).toMatchObject([{ id: driveId, status: "connected", lastError: null }]);
    // s3rver's secret equals its key id, which is shown; so here the sealed value is opened instead.
    const { rows: [stored] } = await h.owner.query("select organization_id, secret_sealed from app_public.receipt_sources where id = $1", [driveId]);
    expect(stored.secret_sealed).toMatch(/^v1:/);
    expect(sealedBox(h.config.secretsKey).open(stored.secret_sealed, sourceSecretContext("cloud_drive", stored.organization_id, driveId))).toBe("S3RVER");
    expect(() => sealedBox(h.config.secretsKey).open(stored.secret_sealed, sourceSecretContext("cloud_drive", stored.organization_id, randomUUID()))).toThrow(/could not be opened/);

    await h.owner.query("update app_public.receipt_sources set settings = settings || '{\"bucket\": \"gone-bucket\"}' where id = $1", [driveId]);
    dataOf(await h.gql(SYNC, { o: t.organizationId, d: driveId }, t.ownerJwt), "syncCloudDrive");
    await work();
    expect(await lastScan(driveId)).toMatchObject({ status: "failed", error: `The bucket "gone-bucket" does not exist at ${s3.endpoint}.` });
    expect(dataOf(await h.gql(LIST, { o: t.organizationId }, t.ownerJwt), "listCloudDrives"))
      .toMatchObject([{ status: "error", lastError: `The bucket "gone-bucket" does not exist at ${s3.endpoint}.` }]);

    expect(dataOf(await h.gql(DISCONNECT, { o: t.organizationId, d: driveId }, t.ownerJwt), "disconnectCloudDrive")).toEqual({ success: true, error: null });
    expect((await h.owner.query("select count(*)::int n from app_public.cloud_drive_objects where receipt_source_id = $1", [driveId])).rows[0].n).toBe(0);
    expect(await driveReceipts()).toHaveLength(3);
  });
});
