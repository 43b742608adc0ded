import type { AddressInfo } from "node:net";
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from "smtp-server";
import type { Pools } from "../http/app.js";
import { logger } from "../logger.js";
import type { Storage } from "../storage/index.js";
import { ByteLimit, EMAIL_MAX_BYTES, MalformedMessage, MessageTooLarge, parseEmail } from "./email.js";
import { receiveIntake } from "./receive.js";
import { intakeOrganizations } from "./recipients.js";

export interface SmtpIntake {
  port: number;
  close(): Promise<void>;
}

/** Recipients of one message: an intake message names one address or a few. */
const MAX_RECIPIENTS = 50;

/** An SMTP reply: `responseCode` is what the client sees. */
const smtpError = (responseCode: number, message: string) => Object.assign(new Error(message), { responseCode });

/**
 * The SMTP intake listener (decisions §12): an MX-like receiver, so no AUTH, for the active email
 * intake addresses only: any other recipient is refused at RCPT TO (550) before a byte of the
 * message is read. A message is answered 250 only once its receipts are committed; a failure
 * answers 451 so that the sending server retries (and Message-ID makes the retry harmless).
 * STARTTLS is offered with smtp-server's built-in certificate but never required: senders that
 * insist on a verified certificate need a relay (or a real certificate) in front.
 */
export async function startSmtpIntake(options: { port: number; host: string; pools: Pools; storage: Storage }): Promise<SmtpIntake> {
  const { pools, storage } = options;
  const server = new SMTPServer({
    name: "accounting-intake",
    authOptional: true,
    disabledCommands: ["AUTH"],
    size: EMAIL_MAX_BYTES,
    logger: false,
    maxClients: 20,
    socketTimeout: 60_000,
    onRcptTo(address, session, callback) {
      if (session.envelope.rcptTo.length >= MAX_RECIPIENTS) return callback(smtpError(452, "Too many recipients"));
      intakeOrganizations(pools.owner, "email", [address.address]).then(
        (orgs) => callback(orgs.length > 0 ? null : smtpError(550, "No such intake address")),
        (err) => {
          logger.error({ err: { message: (err as Error).message } }, "smtp intake: recipient lookup failed");
          callback(smtpError(451, "Temporary failure, try again later"));
        },
      );
    },
    onData(stream, session, callback) {
      deliver(stream, session).then(
        (count) => callback(null, `Accepted: ${count} receipt(s)`),
        (err) => {
          if (err instanceof MessageTooLarge) return callback(smtpError(552, "Message exceeds fixed maximum message size"));
          if (err instanceof MalformedMessage) return callback(smtpError(554, "Message could not be parsed"));
          logger.error({ err: { message: (err as Error).message } }, "smtp intake: delivery failed");
          callback(smtpError(451, "Temporary failure, try again later"));
        },
      );
    },
  });

  /** Reads the message (the whole stream, as smtp-server needs) and gives it to each recipient's organization. */
  async function deliver(stream: SMTPServerDataStream, session: SMTPServerSession): Promise<number> {
    const ended = new Promise<void>((resolve) => stream.once("end", resolve));
    const limited = new ByteLimit(EMAIL_MAX_BYTES);
    stream.pipe(limited);
    let parsed;
    try {
      parsed = await parseEmail(limited);
    } finally {
      // Past the limit (or a parse failure) the rest is read and dropped: the reply comes after it.
      stream.unpipe(limited);
      stream.resume();
      await ended;
    }
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
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
