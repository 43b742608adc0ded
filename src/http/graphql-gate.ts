import {
  GraphQLError, Kind, getOperationAST, parse, specifiedRules, validate, visit,
  type DocumentNode, type FieldNode, type FragmentDefinitionNode, type GraphQLSchema, type OperationDefinitionNode, type SelectionSetNode,
} from "postgraphile/graphql";
import { GraphQLSpecifiedErrorBehaviors } from "postgraphile/grafast";
import { errorBody } from "./errors.js";
import { noteErrorToCaller, scopeOf } from "./request-scope.js";
import { isJsonBody, sendJson, type HttpRequest, type HttpResponse, type Next } from "./node-http.js";

/**
 * Limits that keep one request from costing the database more than a page of work, and the
 * server more than a few milliseconds before it is refused. Depth and root fields count data
 * fields only (introspection nesting is bounded by GraphQL's own MaxIntrospectionDepthRule);
 * every selected field counts towards `maxFields`.
 */
export const QUERY_LIMITS = {
  maxDepth: 10, maxFields: 500, maxRootFields: 20, maxTokens: 10_000,
  // Coercing variables costs the server time outside any database budget: bounded like the text.
  maxVariableDepth: 32, maxVariableValues: 20_000,
} as const;

/**
 * Operations that take a whole bank statement (5,000 rows with long descriptions): a request that
 * is one of these alone may carry a larger body and more variable values. The SQL function still
 * counts the rows.
 */
export const BULK_OPERATIONS: Readonly<Record<string, true>> = { importBankStatement: true, checkBankStatementDups: true };
export const BULK_LIMITS = { bodyBytes: 4 * 1024 * 1024, maxVariableValues: 40_000 } as const;

/** Texts up to this size are remembered (checked once); longer ones are checked every time. */
const CACHED_QUERY_BYTES = 16_384;

export const NUL_MESSAGE = "Text must not contain the NUL character (\\u0000).";
export const SURROGATE_MESSAGE = "Text must be valid Unicode: it holds an unpaired surrogate.";

/** A NUL cannot be stored in PostgreSQL text; an unpaired surrogate is no character at all. */
const textProblem = (s: string): "nul" | "surrogate" | undefined =>
  s.includes("\0") ? "nul" : !(s as unknown as { isWellFormed(): boolean }).isWellFormed() ? "surrogate" : undefined;

interface Checked {
  document?: DocumentNode;
  syntaxError?: string;
  errors?: readonly GraphQLError[];
  /** Data (non-introspection) root fields of each operation. */
  dataFields?: Map<OperationDefinitionNode, number>;
}

/**
 * Admits one GraphQL request: a JSON object body (no batched arrays) with a `query` that parses
 * within QUERY_LIMITS.maxTokens, `variables` an object within its limits, `onError` one of
 * GraphQL's error behaviours and `extensions` an object (else HTTP 400); a
 * query within QUERY_LIMITS, valid against the schema, with no NUL character or unpaired
 * surrogate in any string (else HTTP 200 with errors); and credentials for any data field (else
 * `Authentication Required.`, nothing run).
 * It admits the operation into the request's scope, which opens the request's database access
 * (whose share it draws on: the organization the operation names). Results are kept per query text (for
 * texts of common size, so that anonymous callers cannot fill the memory with them).
 */
