import { randomUUID } from "node:crypto";
import type { Readable } from "node:stream";
import busboy from "busboy";
import type { Request, Response } from "express";
import type { Config } from "../config.js";
import { callerFailure, TIMEOUT_MESSAGE, type ErrorCode } from "../db/sql-errors.js";
import { FileTooLarge, UnsupportedFileType } from "../receipts/inspect.js";
import { RECEIPT_MAX_BYTES, storeReceiptFile, type StoredFile } from "../receipts/store-file.js";
import { keySegment, type Storage } from "../storage/index.js";
import { identityOf, type Identity } from "./authenticate.js";
import type { Pools } from "./app.js";
import { asCaller, authenticateRest, sendError, sendInternalError, stopReading } from "./rest.js";

/**
 * POST /uploads (decisions §9): one receipt file, multipart/form-data with `organizationId` then
 * `file`. The caller is authenticated and counted like a GraphQL request, the organization is
 * checked before a byte is stored, the type is decided from the bytes, and the file is streamed
 * to storage (never held whole) with its size limit and SHA-256 worked out on the way; then the
 * upload is recorded as the caller. A failure at any point leaves no object behind.
 */

/** A whole upload may take this long; past it the request is dropped and nothing kept. */
const UPLOAD_TIMEOUT_MS = 120_000;
const UUID_SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A refusal with the message and code the caller gets. */
class Refusal extends Error {
  constructor(message: string, readonly code: ErrorCode, readonly status?: number) {
    super(message);
  }
}

export function uploadRoute(config: Config, pools: Pools, storage: Storage) {
  return [authenticateRest(pools.auth, config), (req: Request, res: Response) => {
    receiveUpload(req, res, pools, storage).catch((e) => answerFailure(res, e));
  }];
}

async function receiveUpload(req: Request, res: Response, pools: Pools, storage: Storage): Promise<void> {
  const identity = identityOf(res);
  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: req.headers,
      limits: { fields: 5, fieldSize: 1024, fieldNameSize: 100, files: 1, parts: 8, headerPairs: 20, fileSize: RECEIPT_MAX_BYTES + 1 },
    });
  } catch {
    throw new Refusal("Send the file as multipart/form-data with the fields organizationId and file.", "BAD_USER_INPUT");
  }

  let organizationId: string | undefined;
  let access: Promise<unknown> | undefined;
  let stored: Promise<StoredFile> | undefined;
  let filename = "";
  let fileStream: Readable | undefined;
  let refusal: unknown;
  let timer: NodeJS.Timeout | undefined;

  await new Promise<void>((resolve) => {
    const fail = (e: unknown) => {
      if (refusal === undefined) refusal = e;
      stopReading(req);
      fileStream?.destroy(new Refusal("Upload stopped.", "BAD_USER_INPUT"));
      resolve();
    };

    parser.on("field", (name, value, info) => {
      if (name !== "organizationId") return;
      if (organizationId !== undefined || fileStream) return fail(new Refusal("Send organizationId once, before file.", "BAD_USER_INPUT"));
      const id = value.trim();
      if (info.valueTruncated || !UUID_SHAPE.test(id)) return fail(new Refusal("organizationId must be a UUID.", "BAD_USER_INPUT"));
      organizationId = id;
      // Checked while the file part is still arriving; its bytes wait (backpressure) for the answer.
      access = checkAccess(pools, identity, id);
      access.catch(fail);
    });
    parser.on("file", (name, stream, info) => {
      // Its errors are ours (we destroy it on a refusal) and reach the store, if any, through its pipe.
      stream.on("error", () => {});
      if (name !== "file") {
        stream.resume();
        return fail(new Refusal(`Unexpected file field "${name}": send the file as "file".`, "BAD_USER_INPUT"));
      }
      fileStream = stream;
      if (!organizationId) return fail(new Refusal("Send organizationId before file in the form.", "BAD_USER_INPUT"));
      filename = (info.filename || "file").slice(0, 255);
      const key = `${organizationId}/uploads/${randomUUID()}/${keySegment(filename)}`;
      stored = (async () => {
        await access;
        // Refused meanwhile (timeout, form error): the stream is gone, store nothing.
        if (refusal !== undefined) throw refusal;
        const file = await storeReceiptFile(storage, key, stream);
        if (!file) throw new UnsupportedFileType();
        return file;
      })();
      stored.catch(fail);
    });
    parser.on("filesLimit", () => fail(new Refusal("Send one file per request.", "BAD_USER_INPUT")));
    parser.on("fieldsLimit", () => fail(new Refusal("Too many form fields.", "BAD_USER_INPUT")));
    parser.on("partsLimit", () => fail(new Refusal("Too many form parts.", "BAD_USER_INPUT")));
    parser.on("error", () => fail(new Refusal("Malformed multipart body.", "BAD_USER_INPUT")));
    parser.on("close", () => resolve());
    req.on("close", () => { if (!req.complete) fail(new Refusal("The upload was interrupted.", "BAD_USER_INPUT")); });
    timer = setTimeout(() => fail(new Refusal("The upload took too long.", "BAD_USER_INPUT", 408)), UPLOAD_TIMEOUT_MS);
    req.pipe(parser);
  }).finally(() => clearTimeout(timer));

  // Whatever happened, the store has to settle before answering: a refused upload leaves nothing.
  const file = await stored?.catch((e: unknown) => { refusal ??= e; return undefined; });
  if (refusal !== undefined) {
    if (file) await storage.delete(file.key).catch(() => {});
    throw refusal;
  }
  if (!file) throw new Refusal("A file is required (form field file).", "BAD_USER_INPUT");
  try {
    await asCaller(pools.auth, identity, (c) => c.query(
      "select app_private.record_upload(organization_id => $1, object_key => $2, filename => $3, content_type => $4, size => $5, sha256 => $6)",
      [organizationId, file.key, filename, file.contentType, file.size, file.sha256]));
  } catch (e) {
    await storage.delete(file.key).catch(() => {});
    throw e;
  }
  res.status(201).json({ objectKey: file.key, filename, contentType: file.contentType, size: file.size });
}

/** The caller may use the organization (decisions §2 order and messages), as GraphQL checks it. */
function checkAccess(pools: Pools, identity: Identity, organizationId: string): Promise<unknown> {
  return asCaller(pools.auth, identity, (c) => c.query("select app_private.assert_org_access($1, false)", [organizationId]));
}

function answerFailure(res: Response, e: unknown): void {
  if (e instanceof Refusal) {
    if (e.status && !res.headersSent) return void res.status(e.status).json({ errors: [{ message: e.message, extensions: { code: e.code } }] });
    return sendError(res, e.message, e.code);
  }
  if (e instanceof FileTooLarge) return sendError(res, e.message, "PAYLOAD_TOO_LARGE");
  if (e instanceof UnsupportedFileType) return sendError(res, e.message, "UNSUPPORTED_MEDIA_TYPE");
  const failure = callerFailure(e);
  if (failure?.message === TIMEOUT_MESSAGE) return sendError(res, "The service is busy; retry shortly.", "SERVICE_UNAVAILABLE");
  if (failure) return sendError(res, failure.message, failure.code);
  sendInternalError(res, e, "upload failed");
}
