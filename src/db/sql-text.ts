/**
 * `select set_config(…, true), …` for the settings, as literals (sqlLiteral), so that it can share
 * a simple-protocol round trip with `begin`.
 */
export function settingsStatement(settings: Record<string, string | undefined>): string {
  const entries = Object.entries(settings).filter((e): e is [string, string] => e[1] != null);
  return `select ${entries.map(([k, v]) => `set_config(${sqlLiteral(k)}, ${sqlLiteral(v)}, true)`).join(", ")}`;
}

/**
 * A value as a literal of the simple protocol: quoted, as text, which PostgreSQL reads as it reads
 * a parameter of unstated type (node-postgres sends those as text too). Quotes are doubled, and a
 * value with a backslash is an E'' string with its backslashes doubled (as pg's escapeLiteral
 * does, whatever standard_conforming_strings says), in one pass of native replaces. Never a NUL,
 * which would end the statement's text early.
 */
export function sqlLiteral(value: string | number | boolean | null | undefined): string {
  if (value === null || value === undefined) return "null";
  const text = String(value);
  if (text.includes("\0")) throw new Error("A value sent to PostgreSQL must not contain the NUL character.");
  const quoted = text.replaceAll("'", "''");
  return text.includes("\\") ? `E'${quoted.replaceAll("\\", "\\\\")}'` : `'${quoted}'`;
}


declare const literalOnly: unique symbol;
/**
 * Statement text whose every value was written into it by sqlLiteral: only such text is sent as
 * it is, in one round trip with its transaction (a value spliced in any other way could end the
 * statement and begin another, which would run and commit as the caller).
 */
export type LiteralSql = string & { readonly [literalOnly]: true };

/** Text made of fixed SQL and sqlLiteral's literals only (the caller vouches for it). */
export const literalSql = (text: string) => text as LiteralSql;

/** One statement as the caller sends it: its values as parameters, or written into it as literals. */
export type SqlCall = { text: string; values: unknown[] } | { text: LiteralSql; values?: undefined };