export function graphqlGate(getSchema: () => GraphQLSchema, bodyLimitBytes: number) {
  const cache = new Map<string, Checked>();
  const check = (query: string): Checked => {
    let checked = cache.get(query);
    if (checked) return checked;
    checked = checkDocument(query, getSchema());
    if (query.length <= CACHED_QUERY_BYTES) {
      if (cache.size >= 1000) cache.delete(cache.keys().next().value!);
      cache.set(query, checked);
    }
    return checked;
  };

  return (req: HttpRequest, res: HttpResponse, next: Next) => {
    const body = req.body as unknown;
    if (body === undefined || !isJsonBody(req)) {
      return sendJson(res, 400, errorBody("Send a JSON body with Content-Type: application/json.", "BAD_USER_INPUT"));
    }
    if (Array.isArray(body)) {
      return sendJson(res, 400, errorBody("Batched requests are not supported: send one operation per request.", "BAD_USER_INPUT"));
    }
    if (typeof body !== "object" || body === null || typeof (body as { query?: unknown }).query !== "string") {
      return sendJson(res, 400, errorBody("The request body must be a JSON object with a query string.", "BAD_USER_INPUT"));
    }
    const { query, operationName, variables, onError, extensions } = body as { query: string; operationName?: unknown; variables?: unknown;
      onError?: unknown; extensions?: unknown };
    if (variables != null && (typeof variables !== "object" || Array.isArray(variables))) {
      return sendJson(res, 400, errorBody("variables must be a JSON object.", "BAD_USER_INPUT"));
    }
    if (operationName != null && typeof operationName !== "string") {
      return sendJson(res, 400, errorBody("operationName must be a string.", "BAD_USER_INPUT"));
    }
    // The request's error behaviour (GraphQL over HTTP): what GraphQL execution accepts, or nothing runs.
    if (onError != null && !(GraphQLSpecifiedErrorBehaviors as readonly unknown[]).includes(onError)) {
      return sendJson(res, 400, errorBody(`onError must be one of ${GraphQLSpecifiedErrorBehaviors.join(", ")}.`, "BAD_USER_INPUT"));
    }
    if (extensions != null && (typeof extensions !== "object" || Array.isArray(extensions))) {
      return sendJson(res, 400, errorBody("extensions must be a JSON object.", "BAD_USER_INPUT"));
    }
    const scope = scopeOf(res);
    const checked = check(query);
    if (checked.syntaxError) return sendJson(res, 400, errorBody(checked.syntaxError, "BAD_USER_INPUT"));
    if (checked.errors?.length) {
      noteErrorToCaller();
      return sendJson(res, 200, { errors: checked.errors.map((e) => ({ message: e.message, locations: e.locations, extensions: { code: "BAD_USER_INPUT" } })) });
    }
    const operation = getOperationAST(checked.document!, operationName ?? undefined);
    const fields = operation ? rootFieldsOf(operation, checked.document!) : [];
    // One bulk field alone: aliases must not multiply the 5,000 rows a call may hold.
    const bulk = fields.length === 1 && fields[0].name.value in BULK_OPERATIONS;
    if (!bulk && scope.bodyBytes > bodyLimitBytes) {
      return sendJson(res, 413, errorBody("Request body is too large.", "BAD_USER_INPUT"));
    }
    const maxValues = bulk ? BULK_LIMITS.maxVariableValues : QUERY_LIMITS.maxVariableValues;
    const problem = variablesProblem(variables, maxValues);
    if (problem === "deep") {
      return sendJson(res, 400, errorBody(`variables are nested too deeply: more than ${QUERY_LIMITS.maxVariableDepth} levels.`, "BAD_USER_INPUT"));
    }
    if (problem === "many") {
      return sendJson(res, 400, errorBody(`variables hold too many values: more than ${maxValues.toLocaleString("en-US")}.`, "BAD_USER_INPUT"));
    }
    if (problem) return sendJson(res, 200, errorBody(problem === "nul" ? NUL_MESSAGE : SURROGATE_MESSAGE, "BAD_USER_INPUT"));
    // Every data operation refuses an anonymous caller in SQL too; refusing here spends no
    // database connection on a request that cannot succeed.
    if (operation && checked.dataFields!.get(operation)! > 0 && scope.identity.kind === "anonymous") {
      return sendJson(res, 200, { data: null, ...errorBody("Authentication Required.", "UNAUTHENTICATED") });
    }
    const names = new Set(fields.map((f) => f.name.value));
    scope.admit(operation ? {
      document: checked.document!,
      operation,
      label: names.size === 1 ? [...names][0] : names.size ? "multiple" : "none",
      organization: organizationNamed(fields, variables as Record<string, unknown> | undefined),
    } : undefined);
    next();
  };
}

/** The root fields an operation selects, through its fragments. */
function rootFieldsOf(operation: OperationDefinitionNode, document: DocumentNode): FieldNode[] {
  const fields: FieldNode[] = [];
  const seen = new Set<string>();
  const visitSet = (set: SelectionSetNode) => {
    for (const s of set.selections) {
      if (s.kind === Kind.FIELD) {
        fields.push(s);
      } else if (s.kind === Kind.INLINE_FRAGMENT) {
        visitSet(s.selectionSet);
      } else if (!seen.has(s.name.value)) {
        seen.add(s.name.value);
        const fragment = document.definitions.find((d) => d.kind === Kind.FRAGMENT_DEFINITION && d.name.value === s.name.value);
        if (fragment?.kind === Kind.FRAGMENT_DEFINITION) visitSet(fragment.selectionSet);
      }
    }
  };
  visitSet(operation.selectionSet);
  return fields;
}

/**
 * The organization an operation works on, when its root fields name exactly one in their
 * `organizationId` arguments: whose share of the database the request draws on. Access is still
 * checked in SQL, field by field; this only decides whose queue a request waits in.
 */
function organizationNamed(fields: FieldNode[], variables: Record<string, unknown> | undefined): string | undefined {
  const named = new Set<unknown>();
  for (const f of fields) {
    const arg = f.arguments?.find((a) => a.name.value === "organizationId");
    if (arg?.value.kind === Kind.STRING) named.add(arg.value.value);
    else if (arg?.value.kind === Kind.VARIABLE) named.add(variables?.[arg.value.name.value]);
  }
  const [only] = named;
  return named.size === 1 && typeof only === "string" ? only : undefined;
}

