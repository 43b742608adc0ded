import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import pg from "pg";
import { generateCorpus, type CorpusReceipt } from "../scripts/receipts/corpus.ts";
import { closeOcr, extractReceipt } from "../src/receipts/extraction/index.js";
import { benchDatabase, databaseUrl, memoryKb, processTree, startServer, withPlans } from "./support.ts";

/**
 * `npm run bench -- receipts [--skip-extraction] [--skip-upload] [--skip-matching] [--images N]
 * [--pdfs N] [--events N] [--receipts N] [--fresh] [--no-wait]`: the receipt pipeline's three costs.
 *
 * 1. Extraction: receipts/minute of one worker, sequential `extractReceipt` calls through the one
 *    OCR worker (as the extract_receipt task runs them), for PNG images (OCR) and PDFs (text layer),
 *    separately, on a seeded evaluation corpus (scripts/receipts/corpus.ts, seed 7).
 * 2. Upload: POST /uploads of 20 MiB files (sequential, then 4 at once) and 1 MiB files against
 *    the service in its own process (`npm start`); MB/s, requests/s, and the server process's RSS
 *    (VmRSS sampled every 50 ms) before and during the uploads: streamed, it stays flat.
 * 3. Matching: one organization with N events (default 1,000,000, bench/receipts-data.sql, kept
 *    between runs in accounting_bench_receipts_matching unless --fresh), 200 fresh receipts whose
 *    amounts and dates hit events; time of `app_private.receipt_candidates` per receipt and of a
 *    whole `app_private.match_receipts` run, then the plan of the candidate query.
 *
 * Before each part it waits (up to 15 minutes) for a quiet machine: no vitest / receipt eval / other
 * bench running, a 1-minute load under 1.5 and under 25% CPU busy; it says so when it had to
 * measure under load, and reports the CPU left busy right after each part.
 */
export async function run(args: string[]) {
  const flag = (name: string) => args.includes(`--${name}`);
  const num = (name: string, fallback: number) => {
    const i = args.indexOf(`--${name}`);
    const v = i >= 0 ? Number(args[i + 1]?.replace(/_/g, "")) : fallback;
    if (!Number.isInteger(v) || v < 1) throw new Error(`--${name} takes a positive integer`);
    return v;
  };
  const wait = !flag("no-wait");
  const notes: string[] = [];
  if (!flag("skip-extraction")) {
    notes.push(`extraction: ${await waitForQuiet("extraction", wait)}`);
    await extraction(num("images", 20), num("pdfs", 30));
    notes.push(await afterPart("extraction"));
  }
  if (!flag("skip-upload")) {
    notes.push(`upload: ${await waitForQuiet("upload", wait)}`);
    await upload();
    notes.push(await afterPart("upload"));
  }
  if (!flag("skip-matching")) {
    await matching(num("events", 1_000_000), num("receipts", 200), flag("fresh"), async () => {
      notes.push(`matching: ${await waitForQuiet("matching", wait)}`);
    });
    notes.push(await afterPart("matching"));
  }
  console.log(`\nmachine while measuring: ${notes.join("; ")}`);
}

// ------------------------------------------------------------------------------------------------
// Quiet machine

/** Our own process and its ancestors (npm run bench → tsx → node), never counted as "busy". */
function ownPids(): Set<number> {
  const pids = new Set<number>();
  for (let pid = process.pid; pid > 1 && !pids.has(pid);) {
    pids.add(pid);
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      pid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    } catch { break; }
  }
  return pids;
}

function busyProcesses(): string[] {
  let out = "";
  try {
    out = execFileSync("pgrep", ["-fa", "vitest|eval.ts|eval-sroie|tsx scripts|bench/main.ts"], { encoding: "utf8" });
  } catch { /* pgrep exits 1 when nothing matches */ }
  const own = ownPids();
  return out.split("\n").filter((l) => l.trim() && !own.has(Number(l.split(" ")[0])));
}

/** The share of the machine's CPU time (all cores) spent busy over the next `ms`. */
async function cpuBusy(ms = 3000): Promise<number> {
  const read = () => {
    const f = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
    return { total: f.reduce((a, b) => a + b, 0), idle: f[3] + f[4] };
  };
  const a = read();
  await sleep(ms);
  const b = read();
  return 1 - (b.idle - a.idle) / Math.max(1, b.total - a.total);
}

