import { parseArgs } from "node:util";
import type pg from "pg";
import type { Config } from "../config.js";
import { callerFailure } from "../db/sql-errors.js";

/** A failure the operator caused: printed as one clear line, exit code 1, nothing written. */
export class CliError extends Error {}

export interface CommandContext {
  db: pg.Client;
  config: Config;
  args: { positionals: string[]; values: Record<string, string | boolean | undefined> };
  /** Progress lines for long commands; silent with --json. */
  progress(line: string): void;
}

export interface Command {
  usage: string;
  options: Record<string, { type: "string" | "boolean" }>;
  /** Needs no database connection. */
  offline?: boolean;
  run(ctx: CommandContext): Promise<{ result: Record<string, unknown>; text: string }>;
}

/**
 * A command's arguments as `npm run cli -- <command> …` reads them (its options and `--json`,
 * positionals allowed): an unknown option or a missing value is a CliError that shows the usage.
 */
export function parseCommandArgs(command: Command, argv: string[]): CommandContext["args"] {
  try {
    return parseArgs({ args: argv, options: { ...command.options, json: { type: "boolean" } }, allowPositionals: true, strict: true });
  } catch (e) {
    throw new CliError(`${(e as Error).message}\nUsage: ${command.usage} [--json]`);
  }
}

export function required(ctx: CommandContext, name: string): string {
  const value = ctx.args.values[name];
  if (typeof value !== "string" || value.trim() === "") throw new CliError(`--${name} is required.`);
  return value;
}

/** Runs SQL and turns failures that are the operator's to fix (our SQL's messages) into operator errors. */
export async function sql<T extends pg.QueryResultRow>(db: pg.Client, text: string, values: unknown[] = []): Promise<T[]> {
  try {
    return (await db.query<T>(text, values)).rows;
  } catch (e) {
    const failure = callerFailure(e);
    if (failure) throw new CliError(failure.message);
    throw e;
  }
}

export async function organizationByName(db: pg.Client, name: string): Promise<{ id: string; name: string }> {
  return (await sql<{ id: string; name: string }>(db, "select id, name from app_private.organization_by_name($1)", [name]))[0];
}
