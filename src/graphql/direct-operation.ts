import {
  GraphQLError, Kind, execute, getArgumentValues, getNullableType, getVariableValues, isEnumType, isListType, isNonNullType,
  isObjectType, isScalarType, type DocumentNode, type ExecutionResult, type FieldNode, type GraphQLFieldResolver, type GraphQLField, type GraphQLObjectType,
  type GraphQLOutputType, type GraphQLSchema, type OperationDefinitionNode, type SelectionSetNode,
} from "postgraphile/graphql";
import { SQL_READ, SQL_WRITE, operationOf, type Operation } from "../../plugins/sql-operations.js";

/**
 * An operation served straight from its SQL function's JSON, without GraphQL execution. Every
 * root field of the contract (but the few TypeScript serves) is one SQL function that returns its
 * result type's whole shape as JSON (plugins/sql-operations.ts); executing a document over it only
 * picks the selected fields, renames them to their aliases and checks each value against its type.
 * A document of one such field, whose selections are plain fields of object types (no directives,
 * no arguments below the root, no field with a plan of its own such as a signed URL), is compiled
 * once into a projection that does exactly that.
 * Any value the projection does not find as its type promises (a null in a non-null field, text in
 * an Int) is not vouched for. A read then goes to GraphQL execution: it has no side effects, so
 * running it again changes nothing but its cost. A write has run and must not run again: graphql-js
 * executes the document over the JSON it returned (`executeOver`), which reports the value as
 * GraphQL execution does.
 * test/direct-read.test.ts and test/direct-write.test.ts compare the two with GraphQL execution.
 */

/** Thrown by a projection that finds a value it cannot vouch for. */
class Unvouched extends Error {}
const unvouched = new Unvouched();

type Projection = (value: unknown) => unknown;

export interface DirectOperation {
  /** A mutation: it runs once, whatever its result. */
  write: boolean;
  operation: Operation;
  field: GraphQLField<unknown, unknown>;
  fieldNode: FieldNode;
  responseKey: string;
  nullable: boolean;
  definition: OperationDefinitionNode;
  project: Projection;
}

/** Plans of fields that compute their value (a signed URL): those fields are not plain JSON. */
const hasOwnPlan = (field: GraphQLField<unknown, unknown>) => Boolean((field.extensions as any)?.grafast?.plan);
const planMarked = (field: GraphQLField<unknown, unknown>, mark: symbol) => Boolean((field.extensions as any)?.grafast?.plan?.[mark]);

/** The direct operation of a document's operation, or undefined when GraphQL execution must serve it. */
export function compileDirectOperation(schema: GraphQLSchema, document: DocumentNode, definition: OperationDefinitionNode): DirectOperation | undefined {
  const write = definition.operation === "mutation";
  if ((!write && definition.operation !== "query") || definition.directives?.length) return undefined;
  const [root, ...more] = definition.selectionSet.selections;
  if (!root || more.length || root.kind !== Kind.FIELD || root.directives?.length || !root.selectionSet) return undefined;
  const field = (write ? schema.getMutationType() : schema.getQueryType())?.getFields()[root.name.value];
  if (!field || !planMarked(field, write ? SQL_WRITE : SQL_READ) || root.alias?.value === "__proto__") return undefined;
  const fragments = new Map(document.definitions.flatMap((d) => (d.kind === Kind.FRAGMENT_DEFINITION ? [[d.name.value, d] as const] : [])));
  try {
    return {
      write,
      operation: operationOf(root.name.value, field),
      field,
      fieldNode: root,
      responseKey: root.alias?.value ?? root.name.value,
      nullable: !isNonNullType(field.type),
      definition,
      project: projection(field.type, root.selectionSet, fragments),
    };
  } catch (e) {
    if (e instanceof Unvouched) return undefined;
    throw e;
  }
}

type Fragments = Map<string, { typeCondition: { name: { value: string } }; selectionSet: SelectionSetNode }>;

function projection(type: GraphQLOutputType, selectionSet: SelectionSetNode | undefined, fragments: Fragments): Projection {
  if (isNonNullType(type)) {
    const inner = projection(type.ofType, selectionSet, fragments);
    return (value) => {
      if (value === null || value === undefined) throw unvouched;
      return inner(value);
    };
  }
  if (isListType(type)) {
    const item = projection(type.ofType, selectionSet, fragments);
    return (value) => {
      if (value === null || value === undefined) return null;
      if (!Array.isArray(value)) throw unvouched;
      return value.map(item);
    };
  }
  if (isScalarType(type) || isEnumType(type)) {
    // As GraphQL execution does: the type's serialization of the value (a number in a String
    // field becomes its digits), and no value where it refuses one.
    return (value) => {
      if (value === null || value === undefined) return null;
      let serialized: unknown;
      try {
        serialized = type.serialize(value);
      } catch {
        throw unvouched;
      }
      if (serialized === undefined) throw unvouched;
      return serialized;
    };
  }
  if (isObjectType(type) && selectionSet) return objectProjection(type, selectionSet, fragments);
  throw unvouched;
}

