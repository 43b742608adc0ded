import net from "node:net";

/**
 * A hostile IMAP server on loopback, standing in for a tenant's mailbox server: it accepts any
 * login, opens any folder (three messages, UIDs 1-3), finds all three, then misbehaves when asked
 * to FETCH:
 * - `endless-fetch`: answers with `* n FETCH` lines for ever, as fast as the client reads, and
 *   never completes the command (a client that keeps every reply grows without end);
 * - `trickle`: answers with one such line every `lineEveryMs` (default 30 s), never completing
 *   (a socket timeout never fires, so only a deadline ends the scan).
 * Enough IMAP for imapflow's connect, login, EXAMINE, UID SEARCH and UID FETCH; every other
 * command is answered OK. `bytesSent()` tells how much the server has written in all.
 */
export interface HostileImap {
  port: number;
  bytesSent(): number;
  /** Connections that asked for FETCH. */
  fetches(): number;
  close(): Promise<void>;
}

export async function startHostileImap(options: { mode: "endless-fetch" | "trickle"; lineEveryMs?: number }): Promise<HostileImap> {
  let sent = 0;
  let fetches = 0;
  const sockets = new Set<net.Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => {});
    const write = (text: string) => {
      sent += Buffer.byteLength(text);
      return socket.write(text);
    };
    let stopped = false;
    socket.on("close", () => {
      stopped = true;
      sockets.delete(socket);
    });
    write("* OK [CAPABILITY IMAP4rev1] hostile IMAP ready\r\n");
    let buffered = "";
    socket.on("data", (chunk) => {
      buffered += chunk.toString("latin1");
      let end;
      while ((end = buffered.indexOf("\r\n")) >= 0) {
        const line = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        answer(line);
      }
    });

    function answer(line: string) {
      const [tag, ...rest] = line.split(" ");
      const words = rest.map((w) => w.toUpperCase());
      const command = words[0] === "UID" ? words[1] : words[0];
      switch (command) {
        case "CAPABILITY":
          write(`* CAPABILITY IMAP4rev1\r\n${tag} OK done\r\n`);
          break;
        case "SELECT":
        case "EXAMINE":
          write(`* 3 EXISTS\r\n* 0 RECENT\r\n* OK [UIDVALIDITY 7] ok\r\n* OK [UIDNEXT 4] ok\r\n* FLAGS (\\Seen)\r\n${tag} OK [READ-ONLY] done\r\n`);
          break;
        case "SEARCH":
          write(`* SEARCH 1 2 3\r\n${tag} OK done\r\n`);
          break;
        case "FETCH":
          fetches++;
          if (options.mode === "endless-fetch") flood();
          else trickle();
          break;
        case "LOGOUT":
          write(`* BYE bye\r\n${tag} OK done\r\n`);
          socket.end();
          break;
        default:
          write(`${tag} OK done\r\n`);
      }
    }

    const fetchLine = (n: number) =>
      `* ${n} FETCH (UID ${n} RFC822.SIZE 2048 ENVELOPE ("Mon, 1 Jun 2026 10:00:00 +0000" "subject ${n}" NIL NIL NIL NIL NIL NIL NIL "<m${n}@hostile.test>") BODYSTRUCTURE ("TEXT" "PLAIN" ("CHARSET" "us-ascii") NIL NIL "7BIT" 10 1 NIL NIL NIL NIL))\r\n`;

    function flood() {
      let n = 1;
      const pump = () => {
        while (!stopped) {
          let batch = "";
          for (let i = 0; i < 100; i++) batch += fetchLine(n++);
          if (!write(batch)) return void socket.once("drain", pump);
        }
      };
      pump();
    }

    function trickle() {
      let n = 1;
      const timer = setInterval(() => {
        if (stopped) return void clearInterval(timer);
        write(fetchLine(n++));
      }, options.lineEveryMs ?? 30_000);
      timers.add(timer);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    bytesSent: () => sent,
    fetches: () => fetches,
    close: () => new Promise<void>((resolve) => {
      for (const timer of timers) clearInterval(timer);
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    }),
  };
}
