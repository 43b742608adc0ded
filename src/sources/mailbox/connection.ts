import { ImapFlow } from "imapflow";
import { checkOutbound, isLoopback, OutboundRefused, type OutboundOptions } from "../../outbound/guard.js";
import { EMAIL_MAX_BYTES } from "../../intake/email.js";
import { deadline, networkFailure, SourceError, withoutSecret, type Deadline } from "../errors.js";
import { AnswerLimits } from "./answer-limits.js";

/** A mailbox as connectMailbox stored it (migrations/fixtures/sources/mailboxes.sql). */
export interface MailboxSettings {
  host: string;
  port: number;
  secure: boolean;
  username: string;
  folder: string;
}

/** How long the server waits on a mailbox server: to connect and greet, then between answers. */
export const CONNECT_TIMEOUT_MS = 15_000;
const SOCKET_TIMEOUT_MS = 60_000;
/** connectMailbox's test in all. */
const TEST_DEADLINE_MS = 30_000;
/** Greeting, capabilities, login and the folder's status: a few KB from an honest server. */
const OPEN_LIMIT = { bytes: 1024 * 1024, ms: 30_000, what: "logging in and opening the folder" };
/**
 * Everything one connection may receive. A scan stops taking messages well before it (see
 * SCAN_BYTES in scan.ts), so only a server that misbehaves reaches it.
 */
export const CONNECTION_MAX_BYTES = 512 * 1024 * 1024;

/**
 * Logs in to a mailbox and opens its folder read-only (IMAP EXAMINE: nothing is marked read,
 * moved or deleted, whatever is fetched). The host passes the outbound guard first, and the
 * socket goes to the address it checked (docs/api.md, Outbound connections). Over port 143
 * (`secure: false`) the login is only sent after STARTTLS, except to a loopback server in
 * development. The client is closed when `limit` passes. Every failure is a SourceError that says
 * what went wrong in words, without the password.
 */
export async function openMailbox(settings: MailboxSettings, password: string, outbound: OutboundOptions, limit: Deadline) {
  let client: ImapFlow | undefined;
  let answers: AnswerLimits | undefined;
  try {
    const checked = await checkOutbound(settings.host, outbound);
    const plainAllowed = outbound.allowLoopback && isLoopback(checked.address);
    client = new ImapFlow({
      host: checked.address,
      port: settings.port,
      secure: settings.secure,
      // The certificate is checked against the name the tenant gave, not the address.
      servername: checked.address === checked.host ? undefined : checked.host,
      doSTARTTLS: settings.secure || plainAllowed ? undefined : true,
      auth: { user: settings.username, pass: password },
      logger: false,
      disableAutoIdle: true,
      connectionTimeout: CONNECT_TIMEOUT_MS,
      greetingTimeout: CONNECT_TIMEOUT_MS,
      socketTimeout: SOCKET_TIMEOUT_MS,
      // A hostile server cannot make the worker hold much more than one message at a time.
      maxLiteralSize: EMAIL_MAX_BYTES + 1024 * 1024,
      maxResponseSize: EMAIL_MAX_BYTES + 2 * 1024 * 1024,
      maxLineLength: 8 * 1024 * 1024,
      maxResponseTokens: 200_000,
      // Compressed, a few KB could inflate to gigabytes before any limit saw them.
      disableCompression: true,
    });
    client.on("error", () => {}); // reported by the command that fails
    const opened = client;
    const limits = answers = new AnswerLimits(client, `${settings.host}:${settings.port}`, CONNECTION_MAX_BYTES);
    limit.signal.addEventListener("abort", () => opened.close(), { once: true });
    limit.signal.throwIfAborted(); // passed while the name was resolved
    try {
      await limits.run(OPEN_LIMIT, () => opened.connect());
    } catch (e) {
      throw limits.failure(e);
    }
    try {
      return { client, mailbox: await limits.run(OPEN_LIMIT, () => opened.mailboxOpen(settings.folder, { readOnly: true })), limits };
    } catch (e) {
      const { serverResponseCode, responseText } = e as { serverResponseCode?: string; responseText?: string };
      if (!responseText) throw limits.failure(e); // no answer of the server's: the connection failed
      throw new SourceError(serverResponseCode === "NONEXISTENT" || /exist/i.test(responseText)
        ? `The folder "${settings.folder}" does not exist in this mailbox.`
        : `The folder "${settings.folder}" could not be opened: ${responseText}`);
    }
  } catch (e) {
    answers?.stop();
    client?.close();
    throw new SourceError(describeMailboxError(limit.expired(e), settings, password));
  }
}

/** connectMailbox's test: log in, open the folder, log out. Null when it worked, else why not. */
export async function testMailbox(settings: MailboxSettings, password: string, outbound: OutboundOptions): Promise<string | null> {
  const limit = deadline(TEST_DEADLINE_MS, "The mailbox server");
  try {
    const { client, limits } = await openMailbox(settings, password, outbound, limit);
    limits.stop();
    // Closed, not logged out: a LOGOUT's answer would be read on this (the API's) event loop, unbounded.
    client.close();
    return null;
  } catch (e) {
    if (e instanceof SourceError) return e.message;
    throw e;
  } finally {
    limit.clear();
  }
}

/** What a failure of a mailbox server means, in words, without the password. */
export function describeMailboxError(e: unknown, settings: MailboxSettings, password: string): string {
  return withoutSecret(e instanceof SourceError ? e.message : describe(e, `${settings.host}:${settings.port}`), password);
}

function describe(e: unknown, where: string): string {
  if (e instanceof OutboundRefused) return e.message;
  const err = e as { authenticationFailed?: boolean; responseText?: string; message?: string; code?: string };
  if (err?.authenticationFailed) return `The mailbox server ${where} refused the login: check the username and password.`;
  const network = networkFailure(e, where, CONNECT_TIMEOUT_MS / 1000);
  if (network) return network;
  if (err?.code === "MissingServerExtension" || /STARTTLS/i.test(err?.message ?? "")) {
    return `The mailbox server ${where} does not offer STARTTLS: use its TLS port (secure: true), so that the password is never sent in clear.`;
  }
  return `The mailbox server ${where} failed: ${err?.responseText || err?.message || String(e)}`;
}
