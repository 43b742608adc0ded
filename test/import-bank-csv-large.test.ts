import { execFile } from "node:child_process";
import { once } from "node:events";
import { createWriteStream } from "node:fs";
import { mkdtemp, readdir, readFile, rm, truncate, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_CSV_BYTES, MAX_STATEMENT_ROWS, readBankFile, readBankStatementFile } from "../src/imports/bank-files/index.js";
import { runCli, type CliRun } from "./helpers/cli.js";
import { createTenant, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { freePort } from "./helpers/ports.js";


let h: Harness;
let dir: string;
beforeAll(async () => {
  h = await startHarness();
  dir = await mkdtemp(path.join(os.tmpdir(), "bank-csv-large-"));
});
afterAll(async () => {
  await h?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A statement CSV of `rows` transactions, no two alike (header Date,Description,Amount), written in pieces. */
async function writeStatement(name: string, rows: number): Promise<string> {
  const file = path.join(dir, name);
  const out = createWriteStream(file);
  out.write("Date,Description,Amount\n");
  for (let start = 0; start < rows; start += 10_000) {
    let piece = "";
    for (let i = start; i < Math.min(rows, start + 10_000); i++) {
      const day = new Date(Date.UTC(2025, 0, 1 + (i % 365))).toISOString().slice(0, 10);
      const cents = (i % 99_991) + 1;
      piece += `${day},VENDOR ${i % 5_000} STORE ${i},${i % 7 === 0 ? "" : "-"}${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, "0")}\n`;
    }
    if (!out.write(piece)) await once(out, "drain");
  }
  out.end();
  await once(out, "finish");
  return file;
}

const importFile = (t: Tenant, file: string, ...args: string[]): Promise<CliRun> =>
  runCli(h.databaseUrl, "import_bank_csv", file, "--org-name", t.name, "--payment-account", "Chequing", ...args);

/**
 * runCli's command with room for the preview of 100,000 rows (16 MB of JSON): runCli keeps
 * execFile's 1 MB of output, past which the command is killed.
 */
async function runCliLarge(...args: string[]): Promise<CliRun> {
  const { stdout, stderr } = await promisify(execFile)(path.resolve("node_modules/.bin/tsx"), ["src/cli/main.ts", ...args], {
    env: { ...process.env, DATABASE_URL: h.databaseUrl, LOG_LEVEL: "silent" }, maxBuffer: 64 * 1024 * 1024,
  });
  return { code: 0, stdout, stderr, json: JSON.parse(stdout) };
}

async function written(org: string): Promise<{ events: number; batches: number }> {
  const { rows: [r] } = await h.owner.query(
    `select (select count(*)::int from app_public.ledger_events where organization_id = $1) events,
            (select count(*)::int from app_public.import_batches where organization_id = $1) batches`, [org]);
  return r;
}

/** No stack trace anywhere in what the command printed. */
const noStack = (run: CliRun) => expect(`${run.stdout}\n${run.stderr}`).not.toMatch(/^\s+at .+[:(]\d+/m);

describe("import_bank_csv of a large file", () => {
  it("150,000 rows: refused in words before anything is written, with --json and without", async () => {
    const t = await createTenant(h);
    const file = await writeStatement("150k.csv", 150_000);
    const refused = `${file}: The file holds more than 100,000 transactions; a statement file may hold at most 100,000. ` +
      "Export a shorter period, or split the file and import each part.";

    const json = await importFile(t, file, "--json");
    expect(json.code).toBe(1);
    expect(json.stdout.trim().split("\n")).toHaveLength(1);
    expect(json.json).toEqual({ error: refused });
    noStack(json);

    const plain = await importFile(t, file);
    expect(plain.code).toBe(1);
    expect(plain.stdout).toBe("");
    expect(plain.stderr.trim()).toBe(refused);
    expect(await written(t.organizationId)).toEqual({ events: 0, batches: 0 });
  });

  it("100,000 rows, the most a file may hold: imported whole, in one batch", async () => {
    expect(MAX_STATEMENT_ROWS).toBe(100_000);
    const t = await createTenant(h);
    const file = await writeStatement("100k.csv", 100_000);
    const run = await runCliLarge("import_bank_csv", file, "--org-name", t.name, "--payment-account", "Chequing", "--json");
    expect(run.json).toMatchObject({ importedCount: 100_000, skippedCount: 0, dryRun: false });
    expect(run.json.rows).toHaveLength(100_000);
    expect(run.json.rows[99_999]).toMatchObject({ line: 100_001, description: "VENDOR 4999 STORE 99999", duplicate: null });
    expect(await written(t.organizationId)).toEqual({ events: 100_000, batches: 1 });
  });

  it("a file past the size limit: refused before it is read", async () => {
    const t = await createTenant(h);
    const file = path.join(dir, "200mb.csv");
    await writeFile(file, "Date,Description,Amount\n2025-01-02,COFFEE,-4.50\n");
    await truncate(file, 200 * 1024 * 1024); // sparse: nothing is written to disk
    const run = await importFile(t, file, "--json");
    expect(run.code).toBe(1);
    expect(run.json.error).toBe(`${file}: The file is 200 MB; a CSV statement file may be at most ${MAX_CSV_BYTES / 1024 / 1024} MB. ` +
      "Export a shorter period, or split the file and import each part.");
    expect(await written(t.organizationId)).toEqual({ events: 0, batches: 0 });
  });
});

describe("every CLI failure is one message and exit code 1", () => {
  it("the database unreachable: {\"error\"} with --json, one line on stderr without, no stack", async () => {
    const nowhere = `postgres://postgres@127.0.0.1:${await freePort()}/nothing`;
    const json = await runCli(nowhere, "list_jobs", "--json");
    expect(json.code).toBe(1);
    expect(json.json).toEqual({ error: expect.stringMatching(/^list_jobs failed: connect ECONNREFUSED 127\.0\.0\.1:\d+$/) });
    noStack(json);
    const plain = await runCli(nowhere, "import_bank_csv", "data/samples/bank/td_chequing_sample.csv", "--org-name", "X", "--payment-account", "Chequing");
    expect(plain.code).toBe(1);
    expect(plain.stdout).toBe("");
    expect(plain.stderr.trim()).toMatch(/^import_bank_csv failed: connect ECONNREFUSED 127\.0\.0\.1:\d+$/);
  });

  it("a value PostgreSQL refuses, no operator's error of ours: {\"error\"}, exit 1, nothing queued", async () => {
    const t = await createTenant(h);
    const jobs = async () => (await h.owner.query("select count(*)::int n from graphile_worker.jobs")).rows[0].n;
    const before = await jobs();
    const run = await runCli(h.databaseUrl, "enqueue", "match_receipts", "--org-name", t.name, "--payload", '{"note": "\\u0000"}', "--json");
    expect(run.code).toBe(1);
    expect(run.json).toEqual({ error: "enqueue failed: unsupported Unicode escape sequence" });
    noStack(run);
    expect(await jobs()).toBe(before);
  });
});

describe("a statement file streamed reads as the whole file does", () => {
  const same = async (file: string, options = {}) => {
    const bytes = await readFile(file);
    const expected = (() => { try { return readBankFile(bytes, options); } catch (e) { return { error: (e as Error).message }; } })();
    const streamed = await readBankStatementFile(file, options).catch((e: Error) => ({ error: e.message }));
    expect(streamed).toEqual(expected);
  };

  it("every sample", async () => {
    const samples = (await readdir("data/samples/bank")).filter((f) => /\.(csv|ofx)$/.test(f));
    expect(samples.length).toBeGreaterThan(10);
    for (const f of samples) await same(path.join("data/samples/bank", f));
    await same("data/samples/bank/day_month_ambiguous.csv", { dateFormat: "D/M/YYYY" });
    await same("data/samples/bank/td_chequing_sample.csv", { preset: "td" });
  });

  it("UTF-16, and Windows-1252 whose first byte that is not UTF-8 lies past the first chunk read", async () => {
    const rows = Array.from({ length: 3_000 }, (_, i) => `2025-03-${String((i % 28) + 1).padStart(2, "0")},CAFÉ “${i}” €,-${(i % 90) + 1}.25`);
    const text = ["Date,Description,Amount", ...rows].join("\r\n");
    const utf16 = path.join(dir, "utf16.csv");
    await writeFile(utf16, Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, "utf16le")]));
    await same(utf16);
    const cp1252 = path.join(dir, "cp1252.csv");
    await writeFile(cp1252, Buffer.concat([Buffer.from(text.replace(/[É“”€]/g, "E"), "latin1"), Buffer.from("\r\n2025-03-30,CAF\xc9,-1.00", "latin1")]));
    expect((await readFile(cp1252)).length).toBeGreaterThan(64 * 1024);
    await same(cp1252);
    expect((await readBankStatementFile(cp1252)).rows.at(-1)?.description).toBe("CAFÉ");
  });
});
