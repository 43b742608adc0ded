import { randomUUID } from "node:crypto";
import type { Readable } from "node:stream";
import type pg from "pg";
import { FileTooLarge } from "../receipts/inspect.js";
import { storeReceiptFile, type StoredFile } from "../receipts/store-file.js";
import { keySegment, type Storage } from "../storage/index.js";

// eslint-disable-next-line no-control-regex
const FORBIDDEN_CONTROL = /[\u0000-\u0008\u000B\u000E-\u001F\u007F-\u009F]/g;

/** Files of one message that may become receipts (an SMS carries at most 10). */
export const MAX_PARTS = 20;

/** One file of an intake message; its declared type is informative only (the bytes decide). */
export interface IntakePart {
  filename: string;
  contentType?: string;
  content: Buffer | Readable;
}

export interface IntakeMessage {
  organizationId: string;
  channel: "email" | "sms" | "mailbox";
  /** Message-ID (email) or the provider's message id (SMS); null: always a new message. */
  messageId: string | null;
  sender: string | null;
  parts: IntakePart[];
  /** The text body: the receipt when no part is of an allowed type. */
  text: string;
}

export interface IntakeResult {
  receiptIds: string[];
  /** This message reached this organization before: nothing was stored. */
  duplicate: boolean;
  /** Parts skipped for their type or size. */
  refused: number;
}

/**
 * What every intake transport (SMTP, POST /intake/email, POST /intake/sms, mailbox scans) does with a message
 * for one organization (docs/api.md, Receipt intake): each part of an allowed type, or the text
 * body when there is none, is stored first; then one short transaction on the owner's pool (the SQL
 * scopes the organization itself) records the message (one seen before stops here) and makes each
 * stored file a receipt, which queues its extraction. No transaction waits on storage, and objects
 * stored for a message that does not commit are deleted.
 */
export async function receiveIntake(owner: pg.Pool, storage: Storage, given: IntakeMessage): Promise<IntakeResult> {
  const org = given.organizationId;
  // Whatever a sender wrote: control characters (a NUL, which PostgreSQL refuses) are dropped.
  const message = { ...given, messageId: given.messageId === null ? null : given.messageId.replace(FORBIDDEN_CONTROL, ""),
    sender: given.sender === null ? null : given.sender.replace(FORBIDDEN_CONTROL, ""),
    parts: given.parts.map((p) => ({ ...p, filename: p.filename.replace(FORBIDDEN_CONTROL, "") })) };
  // A message seen before is answered without storing anything (the transaction below decides).
  if (message.messageId !== null) {
    const { rows: [{ seen }] } = await owner.query<{ seen: boolean }>(
      "select app_private.intake_message_seen($1, $2, $3) as seen", [org, message.channel, message.messageId]);
    if (seen) return { receiptIds: [], duplicate: true, refused: 0 };
  }
  const stored: { key: string; filename: string; file: StoredFile }[] = [];
  const removeStored = (keys: string[]) => Promise.all(keys.map((k) => storage.delete(k).catch(() => {})));
  let refused = 0;
  const store = async (filename: string, content: Buffer | Readable) => {
    const key = `${org}/intake/${randomUUID()}/${keySegment(filename)}`;
    let file: StoredFile | null = null;
    try {
      file = await storeReceiptFile(storage, key, content);
    } catch (e) {
      // One attachment over the receipt size limit is skipped like a refused type.
      if (!(e instanceof FileTooLarge)) throw e;
    }
    if (file) stored.push({ key, filename, file });
    else refused++;
  };
  try {
    // One message makes a handful of receipts at most: the rest are counted as refused.
    for (const part of message.parts.slice(0, MAX_PARTS)) await store(part.filename, part.content);
    refused += Math.max(0, message.parts.length - MAX_PARTS);
    // Control characters (other than tab and line breaks) would make the body no plain text.
    const text = message.text.replace(FORBIDDEN_CONTROL, "").trim();
    if (stored.length === 0 && text !== "") await store("message.txt", Buffer.from(text + "\n", "utf8"));
  } catch (e) {
    await removeStored(stored.map((s) => s.key));
    throw e;
  }

  const client = await owner.connect();
  try {
    await client.query("begin");
    const { rows: [{ id: messageRowId }] } = await client.query<{ id: string | null }>(
      "select app_private.receive_intake_message($1, $2, $3, $4) as id", [org, message.channel, message.messageId, message.sender]);
    if (messageRowId === null) {
      // Delivered meanwhile by another connection: that delivery stands.
      await client.query("commit");
      await removeStored(stored.map((s) => s.key));
      return { receiptIds: [], duplicate: true, refused: 0 };
    }
    const receiptIds: string[] = [];
    const orphans: string[] = [];
    for (const { key, filename, file } of stored) {
      const { rows: [{ r }] } = await client.query<{ r: { receiptId: string; duplicate: boolean } }>(
        "select app_private.receive_receipt($1, $2, $3, $4, $5, $6, $7, $8) as r",
        [org, message.channel, key, filename, file.contentType, file.size, file.sha256, messageRowId]);
      // The same file (SHA-256) as an earlier receipt: that receipt stands, this copy goes.
      if (r.duplicate) orphans.push(key);
      if (!receiptIds.includes(r.receiptId)) receiptIds.push(r.receiptId);
    }
    await client.query("commit");
    await removeStored(orphans);
    return { receiptIds, duplicate: false, refused };
  } catch (e) {
    await client.query("rollback").catch(() => {});
    // Best effort: a leftover object is unreferenced, never a receipt.
    await removeStored(stored.map((s) => s.key));
    throw e;
  } finally {
    client.release();
  }
}