/** Parse, literals, limits, then validation: each step only runs on what the one before let through. */
function checkDocument(query: string, schema: GraphQLSchema): Checked {
  let document: DocumentNode;
  try {
    document = parse(query, { maxTokens: QUERY_LIMITS.maxTokens });
  } catch (e) {
    // graphql-js words the token limit "more that N tokens", and its recursive parser overflows the
    // stack on deep nesting (within the token limit); say both plainly.
    if (e instanceof RangeError) return { syntaxError: "Syntax Error: the query is nested too deeply." };
    const tooLong = /contains more th\w+ \d+ tokens/.test((e as Error).message);
    return { syntaxError: tooLong ? `Syntax Error: the query has more than ${QUERY_LIMITS.maxTokens} tokens.` : (e as Error).message };
  }
  let problem: "nul" | "surrogate" | undefined;
  visit(document, { StringValue(node) { problem ??= textProblem(node.value); } });
  if (problem) return { errors: [new GraphQLError(problem === "nul" ? NUL_MESSAGE : SURROGATE_MESSAGE)] };
  const measured = measure(document);
  if ("error" in measured) return { errors: [new GraphQLError(measured.error)] };
  const errors = validate(schema, document, specifiedRules);
  return errors.length ? { errors } : { document, dataFields: measured.dataFields };
}

/**
 * What is wrong with a request's variables, if anything: a NUL in any string or key, or nesting
 * deeper than any input type of the schema needs. Iterative: JSON.parse accepts nesting deep
 * enough to overflow the stack of a recursive walk (and of JSON.stringify later on).
 */
function variablesProblem(variables: unknown, maxValues: number): "nul" | "surrogate" | "deep" | "many" | undefined {
  const stack: [unknown, number][] = [[variables, 0]];
  for (let values = 0; stack.length; values++) {
    if (values > maxValues) return "many";
    const [value, depth] = stack.pop()!;
    if (typeof value === "string") {
      const problem = textProblem(value);
      if (problem) return problem;
    } else if (value !== null && typeof value === "object") {
      if (depth >= QUERY_LIMITS.maxVariableDepth) return "deep";
      for (const [k, v] of Object.entries(value)) {
        const problem = textProblem(k);
        if (problem) return problem;
        stack.push([v, depth + 1]);
      }
    }
  }
  return undefined;
}

/** What a selection set costs: fields in all (nested included), data depth, data fields at its top. */
interface Cost { fields: number; depth: number; roots: number }

class LimitPassed extends Error {}

/**
 * Depth, field count and root-field count of every operation, in time linear in the document:
 * each fragment is measured once and its cost reused wherever it is spread, and the walk stops
 * at the first limit passed (so counts never grow past a limit, however fragments multiply).
 */
function measure(document: DocumentNode): { dataFields: Map<OperationDefinitionNode, number> } | { error: string } {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
  const costs = new Map<string, Cost>();
  const inProgress = new Set<string>();
  const none: Cost = { fields: 0, depth: 0, roots: 0 };

  const fragmentCost = (name: string): Cost => {
    const known = costs.get(name);
    if (known) return known;
    const fragment = fragments.get(name);
    // Unknown fragments and cycles are validation errors, reported after this walk.
    if (!fragment || inProgress.has(name)) return none;
    inProgress.add(name);
    const cost = setCost(fragment.selectionSet, fragment.typeCondition.name.value.startsWith("__"));
    inProgress.delete(name);
    costs.set(name, cost);
    return cost;
  };

  /** `introspection`: inside `__schema`/`__type` (or a fragment on an introspection type). */
  const setCost = (set: SelectionSetNode, introspection: boolean): Cost => {
    const total: Cost = { fields: 0, depth: 0, roots: 0 };
    for (const s of set.selections) {
      let part: Cost;
      if (s.kind === Kind.FIELD) {
        const inIntrospection = introspection || s.name.value.startsWith("__");
        const below = s.selectionSet ? setCost(s.selectionSet, inIntrospection) : none;
        part = inIntrospection
          ? { fields: 1 + below.fields, depth: 0, roots: 0 }
          : { fields: 1 + below.fields, depth: 1 + below.depth, roots: 1 };
      } else if (s.kind === Kind.INLINE_FRAGMENT) {
        part = setCost(s.selectionSet, introspection || Boolean(s.typeCondition?.name.value.startsWith("__")));
      } else {
        part = fragmentCost(s.name.value);
      }
      total.fields += part.fields;
      total.depth = Math.max(total.depth, part.depth);
      total.roots += part.roots;
      if (total.fields > QUERY_LIMITS.maxFields) {
        throw new LimitPassed(`Query selects too many fields: more than ${QUERY_LIMITS.maxFields}.`);
      }
      if (total.depth > QUERY_LIMITS.maxDepth) {
        throw new LimitPassed(`Query is too deep: more than ${QUERY_LIMITS.maxDepth} levels.`);
      }
    }
    return total;
  };

  const dataFields = new Map<OperationDefinitionNode, number>();
  try {
    for (const d of document.definitions) {
      if (d.kind !== Kind.OPERATION_DEFINITION) continue;
      const { roots } = setCost(d.selectionSet, false);
      if (roots > QUERY_LIMITS.maxRootFields) {
        throw new LimitPassed(`Query has too many operations: ${roots} root fields, at most ${QUERY_LIMITS.maxRootFields}.`);
      }
      dataFields.set(d, roots);
    }
  } catch (e) {
    if (e instanceof LimitPassed) return { error: e.message };
    throw e;
  }
  return { dataFields };
}
