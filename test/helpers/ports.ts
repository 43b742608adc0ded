import net from "node:net";

/** A loopback port nobody listens on right now, for a server a test starts. */
export const freePort = () => new Promise<number>((resolve, reject) => {
  const server = net.createServer().listen(0, "127.0.0.1", () => {
    const { port } = server.address() as net.AddressInfo;
    server.close(() => resolve(port));
  }).on("error", reject);
});
