import { createHmac, timingSafeEqual } from "node:crypto";
import type { Config } from "../config.js";

export interface SignedFile {
  objectKey: string;
  contentType: string;
  filename: string;
  /** Unix seconds when the URL stops working. */
  expiresAt: number;
}

export interface FileUrls {
  /** `${PUBLIC_URL}/files/<token>`, valid for RECEIPT_URL_TTL seconds. */
  sign(file: { objectKey: string; contentType: string; filename?: string }): string;
  /** The file a token names, or null when it is tampered with, expired or malformed. */
  verify(token: string): SignedFile | null;
}

/**
 * Signed, expiring file URLs (imageUrl: docs/api.md, Viewing a file): the token carries what to
 * serve (key, type, name) and until when, with an HMAC-SHA256 over it, so serving needs no database
 * and a URL that leaks stops working after the TTL. `now` (unix seconds) is for tests.
 */
export function fileUrls(
  config: Pick<Config, "publicUrl" | "receiptUrlTtlSeconds" | "fileUrlSecret">,
  options: { now?: () => number } = {},
): FileUrls {
  const now = options.now ?? (() => Math.floor(Date.now() / 1000));
  const mac = (payload: string) => createHmac("sha256", config.fileUrlSecret).update(payload).digest();

  return {
    sign(file) {
      const filename = file.filename ?? file.objectKey.slice(file.objectKey.lastIndexOf("/") + 1);
      const payload = Buffer.from(JSON.stringify({ k: file.objectKey, t: file.contentType, n: filename, e: now() + config.receiptUrlTtlSeconds }))
        .toString("base64url");
      return `${config.publicUrl}/files/${payload}.${mac(payload).toString("base64url")}`;
    },
    verify(token) {
      const dot = token.indexOf(".");
      if (dot <= 0 || token.length > 4096) return null;
      const payload = token.slice(0, dot);
      const given = Buffer.from(token.slice(dot + 1), "base64url");
      const expected = mac(payload);
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
      let claims: unknown;
      try {
        claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
      } catch {
        return null;
      }
      const c = claims as { k?: unknown; t?: unknown; n?: unknown; e?: unknown };
      if (typeof c.k !== "string" || typeof c.t !== "string" || typeof c.n !== "string" || typeof c.e !== "number") return null;
      if (c.e <= now()) return null;
      return { objectKey: c.k, contentType: c.t, filename: c.n, expiresAt: c.e };
    },
  };
}
