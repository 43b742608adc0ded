import { Transform, type Readable, type TransformCallback } from "node:stream";
import { parseAddressHeader, simpleParser, type AddressObject, type Attachment, type EmailAddress } from "mailparser";
import type { IntakePart } from "./receive.js";

/** At most this much per message, SMTP and POST /intake/email alike (decisions §12). */
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

/**
 * Messages parsed at once, SMTP and HTTP together: the parser holds a message's attachments in
 * memory (up to 25 MiB each), so concurrency, not the number of connections, bounds memory.
 */
const MAX_PARSING = 3;
let parsing = 0;
const waiting: (() => void)[] = [];
async function parsingSlot(): Promise<() => void> {
  if (parsing >= MAX_PARSING) await new Promise<void>((resolve) => waiting.push(resolve));
  parsing++;
  return () => {
    parsing--;
    waiting.shift()?.();
  };
}

export interface ParsedEmail {
  messageId: string | null;
  /** The From address. */
  sender: string | null;
  /** Every address of To, Cc, Delivered-To and X-Original-To. */
  recipients: string[];
  /** The attachments that may be receipts (inline images of the HTML body left out). */
  parts: IntakePart[];
  text: string;
}

/** Reads a raw MIME message (RFC 5322) into what intake needs. */
export async function parseEmail(source: Readable | Buffer): Promise<ParsedEmail> {
  const release = await parsingSlot();
  let mail;
  try {
    // keepCidLinks: the HTML keeps its cid: references, which tell inline images apart.
    mail = await simpleParser(source, { keepCidLinks: true });
  } catch (e) {
    if (e instanceof MessageTooLarge) throw e;
    throw new MalformedMessage(`The message could not be read: ${(e as Error).message}`);
  } finally {
    release();
  }
  const html = typeof mail.html === "string" ? mail.html : "";
  const recipients = [
    ...addressesOf(mail.to), ...addressesOf(mail.cc),
    ...mail.headerLines
      .filter((h) => h.key === "delivered-to" || h.key === "x-original-to")
      .flatMap((h) => addressesOf(parseAddressHeader(h.line.slice(h.line.indexOf(":") + 1)))),
  ];
  return {
    messageId: mail.messageId ?? null,
    sender: addressesOf(mail.from)[0] ?? null,
    recipients: [...new Set(recipients.map((a) => a.toLowerCase()))],
    parts: mail.attachments
      .filter((a) => !isInlineImage(a, html))
      .map((a, i) => ({ filename: a.filename || `attachment-${i + 1}`, contentType: a.contentType, content: a.content })),
    text: mail.text ?? "",
  };
}

/**
 * A picture of the HTML body (a logo, a signature): shown inline through a Content-ID the HTML
 * refers to, or part of the body's multipart/related. Not a receipt.
 */
function isInlineImage(a: Attachment, html: string): boolean {
  if (a.related) return true;
  return a.contentDisposition === "inline" && !!a.cid && html.includes(`cid:${a.cid}`);
}

function addressesOf(header: AddressObject | AddressObject[] | undefined): string[] {
  const flat = (list: EmailAddress[]): string[] => list.flatMap((e) => (e.group ? flat(e.group) : e.address ? [e.address] : []));
  return (Array.isArray(header) ? header : header ? [header] : []).flatMap((h) => flat(h.value));
}
