import { loadConfig } from "../config.js";
import { CliError, parseCommandArgs, type Command } from "./command.js";
import { commands } from "./commands.js";
import { openOwnerDatabase } from "./database.js";

/**
 * `npm run cli -- <command> [options]`: the operator's commands (docs/operating.md, The operator's
 * CLI). Every failure is one message and exit code 1: `{"error": "…"}` on stdout with --json, one
 * line on stderr without; never a stack trace. A command writes in one transaction, so a failure
 * writes nothing.
 */
async function main(argv: string[], json: boolean): Promise<number> {
  const [name, ...rest] = argv;
  const print = (result: Record<string, unknown>, text: string) =>
    console.log(json ? JSON.stringify(result) : text);
  const command: Command | undefined = name ? commands[name] : undefined;
  if (!command) {
    const list = Object.values(commands).map((c) => `  ${c.usage} [--json]`).join("\n");
    if (name && name !== "help" && name !== "--help") {
      return fail(json, `Unknown command "${name}". Commands:\n${list}`);
    }
    console.log(`Usage: npm run cli -- <command> [options]\n${list}`);
    return name ? 0 : 1;
  }
  let args;
  try {
    args = parseCommandArgs(command, rest);
  } catch (e) {
    return fail(json, (e as CliError).message);
  }
  const config = loadConfig();
  const db = await openOwnerDatabase(config);
  try {
    const { result, text } = await command.run({
      db: db.client, config, args,
      progress: (line) => { if (!json) process.stderr.write(line + "\n"); },
    });
    print(result, text);
    return 0;
  } finally {
    // A connection already broken (the failure itself, perhaps) has nothing left to close.
    await db.close().catch(() => undefined);
  }
}

let failed = false;

/** Prints the failure; only the first of a command (an error may arrive both ways at once). */
function fail(json: boolean, message: string): number {
  if (failed) return 1;
  failed = true;
  if (json) console.log(JSON.stringify({ error: message }));
  else console.error(message);
  return 1;
}

/** The operator's words for a failure: a CliError's own, else what went wrong, without a stack. */
function messageOf(command: string | undefined, e: unknown): string {
  if (e instanceof CliError) return e.message;
  const why = e instanceof Error ? e.message : String(e);
  return `${command ?? "The command"} failed: ${why || (e instanceof Error ? e.name : "unknown error")}`;
}

/** Exit once stdout is flushed: open handles must not keep the command alive or change its code. */
function exit(code: number): void {
  process.stdout.write("", () => process.exit(code));
}

const argv = process.argv.slice(2);
const json = argv.includes("--json");
// Whatever escapes the command (an error event of a connection, a promise nobody awaited) ends it
// the same way: one message, exit code 1. PostgreSQL rolls back what the closed connection began.
for (const event of ["uncaughtException", "unhandledRejection"] as const) {
  process.on(event, (e: unknown) => {
    try {
      fail(json, messageOf(argv[0], e));
    } finally {
      process.exit(1);
    }
  });
}
main(argv, json).then(exit, (e: unknown) => exit(fail(json, messageOf(argv[0], e))));
