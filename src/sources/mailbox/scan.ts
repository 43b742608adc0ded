import type { MessageStructureObject } from "imapflow";
import type pg from "pg";
import { EMAIL_MAX_BYTES, MalformedMessage, MessageTooLarge, parseEmail } from "../../intake/email.js";
import { receiveIntake } from "../../intake/receive.js";
import type { OutboundOptions } from "../../outbound/guard.js";
import type { Storage } from "../../storage/index.js";
import { SourceError, type Deadline } from "../errors.js";
import { advanceCursor, type ScanReport, type ScanSource } from "../scan-report.js";
import type { CommandLimit } from "./answer-limits.js";
import { describeMailboxError, openMailbox, type MailboxSettings } from "./connection.js";

/** Messages read by one scan at most; the rest are read by the next, queued at once. */
export const MAX_MESSAGES_PER_SCAN = 200;
/** How far back a first scan reads (and one after the folder's UIDVALIDITY changed). */
const FIRST_SCAN_DAYS = 30;
const FETCH_BATCH = 50;
/** What one request's answer may take, in bytes and time (answer-limits.ts). */
const SEARCH_LIMIT: CommandLimit = { bytes: 8 * 1024 * 1024, ms: 60_000, what: "the message search" }; // about a million UIDs
const HEADERS_LIMIT: CommandLimit = { bytes: 4 * 1024 * 1024, ms: 60_000, what: "the list of messages" }; // 80 KB a message
const MESSAGE_LIMIT: CommandLimit = { bytes: EMAIL_MAX_BYTES + 2 * 1024 * 1024, ms: 180_000, what: "a message" }; // 150 KB/s at least
const LOGOUT_LIMIT: CommandLimit = { bytes: 64 * 1024, ms: 10_000, what: "logging out" };
/** A scan takes no new message once it has received this much; the next scan goes on. */
const SCAN_BYTES = 256 * 1024 * 1024;

interface MailboxCursor { uidValidity?: string; lastUid?: number }

/**
 * Reads the new messages of a mailbox's folder (docs/api.md, Receipt sources). The folder is opened
 * read-only and fetched with BODY.PEEK, so nothing is marked read. A first scan, or one after
 * UIDVALIDITY changed, reads the last 30 days; later ones the UIDs above the last one read. The
 * cursor is kept after each message (a scan cut short resumes where it stopped) and, once a first
 * scan is through, moved to the folder's last UID, so older messages are never read. A message goes
 * through e-mail intake (the same parsing and receiving as SMTP): only its attachments of an
 * allowed type become receipts, and its Message-ID is never received twice. What the mailbox server
 * does wrong is a SourceError; our own failures (database, storage) are thrown as they are.
 */
export async function scanMailbox(owner: pg.Pool, storage: Storage, outbound: OutboundOptions,
    source: ScanSource<MailboxSettings>, report: ScanReport, limit: Deadline): Promise<void> {
  const { client, mailbox, limits } = await openMailbox(source.settings, source.secret, outbound, limit);
  // As the folder was when opened: imapflow raises uidNext with every UID a server mentions later.
  const uidNextAtOpen = Number.isInteger(mailbox.uidNext) ? mailbox.uidNext : null;
  // A call to the mailbox server, its answer bounded: its failure is the source's.
  const imap: Imap = async (answerLimit, call) => {
    try {
      return await limits.run(answerLimit, call);
    } catch (e) {
      throw new SourceError(describeMailboxError(limit.expired(limits.failure(e)), source.settings, source.secret));
    }
  };
  try {
    const cursor = source.cursor as MailboxCursor;
    const uidValidity = String(mailbox.uidValidity);
    const continuing = cursor.uidValidity === uidValidity && typeof cursor.lastUid === "number";
    const lastUid = continuing ? cursor.lastUid! : 0;
    const found = await imap(SEARCH_LIMIT, () => continuing
      ? client.search({ uid: `${lastUid + 1}:*` }, { uid: true })
      : client.search({ since: new Date(Date.now() - FIRST_SCAN_DAYS * 86_400_000) }, { uid: true }));
    if (!Array.isArray(found)) throw new SourceError(`The mailbox server ${source.settings.host}:${source.settings.port} refused to search the folder.`);
    // `N:*` names the last message even when its UID is below N.
    const uids = found.filter((uid) => uid > lastUid).sort((a, b) => a - b);
    report.more = uids.length > MAX_MESSAGES_PER_SCAN;
    const advance = async (uid: number) => {
      if (!(await advanceCursor(owner, source.id, { uidValidity, lastUid: uid }))) report.disconnected = true;
    };

    let last = lastUid;
    let stopped = false; // out of time or bytes: the next scan, queued at once, goes on after `last`
    const toRead = uids.slice(0, MAX_MESSAGES_PER_SCAN);
    for (let i = 0; i < toRead.length && !report.disconnected; i += FETCH_BATCH) {
      const batch = toRead.slice(i, i + FETCH_BATCH);
      const asked = new Set(batch);
      const headers = (await imap(HEADERS_LIMIT, () => client.fetchAll(batch.join(","), { uid: true, size: true, envelope: true, bodyStructure: true }, { uid: true })))
        .filter((m) => asked.has(m.uid)) // a server's unasked answers are not read
        .sort((a, b) => a.uid - b.uid);
      for (const message of headers) {
        if (limit.pastSoft() || limits.received() + (message.size ?? 0) > SCAN_BYTES) {
          stopped = report.more = true;
          break;
        }
        report.scanned++;
        await readMessage(imap, client, owner, storage, source, message, uidValidity, report);
        await advance(message.uid);
        last = message.uid;
        if (report.disconnected) break;
      }
      if (stopped) break;
      // A batch is done even where the server answered for fewer messages than asked.
      if (!report.disconnected && batch.at(-1)! > last) {
        last = batch.at(-1)!;
        await advance(last);
      }
    }
    // A first scan that has read all it found: what is older is never read by the next.
    if (!continuing && !report.more && !report.disconnected) await advance(Math.max(last, (uidNextAtOpen ?? 1) - 1));
    await imap(LOGOUT_LIMIT, () => client.logout()).catch(() => {});
  } finally {
    limits.stop();
    client.close();
  }
}

