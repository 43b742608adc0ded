import ipaddr from "ipaddr.js";
import type { SMTPServer, SMTPServerSession } from "smtp-server";

export interface SmtpSessionLimits {
  /** Sessions one client address (an IPv6 /64) may hold open at once. */
  perAddress: number;
  /** Sessions one client network (an IPv4 /24, an IPv6 /48) may hold open at once. */
  perNetwork: number;
  /** A session that makes no progress (MAIL, RCPT, DATA) for this long is closed, whatever else it sends. */
  idleMs: number;
  /** No session lasts longer than this, progress or not. */
  lifetimeMs: number;
}

/**
 * A few sessions per sending host: a mail server delivers to one destination over one or two
 * connections, and one whose extra connections are answered 421 queues the mail and retries. Low
 * enough that holding every session of the listener takes dozens of addresses.
 */
export const SESSIONS_PER_ADDRESS = 5;
/**
 * And per network: one tenant of a hosting provider or one home IPv6 prefix (a /56 is 256 /64s)
 * holds many addresses. A provider's outbound servers sharing a /24 deliver to one intake host
 * over far fewer; 20 still leaves the listener's 200 to ten networks at least.
 */
export const SESSIONS_PER_NETWORK = 20;
/**
 * A sender moves from the greeting to MAIL, and from one message to the next, in well under a
 * second; a minute without MAIL, RCPT or DATA is a session that is only holding its place (NOOP,
 * RSET, HELP and VRFY are free to send and do not count).
 */
export const IDLE_WITHOUT_PROGRESS_MS = 60_000;
/**
 * A session that keeps making progress still ends: ten minutes is twice what a mail server keeps
 * reusing one connection (Postfix: 300 s), with room for a slow 25 MiB message at the end.
 */
export const SESSION_LIFETIME_MS = 10 * 60_000;

/** What a session is doing, for its clocks. */
interface Tracked {
  session: SMTPServerSession;
  address: string;
  network: string;
  idle?: NodeJS.Timeout;
  lifetime?: NodeJS.Timeout;
  /** A whole message is in and the server has not answered it yet: it is not cut before the answer. */
  answering: boolean;
  /** Why the session must end, once the answer it is owed has been sent. */
  endAfterAnswer?: string;
}

/**
 * The sessions of one SMTP listener: how many each client address holds (one address cannot take
 * every place), and each session's two clocks, which only progress resets (a session cannot
 * keep its place with NOOPs). smtp-server's own socketTimeout, reset by any byte, still ends a
 * session that falls silent, a message transfer included.
 */
export class SmtpSessions {
  private readonly byAddress = new Map<string, number>();
  private readonly tracked = new Map<string, Tracked>();
  private closing = false;

  constructor(private readonly server: SMTPServer, private readonly limits: SmtpSessionLimits) {}

  /** onConnect: the refusal (421) when the address already holds its share, else null and the clocks start. */
  admit(session: SMTPServerSession): Error | null {
    if (this.closing) return Object.assign(new Error("Server shutting down"), { responseCode: 421 });
    const address = addressKey(session.remoteAddress);
    const network = `network ${networkKey(session.remoteAddress)}`;
    const held = this.byAddress.get(address) ?? 0;
    if (held >= this.limits.perAddress) {
      return Object.assign(new Error(`Too many sessions from your address (at most ${this.limits.perAddress}), try again later`), { responseCode: 421 });
    }
    const heldByNetwork = this.byAddress.get(network) ?? 0;
    if (heldByNetwork >= this.limits.perNetwork) {
      return Object.assign(new Error(`Too many sessions from your network (at most ${this.limits.perNetwork}), try again later`), { responseCode: 421 });
    }
    this.byAddress.set(address, held + 1);
    this.byAddress.set(network, heldByNetwork + 1);
    const t: Tracked = { session, address, network, answering: false };
    this.tracked.set(session.id, t);
    t.lifetime = setTimeout(() => this.end(session, "Session time limit reached, reconnect to continue"), this.limits.lifetimeMs).unref();
    this.restartIdle(session, t);
    return null;
  }

