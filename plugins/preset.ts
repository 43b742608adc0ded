import { PostGraphileAmberPreset } from "postgraphile/presets/amber";
import { makePgService } from "postgraphile/adaptors/pg";
import type pg from "pg";
import { FoundationPlugin } from "./foundation.js";
import { LedgerEventsPlugin } from "./ledger-events.js";
import { ReportsPlugin } from "./reports.js";
import { ReportingPreset, reportingSchemas } from "./reporting.js";
import { MasterDataPlugins } from "./master-data.js";
import { maskError } from "../src/http/errors.js";
import { pgSettingsFor, type Identity } from "../src/http/authenticate.js";
import { requestWithPgClient, tenantOf, type ConnectionShare } from "../src/http/connection-share.js";

/** The operations of the contract and nothing else: every generated type and field is off. */
export const schemaPlugins = [FoundationPlugin, ...MasterDataPlugins, LedgerEventsPlugin, ReportsPlugin];

export interface PresetOptions {
  graphiql: boolean;
  share: ConnectionShare;
  statementTimeoutMs: number;
}

export function makePreset(authPool: pg.Pool, opts: PresetOptions): GraphileConfig.Preset {
  return {
    extends: [PostGraphileAmberPreset, ReportingPreset],
    plugins: schemaPlugins,
    disablePlugins: [
      "NodePlugin", "AddNodeInterfaceToSuitableTypesPlugin", "RegisterQueryNodePlugin", "NodeAccessorPlugin",
      "PgTableNodePlugin", "PgNodeIdAttributesPlugin", "MutationPayloadQueryPlugin", "ClientMutationIdDescriptionPlugin",
      "QueryQueryPlugin", "PgCustomTypeFieldPlugin",
    ],
    schema: { defaultBehavior: "-*" },
    pgServices: [makePgService({ pool: authPool, schemas: ["app_public", ...reportingSchemas] })],
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
          pgSettings: pgSettingsFor(identity),
          withPgClient: requestWithPgClient(withPgClient, opts.share, tenantOf(identity), opts.statementTimeoutMs),
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
