import { lookup as dnsLookup } from "node:dns/promises";
import type { LookupAddress } from "node:dns";
import net from "node:net";
import ipaddr from "ipaddr.js";

/**
 * The outbound guard: a host a tenant names (a mailbox server, a cloud-drive
 * endpoint, a webhook URL) never makes the server connect into a private network, to itself, or
 * to a cloud metadata service. The name is resolved here, every address it resolves to is
 * checked, and the caller connects to the checked address (never resolving the name again, so a
 * second answer cannot differ from the first). `OUTBOUND_ALLOW_LOOPBACK=1` lets development and
 * tests reach loopback servers; nothing else is ever allowed but public unicast addresses.
 */

/** A refused destination: asking again cannot mend it. */
export class OutboundRefused extends Error {
  readonly permanent = true;
}

export interface OutboundOptions {
  allowLoopback: boolean;
  /** The resolver (tests stub it: they never send a packet to a private or public address). */
  resolve?: (host: string) => Promise<LookupAddress[]>;
}

export interface CheckedAddress {
  host: string;
  address: string;
  family: 4 | 6;
}

/** The guard's options as configured (OUTBOUND_ALLOW_LOOPBACK), with the resolver tests stub. */
export const outboundOf = (config: { outboundAllowLoopback: boolean }, resolve?: OutboundOptions["resolve"]): OutboundOptions =>
  ({ allowLoopback: config.outboundAllowLoopback, resolve });

const systemResolve = (host: string) => dnsLookup(host, { all: true, verbatim: true });

/** An address as it is judged: an IPv4 address written as IPv6 (::ffff:10.0.0.1) is that IPv4 address. */
function judged(address: string): ipaddr.IPv4 | ipaddr.IPv6 {
  const ip = ipaddr.parse(address);
  return ip.kind() === "ipv6" && (ip as ipaddr.IPv6).isIPv4MappedAddress() ? (ip as ipaddr.IPv6).toIPv4Address() : ip;
}

/** A loopback address (127.0.0.0/8, ::1, or either written as IPv6). */
export const isLoopback = (address: string) => ipaddr.isValid(address) && judged(address).range() === "loopback";

/** Why an address may not be reached, or null when it may (public unicast, or loopback when allowed). */
export function refusalOf(address: string, allowLoopback: boolean): string | null {
  if (!ipaddr.isValid(address)) return "is not an IP address";
  const ip = judged(address);
  const range = ip.range();
  // The deprecated IPv4-compatible form (::a.b.c.d, ::/96) hides an IPv4 address from the ranges.
  if (range === "unicast" && ip.kind() === "ipv6" && (ip as ipaddr.IPv6).parts.slice(0, 6).every((p) => p === 0)) {
    return "is an IPv4-compatible IPv6 address";
  }
  if (range === "unicast") return null;
  if (range === "loopback" && allowLoopback) return null;
  const words = RANGE_WORDS[range] ?? range.replace(/[A-Z]/g, (c) => " " + c.toLowerCase());
  return `is ${/^([aeio]|un(?!i))/.test(words) ? "an" : "a"} ${words} address`;
}

/** ipaddr.js's range names, as a person reads them. */
const RANGE_WORDS: Record<string, string> = {
  linkLocal: "link-local (cloud metadata)", uniqueLocal: "unique-local", carrierGradeNat: "carrier-grade NAT",
};

/**
 * Resolves `host` and checks every address it has; the first is the one to connect to. A name
 * with any forbidden address is refused whole (an attacker's name may answer both kinds).
 */
export async function checkOutbound(host: string, options: OutboundOptions): Promise<CheckedAddress> {
  const name = host.trim().replace(/^\[(.*)\]$/, "$1").replace(/\.$/, "");
  if (name === "") throw new OutboundRefused("No host was given.");
  let answers: LookupAddress[];
  if (net.isIP(name)) {
    answers = [{ address: name, family: net.isIP(name) }];
  } else {
    try {
      answers = await (options.resolve ?? systemResolve)(name);
    } catch (e) {
      throw new OutboundRefused(`The host ${name} could not be resolved (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}).`);
    }
    if (answers.length === 0) throw new OutboundRefused(`The host ${name} has no address.`);
  }
  for (const a of answers) {
    const why = refusalOf(a.address, options.allowLoopback);
    if (why) throw new OutboundRefused(`The host ${name} is not allowed: ${a.address} ${why}.`);
  }
  return { host: name, address: answers[0].address, family: answers[0].family === 6 ? 6 : 4 };
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for `net.connect`, `tls.connect` and `http.request` that resolves through the guard:
 * the socket connects only to an address that was checked.
 */
export function guardedLookup(options: OutboundOptions) {
  return (hostname: string, lookupOptions: { all?: boolean } | number | undefined, callback: LookupCallback): void => {
    checkOutbound(hostname, options).then(
      (checked) => {
        if (typeof lookupOptions === "object" && lookupOptions?.all) callback(null, [{ address: checked.address, family: checked.family }]);
        else callback(null, checked.address, checked.family);
      },
      (err: Error) => callback(Object.assign(err, { code: "EOUTBOUNDREFUSED" }) as NodeJS.ErrnoException, ""),
    );
  };
}
