import { Readable, Transform, pipeline } from "node:stream";
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { checkKey, StorageNotFound, type Storage } from "./storage.js";

export interface S3StorageOptions {
  bucket: string;
  region: string;
  /** An S3-compatible server (MinIO, s3rver, …); unset: AWS itself. */
  endpoint?: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** `endpoint/bucket/key` instead of `bucket.endpoint/key` (MinIO, s3rver). */
  forcePathStyle: boolean;
  /** Every object's name starts with `prefix/`: segments as in a key (checkKey). */
  prefix?: string;
}

/**
 * Is this SDK error the server saying there is no such object? A missing bucket is a configuration
 * error, not a missing object (HeadObject's bodiless 404 cannot tell them apart).
 */
function notFound(e: unknown): boolean {
  const err = e as { name?: string; $metadata?: { httpStatusCode?: number } };
  if (err?.name === "NoSuchBucket") return false;
  return err?.name === "NoSuchKey" || err?.name === "NotFound" || err?.$metadata?.httpStatusCode === 404;
}

/** Objects in one bucket of an S3-compatible service; a key is the object's name (after the prefix). */
export class S3Storage implements Storage {
  readonly client: S3Client;
  readonly bucket: string;
  readonly prefix: string;

  constructor(options: S3StorageOptions) {
    this.bucket = options.bucket;
    const prefix = (options.prefix ?? "").replace(/\/+$/, "");
    this.prefix = prefix === "" ? "" : `${checkKey(prefix)}/`;
    this.client = new S3Client({
      region: options.region,
      endpoint: options.endpoint,
      forcePathStyle: options.forcePathStyle,
      credentials: { accessKeyId: options.accessKeyId, secretAccessKey: options.secretAccessKey },
      // Checksums only where S3 requires them: S3-compatible servers may not know the newer
      // (flexible, aws-chunked) ones.
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
      // A store that accepts connections and never answers must not hold an upload, a download
      // or a job for ever: 5 s to connect, and a request silent for 30 s fails (and is retried).
      requestHandler: { connectionTimeout: 5_000, requestTimeout: 30_000, throwOnRequestTimeout: true },
    });
  }

  private name(key: string): string {
    return this.prefix + checkKey(key);
  }

  async put(key: string, body: Readable | Buffer | string): Promise<{ key: string; size: number }> {
    const Key = this.name(key);
    if (typeof body === "string" || Buffer.isBuffer(body)) {
      await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key, Body: body }));
      return { key, size: Buffer.byteLength(body) };
    }
    // A stream of unknown length: a multipart upload that holds a few parts in memory at most
    // (a single PutObject when it is shorter than one part); the object appears only once complete.
    let size = 0;
    const counted = new Transform({
      transform(chunk: Buffer, _enc, done) {
        size += chunk.length;
        done(null, chunk);
      },
    });
    // An error of the source destroys `counted`, which fails (and aborts) the upload.
    pipeline(body, counted, () => {});
    const upload = new Upload({ client: this.client, params: { Bucket: this.bucket, Key, Body: counted } });
    try {
      await upload.done();
    } catch (e) {
      body.destroy();
      counted.destroy();
      // The parts already sent are dropped, not left as an unfinished multipart upload.
      await upload.abort().catch(() => {});
      throw e;
    }
    return { key, size };
  }

  async get(key: string): Promise<Readable> {
    const Key = this.name(key);
    try {
      const res = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key }));
      const body = res.Body;
      if (body instanceof Readable) return body;
      return Readable.from(body as unknown as AsyncIterable<Uint8Array>);
    } catch (e) {
      if (notFound(e)) throw new StorageNotFound(key);
      throw e;
    }
  }

  async delete(key: string): Promise<void> {
    const Key = this.name(key);
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key }));
    } catch (e) {
      if (!notFound(e)) throw e;
    }
  }

  async exists(key: string): Promise<boolean> {
    const Key = this.name(key);
    try {
      await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key }));
      return true;
    } catch (e) {
      if (notFound(e)) return false;
      throw e;
    }
  }
}
