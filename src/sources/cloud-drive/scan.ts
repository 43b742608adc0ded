import { randomUUID } from "node:crypto";
import type { Readable } from "node:stream";
import { GetObjectCommand, type _Object } from "@aws-sdk/client-s3";
import type pg from "pg";
import { FileTooLarge } from "../../receipts/inspect.js";
import { RECEIPT_MAX_BYTES, storeReceiptFile } from "../../receipts/store-file.js";
import type { OutboundOptions } from "../../outbound/guard.js";
import { keySegment, type Storage } from "../../storage/index.js";
import { SourceError, type Deadline } from "../errors.js";
import { advanceCursor, type ScanReport, type ScanSource } from "../scan-report.js";
import { cloudDriveClient, describeStoreError, type CloudDrive, type CloudDriveSettings } from "./client.js";
import { listPage } from "./listing.js";

/**
 * Objects read by one scan at most, and listing pages (of up to 1,000 keys) looked at: so a scan
 * looks at no more than 10,000 keys, and a listing that never ends is the next scan's to go on.
 */
export const MAX_OBJECTS_PER_SCAN = 500;
export const MAX_PAGES_PER_SCAN = 10;
/**
 * A scan takes no new object once it has received this much from the store (its objects are at
 * most 20 MiB each): 500 objects of that size would be 10 GB, far past what one job should move.
 * The next scan goes on.
 */
export const MAX_BYTES_PER_SCAN = 256 * 1024 * 1024;

interface DriveCursor { startAfter?: string | null }

/**
 * Reads the objects under a cloud drive's prefix that were not read before with their current
 * ETag (docs/api.md, Receipt sources): each of an allowed type becomes a receipt (source
 * cloud_drive), and every one read is remembered, refused ones too, so a re-scan reads nothing and
 * a replaced object (a new ETag) is read again. A listing page is compared with what was read in
 * one query. A scan goes through at most 10 pages and 500 objects (and stops taking objects when
 * its time is nearly up, or once it has received 256 MB); the key it stopped after is kept, the
 * next scan (queued at once) goes on from there, and one that reaches the end starts the next pass
 * from the beginning. What the store does wrong is a SourceError; our own failures (database,
 * storage) are thrown as they are.
 */
export async function scanCloudDrive(owner: pg.Pool, storage: Storage, outbound: OutboundOptions,
    source: ScanSource<CloudDriveSettings>, report: ScanReport, limit: Deadline,
    most = { objects: MAX_OBJECTS_PER_SCAN, pages: MAX_PAGES_PER_SCAN }): Promise<void> {
  let opened: CloudDrive | undefined;
  const s3 = async <T>(call: () => Promise<T>): Promise<T> => {
    try {
      return await call();
    } catch (e) {
      // A limit the store broke, in words, unless the scan's own deadline came first.
      throw new SourceError(describeStoreError(limit.expired(opened ? opened.answers.failure(e) : e), source.settings, source.secret));
    }
  };
  const drive = opened = await s3(() => cloudDriveClient(source.settings, source.secret, outbound));
  const { client, answers } = drive;
  const keep = async (startAfter: string | null) => {
    if (!(await advanceCursor(owner, source.id, { startAfter }))) report.disconnected = true;
  };
  try {
    let budget = most.objects;
    let token: string | undefined;
    let position = (source.cursor as DriveCursor).startAfter ?? null;
    for (let pages = 0; ; pages++) {
      if (pages === most.pages) {
        report.more = true;
        break;
      }
      const page = await s3(() => listPage(drive, source.settings, { after: position, token }, limit.signal));
      // A key ending in a slash is a folder marker, not a file.
      const objects = (page.Contents ?? []).filter((o) => o.Key && !o.Key.endsWith("/") && o.ETag);
      report.scanned += objects.length;
      const { rows } = await owner.query<{ n: number }>("select app_private.cloud_drive_unread($1, $2, $3) as n",
        [source.id, objects.map((o) => o.Key), objects.map((o) => o.ETag)]);
      report.skipped += objects.length - rows.length;
      let read = 0;
      for (const { n } of rows) {
        if (budget-- === 0 || limit.pastSoft() || answers.received() >= MAX_BYTES_PER_SCAN) {
          report.more = true;
          break;
        }
        await readObject(drive, owner, storage, source, objects[n - 1], report, limit);
        read = n;
        await keep(objects[n - 1].Key!);
        if (report.disconnected) return;
      }
      if (report.more) {
        // The last object read (or the one before the page) is where the next scan goes on.
        if (read === 0) await keep(position);
        return;
      }
      const lastKey = page.Contents?.at(-1)?.Key;
      if (!page.IsTruncated || !page.NextContinuationToken || !lastKey) {
        await keep(null); // the end: the next pass starts from the beginning
        return;
      }
      token = page.NextContinuationToken;
      position = lastKey;
      await keep(position);
      if (report.disconnected) return;
    }
    await keep(position);
  } finally {
    client.destroy();
  }
}

async function readObject({ client, answers }: CloudDrive, owner: pg.Pool, storage: Storage,
    source: ScanSource<CloudDriveSettings>, object: _Object, report: ScanReport, limit: Deadline): Promise<void> {
  const driveKey = object.Key!;
  const etag = object.ETag!;
  const remember = (outcome: "refused") => owner.query("select app_private.record_cloud_drive_object($1, $2, $3, $4, $5)",
    [source.organizationId, source.id, driveKey, etag, outcome]);
  if ((object.Size ?? 0) > RECEIPT_MAX_BYTES) {
    report.refused++;
    await remember("refused");
    return;
  }
  // IfMatch: the version listed, or nothing (one replaced or deleted meanwhile is for the next scan).
  let got;
  try {
    got = await client.send(new GetObjectCommand({ Bucket: source.settings.bucket, Key: driveKey, IfMatch: etag }), { abortSignal: limit.signal });
  } catch (e) {
    const status = (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    if (status === 412 || status === 404) return;
    if (limit.signal.aborted) throw limit.expired(e);
    // An answer past its limits (an error without end) is the store's doing, not this object's.
    const breach = answers.failure(e);
    if (breach !== e) throw breach;
    // This one object is refused or broken (403, an archived object, a 5xx): the others go on,
    // and it is tried again on the next pass.
    report.failed++;
    return;
  }
  const body = got.Body as Readable;
  let download: unknown = null;
  body.on("error", (e) => { download ??= e; });
  const key = `${source.organizationId}/cloud-drive/${randomUUID()}/${keySegment(driveKey.split("/").pop()!)}`;
  let file;
  try {
    file = await storeReceiptFile(storage, key, body);
  } catch (e) {
    if (limit.signal.aborted) throw limit.expired(e);
    // A body past its bytes or time (one that trickles) is the store's doing: the source's error.
    const breach = answers.failure(download ?? e);
    if (breach !== (download ?? e)) throw breach;
    if (download !== null || body.errored) {
      report.failed++; // the store broke off the download: as above
      return;
    }
    if (!(e instanceof FileTooLarge)) throw e; // our storage
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
    const { rows: [{ r }] } = await owner.query<{ r: { receiptId: string; duplicate: boolean } | null }>(
      "select app_private.receive_cloud_drive_object($1, $2, $3, $4, $5, $6, $7, $8, $9) as r",
      [source.organizationId, source.id, driveKey, etag, key, driveKey.split("/").pop()!, file.contentType, file.size, file.sha256]);
    if (r === null) {
      report.disconnected = true; // its source is gone: nothing was recorded
      await storage.delete(key).catch(() => {});
    } else if (r.duplicate) {
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
