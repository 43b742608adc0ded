import type { ImapFlow } from "imapflow";
import { answerTooLarge, answerTooSlow, SourceError } from "../errors.js";

/**
 * What a mailbox server may send: imapflow's own limits are per line and per literal, and it keeps
 * every reply of a command until the command completes, so a server answering one FETCH with
 * endless `* n FETCH` lines grew the process by gigabytes. Here each command's answer is bounded
 * in bytes and in time, and so is the whole connection. The counter is imapflow's (bytes read
 * after TLS and before parsing), polled often enough that what a command keeps past its cap stays
 * a few megabytes; on a breach the client is closed, which fails the command in flight, and
 * `failure()` says why in words.
 */

/** How often the counter is read: imapflow parses about 12 MB of FETCH lines a second, so a breach overshoots by a fraction of a MB. */
const POLL_MS = 20;
const MB = 1024 * 1024;

export interface CommandLimit {
  /** Bytes the answer may take. */
  bytes: number;
  /** Time the answer may take, in ms. */
  ms: number;
  /** The command, in words, for the message: "the message list", "a message". */
  what: string;
}

export class AnswerLimits {
  private commandStart = 0;
  private command: CommandLimit | null = null;
  private commandDeadline = 0;
  private reason: SourceError | null = null;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly client: ImapFlow, private readonly where: string, private readonly connectionBytes: number) {
    this.timer = setInterval(() => this.check(), POLL_MS);
    this.timer.unref();
  }

  /** Runs one command under `limit`. */
  async run<T>(limit: CommandLimit, call: () => Promise<T>): Promise<T> {
    this.commandStart = this.received();
    this.command = limit;
    this.commandDeadline = Date.now() + limit.ms;
    try {
      return await call();
    } finally {
      this.command = null;
    }
  }

  /** Bytes received on this connection so far. */
  received(): number {
    return this.client.stats().received;
  }

  /** The breach that closed the connection, if one did; else `e`. */
  failure(e: unknown): unknown {
    return this.reason ?? e;
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private check(): void {
    if (this.reason) return;
    const received = this.received();
    const mb = (n: number) => `${Math.round(n / MB)} MB`;
    if (received > this.connectionBytes) {
      this.trip(new SourceError(`The mailbox server ${this.where} sent more than ${mb(this.connectionBytes)} over one connection and was cut off.`));
    } else if (this.command && received - this.commandStart > this.command.bytes) {
      this.trip(answerTooLarge(`The mailbox server ${this.where}`, this.command.what, this.command.bytes));
    } else if (this.command && Date.now() > this.commandDeadline) {
      this.trip(answerTooSlow(`The mailbox server ${this.where}`, this.command.what, this.command.ms));
    }
  }

  private trip(reason: SourceError): void {
    this.reason = reason;
    this.stop();
    this.client.close();
  }
}
