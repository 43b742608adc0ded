import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * The webhook benchmark's receivers (bench/webhooks.ts), in a process of their own so that the
 * load the benchmark makes does not slow their answers: `count` HTTP servers on loopback, each
 * noting when each event arrived and its lag from the event's `created`. Sends `{urls}` to its
 * parent when listening; on the message "report", sends `{arrivals}` (per receiver); on "reset",
 * forgets them (the warm-up's) and sends `{reset: true}`; it runs until killed.
 */
const count = Number(process.argv[2] ?? 3);
const arrivals: { at: number; lag: number; id: string }[][] = Array.from({ length: count }, () => []);
const urls = await Promise.all(arrivals.map((got) => new Promise<string>((resolve) => {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const now = Date.now();
      const event = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      got.push({ at: now, lag: now - Date.parse(event.created), id: event.id });
      res.end();
    });
  }).listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`));
})));
process.send!({ urls });
process.on("message", (m) => {
  if (m === "count") process.send!({ count: arrivals.reduce((n, a) => n + a.length, 0) });
  if (m === "report") process.send!({ arrivals });
  if (m === "reset") {
    for (const got of arrivals) got.length = 0;
    process.send!({ reset: true });
  }
});
