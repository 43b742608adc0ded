import http from "node:http";

/** GraphQL over HTTP as a client does it; `errors` are thrown with their first message. */
export async function gql<T = any>(url: string, auth: string, query: string, variables: Record<string, unknown> = {},
    options: { timeoutMs?: number; organizationId?: string } = {}): Promise<T> {
  const res = await fetch(`${url}/graphql`, {
    method: "POST",
    signal: AbortSignal.timeout(options.timeoutMs ?? 30_000),
    headers: {
      "content-type": "application/json", authorization: auth,
      ...(options.organizationId ? { "x-organization-id": options.organizationId } : {}),
    },
    body: JSON.stringify({ query, variables }),
  });
  const body = await res.json() as { data?: T; errors?: { message: string }[] };
  if (body.errors?.length) throw new Error(body.errors[0].message);
  if (!res.ok || !body.data) throw new Error(`HTTP ${res.status}`);
  return body.data;
}

export interface UploadAnswer { status: number; body: any; ms: number; retryAfter?: string; error?: string }

/**
 * POST /uploads: multipart with `organizationId` then `file`, written straight from `bytes` (one
 * buffer shared by any number of parallel uploads, never copied). `filenameHeader` is the part's
 * disposition parameters as sent (a raw UTF-8 `filename="…"` by default, as browsers and curl send it).
 */
export function upload(url: string, apiKey: string, organizationId: string, file: { name: string; type: string; bytes: Buffer; filenameHeader?: string },
    timeoutMs = 300_000): Promise<UploadAnswer> {
  const boundary = `soak${Math.random().toString(16).slice(2)}`;
  const disposition = file.filenameHeader ?? `filename="${file.name.replace(/"/g, "%22")}"`;
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="organizationId"\r\n\r\n${organizationId}\r\n` +
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; ${disposition}\r\nContent-Type: ${file.type}\r\n\r\n`, "utf8");
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const started = performance.now();
  return new Promise((resolve) => {
    let done = false;
    const finish = (answer: Omit<UploadAnswer, "ms">) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve({ ...answer, ms: performance.now() - started });
    };
    const req = http.request(`${url}/uploads`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${apiKey}`,
        "content-type": `multipart/form-data; boundary=${boundary}`,
        "content-length": head.length + file.bytes.length + tail.length,
      },
      agent: false,
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        let body: unknown = text;
        try { body = JSON.parse(text); } catch { /* not JSON */ }
        const retryAfter = res.headers["retry-after"];
        finish({ status: res.statusCode ?? 0, body, ...(retryAfter ? { retryAfter: String(retryAfter) } : {}) });
      });
      res.on("error", (e) => finish({ status: res.statusCode ?? 0, body: null, error: e.message }));
    });
    const timer = setTimeout(() => { req.destroy(); finish({ status: 0, body: null, error: `no answer within ${timeoutMs} ms` }); }, timeoutMs);
    // A server that answers early (413, 429) and closes may cut the body short: its answer stands.
    req.on("error", (e) => finish({ status: 0, body: null, error: e.message }));
    req.write(head);
    req.write(file.bytes);
    req.end(tail);
  });
}
