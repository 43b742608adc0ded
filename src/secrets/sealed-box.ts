import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

/**
 * Secrets the server must read back (a mailbox password, a cloud drive's secret key), sealed
 * with AES-256-GCM under SECRETS_KEY before they reach the database (docs/api.md, Receipt sources).
 * A sealed value is `v1:<iv>:<tag>:<ciphertext>` (base64). `context` (the source's kind,
 * organization and id) is authenticated with it, so a value copied to another row does not open
 * there.
 */
export interface SealedBox {
  seal(plaintext: string, context: string): string;
  open(sealed: string, context: string): string;
}

const VERSION = "v1";

/** SECRETS_KEY: 32 bytes, as 64 hex digits or base64. */
export function secretsKeyOf(raw: string): Buffer {
  const text = raw.trim();
  const key = /^[0-9a-f]{64}$/i.test(text) ? Buffer.from(text, "hex") : Buffer.from(text, "base64");
  if (key.length !== 32) throw new Error("SECRETS_KEY must be 32 bytes: 64 hex digits or base64.");
  return key;
}

export function sealedBox(key: Buffer): SealedBox {
  if (key.length !== 32) throw new Error("The secrets key must be 32 bytes.");
  return {
    seal(plaintext, context) {
      const iv = randomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", key, iv);
      cipher.setAAD(Buffer.from(context, "utf8"));
      const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
      return [VERSION, iv.toString("base64"), cipher.getAuthTag().toString("base64"), body.toString("base64")].join(":");
    },
    open(sealed, context) {
      const [version, iv, tag, body] = sealed.split(":");
      if (version !== VERSION || !iv || !tag || body === undefined) throw new Error("The sealed secret is not in a known form.");
      const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64"));
      decipher.setAAD(Buffer.from(context, "utf8"));
      decipher.setAuthTag(Buffer.from(tag, "base64"));
      try {
        return Buffer.concat([decipher.update(Buffer.from(body, "base64")), decipher.final()]).toString("utf8");
      } catch {
        throw new Error("The sealed secret could not be opened: SECRETS_KEY differs from the one it was sealed with.");
      }
    },
  };
}

/** What a source's secret is sealed against: its kind, organization and id. */
export const sourceSecretContext = (kind: "mailbox" | "cloud_drive", organizationId: string, sourceId: string) =>
  `${kind}:${organizationId}:${sourceId}`;

/** What a webhook endpoint's signing secret is sealed against: its organization and id. */
export const webhookSecretContext = (organizationId: string, webhookEndpointId: string) =>
  `webhook_endpoint:${organizationId}:${webhookEndpointId}`;
