import { randomUUID } from "node:crypto";
import type { Readable } from "node:stream";
import { GetObjectCommand, ListObjectsV2Command, type _Object, type S3Client } from "@aws-sdk/client-s3";
import type pg from "pg";
import { FileTooLarge } from "../../receipts/inspect.js";
import { RECEIPT_MAX_BYTES, storeReceiptFile } from "../../receipts/store-file.js";
import type { OutboundOptions } from "../../outbound/guard.js";
import { keySegment, type Storage } from "../../storage/index.js";
import type { ScanReport, ScanSource } from "../scan-report.js";
import { cloudDriveClient, type CloudDriveSettings } from "./client.js";

/** Objects read by one scan at most; the rest are read by the next, queued at once. */
export const MAX_OBJECTS_PER_SCAN = 500;

/**
 * Reads the objects under a cloud drive's prefix that were not read before with their current
 * ETag (decisions §13): each of an allowed type becomes a receipt (source cloud_drive), and every
 * one read is remembered, refused ones too, so a re-scan reads nothing and a replaced object
 * (a new ETag) is read again. A listing page is compared with what was read in one query.
 */
export async function scanCloudDrive(owner: pg.Pool, storage: Storage, outbound: OutboundOptions,
    source: ScanSource<CloudDriveSettings>, report: ScanReport): Promise<void> {
  const client = await cloudDriveClient(source.settings, source.secret, outbound);
  try {
    let budget = MAX_OBJECTS_PER_SCAN;
    let token: string | undefined;
    do {
      const page = await client.send(new ListObjectsV2Command({
        Bucket: source.settings.bucket, Prefix: source.settings.prefix || undefined, ContinuationToken: token,
      }));
      // A key ending in a slash is a folder marker, not a file.
      const objects = (page.Contents ?? []).filter((o) => o.Key && !o.Key.endsWith("/") && o.ETag);
      report.scanned += objects.length;
      const { rows } = await owner.query<{ n: number }>("select app_private.cloud_drive_unread($1, $2, $3) as n",
        [source.id, objects.map((o) => o.Key), objects.map((o) => o.ETag)]);
      report.skipped += objects.length - rows.length;
      for (const { n } of rows) {
        if (budget-- === 0) {
          report.more = true;
          break;
        }
        await readObject(client, owner, storage, source, objects[n - 1], report);
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token && !report.more);
  } finally {
    client.destroy();
  }
}

async function readObject(client: S3Client, owner: pg.Pool, storage: Storage, source: ScanSource<CloudDriveSettings>,
    object: _Object, report: ScanReport): Promise<void> {
  const driveKey = object.Key!;
  const etag = object.ETag!;
  const remember = (outcome: "refused") => owner.query("select app_private.record_cloud_drive_object($1, $2, $3, $4, $5)",
    [source.organizationId, source.id, driveKey, etag, outcome]);
  if ((object.Size ?? 0) > RECEIPT_MAX_BYTES) {
    report.refused++;
    await remember("refused");
    return;
  }
  let body: Readable;
  try {
    // IfMatch: the version listed, or nothing (one replaced meanwhile is read by the next scan).
    const got = await client.send(new GetObjectCommand({ Bucket: source.settings.bucket, Key: driveKey, IfMatch: etag }));
    body = got.Body as Readable;
  } catch (e) {
    const status = (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    if (status === 412 || status === 404) return;
    throw e;
  }
  const key = `${source.organizationId}/cloud-drive/${randomUUID()}/${keySegment(driveKey.split("/").pop()!)}`;
  let file;
  try {
    file = await storeReceiptFile(storage, key, body);
  } catch (e) {
    if (!(e instanceof FileTooLarge)) throw e;
    file = null;
  } finally {
    body.destroy();
  }
  if (file === null) {
    report.refused++;
    await remember("refused");
    return;
  }
  try {
    const { rows: [{ r }] } = await owner.query<{ r: { receiptId: string; duplicate: boolean } }>(
      "select app_private.receive_cloud_drive_object($1, $2, $3, $4, $5, $6, $7, $8, $9) as r",
      [source.organizationId, source.id, driveKey, etag, key, driveKey.split("/").pop()!, file.contentType, file.size, file.sha256]);
    if (r.duplicate) {
      report.duplicates++;
      await storage.delete(key).catch(() => {});
    } else {
      report.created++;
    }
  } catch (e) {
    await storage.delete(key).catch(() => {});
    throw e;
  }
}
