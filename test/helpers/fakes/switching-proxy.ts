import net from "node:net";

/**
 * A TCP proxy on loopback whose target can be changed: a tenant's server that behaves while it is
 * checked (a connection test) and turns hostile afterwards. Each connection goes to the target of
 * the moment it arrives; connections already open keep theirs.
 */
export interface SwitchingProxy {
  port: number;
  switchTo(port: number): void;
  close(): Promise<void>;
}

export async function startSwitchingProxy(targetPort: number): Promise<SwitchingProxy> {
  let target = targetPort;
  const sockets = new Set<net.Socket>();
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => {});
  };
  const server = net.createServer((client) => {
    const upstream = net.connect(target, "127.0.0.1");
    track(client);
    track(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    switchTo: (port) => { target = port; },
    close: () => new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    }),
  };
}
