import { randomUUID } from "node:crypto";
import type { Readable } from "node:stream";
import busboy from "busboy";
import type { Request, Response } from "express";
import type pg from "pg";
import type { Config } from "../config.js";
import { callerFailure, TIMEOUT_MESSAGE, type ErrorCode } from "../db/sql-errors.js";
import { FileTooLarge, UnsupportedFileType } from "../receipts/inspect.js";
import { RECEIPT_MAX_BYTES, storeReceiptFile, type StoredFile } from "../receipts/store-file.js";
import { keySegment, type Storage } from "../storage/index.js";
import { credentialOf } from "../db/identity.js";
import { authenticateRest, sendError, sendInternalError, stopReading } from "./rest.js";
import { scopeOf, type RequestScope } from "./request-scope.js";
import { UploadSlots, type UploadPlace } from "./upload-slots.js";

/**
 * POST /uploads: one receipt file, multipart/form-data with `organizationId` then
 * `file`. The caller is authenticated and counted like a GraphQL request, the organization is
 * checked before a byte is stored, the type is decided from the bytes, and the file is streamed
 * to storage (never held whole) with its size limit and SHA-256 worked out on the way; then the
 * upload is recorded as the caller. Both database steps run as the caller through the request's
 * scope (the organization's share of the pool, a statement budget each); the file's transfer
 * between them is bounded by the limits below. A failure at any point leaves no object behind. A caller
 * with too many uploads under way (429), or a process with too many in all (503), is refused
 * before a byte of the body is read; an organization with too many (429), once the form names it.
 */

/** A whole upload may take this long; past it the request is dropped and nothing kept. */
const UPLOAD_TIMEOUT_MS = 120_000;
/**
 * An upload under way must keep arriving: less than this in any 10 s, and it is dropped (408), so
 * that uploads that trickle cannot keep every place for their two minutes. 128 KB in 10 s (13 KB/s,
 * a poor mobile link) is a twentieth of what a 20 MB file needs to arrive within UPLOAD_TIMEOUT_MS.
 */
const MIN_PROGRESS_BYTES = 128 * 1024;
const PROGRESS_WINDOW_MS = 10_000;
/**
 * Uploads one credential (API key or user) may have under way at once: a person or a program
 * sends a few files at a time; past that it is a flood, which one key must not make of the
 * places every caller shares.
 */
const UPLOADS_PER_CREDENTIAL = 4;
/**
 * Uploads one organization may have under way at once, whatever its keys and members: half of
 * all, so that a tenant with many keys never holds every place.
 */
const UPLOADS_PER_ORGANIZATION = 8;
/**
 * Uploads under way in this process in all. Every byte costs the event loop about 2 ms per MB
 * (the multipart boundary search, handing chunks to the file system, SHA-256, in that order), and
 * each upload's chunk takes its turn with every other request: 16 at full speed (about 300 MB/s
 * on two cores) kept /healthz at a p99 of tens of milliseconds, where 200 made a GraphQL request
 * wait over a second and each upload 23 s. S3 holds up to 20 MiB of parts per upload: 16 stay
 * within 320 MiB.
 */
const UPLOADS_IN_ALL = 16;
/** Seconds a refused caller is asked to wait: about what one 20 MiB upload takes on a modest link. */
const RETRY_AFTER_SECONDS = 5;
/** Longest file name kept, in characters (the database's limit). */
const FILENAME_MAX_CHARS = 255;
const UUID_SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A refusal with the message, code and headers the caller gets. */
class Refusal extends Error {
  constructor(message: string, readonly code: ErrorCode, readonly status?: number, readonly headers?: Record<string, string>) {
    super(message);
  }
}

/** What a refusal for being busy tells the client: when to come back, and that this connection is done (its body is not read). */
const BUSY_HEADERS = { "Retry-After": String(RETRY_AFTER_SECONDS), Connection: "close" };

export function uploadRoute(config: Config, authPool: pg.Pool, storage: Storage) {
  const slots = new UploadSlots({ perCredential: UPLOADS_PER_CREDENTIAL, perOrganization: UPLOADS_PER_ORGANIZATION, total: UPLOADS_IN_ALL });
  return [authenticateRest(authPool, config), (req: Request, res: Response) => {
    const scope = scopeOf(res);
    // Whose uploads count together: one API key, or one user whatever organization it names.
    const place = slots.take(credentialOf(scope.identity) ?? "anonymous");
    if ("full" in place) return refuseBusy(res, place.full);
    // The place is held until the upload is settled, its storage cleaned up included.
    receiveUpload(req, res, scope, storage, place).catch((e) => answerFailure(res, e)).finally(place.release);
  }];
}

