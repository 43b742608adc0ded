import { createHash } from "node:crypto";
import { Transform, type TransformCallback } from "node:stream";
import { DETECTION_BYTES, detectReceiptType, PlainTextCheck, type ReceiptContentType } from "./file-types.js";

/** The file is over the size limit. */
export class FileTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`The file is larger than ${limit / (1024 * 1024)} MiB.`);
  }
}

/** The file is none of the receipt types (or text that turned out not to be plain text). */
export class UnsupportedFileType extends Error {
  constructor() {
    super("Unsupported file type. Send a JPEG, PNG, WebP, HEIC, PDF or plain text file.");
  }
}

/**
 * A pass-through that learns what a file is while it streams: its type from the first bytes
 * (held back until known, so nothing of a refused file goes further), its size (failing with
 * FileTooLarge past `maxBytes`), its SHA-256, and, for plain text, that every later byte is
 * plain text too. Memory stays at one chunk plus the head, whatever the file's size.
 */
export class ReceiptInspector extends Transform {
  /** Settles once the type is known: null for a refused type (the stream then fails). */
  readonly type: Promise<ReceiptContentType | null>;
  size = 0;
  /** Why the stream failed, when it did (the consumer may report its own, vaguer error). */
  failure: Error | undefined;
  private readonly hash = createHash("sha256");
  private head: Buffer[] = [];
  private headBytes = 0;
  private detected: ReceiptContentType | null | undefined;
  private text: PlainTextCheck | undefined;
  private settleType!: (t: ReceiptContentType | null) => void;
  private failType!: (e: Error) => void;

  constructor(private readonly maxBytes: number) {
    super();
    this.type = new Promise((resolve, reject) => {
      this.settleType = resolve;
      this.failType = reject;
    });
    this.type.catch(() => {}); // a stream error is reported by the stream too
  }

  /** Hex SHA-256 of the bytes seen: the whole file once the stream has ended. */
  sha256(): string {
    return this.hash.copy().digest("hex");
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.size += chunk.length;
    if (this.size > this.maxBytes) return done(new FileTooLarge(this.maxBytes));
    this.hash.update(chunk);
    if (this.detected === undefined) {
      this.head.push(chunk);
      this.headBytes += chunk.length;
      if (this.headBytes < DETECTION_BYTES) return done();
      this.decide(false).then(() => done(), done);
      return;
    }
    this.forward(chunk, done);
  }

  override _flush(done: TransformCallback): void {
    const finish = () => (this.text && !this.text.end() ? done(new UnsupportedFileType()) : done());
    if (this.detected === undefined) this.decide(true).then(finish, done);
    else finish();
  }

  override _destroy(err: Error | null, done: (e: Error | null) => void): void {
    this.failure = err ?? undefined;
    this.failType(err ?? new Error("The file stream was closed early."));
    done(err);
  }

  private async decide(complete: boolean): Promise<void> {
    const head = Buffer.concat(this.head);
    this.head = [];
    this.detected = await detectReceiptType(head, { complete });
    this.settleType(this.detected);
    if (this.detected === null) throw new UnsupportedFileType();
    if (this.detected === "text/plain") {
      this.text = new PlainTextCheck();
      if (!this.text.push(head)) throw new UnsupportedFileType();
    }
    this.push(head);
  }

  private forward(chunk: Buffer, done: TransformCallback): void {
    if (this.text && !this.text.push(chunk)) return done(new UnsupportedFileType());
    done(null, chunk);
  }
}
