import { PostGraphileAmberPreset } from "postgraphile/presets/amber";
import type { ServerResponse } from "node:http";
import { makePgService } from "postgraphile/adaptors/pg";
import type pg from "pg";
import { AccountsPlugin } from "../../plugins/accounts.js";
import { ApiKeysPlugin } from "../../plugins/api-keys.js";
import { BatchResultsPlugin } from "../../plugins/batch-results.js";
import { CategoryRulesPlugin } from "../../plugins/category-rules.js";
import { DocumentsPlugin } from "../../plugins/documents.js";
import { ContactsPlugin } from "../../plugins/contacts.js";
import { GENERAL_LEDGER_SCHEMAS, GeneralLedgerPreset } from "../../plugins/general-ledger.js";
import { IntakeAddressesPlugin } from "../../plugins/intake-addresses.js";
import { BankStatementsPlugin } from "../../plugins/bank-statements.js";
import { LedgerChangesPlugin } from "../../plugins/ledger-changes.js";
import { LedgerEventsPlugin } from "../../plugins/ledger-events.js";
import { ReceiptsPlugin, type SignFileUrl } from "../../plugins/receipts.js";
import { ReceiptSourcesPlugin } from "../../plugins/receipt-sources.js";
import { OrganizationsPlugin } from "../../plugins/organizations.js";
import { ReconciliationsPlugin } from "../../plugins/reconciliations.js";
import { ReportsPlugin } from "../../plugins/reports.js";
import { TaxCodesPlugin } from "../../plugins/tax-codes.js";
import { WebhooksPlugin } from "../../plugins/webhooks.js";
import { maskError } from "../http/errors.js";
import type { OutboundOptions } from "../outbound/guard.js";
import type { SealedBox } from "../secrets/sealed-box.js";
import { scopeOf } from "../http/request-scope.js";

/** The operations of the contract and nothing else: every generated type and field is off. */
export const schemaPlugins = [
  OrganizationsPlugin, ApiKeysPlugin, TaxCodesPlugin, AccountsPlugin, BatchResultsPlugin, ContactsPlugin,
  CategoryRulesPlugin, IntakeAddressesPlugin, LedgerEventsPlugin, ReconciliationsPlugin, ReportsPlugin, BankStatementsPlugin, ReceiptsPlugin,
  ReceiptSourcesPlugin, WebhooksPlugin, DocumentsPlugin, LedgerChangesPlugin,
];

export interface PresetOptions {
  graphiql: boolean;
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
      context(requestContext) {
        // The request's database access, opened when the gate admitted it (a direct read that
        // passed the request on has begun its budget). It replaces the pool-wide access
        // PgContextPlugin put on the context (user context is assigned after the plugins').
        const res = (requestContext as { node?: { res: ServerResponse } }).node?.res;
        if (!res) throw new Error("GraphQL ran without the Node response its request scope rides on");
        const { db } = scopeOf(res);
        return {
          signFileUrl: opts.signFileUrl,
          tenantOutbound: opts.tenantOutbound,
          caller: db,
          pgSettings: db.pgSettings,
          withPgClient: db.withPgClient,
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
