import { parseArgs } from "node:util";
import { loadConfig } from "../config.js";
import { CliError, type Command } from "./command.js";
import { commands } from "./commands.js";
import { openOwnerDatabase } from "./database.js";

/** `npm run cli -- <command> [options]`: the operator's commands (decisions §1). */
async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  const json = rest.includes("--json");
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
    args = parseArgs({ args: rest, options: { ...command.options, json: { type: "boolean" } }, allowPositionals: true, strict: true });
  } catch (e) {
    return fail(json, `${(e as Error).message}\nUsage: ${command.usage} [--json]`);
  }
  const config = loadConfig();
  const db = await openOwnerDatabase(config);
  try {
    const { result, text } = await command.run({
      db: db.client, config, args: args as any,
      progress: (line) => { if (!json) process.stderr.write(line + "\n"); },
    });
    print(result, text);
    return 0;
  } catch (e) {
    if (e instanceof CliError) return fail(json, e.message);
    throw e;
  } finally {
    await db.close();
  }
}

function fail(json: boolean, message: string): number {
  if (json) console.log(JSON.stringify({ error: message }));
  else console.error(message);
  return 1;
}

const code = await main(process.argv.slice(2));
// Exit explicitly once stdout is flushed: open handles must not keep the command alive or change its code.
process.stdout.write("", () => process.exit(code));
