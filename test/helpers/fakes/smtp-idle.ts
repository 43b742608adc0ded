import net from "node:net";
import { replyReader } from "./smtp-client.js";

/**
 * Idle SMTP sessions, as a sender holding the intake listener shut would keep them: each connects,
 * says EHLO, then only NOOP every `noopEveryMs` (default 20 s), which keeps a server's socket
 * timeout from ever firing. Reports how many the server let in (220) and how many it refused
 * (421) or closed later.
 */
export interface IdleSmtpSessions {
  /** Sessions greeted with 220. */
  admitted(): number;
  /** Sessions refused at the greeting (421 or another code, or the connection refused). */
  refused(): number;
  /** Admitted sessions the server closed since (an idle timeout). */
  closedByServer(): number;
  /** Sessions still open now. */
  open(): number;
  close(): void;
}

export async function openIdleSmtpSessions(options: {
  port: number;
  host?: string;
  localAddress?: string;
  count: number;
  noopEveryMs?: number;
}): Promise<IdleSmtpSessions> {
  let admitted = 0;
  let refused = 0;
  let closedByServer = 0;
  let closing = false;
  const sockets = new Set<net.Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const greeted = Array.from({ length: options.count }, () => new Promise<void>((resolve) => {
    const socket = net.connect({ port: options.port, host: options.host ?? "127.0.0.1", localAddress: options.localAddress });
    sockets.add(socket);
    let wasAdmitted = false;
    socket.on("error", () => {});
    socket.on("close", () => {
      sockets.delete(socket);
      if (!wasAdmitted) refused++;
      else if (!closing) closedByServer++;
      resolve();
    });
    const next = replyReader(socket);
    void next().then((greeting) => {
      if (greeting.code !== 220) return void socket.destroy();
      wasAdmitted = true;
      admitted++;
      resolve();
      socket.write("EHLO idle.soak.test\r\n");
      const timer = setInterval(() => socket.write("NOOP\r\n"), options.noopEveryMs ?? 20_000);
      timers.add(timer);
      socket.on("close", () => clearInterval(timer));
      // Replies are read and dropped, so that the server's writes never back up.
      const drain = (): void => void next().then(drain);
      drain();
    });
  }));
  // Every session admitted or refused, or 10 s: a server that never greets holds none of them.
  await Promise.race([Promise.all(greeted), new Promise((r) => setTimeout(r, 10_000))]);
  return {
    admitted: () => admitted,
    refused: () => refused,
    closedByServer: () => closedByServer,
    open: () => sockets.size,
    close: () => {
      closing = true;
      for (const timer of timers) clearInterval(timer);
      for (const socket of sockets) socket.destroy();
    },
  };
}
