import { pipeline, Readable, Transform } from "node:stream";
import type { S3Client } from "@aws-sdk/client-s3";
import { RECEIPT_MAX_BYTES } from "../../receipts/store-file.js";
import { answerTooLarge, answerTooSlow, type SourceError } from "../errors.js";

/**
 * What a tenant's store may send: the AWS SDK reads every answer but an object's whole before
 * parsing it, so an endpoint answering a listing that never ends grew the process by gigabytes.
 * Here every answer body is counted as it arrives, on the client's own middleware stack (so no
 * command sent through the client escapes it), and cut off past its size or time: the
 * connection is destroyed, the call fails, and `failure()` says why in words. What comes before
 * a body is bounded elsewhere: its headers by Node's HTTP parser (16 KiB) and, with the time to
 * the first byte, by the handler's request timeout (client.ts).
 */

const MB = 1024 * 1024;

/**
 * An answer the SDK reads whole: a listing page (at most 1,000 keys of at most 1,024 bytes, with
 * their dates, ETags and sizes about 1.5 MB at the very most, a few hundred KB usually) or an
 * error. Twice the largest honest page leaves room for XML escaping, not for a page without end.
 */
export const ANSWER_MAX_BYTES = 4 * MB;
/**
 * An object's body: its reader refuses a file past RECEIPT_MAX_BYTES by itself (and the object
 * is remembered as refused), so this only catches a reader that would not stop.
 */
const OBJECT_MAX_BYTES = RECEIPT_MAX_BYTES + MB;
/**
 * Time for a body once its headers came. An answer: a listing page of a few hundred KB takes well
 * under a second. An object: 20 MiB at 1 Mbit/s takes about 170 s.
 */
export const ANSWER_TIMES = { answerMs: 60_000, objectMs: 180_000 };

/** The request, in words, for the message. */
function requestInWords(commandName: string | undefined): string {
  if (commandName === "ListObjectsV2Command") return "the list of objects";
  if (commandName === "GetObjectCommand") return "an object";
  return "a request";
}

export class StoreAnswers {
  private total = 0;
  private readonly breaches = new WeakSet<object>();

  /** `where`: the store, in words, for messages. */
  constructor(client: S3Client, readonly where: string, private readonly times = ANSWER_TIMES) {
    // Innermost in the last step: the raw answer from the handler, before the SDK reads it.
    client.middlewareStack.add((next, context) => async (args) => {
      const out = await next(args);
      const response = out.response as { body?: unknown; statusCode?: number };
      // Only an object's own bytes are streamed to its reader; its errors are read whole, like any answer.
      const object = context.commandName === "GetObjectCommand" && (response.statusCode ?? 0) >= 200 && (response.statusCode ?? 0) < 300;
      if (response.body instanceof Readable) response.body = this.bounded(response.body, context.commandName, object);
      return out;
    }, { step: "deserialize", priority: "low", name: "storeAnswerLimits" });
  }

  /** Body bytes received from the store so far, on all calls of this client. */
  received(): number {
    return this.total;
  }

  /** The limit an answer broke, in words, when `e` (or what it wraps) is that breach; else `e`. */
  failure(e: unknown): unknown {
    for (let cause = e, depth = 0; cause && depth < 5; cause = (cause as { cause?: unknown }).cause, depth++) {
      if (typeof cause === "object" && this.breaches.has(cause)) return cause;
    }
    return e;
  }

  private bounded(body: Readable, commandName: string | undefined, object: boolean): Readable {
    const maxBytes = object ? OBJECT_MAX_BYTES : ANSWER_MAX_BYTES;
    const ms = object ? this.times.objectMs : this.times.answerMs;
    const what = requestInWords(commandName);
    const breach = (error: SourceError) => {
      this.breaches.add(error);
      return error;
    };
    let bytes = 0;
    const counter = new Transform({
      transform: (chunk: Buffer, _encoding, done) => {
        bytes += chunk.length;
        this.total += chunk.length;
        if (bytes > maxBytes) {
          return done(breach(answerTooLarge(`The store at ${this.where}`, what, maxBytes)));
        }
        done(null, chunk);
      },
    });
    const timer = setTimeout(() => counter.destroy(breach(answerTooSlow(`The store at ${this.where}`, what, ms))), ms);
    timer.unref();
    // A failed counter destroys the answer, and so its connection; a failed answer fails the counter.
    pipeline(body, counter, () => clearTimeout(timer));
    return counter;
  }
}
