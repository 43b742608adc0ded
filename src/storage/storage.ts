import type { Readable } from "node:stream";

/**
 * Where uploaded files live (processor exports now, receipts later): a flat space of keys, each an
 * object written whole. Backends: the local folder (local.ts) and an S3-compatible bucket (s3.ts).
 * Keys are relative paths of safe segments, the same on every backend.
 */
export interface Storage {
  /** Writes the whole stream under `key`, replacing what was there; visible only once complete. */
  put(key: string, body: Readable | Buffer | string): Promise<{ key: string; size: number }>;
  /** A read stream of the object; rejects with StorageNotFound when there is none. */
  get(key: string): Promise<Readable>;
  /** Removes the object; no error when there is none. */
  delete(key: string): Promise<void>;
  exists(key: string): Promise<boolean>;
}

export class StorageNotFound extends Error {
  /** Asking again finds nothing either (a job that meets it is not retried). */
  readonly permanent = true;
  constructor(readonly key: string) {
    super(`No stored object "${key}".`);
  }
}

/**
 * A key is 1 to 1,024 characters of `/`-separated segments of letters, digits, `.`, `_`, `-`
 * (no empty segment, none that is `.` or `..`): a path under the root on a disk, a plain object
 * name in a bucket.
 */
/** A key that can name no object: asking again cannot mend it (a job that meets it is not retried). */
export class InvalidStorageKey extends Error {
  readonly permanent = true;
}

export function checkKey(key: string): string {
  const segments = key.split("/");
  if (
    key.length === 0 || key.length > 1024 ||
    segments.some((s) => s === "" || s === "." || s === ".." || !/^[A-Za-z0-9._-]+$/.test(s))
  ) {
    throw new InvalidStorageKey(`Invalid storage key "${key}": use segments of letters, digits, ".", "_" and "-" separated by "/".`);
  }
  return key;
}

/** A key segment made from any name (a file's): unsafe characters become "-", at most 100 long. */
export function keySegment(name: string): string {
  const s = name.replace(/[^A-Za-z0-9._-]+/g, "-").replace(/^[.-]+/, "").slice(0, 100);
  return s === "" || s === "." || s === ".." ? "file" : s;
}
