import { randomUUID } from "node:crypto";
import { callForResult, isFailure, type Failure } from "../../plugins/sql-operations.js";
import { OutboundRefused } from "../outbound/guard.js";
import { webhookSecretContext } from "../secrets/sealed-box.js";
import type { OutboundCallContext } from "../outbound/call-context.js";
import { checkWebhookUrl } from "./endpoint-url.js";
import { newWebhookSecret } from "./signature.js";

/**
 * The caller and the fields, by SQL (app_private.webhook_endpoint_settings), then the URL by the
 * outbound guard, outside the request's database budget: a failure of either, or null.
 */
async function refusalOf(ctx: OutboundCallContext, a: Record<string, any>): Promise<Failure | { url: string | null }> {
  const settings = await callForResult(ctx.caller, {
    text: "select app_private.webhook_endpoint_settings($1, $2, $3, $4) as result",
    values: [a.organizationId, a.url ?? null, a.events ?? null, a.description ?? null],
  });
  if (isFailure(settings)) return settings;
  const url = (settings as { url: string | null }).url;
  if (url === null) return { url };
  try {
    await ctx.caller.outside(() => checkWebhookUrl(url, ctx.tenantOutbound.outbound));
  } catch (e) {
    if (e instanceof OutboundRefused) return { success: false, error: e.message };
    throw e;
  }
  return { url };
}

/**
 * createWebhookEndpoint (issue 13): the signing secret is drawn here, sealed to the new endpoint
 * with SECRETS_KEY, and returned this once (an idempotent replay carries null in its place).
 */
export async function createWebhookEndpoint(ctx: OutboundCallContext, a: Record<string, any>): Promise<unknown> {
  const checked = await refusalOf(ctx, a);
  if (isFailure(checked)) return checked;
  const id = randomUUID();
  const secret = newWebhookSecret();
  const sealed = ctx.tenantOutbound.secrets.seal(secret, webhookSecretContext(a.organizationId, id));
  const created = await callForResult(ctx.caller, {
    text: "select app_private.create_webhook_endpoint($1, $2, $3, $4, $5, $6) as result",
    values: [a.organizationId, a.url, a.events, a.description ?? null, id, sealed],
  });
  return isFailure(created) ? created : { ...(created as object), secret };
}

/** updateWebhookEndpoint: a new URL is checked as a new endpoint's is; the secret stays. */
export async function updateWebhookEndpoint(ctx: OutboundCallContext, a: Record<string, any>): Promise<unknown> {
  if (a.url != null) {
    const checked = await refusalOf(ctx, a);
    if (isFailure(checked)) return checked;
  }
  return callForResult(ctx.caller, {
    text: "select app_private.update_webhook_endpoint($1, $2, $3, $4, $5, $6) as result",
    values: [a.organizationId, a.webhookEndpointId, a.url ?? null, a.events ?? null, a.description ?? null, a.status ?? null],
  });
}
