/**
 * The MIME reader's thread (started by ./pool.ts): reads one raw message at a time into what
 * intake needs. MIME parsing and HTML-to-text run here, never on the API's event loop, with
 * mailparser's limits set; whatever a message does beyond them (a runaway conversion, a blown
 * heap) stays in this thread, which the pool terminates and replaces.
 */
import { parentPort } from "node:worker_threads";
import { parseAddressHeader, simpleParser, type AddressObject, type Attachment, type EmailAddress } from "mailparser";
import { HTML_TO_TEXT_MAX_CHARS, MAX_HEADER_BYTES, MAX_MIME_PARTS, TEXT_MAX_CHARS } from "./limits.js";
import type { ReadEmail, ReadPart, ReadReply, ReadRequest } from "./protocol.js";

const port = parentPort;
if (!port) throw new Error("The MIME reader runs only as a worker thread.");

port.on("message", (request: ReadRequest) => {
  const bytes = Buffer.from(request.bytes.buffer, request.bytes.byteOffset, request.bytes.byteLength);
  readEmail(bytes).then(
    (email) => port.postMessage({ type: "read", id: request.id, email } satisfies ReadReply, email.parts.map((p) => p.content.buffer as ArrayBuffer)),
    (error: unknown) => port.postMessage({
      type: "unreadable", id: request.id, reason: `The message could not be read: ${error instanceof Error ? error.message : String(error)}`,
    } satisfies ReadReply),
  );
});

port.postMessage({ type: "ready" } satisfies ReadReply);

async function readEmail(bytes: Buffer): Promise<ReadEmail> {
  const mail = await simpleParser(bytes, {
    // The HTML keeps its cid: references, which tell inline images apart.
    keepCidLinks: true,
    // textAsHtml is never used: no linkifying of the whole text.
    skipTextToHtml: true,
    maxHtmlLengthToParse: HTML_TO_TEXT_MAX_CHARS,
    maxHeadSize: MAX_HEADER_BYTES,
    maxChildNodes: MAX_MIME_PARTS,
  });
  const html = typeof mail.html === "string" ? mail.html : "";
  const shownInline = referencedCids(html);
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
      .filter((a) => !isInlineImage(a, shownInline))
      .map((a, i): ReadPart => ({ filename: a.filename || `attachment-${i + 1}`, contentType: a.contentType, content: ownBytes(a.content) })),
    text: cut(mail.text ?? "", TEXT_MAX_CHARS),
    htmlNotRead: mail.textConversionError ? whyHtmlNotRead(mail.textConversionError) : null,
  };
}

/** In words a sender understands (mailparser says "HTML too long for parsing N bytes", counting characters). */
function whyHtmlNotRead(error: Error): string {
  return /too long/i.test(error.message)
    ? `its HTML body is longer than ${HTML_TO_TEXT_MAX_CHARS / 1024} KiB, too long to read as text`
    : `its HTML body could not be read as text (${error.message})`;
}

/** The Content-IDs the HTML shows (`cid:` references, as mailparser finds them), read once for all parts. */
function referencedCids(html: string): Set<string> {
  return new Set(Array.from(html.matchAll(/\bcid:([^'"\s>)]{1,256})/g), (m) => m[1]));
}

/**
 * A picture of the HTML body (a logo, a signature): shown inline through a Content-ID the HTML
 * refers to, or part of the body's multipart/related. Not a receipt.
 */
function isInlineImage(a: Attachment, shownInline: Set<string>): boolean {
  if (a.related) return true;
  return a.contentDisposition === "inline" && !!a.cid && shownInline.has(a.cid);
}

function addressesOf(header: AddressObject | AddressObject[] | undefined): string[] {
  const flat = (list: EmailAddress[]): string[] => list.flatMap((e) => (e.group ? flat(e.group) : e.address ? [e.address] : []));
  return (Array.isArray(header) ? header : header ? [header] : []).flatMap((h) => flat(h.value));
}

/**
 * The bytes in a buffer of their own, which can be transferred: a small Buffer is a view into a
 * shared pool, and transferring that would take the pool from every other Buffer in it.
 */
function ownBytes(b: Buffer): Uint8Array {
  return b.byteOffset === 0 && b.byteLength === b.buffer.byteLength ? b : new Uint8Array(b);
}

/** The first `max` UTF-16 units, never splitting a surrogate pair. */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const end = /[\uD800-\uDBFF]/.test(text[max - 1]) ? max - 1 : max;
  return text.slice(0, end);
}
