import { gql } from "postgraphile/utils";
import { createWebhookEndpoint, updateWebhookEndpoint } from "../src/webhooks/endpoints.js";
import { served, sqlOperationsPlugin } from "./sql-operations.js";

/**
 * Webhooks (issue 13): endpoints an organization registers to receive its events, signed, and the
 * log of their deliveries. Owner or admin only, by JWT. Registering and changing an endpoint are
 * served here (src/webhooks/endpoints.ts), since they check the URL's host and seal the secret,
 * with their rules in SQL; the rest are SQL functions (migrations/fixtures/webhooks/).
 */
export const WebhooksPlugin = sqlOperationsPlugin("WebhooksPlugin", gql`
  """
  An HTTPS URL the organization's events are posted to, signed (header Accounting-Signature:
  t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>" with the endpoint's secret>).
  events: the event types it receives: ledger_event.created, ledger_event.confirmed,
  ledger_event.rejected, ledger_event.reversed, bank_import.completed, processor_import.completed,
  receipt.received, receipt.matched, receipt.unmatched, reconciliation.completed, invoice.approved, invoice.paid,
  bill.approved, bill.paid. status: enabled, or disabled (by a person, or by the service
  after its deliveries failed for the whole retry window: disabledReason says when).
  """
  type WebhookEndpoint {
    id: UUID! url: String! events: [String!]! description: String status: String! disabledReason: String created: String!
  }
  "secret: the signing secret (whsec_…), shown in this response only."
  type CreateWebhookEndpointResult { success: Boolean! error: String webhookEndpoint: WebhookEndpoint secret: String }
  type WebhookEndpointResult { success: Boolean! error: String webhookEndpoint: WebhookEndpoint }
  type DeleteWebhookEndpointResult { success: Boolean! error: String }
  """
  One event's delivery to one endpoint. status: pending (an attempt is due at nextAttemptAt),
  succeeded (the endpoint answered 2xx), failed (retries ended after 3 days, or the endpoint was
  disabled). responseCode: the last answer's HTTP status; lastError: why the last attempt failed.
  """
  type WebhookDelivery {
    id: UUID! webhookEndpointId: UUID! eventId: UUID! eventType: String! status: String! attempts: Int!
    responseCode: Int lastError: String lastAttemptAt: String nextAttemptAt: String deliveredAt: String created: String!
  }
  type WebhookDeliveryPage { items: [WebhookDelivery!]! totalCount: Int! pageSize: Int! offset: Int! }
  type RedeliverWebhookResult { success: Boolean! error: String delivery: WebhookDelivery }

  extend type Query {
    "The organization's webhook endpoints, oldest first (not paginated: 20 at most)."
    listWebhookEndpoints(organizationId: UUID!): [WebhookEndpoint!]!
    "An endpoint's deliveries, newest first; status: pending, succeeded or failed."
    listWebhookDeliveries(organizationId: UUID!, webhookEndpointId: UUID!, status: String, limit: Int, offset: Int): WebhookDeliveryPage!
  }
  extend type Mutation {
    """
    Registers an endpoint for these event types. url: https; its host must resolve to public
    addresses only. The signing secret is returned once.
    """
    createWebhookEndpoint(organizationId: UUID!, url: String!, events: [String!]!, description: String): CreateWebhookEndpointResult!
    "Changes the fields given; status enabled turns a disabled endpoint back on."
    updateWebhookEndpoint(organizationId: UUID!, webhookEndpointId: UUID!, url: String, events: [String!], description: String, status: String): WebhookEndpointResult!
    "Removes the endpoint, its secret and its delivery log."
    deleteWebhookEndpoint(organizationId: UUID!, webhookEndpointId: UUID!): DeleteWebhookEndpointResult!
    "Sends a delivery again now (same event id), whatever its status."
    redeliverWebhook(organizationId: UUID!, webhookDeliveryId: UUID!): RedeliverWebhookResult!
  }
`, { Mutation: { createWebhookEndpoint: served(createWebhookEndpoint), updateWebhookEndpoint: served(updateWebhookEndpoint) } });