type Client = Awaited<ReturnType<typeof openMailbox>>["client"];
type Imap = <T>(answerLimit: CommandLimit, call: () => Promise<T>) => Promise<T>;
interface Header { uid: number; size?: number; envelope?: { messageId?: string }; bodyStructure?: MessageStructureObject }

async function readMessage(imap: Imap, client: Client, owner: pg.Pool, storage: Storage, source: ScanSource<MailboxSettings>,
    message: Header, uidValidity: string, report: ScanReport): Promise<void> {
  if ((message.size ?? 0) > EMAIL_MAX_BYTES) {
    report.refused++;
    return;
  }
  // A message of text alone (a newsletter, a conversation) is never downloaded.
  if (!message.bodyStructure || !hasFile(message.bodyStructure)) {
    report.skipped++;
    return;
  }
  // Received before (as intake keeps ids: in angle brackets): not downloaded again.
  const envelopeId = message.envelope?.messageId?.replace(/[\u0000-\u001F\u007F]/g, "").trim();
  if (envelopeId) {
    const { rows: [{ seen }] } = await owner.query<{ seen: boolean }>("select app_private.intake_message_seen($1, 'mailbox', $2) as seen",
      [source.organizationId, envelopeId.startsWith("<") ? envelopeId : `<${envelopeId}>`]);
    if (seen) {
      report.duplicates++;
      return;
    }
  }
  const fetched = await imap(MESSAGE_LIMIT, () => client.fetchOne(String(message.uid), { source: true }, { uid: true }));
  if (!fetched || !fetched.source) {
    report.skipped++; // expunged meanwhile
    return;
  }
  let parsed;
  try {
    parsed = await parseEmail(fetched.source);
  } catch (e) {
    if (e instanceof MalformedMessage) return void report.skipped++;
    if (e instanceof MessageTooLarge) return void report.refused++;
    throw e;
  }
  if (parsed.parts.length === 0) {
    report.skipped++;
    return;
  }
  let result;
  try {
    result = await receiveIntake(owner, storage, {
      organizationId: source.organizationId,
      channel: "mailbox",
      // Without a Message-ID, the message's place in this folder names it.
      messageId: parsed.messageId ?? `uid:${uidValidity}:${message.uid}@${source.id}`,
      sender: parsed.sender,
      parts: parsed.parts,
      text: "", // unlike an intake address, a mailbox's text bodies are not receipts
    });
  } catch (e) {
    // A message whose data the database refuses (SQLSTATE class 22) is skipped, not retried for ever.
    if (typeof (e as { code?: unknown }).code === "string" && (e as { code: string }).code.startsWith("22")) return void report.skipped++;
    throw e;
  }
  report.refused += result.refused;
  if (result.duplicate) report.duplicates++;
  else if (result.receiptIds.length === 0) report.skipped++;
  else report.created += result.receiptIds.length;
}

/** A part that may be a receipt file: an attachment, or anything that is not text. */
function hasFile(part: MessageStructureObject): boolean {
  if (part.childNodes?.length) return part.childNodes.some(hasFile);
  const type = (part.type ?? "").toLowerCase();
  if (type.startsWith("multipart/")) return false;
  return part.disposition?.toLowerCase() === "attachment" || !type.startsWith("text/");
}
