import type { AddressInfo } from "node:net";
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from "smtp-server";
import type { Pools } from "../db/pools.js";
import { logger } from "../logger.js";
import type { Storage } from "../storage/index.js";
import { ByteLimit, EMAIL_MAX_BYTES, IntakeBusy, MalformedMessage, MessageTooLarge, parseEmail } from "./email.js";
import { receiveIntake } from "./receive.js";
import { intakeOrganizations } from "./recipients.js";
import {
  addressKey, IDLE_WITHOUT_PROGRESS_MS, SESSION_LIFETIME_MS, SESSIONS_PER_ADDRESS, SESSIONS_PER_NETWORK, SmtpSessions, type SmtpSessionLimits,
} from "./smtp-sessions.js";

export interface SmtpIntake {
  port: number;
  close(): Promise<void>;
}

/** Recipients of one message: an intake message names one address or a few. */
const MAX_RECIPIENTS = 50;

/**
 * Sessions of the listener in all: each is a socket and a little memory (a message being parsed
 * waits for one of the parser's few places), and at a few per address it takes dozens of
 * addresses to hold every place, while real senders from other addresses still get in.
 */
const MAX_SESSIONS = 200;
/** A session that sends nothing at all (not even NOOP), a message transfer included, is closed after this. */
const SILENT_SOCKET_MS = 60_000;
/** On shutdown, a session still owed an answer has this long to get it before its connection is cut. */
const CLOSE_GRACE_MS = 10_000;

/** The connection closed in the middle of a message: nothing of it is kept. */
class SenderLeft extends Error {
  constructor() {
    super("The connection closed before the message ended");
  }
}

/** An SMTP reply: `responseCode` is what the client sees. */
const smtpError = (responseCode: number, message: string) => Object.assign(new Error(message), { responseCode });

/**
 * The SMTP intake listener (docs/api.md, Receipt intake): an MX-like receiver, so no AUTH, for the active email
 * intake addresses only: any other recipient is refused at RCPT TO (550) before a byte of the
 * message is read. A message is answered 250 only once its receipts are committed; a failure
 * answers 451 so that the sending server retries (and Message-ID makes the retry harmless).
 * STARTTLS is offered with smtp-server's built-in certificate but never required: senders that
 * insist on a verified certificate need a relay (or a real certificate) in front. No sender can
 * hold the listener shut: a few sessions per client address, and a session that makes no
 * progress, or lasts too long, is closed (`sessionLimits`: shorter clocks for tests).
 */
export async function startSmtpIntake(options: {
  port: number; host: string; pools: Pools; storage: Storage; sessionLimits?: Partial<SmtpSessionLimits>;
}): Promise<SmtpIntake> {
  const { pools, storage } = options;
  const limits: SmtpSessionLimits = {
    perAddress: SESSIONS_PER_ADDRESS, perNetwork: SESSIONS_PER_NETWORK, idleMs: IDLE_WITHOUT_PROGRESS_MS, lifetimeMs: SESSION_LIFETIME_MS, ...options.sessionLimits,
  };
  const server: SMTPServer = new SMTPServer({
    name: "accounting-intake",
    authOptional: true,
    disabledCommands: ["AUTH"],
    size: EMAIL_MAX_BYTES,
    logger: false,
    maxClients: MAX_SESSIONS,
    socketTimeout: SILENT_SOCKET_MS,
    closeTimeout: CLOSE_GRACE_MS,
    // The client's host name is never used, and a sender's slow PTR records would hold each new
    // session for up to 1.5 s before its address is counted.
    disableReverseLookup: true,
    onConnect(session, callback) {
      callback(sessions.admit(session));
    },
    onClose(session) {
      sessions.release(session);
    },
    onMailFrom(_address, session, callback) {
      sessions.progress(session);
      callback();
    },
    onRcptTo(address, session, callback) {
      if (session.envelope.rcptTo.length >= MAX_RECIPIENTS) return callback(smtpError(452, "Too many recipients"));
      intakeOrganizations(pools.owner, "email", [address.address]).then(
        (orgs) => {
          // Only an accepted recipient is progress: a client repeating unknown ones is idle.
          if (orgs.length > 0) sessions.progress(session);
          callback(orgs.length > 0 ? null : smtpError(550, "No such intake address"));
        },
        (err) => {
          logger.error({ err: { message: (err as Error).message } }, "smtp intake: recipient lookup failed");
          callback(smtpError(451, "Temporary failure, try again later"));
        },
      );
    },
    onData(stream, session, callback) {
      sessions.receiving(session);
      stream.once("end", () => sessions.received(session));
      const answer = (err: Error | null, message?: string) => {
        callback(err, message);
        sessions.answered(session);
      };
      deliver(stream, session).then(
        (count) => answer(null, `Accepted: ${count} receipt(s)`),
        (err) => {
          if (err instanceof MessageTooLarge) return answer(smtpError(552, "Message exceeds fixed maximum message size"));
          // Not a failure: too much mail at once, and the sending server retries later.
          if (err instanceof IntakeBusy) return answer(smtpError(451, "Too much mail arriving at once, try again later"));
          if (err instanceof MalformedMessage) return answer(smtpError(554, "Message could not be parsed"));
          if (err instanceof SenderLeft) return answer(smtpError(451, err.message)); // nobody reads it
          logger.error({ err: { message: (err as Error).message } }, "smtp intake: delivery failed");
          answer(smtpError(451, "Temporary failure, try again later"));
        },
      );
    },
  });
  const sessions = new SmtpSessions(server, limits);

  /** Reads the message (the whole stream, as smtp-server needs) and gives it to each recipient's organization. */
  async function deliver(stream: SMTPServerDataStream, session: SMTPServerSession): Promise<number> {
    const limited = new ByteLimit(EMAIL_MAX_BYTES);
    let cutShort = false;
    const ended = new Promise<void>((resolve) => {
      stream.once("end", resolve);
      // The connection went away before the message ended (the sender left, or its session was
      // cut): the parser gets the end of what came, so that it finishes and gives its place back
      // (it would otherwise wait for the rest for ever); what it makes of a part is not used.
      stream.once("close", () => {
        if (stream.readableEnded) return;
        cutShort = true;
        if (!limited.destroyed) limited.end();
        resolve();
      });
    });
    stream.pipe(limited);
    let parsed;
    try {
      parsed = await parseEmail(limited, { sender: addressKey(session.remoteAddress) });
    } finally {
      // Past the limit (or a parse failure) the rest is read and dropped: the reply comes after it.
      stream.unpipe(limited);
      stream.resume();
      await ended;
    }
    if (cutShort) throw new SenderLeft();
    if (stream.sizeExceeded) throw new MessageTooLarge();
    // The envelope decides where mail goes (the headers may name anyone); each organization once.
    const orgs = await intakeOrganizations(pools.owner, "email", session.envelope.rcptTo.map((r) => r.address));
    const sender = session.envelope.mailFrom ? session.envelope.mailFrom.address : parsed.sender;
    let count = 0;
    for (const organizationId of orgs) {
      const result = await receiveIntake(pools.owner, storage, {
        organizationId, channel: "email", messageId: parsed.messageId, sender: sender || parsed.sender,
        parts: parsed.parts, text: parsed.text,
      });
      count += result.receiptIds.length;
    }
    return count;
  }

  server.on("error", (err) => logger.warn({ err: { message: err.message } }, "smtp intake error"));
  await new Promise<void>((resolve, reject) => {
    server.server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.server.address() as AddressInfo;
  return {
    port,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      sessions.closeAll();
    }),
  };
}
