import net from "node:net";

/**
 * A bare SMTP client for tests and soak scripts: it reports the exact reply a server gave at each
 * step (a 421 greeting, a 451 after DATA…), which a mail library would turn into a generic error.
 * No TLS, no AUTH: the intake listener needs neither on loopback.
 */
export interface SmtpOutcome {
  /**
   * The step that ended the exchange: `message` when the message was sent and its reply never
   * came, `done` when it was answered.
   */
  stage: "connect" | "greeting" | "ehlo" | "mail" | "rcpt" | "data" | "message" | "done";
  /** The reply that ended it (null when the step's reply never came: a refused connection, a timeout). */
  code: number | null;
  text: string;
  ms: number;
  error?: string;
}

export interface SmtpMessage {
  port: number;
  host?: string;
  /** Source address of the connection (another loopback address stands for another sender). */
  localAddress?: string;
  from: string;
  to: string[];
  /** The raw message, CRLF line endings; dot-stuffed here. */
  message: Buffer;
  /** The whole exchange must end within this. */
  timeoutMs: number;
}

/** Sends one message and says how the server answered; never throws. */
export function deliverSmtp(options: SmtpMessage): Promise<SmtpOutcome> {
  const started = performance.now();
  return new Promise((resolve) => {
    let stage: SmtpOutcome["stage"] = "connect";
    let last: { code: number | null; text: string } = { code: null, text: "" };
    let settled = false;
    const finish = (outcome: Partial<SmtpOutcome>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ stage, code: last.code, text: last.text, ms: performance.now() - started, ...outcome });
    };
    const socket = net.connect({ port: options.port, host: options.host ?? "127.0.0.1", localAddress: options.localAddress });
    const timer = setTimeout(() => finish({ error: `no answer within ${options.timeoutMs} ms` }), options.timeoutMs);
    socket.on("error", (e) => finish({ error: e.message }));
    socket.on("close", () => finish({ error: "connection closed" }));

    const replies = replyReader(socket);
    const step = async (next: SmtpOutcome["stage"], command: string | Buffer | null, ok: (code: number) => boolean) => {
      stage = next;
      last = { code: null, text: "" };
      if (command !== null) socket.write(command);
      last = await replies();
      if (!ok(last.code!)) throw new Error("refused");
    };
    (async () => {
      await new Promise<void>((r) => socket.once("connect", () => r()));
      await step("greeting", null, (c) => c === 220);
      await step("ehlo", "EHLO soak.test\r\n", (c) => c === 250);
      await step("mail", `MAIL FROM:<${options.from}>\r\n`, (c) => c === 250);
      for (const to of options.to) await step("rcpt", `RCPT TO:<${to}>\r\n`, (c) => c === 250 || c === 251);
      await step("data", "DATA\r\n", (c) => c === 354);
      await step("message", Buffer.concat([dotStuffed(options.message), Buffer.from("\r\n.\r\n")]), () => true);
      stage = "done";
      socket.write("QUIT\r\n");
      finish({});
    })().catch(() => finish({}));
  });
}

/**
 * Lines starting with a dot get another (RFC 5321, section 4.5.2), so the message cannot end early.
 */
function dotStuffed(message: Buffer): Buffer {
  const text = message.toString("latin1");
  const body = text.replace(/\r?\n/g, "\r\n").replace(/^\./, "..").replace(/\r\n\./g, "\r\n..");
  return Buffer.from(body.endsWith("\r\n") ? body.slice(0, -2) : body, "latin1");
}

/** Each call resolves with the next complete reply (the last line of a `250-…` run). */
export function replyReader(socket: net.Socket): () => Promise<{ code: number; text: string }> {
  let buffered = "";
  const ready: { code: number; text: string }[] = [];
  const waiting: ((r: { code: number; text: string }) => void)[] = [];
  let lines: string[] = [];
  socket.on("data", (chunk) => {
    buffered += chunk.toString("latin1");
    let end;
    while ((end = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, end).replace(/\r$/, "");
      buffered = buffered.slice(end + 1);
      lines.push(line);
      if (line[3] === "-") continue;
      const reply = { code: Number(line.slice(0, 3)), text: lines.join("\n") };
      lines = [];
      const taker = waiting.shift();
      if (taker) taker(reply);
      else ready.push(reply);
    }
  });
  return () => new Promise((resolve) => {
    const reply = ready.shift();
    if (reply) resolve(reply);
    else waiting.push(resolve);
  });
}