/** The selections of an object type, flattened through fragments on that type, in response order. */
function objectProjection(type: GraphQLObjectType, selectionSet: SelectionSetNode, fragments: Fragments): Projection {
  const entries: [responseKey: string, fieldName: string, project: Projection | null][] = [];
  const keys = new Set<string>();
  const fields = type.getFields();
  const visit = (set: SelectionSetNode, seen: Set<string>) => {
    for (const s of set.selections) {
      if (s.directives?.length) throw unvouched;
      if (s.kind === Kind.FIELD) {
        const key = s.alias?.value ?? s.name.value;
        // A key selected twice is merged by GraphQL; left to it. `__proto__` would not be a key of
        // the plain object the projection builds.
        if (keys.has(key) || key === "__proto__" || s.arguments?.length) throw unvouched;
        keys.add(key);
        if (s.name.value === "__typename") {
          entries.push([key, "__typename", null]);
          continue;
        }
        const field = fields[s.name.value];
        if (!field || hasOwnPlan(field)) throw unvouched;
        entries.push([key, s.name.value, projection(field.type, s.selectionSet, fragments)]);
      } else {
        const fragment = s.kind === Kind.INLINE_FRAGMENT ? s : fragments.get(s.name.value);
        if (!fragment || (fragment.typeCondition && fragment.typeCondition.name.value !== type.name)) throw unvouched;
        if (s.kind === Kind.FRAGMENT_SPREAD) {
          if (seen.has(s.name.value)) throw unvouched;
          visit(fragment.selectionSet, new Set(seen).add(s.name.value));
        } else {
          visit(fragment.selectionSet, seen);
        }
      }
    }
  };
  visit(selectionSet, new Set());
  const typeName = type.name;
  return (value) => {
    if (value === null || value === undefined) return null;
    if (typeof value !== "object" || Array.isArray(value)) throw unvouched;
    const source = value as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const [key, name, project] of entries) out[key] = project ? project(source[name]) : typeName;
    return out;
  };
}

/** The root field's arguments from the request's variables, or undefined when they do not coerce. */
export function argumentsOf(schema: GraphQLSchema, read: DirectOperation, variables: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  const coerced = getVariableValues(schema, read.definition.variableDefinitions ?? [], variables ?? {}, { maxErrors: 1 });
  if (coerced.errors) return undefined;
  try {
    return getArgumentValues(read.field, read.fieldNode, coerced.coerced);
  } catch {
    return undefined;
  }
}

/** The response body of an operation, or undefined when its JSON is not what its type promises. */
export function respond(read: DirectOperation, json: unknown): { data: Record<string, unknown> } | undefined {
  try {
    return { data: { [read.responseKey]: read.project(json) } };
  } catch (e) {
    if (e instanceof Unvouched) return undefined;
    throw e;
  }
}

/**
 * The response body of a write whose JSON the projection did not vouch for: graphql-js executing
 * the document over that JSON, each field its property (no field of a compiled document has a
 * plan of its own), its errors told as GraphQL execution tells them.
 */
export async function executeOver(schema: GraphQLSchema, write: DirectOperation, document: DocumentNode,
    variables: Record<string, unknown> | undefined, json: unknown, mask: (e: GraphQLError) => GraphQLError): Promise<ExecutionResult> {
  const result = await execute({ schema, document, operationName: write.definition.name?.value, variableValues: variables,
    rootValue: { [write.field.name]: json }, fieldResolver: asGrafastReadsIt });
  if (!result.errors) return { data: result.data };
  // Each is GraphQL's own finding about a value (a null in a non-null field), never a thrown
  // failure of ours, and is told as GraphQL execution tells it: not masked as an internal error.
  const own = (e: GraphQLError) => new GraphQLError(e.message, { nodes: e.nodes, source: e.source, positions: e.positions, path: e.path,
    extensions: e.extensions });
  return { data: result.data ?? null, errors: result.errors.map((e) => mask(own(e))) };
}

/** A field's property of its JSON; where a list is promised and none is found, null, as grafast reads it (no "Expected Iterable"). */
const asGrafastReadsIt: GraphQLFieldResolver<unknown, unknown> = (source, _args, _context, info) => {
  const value = (source as Record<string, unknown>)[info.fieldName];
  return isListType(getNullableType(info.returnType)) && value != null && !Array.isArray(value) ? null : value;
};

/** A failed operation as GraphQL execution reports it: the error at the field, null in its place. */
export function failed(read: DirectOperation, error: Error, mask: (e: GraphQLError) => GraphQLError) {
  const located = new GraphQLError(error.message, { nodes: [read.fieldNode], path: [read.responseKey], originalError: error });
  return { data: read.nullable ? { [read.responseKey]: null } : null, errors: [mask(located)] };
}
