import { execFileSync } from "node:child_process";
import crypto from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { buildSchema, parse, validate } from "postgraphile/graphql";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseCommandArgs, type Command as CliCommand } from "../src/cli/command.js";
import { commands as cliCommands } from "../src/cli/commands.js";
import { loadConfig, logLevel } from "../src/config.js";
import { applyGcFlags } from "../src/gc-flags.js";
import { signatureOf } from "../src/webhooks/signature.js";
import { runCli } from "./helpers/cli.js";
import { createTenant, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { anchorsOf, inlineCode, linksOf, readMarkdown, sectionOf, tableRows, type Fence, type Markdown } from "./helpers/markdown.js";
import { assignment, commandsOf, parseShell, type Command, type Word } from "./helpers/shell.js";
import { accountsOf, bookEvent } from "./ledger-fixtures.js";

/**
 * The docs, held to the code. README.md and docs/*.md are what a newcomer reads and copies from,
 * so every command in them must work as written: each `npm run` names a script, each CLI command
 * is one the CLI knows with options it takes, each GraphQL document validates against the schema
 * (and the README's first session runs, against a harness database), the analysts' SQL runs, the
 * configuration table names exactly the variables the code reads, and every link and every
 * "docs/<file>.md, <Section>" citation in the code leads to a heading. No section sign (U+00A7) anywhere: the rules
 * are stated in the repository itself, not cited from documents a clone does not have.
 */

const docs = ["README.md", ...readdirSync("docs").filter((f) => f.endsWith(".md")).sort().map((f) => `docs/${f}`)].map(readMarkdown);
const doc = (file: string): Markdown => docs.find((d) => d.path === file)!;
const bench = readMarkdown("bench/README.md");
const scripts: Record<string, string> = JSON.parse(readFileSync("package.json", "utf8")).scripts;
const schema = buildSchema(readFileSync("schema.graphql", "utf8"));

/** What stands for a value the reader fills in: `<the id>`, `…`, `acct_...`. */
const isPlaceholder = (text: string | undefined) => text !== undefined && (/^<.*>$/.test(text) || text.includes("…") || text.includes("..."));
const where = (md: Markdown, line: number) => `${md.path}:${line}`;

/** The fenced blocks of the docs, with the file they are in. */
const fences = (lang: string, files: Markdown[] = docs) =>
  files.flatMap((md) => md.fences.filter((f) => f.lang === lang).map((fence) => ({ md, fence })));

// ---------------------------------------------------------------------------------------------
// Commands

/** What a usage line requires: its options and positionals outside `[…]` (and outside a note in parentheses). */
function requiredBy(command: CliCommand): { options: string[]; positionals: number } {
  let usage = command.usage.replace(/\(.*\)/g, "");
  while (/\[[^[\]]*\]/.test(usage)) usage = usage.replace(/\[[^[\]]*\]/g, ""); // innermost first
  const words = usage.trim().split(/\s+/).slice(1);
  const options: string[] = [];
  let positionals = 0;
  for (let i = 0; i < words.length; i++) {
    if (!words[i].startsWith("--")) { positionals++; continue; }
    const name = words[i].slice(2);
    options.push(name);
    if (command.options[name]?.type === "string") i++;
  }
  return { options, positionals };
}

/**
 * A CLI command line (what follows `npm run cli --`): the command exists and its options parse as
 * the CLI parses them, with the `[…]` parts left out and with them in. `full`: a command line to
 * copy, so it also gives what the usage requires.
 */
function cliProblems(args: Word[], full: boolean): string[] {
  const name = args[0]?.text;
  if (name === undefined || isPlaceholder(name) || name === "help") return [];
  const command = cliCommands[name];
  if (!command) return [`npm run cli -- ${name}: the CLI has no such command`];
  const problems: string[] = [];
  const variants = [args.slice(1).filter((w) => !w.optional), args.slice(1)].map((ws) => ws.map((w) => w.text));
  for (const given of variants) {
    try {
      parseCommandArgs(command, given);
    } catch (e) {
      problems.push(`${name} ${given.join(" ")}: ${(e as Error).message.split("\n")[0]}`);
    }
  }
  if (full && problems.length === 0) {
    const { values, positionals } = parseCommandArgs(command, variants[0]);
    const needs = requiredBy(command);
    for (const option of needs.options) if (values[option] === undefined) problems.push(`${name}: --${option} is required (${command.usage})`);
    if (positionals.length < needs.positionals) problems.push(`${name}: ${needs.positionals} positional argument(s) required (${command.usage})`);
  }
  return problems;
}

function npmProblems(words: Word[], full: boolean, installs: Set<string>): string[] {
  const [sub, ...rest] = words.map((w) => w.text);
  if (sub === "ci") return [];
  if (sub === "i" || sub === "install") {
    for (const p of rest.filter((a) => !a.startsWith("-"))) installs.add(p);
    return [];
  }
  if (sub === "start" || sub === "test") return scripts[sub] ? [] : [`npm ${sub}: no such script in package.json`];
  if (sub !== "run") return [`npm ${sub}: not a command this test knows how to check`];
  const name = rest.find((a) => !a.startsWith("-"));
  if (name === undefined || isPlaceholder(name)) return [];
  if (!scripts[name]) return [`npm run ${name}: no such script in package.json`];
  const dashes = words.findIndex((w) => w.text === "--");
  const args = dashes < 0 ? [] : words.slice(dashes + 1);
  if (name === "cli") return cliProblems(args, full);
  if (name === "bench") {
    const benchmark = args.find((w) => !w.optional)?.text;
    if (benchmark === undefined || isPlaceholder(benchmark) || benchmark === "soak" || existsSync(`bench/${benchmark}.ts`)) return [];
    return [`npm run bench -- ${benchmark}: no bench/${benchmark}.ts`];
  }
  return [];
}

/** What is wrong with one command of the docs (nothing, for a command that works as written). */
function commandProblems(c: Command, full: boolean, installs: Set<string>): string[] {
  const [program, ...rest] = c.words.map((w) => w.text);
  // A file of this repository the command names (`scripts/x.sql`) must be there.
  const missing = rest.filter((a) => /^[\w.-]+\/[\w./-]+\.\w+$/.test(a) && /^(scripts|src|data|bench|test|migrations|docs)\//.test(a) && !existsSync(a));
  const problems = missing.map((f) => `${program}: no file ${f}`);
  switch (program) {
    case "npm":
      return [...problems, ...npmProblems(c.words.slice(1), full, installs)];
    case "npx": {
      const bin = rest.find((a) => !a.startsWith("-"));
      if (bin === undefined || isPlaceholder(bin) || existsSync(`node_modules/.bin/${bin}`) || installs.size > 0) return problems;
      return [...problems, `npx ${bin}: not in node_modules/.bin, and not installed by the block`];
    }
    case "psql":
      return [...problems, ...(rest.includes("-f") ? [] : ["psql: only `psql -f FILE` is checked"])];
    case "curl":
      return problems; // against the server: below
    default:
      return [`\`${program}\`: not a command this test knows how to check (teach it here)`];
  }
}

/** The shell blocks of the docs (the benchmarks' README shows its commands inline, checked below). */
const shellBlocks = fences("sh");

/** Inline code that is a command of this project (`npm run …`, `npx …`, `psql …`). */
const inlineCommands = [...docs, bench].flatMap((md) => inlineCode(md)
  .filter(({ code }) => /^(npm|npx|psql) /.test(code))
  .map(({ code, line }) => ({ md, code, line })));

interface Curl { url: string; method: string; headers: Record<string, string>; data?: string; at: string }

function curlOf(c: Command, at: string): Curl {
  const words = c.words.map((w) => w.text);
  const curl: Curl = { url: "", method: "GET", headers: {}, at };
  for (let i = 1; i < words.length; i++) {
    const w = words[i];
    if (w === "-H") {
      const [name, ...value] = words[++i].split(":");
      curl.headers[name.trim()] = value.join(":").trim();
    } else if (["-d", "--data", "--data-binary", "--data-raw"].includes(w)) {
      curl.data = words[++i];
      curl.method = "POST";
    } else if (w === "-F") {
      i++;
      curl.method = "POST";
    } else if (/^(https?:\/\/)?localhost:\d+\//.test(w)) {
      curl.url = w;
    }
  }
  return curl;
}

const curls: Curl[] = shellBlocks.flatMap(({ md, fence }) => commandsOf(fence.text)
  .filter((c) => c.words[0].text === "curl")
  .map((c) => curlOf(c, where(md, fence.line + c.line))));

// ---------------------------------------------------------------------------------------------
// GraphQL

function graphqlProblems(query: string): string[] {
  try {
    return validate(schema, parse(query)).map((e) => e.message);
  } catch (e) {
    return [(e as Error).message];
  }
}

/** `expected` with each "…" taken from `actual` at the same place: what the docs' answer promises. */
function filled(expected: unknown, actual: unknown): unknown {
  if (expected === "…") return actual;
  if (Array.isArray(expected)) return expected.map((e, i) => filled(e, (actual as unknown[] | undefined)?.[i]));
  if (expected && typeof expected === "object") {
    return Object.fromEntries(Object.entries(expected).map(([k, v]) => [k, filled(v, (actual as Record<string, unknown> | undefined)?.[k])]));
  }
  return expected;
}

// ---------------------------------------------------------------------------------------------

let h: Harness;
let tenant: Tenant;
beforeAll(async () => {
  h = await startHarness();
  tenant = await createTenant(h);
  const accounts = await accountsOf(h, tenant);
  await bookEvent(h, tenant, { merchantName: "Flour Mill", amount: "42.50", transactionDate: "2026-02-10", eventType: "income" },
    { categoryId: accounts["Sales Revenue"], paymentId: accounts["Chequing"] });
});
afterAll(() => h?.close());

describe("README", () => {
  it("is at most 200 lines", () => {
    expect(doc("README.md").text.trimEnd().split("\n").length).toBeLessThanOrEqual(200);
  });

  it("its list of operations names every Query and Mutation field of schema.graphql, and nothing else", () => {
    const listed = new Set([...sectionOf(doc("README.md"), "The operations").matchAll(/`([a-zA-Z]+)`/g)].map((m) => m[1]));
    const fields = [schema.getQueryType()!, schema.getMutationType()!].flatMap((t) => Object.keys(t.getFields()));
    expect(fields.filter((f) => !listed.has(f))).toEqual([]);
    expect([...listed].filter((n) => /^[a-z]+[A-Z]/.test(n) && !fields.includes(n))).toEqual([]);
  });

  it("its first session runs as written: the CLI's commands, then each curl with what they printed", async () => {
    const [session] = doc("README.md").fences.filter((f) => f.heading === "A first session" && f.lang === "sh");
    const vars: Record<string, string> = {};
    const substitutions: Record<string, string> = {};
    let printed: string | undefined;
    let answer: unknown;
    const cli = async (words: Word[], json: boolean) => {
      const args = words.slice(words.findIndex((w) => w.text === "--") + 1).map((w) => w.text);
      const run = await runCli(h.databaseUrl, ...args, ...(json ? ["--json"] : []));
      expect(run.code, `${args.join(" ")}: ${run.stderr}`).toBe(0);
      return run;
    };
    for (const s of parseShell(session.text)) {
      if (s.kind === "comment") {
        // A comment of JSON after a curl is the answer it gives ("…": any value).
        if (answer !== undefined && s.text.startsWith("{")) {
          const expected = JSON.parse(s.text);
          expect(answer).toEqual(filled(expected, answer));
          answer = undefined;
        }
        continue;
      }
      for (const c of s.commands) {
        if (c.words.length === 0) {
          for (const w of c.env) {
            const { name, value } = assignment(w);
            // `X=$(…)` is what the command prints; a placeholder is what the command before printed.
            if (w.substitution) vars[name] = (await cli(commandsOf(w.substitution)[0].words, false)).stdout.trim();
            else vars[name] = isPlaceholder(value) ? printed! : value;
          }
          continue;
        }
        const program = c.words[0].text;
        if (program === "npm" && c.words[1].text === "start") continue; // the harness is the server
        if (program === "npm") {
          const { json } = await cli(c.words, true);
          printed = json.secret ?? json.token ?? json.id;
          if (c.words.some((w) => w.text === "create_organization")) substitutions["<the id>"] = json.id;
          continue;
        }
        expect(program).toBe("curl");
        const curl = curlOf(c, "README");
        const expand = (text: string) => Object.entries(substitutions)
          .reduce((t, [k, v]) => t.split(k).join(v), text.replace(/\$(\w+)/g, (_, name) => vars[name] ?? `$${name}`));
        const res = await request(h.handle.app).post(new URL(`http://${curl.url}`).pathname)
          .set(Object.fromEntries(Object.entries(curl.headers).map(([k, v]) => [k, expand(v)])))
          .send(expand(curl.data!));
        expect(res.body.errors, curl.data).toBeUndefined();
        answer = res.body;
      }
    }
    expect(answer, "every curl of the session is followed by its answer").toBeUndefined();
    expect(Object.keys(vars).sort()).toEqual(["JWT", "KEY"]);
  }, 120_000);
});

describe("every command in the docs", () => {
  it("names an npm script, a CLI command with options it takes, a binary that is installed, a file that is there", () => {
    const problems: string[] = [];
    for (const { md, fence } of shellBlocks) {
      const installs = new Set<string>();
      for (const c of commandsOf(fence.text)) {
        for (const p of commandProblems(c, true, installs)) problems.push(`${where(md, fence.line + c.line)}: ${p}`);
      }
    }
    for (const { md, code, line } of inlineCommands) {
      for (const c of commandsOf(code)) for (const p of commandProblems(c, false, new Set())) problems.push(`${where(md, line)}: ${p}`);
    }
    expect(problems).toEqual([]);
    expect(shellBlocks.length).toBeGreaterThan(5);
  });

  it("the CLI table of the operator's manual lists every command, each as the CLI reads it", () => {
    const rows = tableRows(sectionOf(doc("docs/operating.md"), "The operator's CLI")).slice(1);
    const listed = rows.flatMap((r) => [...r[0].matchAll(/`([^`]+)`/g)].map((m) => m[1]));
    const problems = listed.flatMap((usage) => cliProblems(parseShellWords(usage), false));
    expect(problems).toEqual([]);
    expect(new Set(listed.map((u) => u.split(" ")[0]))).toEqual(new Set(Object.keys(cliCommands)));
  });

  it("each curl goes to a path the server serves; to /graphql, with a document the schema validates", async () => {
    expect(curls.length).toBeGreaterThan(2);
    for (const curl of curls) {
      const url = new URL(curl.url.startsWith("http") ? curl.url : `http://${curl.url}`);
      if (url.pathname === "/graphql") {
        const body = JSON.parse(curl.data!);
        expect(graphqlProblems(body.query), `${curl.at}: ${body.query}`).toEqual([]);
      } else {
        const res = await (curl.method === "POST" ? request(h.handle.app).post(url.pathname) : request(h.handle.app).get(url.pathname));
        expect(res.status, `${curl.at}: ${curl.method} ${url.pathname}`).not.toBe(404);
      }
    }
  });
});

/** The words of a command line written without a shell around it (a usage in a table). */
function parseShellWords(line: string): Word[] {
  return commandsOf(line)[0].words;
}

describe("every GraphQL document in the docs", () => {
  it("validates against schema.graphql, and runs with an API key when it names no placeholder", async () => {
    const documents = fences("graphql");
    expect(documents.length).toBeGreaterThan(1);
    for (const { md, fence } of documents) {
      expect(graphqlProblems(fence.text), where(md, fence.line)).toEqual([]);
      if (fence.text.includes("…")) continue;
      const res = await h.gql(fence.text, {}, tenant.apiKey);
      expect(res.body.errors, where(md, fence.line)).toBeUndefined();
    }
  });
});

describe("the webhook signature check of docs/api.md", () => {
  it("accepts what the server signs, and refuses another secret or an old time", () => {
    const [{ fence }] = fences("js").filter(({ fence }) => fence.heading === "Webhooks");
    const verify = new Function("crypto", "header", "secret", "rawBody", `${fence.text}\nreturn ok;`) as
      (c: typeof crypto, header: string, secret: string, rawBody: string) => boolean;
    const body = JSON.stringify({ id: "evt", type: "ledger_event.created" });
    const now = Math.floor(Date.now() / 1000);
    expect(verify(crypto, signatureOf("whsec_one", body, now), "whsec_one", body)).toBe(true);
    expect(verify(crypto, signatureOf("whsec_two", body, now), "whsec_one", body)).toBe(false);
    expect(verify(crypto, signatureOf("whsec_one", body, now - 600), "whsec_one", body)).toBe(false);
  });
});

describe("every SQL snippet in the docs", () => {
  /** A file's SQL blocks in order, in one transaction rolled back; `-- as NAME` runs a block as that role. */
  async function runSql(blocks: Fence[]): Promise<unknown[]> {
    const client = await h.owner.connect();
    const results: unknown[] = [];
    try {
      await client.query("begin");
      for (const fence of blocks) {
        const as = /^--\s*as (\w+)\s*$/m.exec(fence.text.split("\n")[0]);
        const text = fence.text.replace(/<organization id>|<uuid>/g, tenant.organizationId);
        if (as) await client.query(`set local role ${as[1]}`);
        const result = await client.query(text);
        results.push(...(Array.isArray(result) ? result : [result]));
        if (as) await client.query("reset role");
      }
    } finally {
      await client.query("rollback").catch(() => undefined);
      client.release();
    }
    return results;
  }

  it("the analysts' guide runs as an analyst would, and its trial balance balances", async () => {
    const results = await runSql(doc("docs/sql-guide.md").fences.filter((f) => f.lang === "sql")) as { rows: Record<string, unknown>[] }[];
    const balanced = results.flatMap((r) => r.rows ?? []).filter((row) => "balanced" in row);
    expect(balanced).toEqual([{ balanced: true }]);
    const ledger = results.flatMap((r) => r.rows ?? []).filter((row) => "running_balance" in row);
    expect(ledger).toEqual([expect.objectContaining({ merchant_name: "Flour Mill", debit: "42.50" })]);
  });

  it("every other SQL block runs too", async () => {
    for (const md of docs.filter((d) => d.path !== "docs/sql-guide.md")) {
      const blocks = md.fences.filter((f) => f.lang === "sql");
      if (blocks.length > 0) await runSql(blocks);
    }
  });

  it("the Citus readiness query of docs/citus.md is scripts/citus-readiness.sql", () => {
    const [{ fence }] = fences("sql", [doc("docs/citus.md")]);
    const script = readFileSync("scripts/citus-readiness.sql", "utf8").split("\n").filter((l) => !l.startsWith("--")).join("\n");
    expect(fence.text.trim()).toBe(script.trim());
  });
});

describe("the configuration table of docs/operating.md", () => {
  /** The environment variables the code reads, recorded while it reads a configuration. */
  function variablesRead(): string[] {
    const read = new Set<string>();
    const dataDir = mkdtempSync(path.join(os.tmpdir(), "docs-config-"));
    const env = (values: Record<string, string>): NodeJS.ProcessEnv => new Proxy({ DATA_DIR: dataDir, ...values }, {
      get(target, name) {
        if (typeof name === "string") read.add(name);
        return (target as Record<string, string>)[name as string];
      },
    });
    try {
      loadConfig(env({}));
      // The S3 settings are read only when a bucket is named.
      loadConfig(env({ S3_BUCKET: "receipts", S3_ACCESS_KEY_ID: "id", S3_SECRET_ACCESS_KEY: "secret" }));
      logLevel(env({}));
      // Both "on": V8's flags are left as they are.
      applyGcFlags(env({ PARALLEL_SCAVENGE: "on", PRETENURING: "on" }));
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
    return [...read].sort();
  }

  it("names exactly the variables src/config.ts (and src/gc-flags.ts) read", () => {
    const rows = tableRows(sectionOf(doc("docs/operating.md"), "Configuration")).slice(1);
    const named = rows.flatMap((r) => [...r[0].matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1]));
    expect([...new Set(named)].sort()).toEqual(variablesRead());
  });
});

describe("links and citations", () => {
  const headingsOf = (file: string) => readMarkdown(file).headings.map((h) => h.text);

  it("every relative link of the docs leads to a file, and its #anchor to a heading there", () => {
    const problems: string[] = [];
    for (const md of [...docs, bench]) {
      for (const { target, line } of linksOf(md)) {
        if (/^[a-z]+:/.test(target)) continue;
        const [file, anchor] = target.split("#");
        const resolved = file === "" ? md.path : path.normalize(path.join(path.dirname(md.path), file));
        if (!existsSync(resolved)) { problems.push(`${where(md, line)}: ${target}: no such file`); continue; }
        if (anchor && !anchorsOf(readMarkdown(resolved)).has(anchor)) problems.push(`${where(md, line)}: ${target}: no such heading`);
      }
    }
    expect(problems).toEqual([]);
  });

  it("every \"docs/<file>.md, <Section>\" in the repository names a heading of that file", () => {
    const files = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard"], { encoding: "utf8" }).split("\n")
      .filter((f) => /\.(ts|sql|md|sh|ya?ml)$/.test(f) && !f.startsWith("migrations/committed/") && f !== "data/schema.sql" && existsSync(f));
    const problems: string[] = [];
    for (const file of files) {
      // A citation may wrap onto the next line of a comment.
      const text = readFileSync(file, "utf8").replace(/\n\s*(\*|\/\/|--|#)?\s*/g, " ");
      for (const m of text.matchAll(/docs\/([\w-]+\.md), "?([A-Z][^)";\]]*)/g)) {
        const cited = m[2].trim();
        const target = `docs/${m[1]}`;
        if (!existsSync(target)) { problems.push(`${file}: ${target}: no such file`); continue; }
        if (!headingsOf(target).some((h) => cited.startsWith(h) || h.startsWith(cited))) problems.push(`${file}: ${target}, ${cited}: no such heading`);
      }
    }
    expect(problems).toEqual([]);
  });

  it("the layout of docs/architecture.md names folders and files that are there", () => {
    const [{ fence }] = fences("text", [doc("docs/architecture.md")]).filter(({ fence }) => fence.heading === "Layout");
    const problems: string[] = [];
    for (const line of fence.text.split("\n")) {
      const indented = /^\s/.test(line);
      const names = indented ? (/^\s+((?:[\w-]+\/\s+)+)/.exec(line)?.[1].trim().split(/\s+/) ?? []) : [line.split(/\s+/)[0]];
      for (const name of names) {
        const file = indented ? `migrations/fixtures/${name}` : name;
        if (file && !file.includes("<") && !existsSync(file)) problems.push(`${line.trim()}: no ${file}`);
      }
    }
    expect(problems).toEqual([]);
  });
});

describe("the repository", () => {
  // The rules are the project's own, stated where they apply (docs/api.md): nothing cites a
  // numbered section of a document outside the repository.
  const gitGrep = (...args: string[]) => {
    try {
      return execFileSync("git", ["grep", "-n", ...args, "--", ":!migrations/committed", ":!data/schema.sql"], { encoding: "utf8" });
    } catch (e) {
      if ((e as { status?: number }).status !== 1) throw e; // 1: nothing found
      return "";
    }
  };
  it("has no section sign (U+00A7) outside the committed migrations and the schema dump", () => {
    expect(gitGrep("\u00a7")).toBe("");
  });
  it("cites no outside document a clone does not have (the project's decisions, its stack's notes)", () => {
    // Spelled in pieces, so that this file does not find itself.
    const outside = ["stack" + " notes", "decisions" + "\\.md", "the " + "decisions( document)?\\b"].join("|");
    expect(gitGrep("-i", "-E", outside)).toBe("");
  });
  it("tags commands and queries with the languages these checks read (sh, graphql, sql), never an alias they would skip", () => {
    const aliases = new Set(["bash", "shell", "console", "zsh", "shell-session", "gql", "postgresql", "postgres", "psql", "pgsql"]);
    const skipped = [...docs, bench].flatMap((md) => md.fences.filter((f) => aliases.has(f.lang.toLowerCase())).map((f) => `${md.path}:${f.line}: ${f.lang}`));
    expect(skipped).toEqual([]);
  });
});
