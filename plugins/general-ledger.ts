import { PgAggregatesPreset } from "@graphile/pg-aggregates";
import { lambda, SafeError } from "postgraphile/grafast";
import { GraphQLError, valueFromASTUntyped, type ValueNode } from "postgraphile/graphql";

type Maybe<T> = T | null | undefined;
type ObjMap<T> = Record<string, T>;

/**
 * Read-only GraphQL access to the general ledger with @graphile/pg-aggregates.
 *
 * The schema stays custom-only (`defaultBehavior: "-*"`): the one generated connection is the
 * view `reporting.general_ledger` (GraphQL name `GeneralLedgerEntry` from its `@name` smart tag),
 * switched on here by behaviour overrides for that view alone, read-only (no mutations exist for a
 * view, and none are enabled). It is scoped by the tables' RLS like everything else: the view is
 * security_invoker and the API role only sees the organization of the request (an API key's).
 * test/schema.test.ts checks that nothing else is generated.
 */
const behaviors = (list: string) => list.split(" ") as GraphileBuild.BehaviorString[];

const isGeneralLedger = (codec: { extensions?: any }) =>
  codec.extensions?.pg?.schemaName === "reporting" && codec.extensions?.pg?.name === "general_ledger";

const CODEC = behaviors("+table +select +connection +totalCount +order +orderBy +filterBy");
const RESOURCE = behaviors("+select +resource:select +connection +resource:connection +query:resource:connection -query:resource:list -list +order +orderBy +filterBy +totalCount +resource:aggregates +resource:groupedAggregates +resource:groupedAggregates:having");
const ATTRIBUTE = behaviors("+select +attribute:select +orderBy +attribute:orderBy +condition +attribute:condition +filterBy +attribute:filterBy +attribute:groupBy +attribute:havingBy +attribute:aggregate +attribute:aggregate:orderBy +attribute:aggregate:filterBy");
/**
 * What each column may do beyond being read and filtered. Groups only on columns of few values
 * (accounts, dates, kinds): grouping by a line's id, amount or text would return every line, past
 * the page limit. No `having` on dates: pg-aggregates offers filters of every aggregate there,
 * though PostgreSQL has no sum or average of a date and a count is no date.
 */
const GROUPABLE = new Set(["account_id", "account_name", "account_type", "classification", "txn_date", "month", "event_type", "event_status"]);
const attributeBehaviors = (name: string, codec: { name?: string } | undefined) => ATTRIBUTE.filter((b) =>
  (b !== "+attribute:groupBy" || GROUPABLE.has(name)) && (b !== "+attribute:havingBy" || !(codec?.name === "date" || codec?.name === "timestamptz")));

/**
 * Numbers of the generated filters reach PostgreSQL as text; anything but a plain decimal is
 * refused as GraphQL refuses a bad Int, before any SQL (PostgreSQL's own refusal would be a
 * data exception indistinguishable from a fault of ours).
 */
const NUMBER_SCALARS: Record<string, { shape: RegExp; message: string }> = {
  BigFloat: { shape: /^[+-]?(\d{1,30}(\.\d{0,30})?|\.\d{1,30})$/, message: 'BigFloat must be a decimal number such as "12.34".' },
  BigInt: { shape: /^[+-]?\d{1,18}$/, message: 'BigInt must be a whole number such as "42".' },
};
const checkedNumber = (name: string) => (value: unknown) => {
  const { shape, message } = NUMBER_SCALARS[name];
  if (typeof value !== "string" && typeof value !== "number") throw new GraphQLError(message);
  if (!shape.test(String(value))) throw new GraphQLError(message);
  return value;
};

/** The one generated root field of the schema. */
export const GENERAL_LEDGER_FIELD = "generalLedgerEntries";

/** Pages of the general ledger connection: a request reads at most `max` lines (`first`, default `default`). */
export const GENERAL_LEDGER_PAGE = { default: 100, max: 1000 } as const;

const pageSize = (first: unknown): number => {
  if (first == null) return GENERAL_LEDGER_PAGE.default;
  if (typeof first !== "number" || first < 0 || first > GENERAL_LEDGER_PAGE.max) throw new SafeError(`first must be between 0 and ${GENERAL_LEDGER_PAGE.max}.`);
  return first;
};
const pageOffset = (offset: unknown): number | null => {
  if (offset == null) return null;
  if (typeof offset !== "number" || offset < 0) throw new SafeError("offset must not be negative.");
  return offset;
};

const GeneralLedgerPlugin: GraphileConfig.Plugin = {
  name: "GeneralLedgerReportingPlugin",
  version: "1.0.0",
  inflection: {
    replace: {
      allRowsConnection(previous, options, resource) {
        return isGeneralLedger(resource.codec) ? GENERAL_LEDGER_FIELD : previous!(resource);
      },
    },
  },
  schema: {
    hooks: {
      GraphQLScalarType(config) {
        if (!(config.name in NUMBER_SCALARS)) return config;
        const check = checkedNumber(config.name);
        return {
          ...config,
          parseValue: (value: unknown) => (config.parseValue ? config.parseValue(check(value)) : check(value)),
          parseLiteral: (ast: ValueNode, variables?: Maybe<ObjMap<unknown>>) =>
            check(config.parseLiteral ? config.parseLiteral(ast, variables) : valueFromASTUntyped(ast, variables)),
        };
      },
      // Bounded pages: without them one request could read every line of the books into memory;
      // and a negative `first` or `offset` is the caller's mistake, said as such.
      GraphQLObjectType_fields_field_args: {
        after: ["PgFirstLastBeforeAfterArgsPlugin"],
        callback(args, _build, context) {
          const resource = (context.scope as { pgFieldResource?: { codec: { extensions?: any } } }).pgFieldResource;
          if (!resource || !isGeneralLedger(resource.codec) || !args.first || !args.offset) return args;
          return {
            ...args,
            first: {
              ...args.first,
              description: `Read the first \`n\` lines: ${GENERAL_LEDGER_PAGE.default} unless given, at most ${GENERAL_LEDGER_PAGE.max}.`,
              defaultValue: GENERAL_LEDGER_PAGE.default,
              applyPlan: (_$parent: unknown, $connection: any, arg: any) => { $connection.setFirst(lambda(arg.getRaw(), pageSize)); },
            },
            offset: {
              ...args.offset,
              applyPlan: (_$parent: unknown, $connection: any, arg: any) => { $connection.setOffset(lambda(arg.getRaw(), pageOffset)); },
            },
          } as typeof args;
        },
      },
    },
    entityBehavior: {
      pgCodec: { override: { provides: ["generalLedger"], callback: (behavior, codec) => (isGeneralLedger(codec) ? [behavior, ...CODEC] : behavior) } },
      pgResource: { override: { provides: ["generalLedger"], callback: (behavior, resource) => (isGeneralLedger(resource.codec) ? [behavior, ...RESOURCE] : behavior) } },
      pgCodecAttribute: {
        override: {
          provides: ["generalLedger"],
          callback: (behavior, [codec, name]) => {
            if (!isGeneralLedger(codec)) return behavior;
            return [behavior, ...attributeBehaviors(name, (codec as any).attributes?.[name]?.codec)];
          },
        },
      },
    },
  },
};

export const GeneralLedgerPreset: GraphileConfig.Preset = {
  extends: [PgAggregatesPreset],
  plugins: [GeneralLedgerPlugin],
};

/** Schemas PostGraphile introspects besides app_public (only the general ledger view becomes a field). */
export const GENERAL_LEDGER_SCHEMAS = ["reporting"];
