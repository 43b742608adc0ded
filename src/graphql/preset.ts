import { PostGraphileAmberPreset } from "postgraphile/presets/amber";
import { makePgService } from "postgraphile/adaptors/pg";
import type pg from "pg";
import { AccountsPlugin } from "../../plugins/accounts.js";
import { ApiKeysPlugin } from "../../plugins/api-keys.js";
import { BatchResultsPlugin } from "../../plugins/batch-results.js";
import { CategoryRulesPlugin } from "../../plugins/category-rules.js";
import { ContactsPlugin } from "../../plugins/contacts.js";
import { GENERAL_LEDGER_SCHEMAS, GeneralLedgerPreset } from "../../plugins/general-ledger.js";
import { IntakeAddressesPlugin } from "../../plugins/intake-addresses.js";
import { BankStatementsPlugin } from "../../plugins/bank-statements.js";
import { LedgerEventsPlugin } from "../../plugins/ledger-events.js";
import { ReceiptsPlugin, type SignFileUrl } from "../../plugins/receipts.js";
import { ReceiptSourcesPlugin } from "../../plugins/receipt-sources.js";
import { OrganizationsPlugin } from "../../plugins/organizations.js";
import { ReportsPlugin } from "../../plugins/reports.js";
import { TaxCodesPlugin } from "../../plugins/tax-codes.js";
import { WebhooksPlugin } from "../../plugins/webhooks.js";
import { maskError } from "../http/errors.js";
import type { OutboundOptions } from "../outbound/guard.js";
import type { SealedBox } from "../secrets/sealed-box.js";
import { pgSettingsFor, type Identity } from "../http/authenticate.js";
import { requestWithPgClient, tenantsOf, type ConnectionShare } from "./connection-share.js";

/** The operations of the contract and nothing else: every generated type and field is off. */
export const schemaPlugins = [
  OrganizationsPlugin, ApiKeysPlugin, TaxCodesPlugin, AccountsPlugin, BatchResultsPlugin, ContactsPlugin,
  CategoryRulesPlugin, IntakeAddressesPlugin, LedgerEventsPlugin, ReportsPlugin, BankStatementsPlugin, ReceiptsPlugin,
  ReceiptSourcesPlugin, WebhooksPlugin,
];

export interface PresetOptions {
  graphiql: boolean;
  share: ConnectionShare;
  statementTimeoutMs: number;
  /** Signs a stored file's URL (Receipt.imageUrl). */
  signFileUrl?: SignFileUrl;
  /** Where the hosts tenants name (mailboxes, cloud drives, webhook URLs) may be reached, and what seals their secrets. */
  tenantOutbound?: { outbound: OutboundOptions; secrets: SealedBox };
}

export function makePreset(authPool: pg.Pool, opts: PresetOptions): GraphileConfig.Preset {
  return {
    extends: [PostGraphileAmberPreset, GeneralLedgerPreset],
    plugins: schemaPlugins,
    disablePlugins: [
      "NodePlugin", "AddNodeInterfaceToSuitableTypesPlugin", "RegisterQueryNodePlugin", "NodeAccessorPlugin",
      "PgTableNodePlugin", "PgNodeIdAttributesPlugin", "MutationPayloadQueryPlugin", "ClientMutationIdDescriptionPlugin",
      "QueryQueryPlugin", "PgCustomTypeFieldPlugin",
    ],
    schema: { defaultBehavior: "-*" },
    pgServices: [makePgService({ pool: authPool, schemas: ["app_public", ...GENERAL_LEDGER_SCHEMAS] })],
    grafast: {
      explain: false,
      context(requestContext, args) {
        // The identity was verified by the authenticate middleware before GraphQL ran.
        const res = (requestContext as any).expressv4?.res ?? (requestContext as any).node?.res;
        const identity: Identity = res?.locals?.identity ?? { kind: "anonymous" };
        // Replaces the pool-wide access PgContextPlugin put on the context (user context is
        // assigned after the plugins' middleware) with this request's bounded share of it.
        const { withPgClient } = args.contextValue as Grafast.Context;
        return {
          signFileUrl: opts.signFileUrl,
          tenantOutbound: opts.tenantOutbound,
          pgSettings: pgSettingsFor(identity),
          // A direct read that passed the request on has begun its database access and budget.
          withPgClient: res?.locals?.requestDb ?? requestWithPgClient(withPgClient, opts.share,
            tenantsOf(identity, res?.locals?.operationOrganization), opts.statementTimeoutMs, () => { if (res) res.locals.timedOut = true; }),
        };
      },
    },
    grafserv: {
      graphqlPath: "/graphql",
      graphiql: opts.graphiql,
      graphiqlPath: "/graphiql",
      graphiqlOnGraphQLGET: false,
      websockets: false,
      maskError,
    },
  };
}
