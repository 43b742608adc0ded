import { pipeline } from "node:stream/promises";
import type { Request, Response } from "express";
import { logger } from "../logger.js";
import type { FileUrls } from "../receipts/file-urls.js";
import { StorageNotFound, type Storage } from "../storage/index.js";
import { sendError, sendInternalError } from "./rest.js";
import { scopeOf } from "./request-scope.js";

/**
 * GET /files/:token: the file a signed URL (imageUrl) names, streamed from storage (local folder
 * or S3, through the service either way). The token is the credential: no other authentication,
 * and nothing but the signed key can be reached. The headers keep a browser from running
 * anything it serves (a PDF or an SVG-looking text stays inert).
 */
export function receiptFileRoute(urls: FileUrls, storage: Storage) {
  return async (req: Request, res: Response) => {
    const file = urls.verify(String(req.params.token ?? ""));
    if (!file) return sendError(res, "This file link is invalid or has expired.", "FORBIDDEN");
    let body;
    try {
      body = await storage.get(file.objectKey);
    } catch (e) {
      if (e instanceof StorageNotFound) return sendError(res, "File not found.", "NOT_FOUND");
      return sendInternalError(res, e, "file read failed");
    }
    const remaining = Math.max(0, file.expiresAt - Math.floor(Date.now() / 1000));
    res.status(200).set({
      // Receipt text is UTF-8 (checked when it arrived).
      "Content-Type": file.contentType === "text/plain" ? "text/plain; charset=utf-8" : file.contentType,
      "Content-Disposition": inlineDisposition(file.filename),
      "X-Content-Type-Options": "nosniff",
      "Cache-Control": `private, max-age=${remaining}`,
      "Content-Security-Policy": "default-src 'none'; sandbox",
    });
    try {
      await pipeline(body, res);
    } catch (e) {
      // Headers are gone by now: the client sees a cut response; the log says why.
      logger.warn({ requestId: scopeOf(res).requestId, err: { message: (e as Error).message } }, "file stream failed");
    }
  };
}

/** `inline` with an ASCII-safe `filename` and the exact name in `filename*` (RFC 6266 / 5987). */
export function inlineDisposition(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\%;]/g, "_").slice(0, 150) || "file";
  const exact = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `inline; filename="${ascii}"; filename*=UTF-8''${exact}`;
}
