import http from "node:http";
import type net from "node:net";

/**
 * A hostile S3-compatible endpoint on loopback, standing in for the store a tenant names when it
 * connects a cloud drive. Any bucket, any credentials (nothing is checked). ListObjectsV2
 * (`GET /<bucket>?list-type=2…`, path style) answers 200 and then, by `listing`:
 * - `endless` (the default): one page whose `<Contents>` entries never end, streamed chunked as
 *   fast as the client reads (a client that buffers the whole body grows without end);
 * - `endless-pages`: pages of `keysPerPage` (default 1,000) valid entries, each page complete,
 *   but every one says IsTruncated with a new NextContinuationToken, and the keys go on rising
 *   for ever (a store that looks like an endless bucket). `StartAfter` is honoured;
 * - `same-page`: like `endless-pages`, but every page lists the same keys again;
 * - `trickle`: one page whose entries come one every `entryEveryMs` (default 1 s), never ending
 *   (a socket timeout never fires, so only a time limit ends it);
 * - `endless-headers`: a status line and then header lines that never end.
 * Every other request is an object read (GetObject): by `objects`, `missing` (the default: 404
 * NoSuchKey) or `endless` (200, a PDF header and then bytes that never end).
 * `bytesSent()` is what the server has written in all, `listings()` the listing requests seen,
 * `openConnections()` the clients' connections not yet closed.
 */
export interface EndlessS3 {
  endpoint: string;
  port: number;
  bytesSent(): number;
  listings(): number;
  openConnections(): number;
  close(): Promise<void>;
}

export interface EndlessS3Options {
  listing?: "endless" | "endless-pages" | "same-page" | "trickle" | "endless-headers";
  keysPerPage?: number;
  entryEveryMs?: number;
  objects?: "missing" | "endless";
}

/** What one write may hold: large enough to fill a loopback socket quickly, small enough to stop soon after the client does. */
const CHUNK_BYTES = 64 * 1024;

export async function startEndlessS3(options: EndlessS3Options = {}): Promise<EndlessS3> {
  const listing = options.listing ?? "endless";
  const keysPerPage = options.keysPerPage ?? 1000;
  let sent = 0;
  let listings = 0;
  const sockets = new Set<net.Socket>();
  const timers = new Set<NodeJS.Timeout>();

  const server = http.createServer((request, response) => {
    request.resume();
    response.on("error", () => {});
    const write = (text: string | Buffer) => {
      sent += Buffer.byteLength(text);
      return response.write(text);
    };
    // Writes `next()` for ever, as fast as the client reads, until it goes away.
    const flood = (next: () => string | Buffer) => {
      const pump = () => {
        while (!response.destroyed && !response.writableEnded) {
          if (!write(next())) return void response.once("drain", pump);
        }
      };
      pump();
    };

    const url = new URL(request.url ?? "/", "http://fake");
    const bucket = decodeURIComponent(url.pathname.split("/")[1] ?? "");
    if (url.searchParams.get("list-type") === "2") {
      listings++;
      if (listing === "endless-headers") {
        // Under the HTTP layer: no response object would write headers without end.
        const socket = request.socket;
        socket.write("HTTP/1.1 200 OK\r\n");
        const line = `X-Padding: ${"a".repeat(1000)}\r\n`;
        const pump = () => {
          while (!socket.destroyed) {
            sent += line.length;
            if (!socket.write(line)) return void socket.once("drain", pump);
          }
        };
        pump();
        return;
      }
      const prefix = url.searchParams.get("prefix") ?? "";
      response.writeHead(200, { "Content-Type": "application/xml" });
      const head = `<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">`
        + `<Name>${xml(bucket)}</Name><Prefix>${xml(prefix)}</Prefix><MaxKeys>1000</MaxKeys>`;
      if (listing === "endless") {
        write(`${head}<IsTruncated>false</IsTruncated>`);
        let n = 0;
        flood(() => {
          let batch = "";
          while (batch.length < CHUNK_BYTES) batch += entry(prefix, ++n);
          return batch;
        });
        return;
      }
      if (listing === "trickle") {
        write(`${head}<IsTruncated>false</IsTruncated>`);
        let n = 0;
        const timer = setInterval(() => {
          if (response.destroyed) return void clearInterval(timer);
          write(entry(prefix, ++n));
        }, options.entryEveryMs ?? 1000);
        timers.add(timer);
        response.on("close", () => {
          clearInterval(timer);
          timers.delete(timer);
        });
        return;
      }
      // A token names the last key listed, as StartAfter does.
      const token = url.searchParams.get("continuation-token");
      const after = Number(/(\d+)(\.pdf)?$/.exec(token ?? url.searchParams.get("start-after") ?? "")?.[1] ?? 0);
      const first = listing === "same-page" ? 1 : after + 1;
      let body = `${head}<KeyCount>${keysPerPage}</KeyCount><IsTruncated>true</IsTruncated>`
        + `<NextContinuationToken>after-${first + keysPerPage - 1}</NextContinuationToken>`;
      if (token) body += `<ContinuationToken>${xml(token)}</ContinuationToken>`;
      for (let n = first; n < first + keysPerPage; n++) body += entry(prefix, n);
      write(`${body}</ListBucketResult>`);
      response.end();
      return;
    }
    if (options.objects === "endless") {
      response.writeHead(200, { "Content-Type": "application/pdf", ETag: '"0123456789abcdef0123456789abcdef"' });
      write("%PDF-1.4\n");
      const filler = Buffer.alloc(CHUNK_BYTES, 0x20);
      flood(() => filler);
      return;
    }
    const missing = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>`;
    response.writeHead(404, { "Content-Type": "application/xml", "Content-Length": Buffer.byteLength(missing) });
    write(missing);
    response.end();
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    port,
    bytesSent: () => sent,
    listings: () => listings,
    openConnections: () => sockets.size,
    close: () => new Promise<void>((resolve) => {
      for (const timer of timers) clearInterval(timer);
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    }),
  };
}

/** One listed object, `<prefix>receipt-000000042.pdf`: a key that sorts by its number. */
function entry(prefix: string, n: number): string {
  return `<Contents><Key>${xml(prefix)}receipt-${String(n).padStart(9, "0")}.pdf</Key>`
    + `<LastModified>2026-06-01T10:00:00.000Z</LastModified><ETag>&quot;etag-${n}&quot;</ETag>`
    + `<Size>2048</Size><StorageClass>STANDARD</StorageClass></Contents>`;
}

function xml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}
