import { Transform, type Readable, type TransformCallback } from "node:stream";
import { MimeReaders, ReaderOverrun } from "./mime-reader/pool.js";
import type { ReadEmail } from "./mime-reader/protocol.js";
import type { IntakePart } from "./receive.js";

/**
 * At most this much per message, SMTP and POST /intake/email alike (docs/api.md, Receipt intake).
 */
export const EMAIL_MAX_BYTES = 25 * 1024 * 1024;

export class MessageTooLarge extends Error {
  constructor() {
    super(`The message is larger than ${EMAIL_MAX_BYTES / (1024 * 1024)} MiB.`);
  }
}

/** Passes a message through, failing with MessageTooLarge past `max` bytes (so parsing stops there). */
export class ByteLimit extends Transform {
  private seen = 0;
  constructor(private readonly max = EMAIL_MAX_BYTES) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.seen += chunk.length;
    done(this.seen > this.max ? new MessageTooLarge() : null, chunk);
  }
}

/** A message the parser refuses (too many MIME parts, oversized headers, broken structure): sending it again cannot help. */
export class MalformedMessage extends Error {}

/** A message whose reading ran past its deadline: the reader was stopped, and it would be again. */
export class MessageTookTooLong extends MalformedMessage {}

/** Too much mail arriving at once: the sender should try again shortly (SMTP 451, HTTP 503). */
export class IntakeBusy extends Error {
  constructor() {
    super("Too many messages are arriving at once; try again in a minute.");
  }
}

/**
 * Bytes of messages held at once while they arrive and are read, in this process (the API's SMTP
 * and HTTP intake; the worker's mailbox scans have their own): five messages of the largest size.
 * A message holds what it has sent so far, so a sender that trickles holds little, and one more
 * byte past this refuses that message for now. One sender (an SMTP client address) holds at most
 * one message's worth, so that five others always find room.
 */
const RECEIVING_MAX_BYTES = 5 * EMAIL_MAX_BYTES;
const RECEIVING_MAX_BYTES_PER_SENDER = EMAIL_MAX_BYTES;
let receiving = 0;
const receivingBy = new Map<string, number>();

/**
 * Messages read at once, SMTP, HTTP and mailbox scans together, each on its own thread. A slot is
 * taken once the whole message has arrived (RECEIVING_MAX_BYTES bounds what waits), so a sender
 * that trickles its message holds no reader.
 */
const MAX_PARSING = 3;

/**
 * Each reader thread's heap. The largest message of plain text (25 MiB, held as strings while it
 * is decoded) needs 100 to 128 MiB of it, attachments far less (their bytes are outside the heap);
 * past this the thread dies and the message is refused. Three threads stay well under 1 GB.
 */
const READER_HEAP_MB = 192;

/**
 * How long one message may take on its thread. The largest messages read in 0.5 to 2 s, and the
 * HTML-to-text limit keeps each conversion short; only a pathological message (a dozen HTML parts
 * each just under that limit) gets here, holding a thread, and a core, until then.
 */
const READ_DEADLINE_MS = 10_000;

const readers = new MimeReaders({ threads: MAX_PARSING, heapMb: READER_HEAP_MB, deadlineMs: READ_DEADLINE_MS });

export interface ParsedEmail {
  messageId: string | null;
  /** The From address. */
  sender: string | null;
  /** Every address of To, Cc, Delivered-To and X-Original-To. */
  recipients: string[];
  /** The attachments that may be receipts (inline images of the HTML body left out). */
  parts: IntakePart[];
  /** The text body, or the HTML body's text, cut to what receipt extraction reads. */
  text: string;
}

/**
 * Reads a raw MIME message (RFC 5322) into what intake needs, on a reader thread: never on this
 * event loop. Rejects with MessageTooLarge past EMAIL_MAX_BYTES, with MalformedMessage for a
 * message that cannot be read (MessageTookTooLong past the deadline). `readers`: other threads
 * with other limits (tests).
 */
export async function parseEmail(source: Readable | Buffer, options: { readers?: MimeReaders; sender?: string } = {}): Promise<ParsedEmail> {
  const held = { bytes: 0, sender: options.sender };
  try {
    const bytes = await messageBytes(source, held);
    return await readOnThread(bytes, options.readers ?? readers);
  } finally {
    receiving -= held.bytes;
    if (held.sender !== undefined) {
      const left = (receivingBy.get(held.sender) ?? 0) - held.bytes;
      if (left > 0) receivingBy.set(held.sender, left);
      else receivingBy.delete(held.sender);
    }
  }
}

async function readOnThread(bytes: Uint8Array, pool: MimeReaders): Promise<ParsedEmail> {
  const reader = await pool.reserve();
  try {
    let reply;
    try {
      reply = await reader.read(bytes);
    } catch (e) {
      if (!(e instanceof ReaderOverrun)) throw e;
      throw e.bound === "deadline" ? new MessageTookTooLong(e.message) : new MalformedMessage(e.message);
    }
    if (reply.type === "unreadable") throw new MalformedMessage(reply.reason);
    return asParsed(reply.email);
  } finally {
    reader.release();
  }
}

/** Ends the reader threads (shutdown, tests); the next message starts them again. */
export function closeEmailReaders(): Promise<void> {
  return readers.close();
}

/**
 * The whole message in a buffer of its own (so that it can be transferred to the thread, not
 * copied again), at most EMAIL_MAX_BYTES. A given Buffer is copied: the caller keeps it.
 */
async function messageBytes(source: Readable | Buffer, held: { bytes: number; sender?: string }): Promise<Uint8Array> {
  const hold = (n: number) => {
    const bySender = held.sender === undefined ? 0 : receivingBy.get(held.sender) ?? 0;
    if (receiving + n > RECEIVING_MAX_BYTES || bySender + n > RECEIVING_MAX_BYTES_PER_SENDER) throw new IntakeBusy();
    receiving += n;
    held.bytes += n;
    if (held.sender !== undefined) receivingBy.set(held.sender, bySender + n);
  };
  if (Buffer.isBuffer(source)) {
    if (source.length > EMAIL_MAX_BYTES) throw new MessageTooLarge();
    hold(source.length);
    return new Uint8Array(source);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    // Iterated, not piped: the source's error (or its end before the message's) ends the wait.
    for await (const chunk of source as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > EMAIL_MAX_BYTES) throw new MessageTooLarge();
      hold(chunk.length);
      chunks.push(chunk);
    }
  } catch (e) {
    if (e instanceof MessageTooLarge || e instanceof IntakeBusy) throw e;
    throw new MalformedMessage(`The message could not be read: ${(e as Error).message}`);
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.length;
  }
  return bytes;
}

function asParsed(email: ReadEmail): ParsedEmail {
  // Nothing left to keep: the sender is told why rather than the message accepted as empty.
  if (email.htmlNotRead !== null && email.parts.length === 0 && email.text.trim() === "") {
    throw new MalformedMessage(`The message has no attachment or plain text, and ${email.htmlNotRead}: send the receipt as an attachment.`);
  }
  return {
    messageId: email.messageId,
    sender: email.sender,
    recipients: email.recipients,
    // The bytes arrived transferred: viewed as Buffers, not copied.
    parts: email.parts.map((p) => ({
      filename: p.filename, contentType: p.contentType, content: Buffer.from(p.content.buffer, p.content.byteOffset, p.content.byteLength),
    })),
    text: email.text,
  };
}