/**
 * Waits (polling every 30 s, up to 15 minutes) until nothing else runs: no test suite, receipt
 * evaluation or other bench (by name), the 1-minute load under 1.5 and, over 3 s, under 25% of
 * the machine's CPU busy (other helpers' scripts under other names show there). Returns what it saw.
 */
async function waitForQuiet(part: string, wait: boolean): Promise<string> {
  const started = Date.now();
  for (;;) {
    const busy = busyProcesses();
    const cpu = await cpuBusy();
    const load = os.loadavg()[0];
    const minutes = ((Date.now() - started) / 60_000).toFixed(1);
    const seen = `load ${load.toFixed(2)}, CPU ${(cpu * 100).toFixed(0)}% busy`;
    if (busy.length === 0 && load < 1.5 && cpu < 0.25) return `quiet (${seen}${Date.now() - started > 5000 ? `, after waiting ${minutes} min` : ""})`;
    if (!wait || Date.now() - started > 15 * 60_000) {
      const state = `UNDER LOAD (${seen}, ${busy.length} other processes: ${busy.map((l) => l.split(" ").slice(1, 4).join(" ")).join(" | ").slice(0, 300)})`;
      console.log(`${part}: measuring ${state}`);
      return state;
    }
    console.log(`${part}: waiting for a quiet machine (${seen}, ${busy.length} busy processes, ${minutes} min so far)`);
    await sleep(30_000);
  }
}

