import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { generateProcessorExport } from "../scripts/generate-processor-export.js";
import { benchDatabase, benchServerUrl, memoryKb, processTree } from "./support.js";

/**
 * `npm run bench -- processor-import [ROWS=100000] [ROWS…]`: the processor balance import end to
 * end, as an operator runs it. For each size: a layout A export generated with a fixed seed
 * (scripts/generate-processor-export.ts) in a temp folder, a fresh database on BENCH_DATABASE_URL's
 * server (committed migrations plus work in progress), then `npm run cli -- import_processor_balance`
 * in its own process. Prints the wall time and the peak RSS of the CLI (the largest process of its
 * tree: /usr/bin/time -v when present, else VmHWM sampled from /proc), then the time of
 * `delete_processor_imports` of that batch. Targets (100,000 rows): under 15 s, under 200 MB.
 */
export async function run(args: string[] = []) {
  const sizes = (args.length ? args : ["100000"]).map((a) => Number(a.replace(/_/g, "")));
  if (sizes.some((n) => !Number.isInteger(n) || n < 1)) throw new Error("Usage: npm run bench -- processor-import [ROWS…]");
  const dir = mkdtempSync(path.join(os.tmpdir(), "processor-import-bench-"));
  try {
    for (const rows of sizes) await one(rows, dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function one(rows: number, dir: string) {
  const file = path.join(dir, `export-${rows}.csv`);
  const generated = await generateProcessorExport(file, rows, 42);
  const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
  console.log(`processor-import: ${rows.toLocaleString("en-US")} rows (${mb(statSync(file).size)} MB, layout A, seed 42), ` +
    `${generated.expected.created.toLocaleString("en-US")} events expected, server ${new URL(benchServerUrl).host}`);

  const url = await benchDatabase("accounting_bench_processor_import");
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  const org = "Processor Bench";
  await db.query("select app_private.create_organization($1)", [org]);
  await db.query("checkpoint");

  const imported = await cli(url, ["import_processor_balance", file, "--org-name", org, "--json"]);
  const result = JSON.parse(imported.stdout);
  if (result.created !== generated.expected.created) {
    throw new Error(`expected ${generated.expected.created} events, the import says ${JSON.stringify(result)}`);
  }
  console.log(`  import: ${imported.seconds.toFixed(1)} s wall, peak RSS ${imported.peakMb.toFixed(0)} MB (${imported.rssSource}), ` +
    `${Math.round(rows / imported.seconds).toLocaleString("en-US")} rows/s; created ${result.created}, ` +
    `skipped ${result.skippedApplicationFee} application fees, ${result.skippedUnsupported} unsupported`);
  const deleted = await cli(url, ["delete_processor_imports", "--org-name", org, "--batch-id", result.batchId, "--json"]);
  console.log(`  delete_processor_imports of that batch: ${deleted.seconds.toFixed(1)} s wall (${JSON.parse(deleted.stdout).events} events)`);
  await db.end();
}

/** `npm run cli -- …` in its own process: stdout, wall time, peak RSS of its largest process. */
async function cli(url: string, args: string[]): Promise<{ stdout: string; seconds: number; peakMb: number; rssSource: string }> {
  const timeBin = existsSync("/usr/bin/time") ? "/usr/bin/time" : undefined;
  const command = ["npm", "run", "--silent", "cli", "--", ...args];
  const [bin, ...rest] = timeBin ? [timeBin, "-v", ...command] : command;
  const started = performance.now();
  const child = spawn(bin, rest, { env: { ...process.env, DATABASE_URL: url, LOG_LEVEL: "warn", GRAPHILE_ENV: "production" }, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => { stdout += d; });
  child.stderr.on("data", (d) => { stderr += d; });
  let sampled = 0;
  const sampler = setInterval(() => { sampled = Math.max(sampled, treePeakKb(child.pid!)); }, 50);
  const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
  clearInterval(sampler);
  const seconds = (performance.now() - started) / 1000;
  if (code !== 0) throw new Error(`cli ${args[0]} exited with ${code}:\n${stderr}`);
  const maxRss = /Maximum resident set size \(kbytes\): (\d+)/.exec(stderr);
  return maxRss
    ? { stdout, seconds, peakMb: Number(maxRss[1]) / 1024, rssSource: "/usr/bin/time -v" }
    : { stdout, seconds, peakMb: sampled / 1024, rssSource: "VmHWM sampled" };
}

/** The largest VmHWM (kB) among a process and its descendants. */
const treePeakKb = (root: number) => Math.max(0, ...processTree(root).map((pid) => memoryKb(pid, "VmHWM")));
