import { checkOutbound, OutboundRefused, type CheckedAddress, type OutboundOptions } from "../outbound/guard.js";

/**
 * A webhook URL as the server may post to it: https (plain http only with
 * OUTBOUND_ALLOW_LOOPBACK=1), no user name or password in it (they would be kept and shown as part
 * of the URL), and a host whose every address the outbound guard allows (docs/api.md, Outbound
 * connections). Checked when an endpoint is registered or changed, and again at each
 * delivery (a name may resolve elsewhere later), where the request goes to the checked address.
 */
export interface CheckedUrl { url: URL; address: CheckedAddress }

export async function checkWebhookUrl(raw: string, outbound: OutboundOptions): Promise<CheckedUrl> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new OutboundRefused("url must be an absolute https URL.");
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && outbound.allowLoopback)) {
    throw new OutboundRefused("url must be an https URL.");
  }
  if (url.username || url.password) throw new OutboundRefused("url must not carry a user name or password.");
  if (url.hash) throw new OutboundRefused("url must not have a fragment (#).");
  return { url, address: await checkOutbound(url.hostname, outbound) };
}