  /** MAIL or RCPT: the session moves on, its idle clock starts again. */
  progress(session: SMTPServerSession): void {
    const t = this.tracked.get(session.id);
    if (t) this.restartIdle(session, t);
  }

  /** DATA began: no idle clock while the message arrives (socketTimeout covers a stalled transfer) and until it is answered. */
  receiving(session: SMTPServerSession): void {
    const t = this.tracked.get(session.id);
    if (t) clearTimeout(t.idle);
  }

  /** The whole message is in: from here the wait is the server's, and the session is not cut before its answer. */
  received(session: SMTPServerSession): void {
    const t = this.tracked.get(session.id);
    if (t) t.answering = true;
  }

  /** The message was answered: the idle clock starts again, or the session ends if its time ran out meanwhile. */
  answered(session: SMTPServerSession): void {
    const t = this.tracked.get(session.id);
    if (!t) return;
    t.answering = false;
    // After smtp-server has written the answer (it does so once the callback returns).
    if (t.endAfterAnswer !== undefined) setImmediate(() => this.end(session, t.endAfterAnswer!));
    else this.restartIdle(session, t);
  }

  /** onClose: the place is given back. */
  release(session: SMTPServerSession): void {
    const t = this.tracked.get(session.id);
    if (!t) return; // refused at connect: it never held a place
    this.tracked.delete(session.id);
    clearTimeout(t.idle);
    clearTimeout(t.lifetime);
    for (const key of [t.address, t.network]) {
      const held = (this.byAddress.get(key) ?? 1) - 1;
      if (held > 0) this.byAddress.set(key, held);
      else this.byAddress.delete(key);
    }
  }

  /** The listener is closing: every session ends now, or right after the answer it is owed; none starts. */
  closeAll(): void {
    this.closing = true;
    for (const { session } of [...this.tracked.values()]) this.end(session, "Server shutting down");
  }

  private restartIdle(session: SMTPServerSession, t: Tracked): void {
    clearTimeout(t.idle);
    t.idle = setTimeout(() => this.end(session, "Idle without a message for too long, closing connection"), this.limits.idleMs).unref();
  }

  /** A 421 and the connection closed; a session owed an answer gets it first. */
  private end(session: SMTPServerSession, reason: string): void {
    const t = this.tracked.get(session.id);
    if (!t) return;
    if (t.answering) {
      t.endAfterAnswer = reason;
      return;
    }
    for (const connection of this.server.connections) {
      // A 421 closes the connection (smtp-server); onClose then gives the place back.
      if (connection.session === session) return connection.send(421, reason);
    }
  }
}

/** The unit one sender controls: an IPv4 address, or an IPv6 /64 (one host usually holds the whole /64). */
export function addressKey(remoteAddress: string): string {
  if (!ipaddr.isValid(remoteAddress)) return remoteAddress;
  const ip = ipaddr.parse(remoteAddress);
  if (ip.kind() === "ipv4") return ip.toString();
  const v6 = ip as ipaddr.IPv6;
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().toString();
  return `${v6.parts.slice(0, 4).map((p) => p.toString(16)).join(":")}::/64`;
}

/** The network one sender may hold many addresses of: an IPv4 /24, or an IPv6 /48. */
export function networkKey(remoteAddress: string): string {
  if (!ipaddr.isValid(remoteAddress)) return remoteAddress;
  const ip = ipaddr.parse(remoteAddress);
  const v4 = ip.kind() === "ipv4" ? ip as ipaddr.IPv4 : (ip as ipaddr.IPv6).isIPv4MappedAddress() ? (ip as ipaddr.IPv6).toIPv4Address() : null;
  if (v4) return `${v4.octets.slice(0, 3).join(".")}.0/24`;
  return `${(ip as ipaddr.IPv6).parts.slice(0, 3).map((p) => p.toString(16)).join(":")}::/48`;
}
