import net from "node:net";
import type { LookupAddress } from "node:dns";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkOutbound, guardedLookup, OutboundRefused, refusalOf } from "../src/outbound/guard.js";

/**
 * The outbound guard (docs/api.md, Outbound connections). Refusals are checked before any
 * connection, with a stubbed resolver: no packet goes to a private or public address from here;
 * only loopback is dialled.
 */
const resolver = (answers: Record<string, string[]>) => async (host: string): Promise<LookupAddress[]> => {
  const list = answers[host];
  if (!list) throw Object.assign(new Error("not found"), { code: "ENOTFOUND" });
  return list.map((address) => ({ address, family: net.isIP(address) }));
};

describe("which addresses may be reached", () => {
  it.each([
    ["10.1.2.3", "private"], ["172.16.0.9", "private"], ["192.168.1.1", "private"], ["127.0.0.1", "loopback"],
    ["169.254.169.254", "link-local (cloud metadata)"], ["100.100.100.200", "carrier-grade NAT"], ["0.0.0.0", "unspecified"],
    ["224.0.0.1", "multicast"], ["::1", "loopback"], ["fe80::1", "link-local (cloud metadata)"], ["fd00:ec2::254", "unique-local"],
    ["::ffff:10.0.0.1", "private"], ["::ffff:127.0.0.1", "loopback"], ["::", "unspecified"],
  ])("%s is refused (%s)", (address, range) => {
    expect(refusalOf(address, false)).toBe(`is ${range === "unspecified" ? "an" : "a"} ${range} address`);
  });

  it("public unicast addresses are allowed; loopback only when allowed, and nothing else with it", () => {
    for (const address of ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.4.4"]) expect(refusalOf(address, false)).toBeNull();
    // ::7f00:1 is 127.0.0.1 in the deprecated IPv4-compatible form (ipaddr.js reads ::a.b.c.d as mapped, judged as a.b.c.d).
    for (const address of ["::7f00:1", "::a00:1"]) expect(refusalOf(address, true)).toBe("is an IPv4-compatible IPv6 address");
    expect(refusalOf("127.0.0.1", true)).toBeNull();
    expect(refusalOf("::1", true)).toBeNull();
    expect(refusalOf("10.0.0.1", true)).toBe("is a private address");
    expect(refusalOf("::10.0.0.1", true)).toBe("is a private address");
    expect(refusalOf("169.254.169.254", true)).toBe("is a link-local (cloud metadata) address");
  });
});

describe("checkOutbound", () => {
  const resolve = resolver({
    "imap.example.com": ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"],
    "rebind.example.com": ["93.184.216.34", "10.0.0.5"],
    "metadata.example.com": ["169.254.169.254"],
    "localhost": ["127.0.0.1"],
  });

  it("resolves a name and gives the checked address to connect to", async () => {
    await expect(checkOutbound("imap.example.com", { allowLoopback: false, resolve }))
      .resolves.toEqual({ host: "imap.example.com", address: "93.184.216.34", family: 4 });
    await expect(checkOutbound("[2606:4700::1111]", { allowLoopback: false, resolve }))
      .resolves.toEqual({ host: "2606:4700::1111", address: "2606:4700::1111", family: 6 });
  });

  it("refuses a name with any forbidden address, a metadata service, an IP literal inside, and names that do not resolve", async () => {
    const refused = (host: string, allowLoopback = false) => checkOutbound(host, { allowLoopback, resolve }).then(
      () => { throw new Error(`${host} was allowed`); }, (e: unknown) => e as OutboundRefused);
    expect((await refused("rebind.example.com")).message).toBe("The host rebind.example.com is not allowed: 10.0.0.5 is a private address.");
    expect((await refused("metadata.example.com")).message).toMatch(/169\.254\.169\.254 is a link-local \(cloud metadata\) address/);
    expect((await refused("10.0.0.1")).message).toMatch(/is a private address/);
    expect((await refused("localhost")).message).toMatch(/is a loopback address/);
    expect((await refused("nowhere.example.com")).message).toBe("The host nowhere.example.com could not be resolved (ENOTFOUND).");
    expect(await refused("")).toBeInstanceOf(OutboundRefused);
    expect((await refused("")).permanent).toBe(true);
    await expect(checkOutbound("localhost", { allowLoopback: true, resolve })).resolves.toMatchObject({ address: "127.0.0.1" });
  });
});

describe("guardedLookup with a real socket (loopback only)", () => {
  let server: net.Server;
  let port: number;
  beforeAll(async () => {
    server = net.createServer((s) => s.end("hello\n"));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as net.AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const connect = (host: string, allowLoopback: boolean) => new Promise<string>((resolve, reject) => {
    const socket = net.connect({ host, port, lookup: guardedLookup({ allowLoopback, resolve: resolver({ "mail.test": ["127.0.0.1"] }) }) });
    let data = "";
    socket.on("data", (d) => { data += d; });
    socket.on("end", () => resolve(data));
    socket.on("error", reject);
  });

  it("connects to the checked loopback address when loopback is allowed, and refuses before connecting otherwise", async () => {
    await expect(connect("mail.test", true)).resolves.toBe("hello\n");
    await expect(connect("mail.test", false)).rejects.toMatchObject({ code: "EOUTBOUNDREFUSED",
      message: "The host mail.test is not allowed: 127.0.0.1 is a loopback address." });
  });
});
