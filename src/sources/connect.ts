import { randomUUID } from "node:crypto";
import { callForResult, isFailure, type Failure } from "../../plugins/sql-operations.js";
import type { OutboundCallContext } from "../outbound/call-context.js";
import { sourceSecretContext } from "../secrets/sealed-box.js";
import { testCloudDrive, type CloudDriveSettings } from "./cloud-drive/client.js";
import { testMailbox, type MailboxSettings } from "./mailbox/connection.js";

const MAX_SECRET_LENGTH = 1024;

/**
 * connectMailbox and connectCloudDrive (docs/api.md, Receipt sources), in three steps: SQL checks the caller
 * (owner or admin) and the settings; the server tests them against the real server, outside the
 * request's database budget and without holding a connection; SQL stores them with the secret
 * sealed. The secret never reaches SQL in clear, nor any error or log.
 */
async function connectSource<S>(ctx: OutboundCallContext, kind: "mailbox" | "cloud_drive", organizationId: string, secret: unknown,
  settingsCall: { text: string; values: unknown[] }, test: (settings: S, secret: string) => Promise<string | null>,
  storeCall: (sourceId: string, sealed: string) => { text: string; values: unknown[] }): Promise<unknown> {
  const noun = kind === "mailbox" ? "Password" : "Secret access key";
  if (typeof secret !== "string" || secret === "") return { success: false, error: `${noun} is required.` };
  if (secret.length > MAX_SECRET_LENGTH) return { success: false, error: `${noun} must be at most ${MAX_SECRET_LENGTH} characters.` };
  const settings = await callForResult(ctx.caller, settingsCall);
  if (isFailure(settings)) return settings;
  const refusal = await ctx.caller.outside(() => test(settings as S, secret));
  if (refusal !== null) return { success: false, error: refusal };
  // The id is made here, so that the secret is sealed to this one source.
  const sourceId = randomUUID();
  const sealed = ctx.tenantOutbound.secrets.seal(secret, sourceSecretContext(kind, organizationId, sourceId));
  const stored = storeCall(sourceId, sealed);
  return callForResult(ctx.caller, stored);
}

export function connectMailbox(ctx: OutboundCallContext, a: Record<string, any>): Promise<unknown> {
  const fields = [a.organizationId, a.host, a.port, a.secure, a.username, a.folder];
  return connectSource<MailboxSettings>(ctx, "mailbox", a.organizationId, a.password,
    { text: "select app_private.mailbox_settings($1, $2, $3, $4, $5, $6) as result", values: fields },
    (settings, password) => testMailbox(settings, password, ctx.tenantOutbound.outbound),
    (sourceId, sealed) => ({ text: "select app_private.connect_mailbox($1, $2, $3, $4, $5, $6, $7, $8) as result", values: [...fields, sourceId, sealed] }));
}

export function connectCloudDrive(ctx: OutboundCallContext, a: Record<string, any>): Promise<unknown> {
  const fields = [a.organizationId, a.endpoint, a.bucket, a.prefix, a.accessKeyId, a.region];
  return connectSource<CloudDriveSettings>(ctx, "cloud_drive", a.organizationId, a.secretAccessKey,
    { text: "select app_private.cloud_drive_settings($1, $2, $3, $4, $5, $6) as result", values: fields },
    (settings, secret) => testCloudDrive(settings, secret, ctx.tenantOutbound.outbound),
    (sourceId, sealed) => ({ text: "select app_private.connect_cloud_drive($1, $2, $3, $4, $5, $6, $7, $8) as result", values: [...fields, sourceId, sealed] }));
}