/**
 * 429 or 503 with Retry-After, before the body is read: the connection closes once the answer is
 * written, so the client neither sends the rest of its file for nothing nor keeps it waiting.
 */
function refuseBusy(res: Response, full: "credential" | "all"): void {
  res.set(BUSY_HEADERS);
  if (full === "credential") {
    return sendError(res, `Too many uploads under way for this credential (at most ${UPLOADS_PER_CREDENTIAL} at once); retry when one has finished.`, "RATE_LIMITED");
  }
  sendError(res, "The service is taking too many uploads at once; retry shortly.", "SERVICE_UNAVAILABLE");
}

async function receiveUpload(req: Request, res: Response, scope: RequestScope, storage: Storage, place: UploadPlace): Promise<void> {
  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: req.headers,
      // File names as browsers and curl send them: UTF-8 (busboy's default reads them as latin1).
      defParamCharset: "utf8",
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
  let progress: NodeJS.Timeout | undefined;

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
      // The caller may use the organization, checked as GraphQL checks it (same order and messages).
      access = scope.stepDb(id).call({ text: "select app_private.assert_org_access($1, false) as result", values: [id] }).then(() => {
        // Counted once the caller may use it: naming another tenant's organization takes none of its places.
        if (!place.forOrganization(id)) {
          throw new Refusal(`Too many uploads under way for this organization (at most ${UPLOADS_PER_ORGANIZATION} at once); retry when one has finished.`,
            "RATE_LIMITED", 429, BUSY_HEADERS);
        }
      });
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
      // One form per name (NFC: a name typed on a Mac, decomposed, is the same name); cut by characters, never inside one.
      filename = Array.from((info.filename || "file").normalize("NFC")).slice(0, FILENAME_MAX_CHARS).join("");
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
    let arrived = 0;
    req.on("data", (chunk: Buffer) => { arrived += chunk.length; });
    let lastArrived = 0;
    progress = setInterval(() => {
      if (req.complete) return clearInterval(progress);
      if (arrived - lastArrived < MIN_PROGRESS_BYTES) {
        fail(new Refusal(`The upload is arriving too slowly (less than ${MIN_PROGRESS_BYTES / 1024} KB in ${PROGRESS_WINDOW_MS / 1000} s).`, "BAD_USER_INPUT", 408));
      }
      lastArrived = arrived;
    }, PROGRESS_WINDOW_MS);
    req.pipe(parser);
  }).finally(() => {
    clearTimeout(timer);
    clearInterval(progress);
  });

  // Whatever happened, the store has to settle before answering: a refused upload leaves nothing.
  const file = await stored?.catch((e: unknown) => { refusal ??= e; return undefined; });
  if (refusal !== undefined) {
    if (file) await storage.delete(file.key).catch(() => {});
    throw refusal;
  }
  if (!file) throw new Refusal("A file is required (form field file).", "BAD_USER_INPUT");
  try {
    await scope.stepDb(organizationId!).call({
      text: "select app_private.record_upload(organization_id => $1, object_key => $2, filename => $3, content_type => $4, size => $5, sha256 => $6) as result",
      values: [organizationId, file.key, filename, file.contentType, file.size, file.sha256],
    });
  } catch (e) {
    await storage.delete(file.key).catch(() => {});
    throw e;
  }
  res.status(201).json({ objectKey: file.key, filename, contentType: file.contentType, size: file.size });
}

function answerFailure(res: Response, e: unknown): void {
  if (e instanceof Refusal) {
    if (e.headers && !res.headersSent) res.set(e.headers);
    if (e.status && !res.headersSent) return void res.status(e.status).json({ errors: [{ message: e.message, extensions: { code: e.code } }] });
    return sendError(res, e.message, e.code);
  }
  if (e instanceof FileTooLarge) return sendError(res, e.message, "PAYLOAD_TOO_LARGE");
  if (e instanceof UnsupportedFileType) return sendError(res, e.message, "UNSUPPORTED_MEDIA_TYPE");
  const failure = callerFailure(e);
  if (failure?.message === TIMEOUT_MESSAGE) {
    if (!res.headersSent) res.set("Retry-After", String(RETRY_AFTER_SECONDS));
    return sendError(res, "The service is busy; retry shortly.", "SERVICE_UNAVAILABLE");
  }
  if (failure) return sendError(res, failure.message, failure.code);
  sendInternalError(res, e, "upload failed");
}
