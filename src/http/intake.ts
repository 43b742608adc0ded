import { createHash, timingSafeEqual } from "node:crypto";
import express, { type NextFunction, type Request, type Response } from "express";
import type { Config } from "../config.js";
import { ByteLimit, EMAIL_MAX_BYTES, IntakeBusy, MalformedMessage, MessageTooLarge, parseEmail } from "../intake/email.js";
import { receiveIntake, type IntakePart } from "../intake/receive.js";
import { intakeOrganizations } from "../intake/recipients.js";
import type { Storage } from "../storage/index.js";
import type { Pools } from "../db/pools.js";
import { sendError, sendInternalError, stopReading } from "./rest.js";

/**
 * The HTTP intake transports (docs/api.md, Receipt intake), for a mail or SMS provider's webhook:
 * POST /intake/email (the raw message) and POST /intake/sms (JSON with base64 media). Both are
 * authenticated by the shared secret INTAKE_SECRET, checked before the body is read. No caller
 * identity comes with them (the address is the credential), so they write as the service, on the
 * owner's pool, for the organization the address names; each message is bounded by the intake's
 * own limits (src/intake/email.ts).
 */
export function intakeRoutes(config: Config, pools: Pools, storage: Storage): express.Router {
  const router = express.Router();
  const secret = requireIntakeSecret(config.intakeSecret);
  router.post("/intake/email", secret, (req, res) => {
    receiveEmail(req, res, pools, storage).catch((e) => answerFailure(res, e));
  });
  router.post("/intake/sms", secret, express.json({ limit: SMS_BODY_LIMIT, type: () => true }), (req, res) => {
    receiveSms(req, res, pools, storage).catch((e) => answerFailure(res, e));
  });
  return router;
}

/** Base64 grows media by a third: room for one full-size file and the rest of the JSON. */
const SMS_BODY_LIMIT = 30 * 1024 * 1024;
const SMS_MAX_MEDIA = 10;

/** Compared as SHA-256 digests: equal lengths for timingSafeEqual, and no length leaks. */
function requireIntakeSecret(expected: string) {
  const digest = (s: string) => createHash("sha256").update(s, "utf8").digest();
  const want = digest(expected);
  return (req: Request, res: Response, next: NextFunction) => {
    const given = req.get("X-Intake-Secret");
    if (!given || !timingSafeEqual(digest(given), want)) {
      res.set("Connection", "close");
      return sendError(res, "Missing or wrong X-Intake-Secret.", "UNAUTHENTICATED");
    }
    next();
  };
}

async function receiveEmail(req: Request, res: Response, pools: Pools, storage: Storage): Promise<void> {
  if (Number(req.get("Content-Length") ?? 0) > EMAIL_MAX_BYTES) {
    stopReading(req);
    throw new MessageTooLarge();
  }
  const limited = new ByteLimit(EMAIL_MAX_BYTES);
  req.pipe(limited);
  // A client gone before the end of its message would otherwise leave the parse waiting for ever, holding its slot.
  req.once("close", () => {
    if (!req.complete) limited.destroy(new Error("the request ended before the whole message arrived"));
  });
  let mail;
  try {
    mail = await parseEmail(limited);
  } catch (e) {
    stopReading(req);
    throw e;
  }
  // Each organization one of whose addresses the message names gets it once, as over SMTP.
  const organizations = await intakeOrganizations(pools.owner, "email", mail.recipients.slice(0, 100));
  if (organizations.length === 0) return sendError(res, "No recipient is an active intake address.", "NOT_FOUND");
  const results = [];
  for (const organizationId of organizations) {
    results.push(await receiveIntake(pools.owner, storage, {
      organizationId, channel: "email", messageId: mail.messageId, sender: mail.sender, parts: mail.parts, text: mail.text,
    }));
  }
  res.status(202).json({ receiptIds: results.flatMap((r) => r.receiptIds), duplicate: results.every((r) => r.duplicate) });
}

class BadSms extends Error {}

async function receiveSms(req: Request, res: Response, pools: Pools, storage: Storage): Promise<void> {
  const sms = readSms(req.body);
  const [organizationId] = await intakeOrganizations(pools.owner, "sms", [sms.to]);
  if (!organizationId) return sendError(res, "No recipient is an active intake address.", "NOT_FOUND");
  const result = await receiveIntake(pools.owner, storage, { organizationId, channel: "sms", ...sms });
  res.status(202).json({ receiptIds: result.receiptIds, duplicate: result.duplicate });
}

/** The webhook's JSON, checked: `{to, from, messageId, body, media: [{contentType, filename, data}]}`. */
function readSms(body: unknown): { to: string; sender: string | null; messageId: string | null; text: string; parts: IntakePart[] } {
  const b = (body ?? {}) as Record<string, unknown>;
  const optional = (name: string): string | null => {
    const v = b[name];
    if (v === undefined || v === null) return null;
    if (typeof v !== "string") throw new BadSms(`${name} must be a string.`);
    return v;
  };
  if (typeof b !== "object" || Array.isArray(b)) throw new BadSms("Send a JSON object.");
  const to = optional("to");
  if (!to) throw new BadSms("to is required.");
  const media = b.media ?? [];
  if (!Array.isArray(media)) throw new BadSms("media must be a list.");
  if (media.length > SMS_MAX_MEDIA) throw new BadSms(`At most ${SMS_MAX_MEDIA} media items per message.`);
  const parts = media.map((m: unknown, i): IntakePart => {
    const item = (m ?? {}) as Record<string, unknown>;
    if (typeof item.data !== "string" || !/^[A-Za-z0-9+/\-_=\s]*$/.test(item.data)) {
      throw new BadSms(`media[${i}].data must be base64.`);
    }
    const filename = typeof item.filename === "string" && item.filename.trim() !== "" ? item.filename : `media-${i + 1}`;
    const contentType = typeof item.contentType === "string" ? item.contentType : undefined;
    return { filename, contentType, content: Buffer.from(item.data, "base64") };
  });
  return { to, sender: optional("from"), messageId: optional("messageId"), text: optional("body") ?? "", parts };
}

function answerFailure(res: Response, e: unknown): void {
  if (e instanceof IntakeBusy) {
    if (!res.headersSent) res.set("Retry-After", "60");
    return sendError(res, e.message, "SERVICE_UNAVAILABLE");
  }
  if (e instanceof MessageTooLarge) return sendError(res, e.message, "PAYLOAD_TOO_LARGE");
  if (e instanceof MalformedMessage) return sendError(res, e.message, "BAD_USER_INPUT");
  if (e instanceof BadSms) return sendError(res, e.message, "BAD_USER_INPUT");
  sendInternalError(res, e, "intake failed");
}
