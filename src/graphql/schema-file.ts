import { printSchema, type GraphQLSchema } from "postgraphile/graphql";

/** The printed schema clients generate their types from (`npm run schema:print`). */
export const SCHEMA_FILE = "schema.graphql";

/** The schema as SDL, in the server's own order, with a note on where it comes from. */
export const printedSchema = (schema: GraphQLSchema) =>
  `# The GraphQL schema of the accounting API, as the server serves it.\n# Written by \`npm run schema:print\`; test/schema.test.ts fails when it is out of date.\n\n${printSchema(schema)}\n`;
