import { createHmac, randomBytes } from "node:crypto";

/** The header of a delivery's signature. */
export const SIGNATURE_HEADER = "Accounting-Signature";

/** A signing secret, shown once: `whsec_` and 40 base64url characters (240 random bits). */
export const WEBHOOK_SECRET = /whsec_[0-9A-Za-z_-]{40}/;
export const newWebhookSecret = () => "whsec_" + randomBytes(30).toString("base64url");

/**
 * As Stripe signs: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>" with the secret>`.
 * The time is signed with the body, so a receiver can refuse an old delivery replayed.
 */
export function signatureOf(secret: string, body: string, unixSeconds: number): string {
  const mac = createHmac("sha256", secret).update(`${unixSeconds}.${body}`, "utf8").digest("hex");
  return `t=${unixSeconds},v1=${mac}`;
}
