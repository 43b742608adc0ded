import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OWN_SCHEMAS, schemaSnapshot } from "../src/db/schema-snapshot.js";
import { startHarness, type Harness } from "./helpers/harness.js";

/**
 * One home for every rule: each function, trigger, view and policy is defined in exactly
 * one fixture file under migrations/fixtures; data/schema.sql is what the migrations produce; and
 * a fixture edited but never included in a migration shows as a difference.
 */
const FIXTURES = path.resolve("migrations/fixtures");
/** data/schema.sql is made on this PostgreSQL major (CI's); other majors deparse differently. */
const SNAPSHOT_SERVER = 15;

const fixtureFiles = (): string[] =>
  readdirSync(FIXTURES, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".sql")).sort();
const fixtureText = (file: string) => readFileSync(path.join(FIXTURES, file), "utf8");

/** Where each object is defined: "kind name" -> fixture files. */
function definitions(): Map<string, string[]> {
  const found = new Map<string, string[]>();
  const patterns: [string, RegExp][] = [
    ["function", /^\s*create\s+or\s+replace\s+(?:function|procedure)\s+([a-z_]+\.[a-z_0-9]+)\s*\(/gim],
    ["trigger", /^\s*create\s+(?:constraint\s+)?trigger\s+([a-z_0-9]+)\s[\s\S]*?\son\s+([a-z_]+\.[a-z_0-9]+)/gim],
    ["policy", /^\s*create\s+policy\s+([a-z_0-9]+)\s+on\s+([a-z_]+\.[a-z_0-9]+)/gim],
    ["view", /^\s*create\s+or\s+replace\s+view\s+([a-z_]+\.[a-z_0-9]+)/gim],
  ];
  for (const file of fixtureFiles()) {
    const text = fixtureText(file);
    for (const [kind, re] of patterns) {
      for (const m of text.matchAll(re)) {
        const key = `${kind} ${m.slice(1).join(" on ").toLowerCase()}`;
        found.set(key, [...(found.get(key) ?? []), file]);
      }
    }
  }
  return found;
}

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

describe("one home for every rule", () => {
  it("defines no function, trigger, policy or view in more than one fixture file", () => {
    const twice = [...definitions()].filter(([, files]) => files.length > 1).map(([key, files]) => `${key}: ${files.join(", ")}`);
    expect(twice).toEqual([]);
  });

  it("has a fixture for every function, policy and view of the database", async () => {
    const defined = definitions();
    const { rows } = await h.owner.query<{ key: string }>(`
      select 'function ' || n.nspname || '.' || p.proname as key from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = any($1)
      union all select 'policy ' || p.polname || ' on ' || p.polrelid::regclass from pg_policy p
        join pg_class c on c.oid = p.polrelid join pg_namespace n on n.oid = c.relnamespace where n.nspname = any($1)
      union all select 'view ' || c.oid::regclass from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = any($1) and c.relkind = 'v'
      order by 1`, [OWN_SCHEMAS]);
    expect(rows.map((r) => r.key).filter((key) => !defined.has(key))).toEqual([]);
    // Triggers made in a loop (the NFC rule) are found by name in their fixture's text.
    const all = fixtureFiles().map(fixtureText).join("\n");
    const { rows: triggers } = await h.owner.query<{ name: string }>(`select distinct t.tgname as name from pg_trigger t
      join pg_class c on c.oid = t.tgrelid join pg_namespace n on n.oid = c.relnamespace where n.nspname = any($1) and not t.tgisinternal`, [OWN_SCHEMAS]);
    expect(triggers.map((t) => t.name).filter((name) => !all.includes(name))).toEqual([]);
  });
});

describe("data/schema.sql", () => {
  it("is what the migrations produce (run `npm run schema:dump` after changing a fixture or migration)", async (ctx) => {
    const { rows: [{ major }] } = await h.owner.query("select current_setting('server_version_num')::int / 10000 as major");
    if (major !== SNAPSHOT_SERVER) ctx.skip(`data/schema.sql is made on PostgreSQL ${SNAPSHOT_SERVER}; this server is ${major}`);
    expect(await schemaSnapshot(h.owner)).toBe(readFileSync("data/schema.sql", "utf8"));
  });

  it("does not change when every fixture is applied again: no fixture differs from what was migrated", async () => {
    const before = await schemaSnapshot(h.owner);
    for (const file of fixtureFiles()) await h.owner.query(fixtureText(file));
    expect(await schemaSnapshot(h.owner)).toBe(before);
  });
});
