import type { NextFunction, Request, Response } from "express";
import {
  GraphQLError, Kind, getOperationAST, parse, specifiedRules, validate,
  type DocumentNode, type FragmentDefinitionNode, type GraphQLSchema, type SelectionSetNode,
} from "postgraphile/graphql";
import { errorBody } from "./errors.js";

/** Limits that keep one request from costing the database more than a page of work. */
export const QUERY_LIMITS = { maxDepth: 10, maxFields: 500, maxRootFields: 20 } as const;

interface Checked {
  document?: DocumentNode;
  syntaxError?: string;
  errors?: readonly GraphQLError[];
}

/**
 * Admits one GraphQL request: a JSON object body (no batched arrays) with a `query` that parses
 * (else HTTP 400), is valid against the schema and within QUERY_LIMITS (else HTTP 200 with
 * errors). It records the operation type for the idempotency layer. Results are cached per
 * query text, so grafserv's own parse and validate of the same text costs nothing new.
 */
export function graphqlGate(getSchema: () => GraphQLSchema) {
  const cache = new Map<string, Checked>();
  const check = (query: string): Checked => {
    let checked = cache.get(query);
    if (checked) return checked;
    try {
      const document = parse(query);
      const errors = validate(getSchema(), document, specifiedRules);
      checked = errors.length ? { errors } : { document, errors: limitErrors(document) };
    } catch (e) {
      checked = { syntaxError: (e as Error).message };
    }
    if (cache.size >= 1000) cache.delete(cache.keys().next().value!);
    cache.set(query, checked);
    return checked;
  };

  return (req: Request, res: Response, next: NextFunction) => {
    if (req.method !== "POST") return next();
    const body = req.body as unknown;
    if (body === undefined || !req.is("application/json")) {
      return res.status(400).json(errorBody("Send a JSON body with Content-Type: application/json.", "BAD_USER_INPUT"));
    }
    if (Array.isArray(body)) {
      return res.status(400).json(errorBody("Batched requests are not supported: send one operation per request.", "BAD_USER_INPUT"));
    }
    if (typeof body !== "object" || body === null || typeof (body as { query?: unknown }).query !== "string") {
      return res.status(400).json(errorBody("The request body must be a JSON object with a query string.", "BAD_USER_INPUT"));
    }
    const { query, operationName } = body as { query: string; operationName?: string };
    const checked = check(query);
    if (checked.syntaxError) return res.status(400).json(errorBody(checked.syntaxError, "BAD_USER_INPUT"));
    if (checked.errors?.length) {
      return res.json({ errors: checked.errors.map((e) => ({ message: e.message, locations: e.locations, extensions: { code: "BAD_USER_INPUT" } })) });
    }
    const operation = getOperationAST(checked.document!, typeof operationName === "string" ? operationName : undefined);
    res.locals.operationType = operation?.operation;
    next();
  };
}

/** Depth, field count and root-field count of every operation; introspection is not counted. */
function limitErrors(document: DocumentNode): GraphQLError[] {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
  const errors: GraphQLError[] = [];
  for (const d of document.definitions) {
    if (d.kind !== Kind.OPERATION_DEFINITION) continue;
    let fields = 0;
    let maxDepth = 0;
    const walk = (set: SelectionSetNode, depth: number, seen: Set<string>): number => {
      let count = 0;
      for (const s of set.selections) {
        if (s.kind === Kind.FIELD) {
          if (s.name.value.startsWith("__")) continue;
          count++;
          fields++;
          maxDepth = Math.max(maxDepth, depth);
          if (s.selectionSet) walk(s.selectionSet, depth + 1, seen);
        } else if (s.kind === Kind.INLINE_FRAGMENT) {
          count += walk(s.selectionSet, depth, seen);
        } else {
          const f = fragments.get(s.name.value);
          if (f && !seen.has(f.name.value)) count += walk(f.selectionSet, depth, new Set([...seen, f.name.value]));
        }
      }
      return count;
    };
    const roots = walk(d.selectionSet, 1, new Set());
    if (maxDepth > QUERY_LIMITS.maxDepth) errors.push(new GraphQLError(`Query is too deep: ${maxDepth} levels, at most ${QUERY_LIMITS.maxDepth}.`));
    if (fields > QUERY_LIMITS.maxFields) errors.push(new GraphQLError(`Query selects too many fields: ${fields}, at most ${QUERY_LIMITS.maxFields}.`));
    if (roots > QUERY_LIMITS.maxRootFields) errors.push(new GraphQLError(`Query has too many operations: ${roots} root fields, at most ${QUERY_LIMITS.maxRootFields}.`));
  }
  return errors;
}