/** After a part: was someone else busy meanwhile? (The CPU left over right after it.) */
async function afterPart(part: string): Promise<string> {
  const cpu = await cpuBusy();
  const busy = busyProcesses();
  const state = `${part} ended with load ${os.loadavg()[0].toFixed(2)}, CPU ${(cpu * 100).toFixed(0)}% busy right after` +
    (busy.length || cpu >= 0.25 ? " (SOMEONE ELSE WAS BUSY)" : "");
  console.log(state);
  return state;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
const ms = (v: number) => v.toFixed(2);

// ------------------------------------------------------------------------------------------------
// 1. Extraction

async function extraction(images: number, pdfs: number) {
  const dir = mkdtempSync(path.join(os.tmpdir(), "receipts-bench-corpus-"));
  try {
    // 45% of a corpus are PNGs, 30% PDFs, 25% emails: enough receipts for both counts.
    const size = Math.max(Math.ceil(images / 0.45), Math.ceil(pdfs / 0.3)) + 2;
    const t0 = performance.now();
    const corpus = await generateCorpus({ seed: 7, receipts: size, outDir: dir });
    console.log(`extraction: corpus seed 7, ${corpus.receipts.length} receipts generated in ${((performance.now() - t0) / 1000).toFixed(1)} s (${dir})`);
    const of = (kind: CorpusReceipt["kind"], n: number) => corpus.receipts.filter((r) => r.kind === kind).slice(0, n);
    const sets: [string, CorpusReceipt[]][] = [["png (OCR)", of("png", images)], ["pdf (text layer)", of("pdf", pdfs)], ["email (text)", of("email", 20)]];

    // The OCR worker starts once per process (language data, WASM): timed apart, as a worker pays it once.
    // The PDF reader's first call loads pdf.js: also once per process.
    for (const kind of ["png", "pdf"] as const) {
      const warm = corpus.receipts.filter((r) => r.kind === kind).at(-1)!;
      const w0 = performance.now();
      await extractReceipt({ bytes: readFileSync(path.join(dir, warm.file)), contentType: warm.contentType, dateOrder: warm.dateOrder });
      console.log(`extraction: first ${kind} call (${kind === "png" ? "OCR worker start" : "pdf.js load"} + one receipt, not counted): ${((performance.now() - w0) / 1000).toFixed(2)} s`);
    }

    console.log("| kind | receipts | receipts/min | mean s/receipt | p50 s | max s | amount right | date right | methods |");
    console.log("|---|---|---|---|---|---|---|---|---|");
    for (const [label, receipts] of sets) {
      const times: number[] = [];
      let amountRight = 0;
      let dateRight = 0;
      const methods = new Map<string, number>();
      const started = performance.now();
      for (const r of receipts) {
        const bytes = readFileSync(path.join(dir, r.file));
        const t = performance.now();
        const x = await extractReceipt({ bytes, contentType: r.contentType, dateOrder: r.dateOrder });
        times.push((performance.now() - t) / 1000);
        if (x.amount === r.truth.amount) amountRight++;
        if (x.dateReadings.includes(r.truth.date)) dateRight++;
        methods.set(x.method, (methods.get(x.method) ?? 0) + 1);
      }
      const total = (performance.now() - started) / 1000;
      const sorted = [...times].sort((a, b) => a - b);
      console.log(`| ${label} | ${receipts.length} | ${(receipts.length / (total / 60)).toFixed(1)} | ${(total / receipts.length).toFixed(3)} | ` +
        `${pct(sorted, 50).toFixed(3)} | ${sorted.at(-1)!.toFixed(3)} | ${amountRight}/${receipts.length} | ${dateRight}/${receipts.length} | ` +
        `${[...methods].map(([m, n]) => `${m} ${n}`).join(", ")} |`);
    }
  } finally {
    await closeOcr();
    rmSync(dir, { recursive: true, force: true });
  }
}

// ------------------------------------------------------------------------------------------------
// 2. Upload

/** VmRSS (kB) of each process of a tree. */
const treeRss = (root: number) => new Map(processTree(root).map((pid) => [pid, memoryKb(pid, "VmRSS")]));

const vmRssKb = (pid: number) => memoryKb(pid, "VmRSS");

/** Samples one process's VmRSS every 50 ms until stopped: the samples in MB. */
function rssSampler(pid: number) {
  const samples: number[] = [];
  const timer = setInterval(() => samples.push(vmRssKb(pid) / 1024), 50);
  return { samples, stop: () => { clearInterval(timer); return samples; } };
}

async function upload() {
  const dbUrl = await benchDatabase("accounting_bench_receipts");
  const owner = new pg.Client({ connectionString: dbUrl });
  await owner.connect();
  const { rows: [{ id: org }] } = await owner.query("select id from app_private.create_organization('Bench Receipts Upload')");
  const { rows: [{ key }] } = await owner.query("select app_private.create_api_key($1, 'bench') as key", [org]);
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "receipts-bench-upload-"));
  const server = await startServer(dbUrl, { DATA_DIR: dataDir, STORAGE_DIR: path.join(dataDir, "storage") });
  try {
    // The server is `npm start` → sh → tsx → node: the node running src/main.ts is the largest.
    const tree = treeRss(server.child.pid!);
    const [serverPid] = [...tree].sort((a, b) => b[1] - a[1])[0]!;
    const cmd = readFileSync(`/proc/${serverPid}/cmdline`, "utf8").split("\0").join(" ").trim();
    console.log(`upload: server process ${serverPid} (${cmd.slice(-60)}), tree of ${tree.size} processes; ` +
      `RSS ${(vmRssKb(serverPid) / 1024).toFixed(1)} MB when ready, before any upload`);

    const MiB = 1024 * 1024;
    const pdf = (size: number) => {
      const head = Buffer.from("%PDF-1.7\n");
      return Buffer.concat([head, randomBytes(size - head.length)]);
    };
    const post = async (file: Buffer, name: string) => {
      const form = new FormData();
      form.append("organizationId", org);
      form.append("file", new Blob([new Uint8Array(file.buffer as ArrayBuffer, file.byteOffset, file.length)]), name);
      const res = await fetch(`${server.url}/uploads`, { method: "POST", headers: { authorization: `Bearer ${key.secret}` }, body: form });
      const body = (await res.json()) as { size?: number; contentType?: string; errors?: unknown };
      if (res.status !== 201 || body.size !== file.length) throw new Error(`upload answered ${res.status}: ${JSON.stringify(body)}`);
      return body;
    };

    // Warm-up: the code paths, the connection pool, the first files.
    const small = Array.from({ length: 8 }, () => pdf(MiB));
    for (const f of small.slice(0, 4)) await post(f, "warm.pdf");
    const big = Array.from({ length: 5 }, () => pdf(20 * MiB));
    await post(big[0], "warm-big.pdf");
    await sleep(1000);

    const idle = rssSampler(serverPid);
    await sleep(2000);
    const before = idle.stop();
    const baseline = before.reduce((a, b) => a + b, 0) / before.length;
    console.log(`upload: server RSS at rest ${baseline.toFixed(1)} MB (mean of ${before.length} samples over 2 s)`);

    const rows: string[] = [];
    const measure = async (label: string, files: Buffer[], concurrency: number) => {
      const sampler = rssSampler(serverPid);
      const times: number[] = [];
      let next = 0;
      const t0 = performance.now();
      await Promise.all(Array.from({ length: concurrency }, async () => {
        for (let i = next++; i < files.length; i = next++) {
          const t = performance.now();
          await post(files[i], `bench-${i}.pdf`);
          times.push(performance.now() - t);
        }
      }));
      const seconds = (performance.now() - t0) / 1000;
      const samples = sampler.stop();
      const bytes = files.reduce((a, f) => a + f.length, 0);
      const sorted = [...times].sort((a, b) => a - b);
      const peak = Math.max(...samples);
      const row = `| ${label} | ${files.length} | ${concurrency} | ${(bytes / MiB / seconds).toFixed(1)} | ${(files.length / seconds).toFixed(1)} | ` +
        `${pct(sorted, 50).toFixed(0)} | ${sorted.at(-1)!.toFixed(0)} | ${baseline.toFixed(0)} → ${peak.toFixed(0)} (+${(peak - baseline).toFixed(1)}) |`;
      rows.push(row);
      console.log(row);
    };
    console.log("| files | count | concurrent | MiB/s | requests/s | p50 ms | max ms | server RSS MB, rest → peak |");
    console.log("|---|---|---|---|---|---|---|---|");
    await measure("20 MiB PDF", big, 1);
    await measure("20 MiB PDF", big.slice(0, 4), 4);
    const many = Array.from({ length: 60 }, (_, i) => (i < small.length ? small[i] : pdf(MiB)));
    await measure("1 MiB PDF", many, 1);
    await measure("1 MiB PDF", many, 4);
    const { rows: [{ n }] } = await owner.query("select count(*)::int n from app_public.uploads where organization_id = $1", [org]);
    console.log(`upload: ${n} uploads recorded`);
  } finally {
    await server.stop();
    await owner.end();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

// ------------------------------------------------------------------------------------------------
// 3. Matching

const MATCHING_DB = "accounting_bench_receipts_matching";
const MATCHING_ORG = "Bench Receipts Matching";

/**
 * The body of app_private.receipt_candidates (migrations/fixtures/receipts/matching.sql) as the
 * database has it now, with the receipt id substituted, to EXPLAIN it directly: EXPLAIN of the
 * function call shows only a Function Scan. Read from pg_proc so that it follows the function.
 */
async function candidatesBody(db: pg.Client, receiptId: string): Promise<string> {
  const { rows: [{ src }] } = await db.query("select prosrc src from pg_proc where oid = 'app_private.receipt_candidates(uuid)'::regprocedure");
  return (src as string).replace(/receipt_candidates\.receipt_id/g, `'${receiptId}'::uuid`);
}

/**
 * Receipts made from events picked at random (md5 order, stable): the event's amount, a receipt date
 * 0–2 days before the bank date, the vendor as a receipt prints it (the brand, no store number);
 * a quarter whose day and month could be swapped carry both readings (dateOrder auto); one in five
 * names CAD. Amount and date always hit their event; the common prices hit thousands more. Each
 * field read with high confidence: the usual thresholds apply.
 */
const RECEIPTS_SQL = `
  insert into app_public.receipts (organization_id, source, status, match_status, object_key, filename, content_type, size,
      sha256, vendor_name, amount, currency, date_readings, vendor_confidence, amount_confidence, date_confidence)
  select $1::uuid, 'web_upload', 'processed', 'pending', $1::text || '/receipts/bench-' || n, 'bench-' || n || '.pdf', 'application/pdf', 1000,
         encode(sha256(convert_to('bench-receipt-' || n || '-' || id, 'UTF8')), 'hex'),
         initcap(split_part(merchant_name, ' #', 1)), functional_amount,
         case when n % 5 = 0 then 'CAD' end,
         case when n % 4 = 0 and extract(day from d) <= 12 and extract(day from d) <> extract(month from d)
              then array[d, make_date(extract(year from d)::int, extract(day from d)::int, extract(month from d)::int)]
              else array[d] end,
         'high', 'high', 'high'
    from (select e.id, e.merchant_name, e.functional_amount, e.transaction_date - (row_number() over w % 3)::int d,
                 row_number() over w n
            from (select id, merchant_name, functional_amount, transaction_date, md5(id::text || 'bench') k from app_public.ledger_events
                   where organization_id = $1::uuid and status <> 'ignored' order by k limit $2) e
          window w as (order by e.k)) s`;

/** The organization of an earlier run's database when it holds exactly `events` events. */
async function cachedOrganization(events: number): Promise<string | undefined> {
  const c = new pg.Client({ connectionString: databaseUrl(MATCHING_DB) });
  try {
    await c.connect();
    const { rows: [o] } = await c.query(
      `select o.id, (select count(*)::int from app_public.ledger_events e where e.organization_id = o.id) n
         from app_public.organizations o where o.name = $1`, [MATCHING_ORG]);
    return o && o.n === events ? o.id : undefined;
  } catch {
    return undefined; // no such database yet, or not migrated
  } finally {
    await c.end().catch(() => {});
  }
}

async function matching(events: number, receipts: number, fresh: boolean, quiet: () => Promise<void>) {
  // The cached database is looked at before migrating, so that it is migrated (or recreated) once.
  const cached = fresh ? undefined : await cachedOrganization(events);
  const dbUrl = await benchDatabase(MATCHING_DB, !cached);
  const owner = new pg.Client({ connectionString: dbUrl });
  await owner.connect();
  let org: string;
  if (cached) {
    org = cached;
    console.log(`matching: reusing ${MATCHING_DB} (${events.toLocaleString("en-US")} events; --fresh to regenerate)`);
  } else {
    org = (await owner.query("select id from app_private.create_organization($1)", [MATCHING_ORG])).rows[0].id;
    const t0 = Date.now();
    execFileSync("psql", [dbUrl, "-q", "-v", "ON_ERROR_STOP=1", "-v", `org=${org}`, "-v", `events=${events}`,
      "-f", path.resolve("bench/receipts-data.sql")], { stdio: ["ignore", "ignore", "inherit"] });
    console.log(`matching: generated ${events.toLocaleString("en-US")} events in ${((Date.now() - t0) / 1000).toFixed(1)} s (bench/receipts-data.sql)`);
  }
  const { rows: [stats] } = await owner.query(`select count(*)::int n, count(distinct functional_amount)::int amounts,
      count(distinct merchant_name)::int merchants, min(transaction_date)::text first, max(transaction_date)::text last,
      (select max(c) from (select count(*) c from app_public.ledger_events where organization_id = $1 group by functional_amount) x)::int most_common_amount_events,
      pg_size_pretty(pg_total_relation_size('app_public.ledger_events')) size
    from app_public.ledger_events where organization_id = $1`, [org]);
  console.log(`matching: data ${JSON.stringify(stats)}`);

  // Fresh receipts each run (a run links some of them); deleting linked ones resets has_document.
  await owner.query("delete from app_public.receipts where organization_id = $1", [org]);
  await owner.query(RECEIPTS_SQL, [org, receipts]);
  await owner.query("analyze app_public.receipts");
  const { rows: ids } = await owner.query<{ id: string; amount: string; readings: number; events_same_amount: number }>(
    `select r.id, r.amount::text, cardinality(r.date_readings) readings,
            (select count(*)::int from app_public.ledger_events e where e.organization_id = r.organization_id and e.functional_amount = r.amount) events_same_amount
       from app_public.receipts r where r.organization_id = $1 order by r.uploaded_at, r.id`, [org]);
  const sameAmount = ids.map((r) => r.events_same_amount).sort((a, b) => a - b);
  console.log(`matching: ${ids.length} receipts (${ids.filter((r) => r.readings === 2).length} with two date readings); ` +
    `events of the same amount per receipt: p50 ${pct(sameAmount, 50)}, p95 ${pct(sameAmount, 95)}, max ${sameAmount.at(-1)}`);
  const { rows: [{ key }] } = await owner.query("select app_private.create_api_key($1, 'bench') as key", [org]);

  await quiet();
  // As the worker runs it: the owner, the organization in scope (match_receipts scopes it itself,
  // for its transaction; here for the session).
  await owner.query("select set_config('app.organization_id', $1, false)", [org]);
  const timeAll = async () => {
    const times: { id: string; ms: number; rows: number }[] = [];
    for (const r of ids) {
      const t = performance.now();
      const res = await owner.query("select * from app_private.receipt_candidates($1)", [r.id]);
      times.push({ id: r.id, ms: performance.now() - t, rows: res.rowCount ?? 0 });
    }
    return times;
  };
  const cold = await timeAll();
  const warm = await timeAll();
  const summary = (label: string, t: { ms: number; rows: number }[]) => {
    const s = t.map((x) => x.ms).sort((a, b) => a - b);
    const rows = t.map((x) => x.rows).sort((a, b) => a - b);
    const line = `| ${label} | ${t.length} | ${ms(pct(s, 50))} | ${ms(pct(s, 95))} | ${ms(s.at(-1)!)} | ${ms(s.reduce((a, b) => a + b, 0) / s.length)} | ${pct(rows, 50)} / ${rows.at(-1)} |`;
    console.log(line);
  };
  console.log("| query (per receipt, client round trip included) | receipts | p50 ms | p95 ms | max ms | mean ms | candidates p50 / max |");
  console.log("|---|---|---|---|---|---|---|");
  summary("receipt_candidates, first pass", cold);
  summary("receipt_candidates, second pass", warm);

  // Plans: the slowest receipt of the second pass and a median one.
  const bySpeed = [...warm].sort((a, b) => a.ms - b.ms);
  const pick = [["slowest", bySpeed.at(-1)!], ["median", bySpeed[Math.floor(bySpeed.length / 2)]]] as const;
  for (const [label, t] of pick) {
    const info = ids.find((r) => r.id === t.id)!;
    console.log(`\nmatching: plan for the ${label} receipt (${ms(t.ms)} ms, amount ${info.amount}, ${info.readings} date reading(s), ` +
      `${info.events_same_amount} events of that amount, ${t.rows} candidates)`);
    // 1. auto_explain of the statement inside the function, as the API role (RLS on).
    await withPlans(dbUrl, { apiKeyId: key.apiKey.id, organizationId: org }, async (explain) => {
      const plans = await explain("select * from app_private.receipt_candidates($1)", [t.id]);
      const inner = plans.filter((p) => /ledger_events/.test(p))
        .map((p) => p.replace(/Query Text:[\s\S]*?limit 20\s*\n/, "Query Text: (the body of app_private.receipt_candidates)\n"));
      console.log(`-- auto_explain, the statement inside receipt_candidates (${plans.length} statements logged in all, ` +
        `the others being vendor_similarity / vendor_key calls):\n${(inner.length ? inner : plans).join("\n")}`);
    });
    // 2. EXPLAIN (ANALYZE, BUFFERS) of the body with the id substituted, as the function's owner.
    await owner.query("begin");
    try {
      await owner.query("select set_config('search_path', 'pg_catalog, app_public, pg_temp', true)");
      const { rows } = await owner.query(`explain (analyze, buffers) ${await candidatesBody(owner, t.id)}`);
      console.log(`-- EXPLAIN (ANALYZE, BUFFERS) of the body:\n${rows.map((r) => r["QUERY PLAN"]).join("\n")}`);
    } finally {
      await owner.query("rollback");
    }
  }
  console.log("");
  const t0 = performance.now();
  const { rows: [{ result }] } = await owner.query("select app_private.match_receipts($1) as result", [org]);
  const whole = performance.now() - t0;
  console.log("| query | receipts | | | | mean ms | result |\n|---|---|---|---|---|---|---|");
  console.log(`| match_receipts(org), whole run / receipts | ${ids.length} | | | | ${ms(whole / ids.length)} | ${JSON.stringify(result)} |`);
  console.log(`matching: match_receipts took ${(whole / 1000).toFixed(2)} s for ${ids.length} receipts`);

  await owner.end();
}
