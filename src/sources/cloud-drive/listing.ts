import { ListObjectsV2Command, type ListObjectsV2CommandOutput, type S3Client } from "@aws-sdk/client-s3";
import { SourceError } from "../errors.js";

/** What a listing needs of a drive (client.ts's CloudDrive and CloudDriveSettings): its client, its name for messages, its folder. */
interface Drive { client: S3Client; answers: { where: string } }
interface Folder { bucket: string; prefix: string }

/** Keys asked for in one listing page, and the most a page may hold: S3's own page size. */
export const KEYS_PER_PAGE = 1000;
/** S3's longest key, in UTF-8 bytes; a drive's objects are remembered by keys up to this length. */
const KEY_MAX_BYTES = 1024;
/** How much of a key a message quotes. */
const QUOTED_KEY_CHARS = 100;

/** Where a page starts: after `after` (a key, or the beginning), by the store's token when it gave one. */
export interface PagePosition { after: string | null; token?: string }

/**
 * One page of the objects under the drive's prefix, held to what S3 promises: at most the keys
 * asked for, each of at most 1,024 bytes, in rising UTF-8 byte order after the page's starting
 * point. A store that breaks one of these is refused with the reason: a listing that goes back or
 * repeats itself would never end, and one page of more keys is a page without bounds.
 */
export async function listPage(drive: Drive, settings: Folder, from: PagePosition,
    signal: AbortSignal): Promise<ListObjectsV2CommandOutput> {
  const page = await drive.client.send(new ListObjectsV2Command({
    Bucket: settings.bucket, Prefix: settings.prefix || undefined, MaxKeys: KEYS_PER_PAGE,
    ...(from.token ? { ContinuationToken: from.token } : { StartAfter: from.after ?? undefined }),
  }), { abortSignal: signal });
  const where = drive.answers.where;
  const contents = page.Contents ?? [];
  if (contents.length > KEYS_PER_PAGE) {
    throw new SourceError(`The store at ${where} listed ${contents.length} objects in one page, more than the ${KEYS_PER_PAGE} asked for.`);
  }
  let previous = from.after === null ? null : Buffer.from(from.after);
  for (const { Key: key } of contents) {
    if (key === undefined) continue;
    const bytes = Buffer.from(key);
    if (bytes.length > KEY_MAX_BYTES) {
      throw new SourceError(`The store at ${where} listed a key of ${bytes.length} bytes; S3 keys have at most ${KEY_MAX_BYTES}.`);
    }
    if (previous !== null && Buffer.compare(bytes, previous) <= 0) {
      throw new SourceError(`The store at ${where} listed "${quoted(key)}" again or out of order: a listing that does not move forward would never end.`);
    }
    previous = bytes;
  }
  return page;
}

function quoted(key: string): string {
  return key.length > QUOTED_KEY_CHARS ? `${key.slice(0, QUOTED_KEY_CHARS)}…` : key;
}
