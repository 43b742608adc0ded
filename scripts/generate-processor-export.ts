import { createWriteStream } from "node:fs";
import { once } from "node:events";
import path from "node:path";
import { fileURLToPath } from "node:url";

/**
 * A processor balance history export (layout A, the 17-column form of the shared sample) of any
 * length, the same for the same seed: charges with fees, refunds, application fees, transfers,
 * processor fees, a payout sweeping the balance every 250 rows, and a few `adjustment` rows (a type
 * the import does not support). Written as a stream, so a million rows take no memory.
 *
 *   npx tsx scripts/generate-processor-export.ts FILE [ROWS=100000] [SEED=42]
 */
export const HEADER = "id,Type,Source,Amount,Fee,Destination Platform Fee,Destination Platform Fee Currency,Net,Currency,Created (UTC),Available On (UTC),Description,Customer Facing Amount,Customer Facing Currency,Transfer,Transfer Date (UTC),Transfer Group";

export interface GeneratedExport {
  rows: number;
  /** What an import of it into an empty organization must report. */
  expected: { created: number; createdRows: number; skippedApplicationFee: number; skippedUnsupported: number };
}

/** mulberry32: a small seeded generator, enough for test data. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

export async function generateProcessorExport(file: string, rows = 100_000, seed = 42): Promise<GeneratedExport> {
  const rnd = random(seed);
  const id = (prefix: string) => {
    let s = prefix + "_3";
    for (let i = 0; i < 23; i++) s += ALPHABET[Math.floor(rnd() * ALPHABET.length)];
    return s;
  };
  const money = (cents: number) => (cents / 100).toFixed(2);
  const out = createWriteStream(file);
  const write = async (line: string) => {
    if (!out.write(line + "\n")) await once(out, "drain");
  };
  const expected = { created: 0, createdRows: 0, skippedApplicationFee: 0, skippedUnsupported: 0 };
  let balance = 0; // cents
  // About 400 rows a day from 2024-01-01, a minute or so apart.
  let time = Date.UTC(2024, 0, 1, 8, 0);
  await write(HEADER);
  for (let n = 1; n <= rows; n++) {
    time += 60_000 + Math.floor(rnd() * 240_000);
    const created = new Date(time).toISOString().slice(0, 16).replace("T", " ");
    const available = new Date(time + 2 * 86_400_000).toISOString().slice(0, 10) + " 00:00";
    const r = rnd();
    let type: string, source: string, amount: number, fee = 0, description: string, customer = false;
    if (n % 250 === 0 && balance > 0) {
      [type, source, amount, description] = ["payout", id("po"), -balance, "PROCESSOR PAYOUT"];
    } else if (r < 0.70) {
      amount = 500 + Math.floor(rnd() * 49_500);
      fee = Math.round(amount * 0.029) + 30;
      [type, source, description, customer] = ["charge", id("ch"), `Order ${100000 + n}`, true];
    } else if (r < 0.80) {
      [type, source, amount, description] = ["application_fee", id("fee"), 100 + Math.floor(rnd() * 2000), "Application fee from acct_3QpZ7cTn2VbK8mWd"];
    } else if (r < 0.86) {
      [type, source, amount, description, customer] = ["refund", id("re"), -(500 + Math.floor(rnd() * 20_000)), `REFUND FOR CHARGE (Order ${100000 + n - 7})`, true];
    } else if (r < 0.92) {
      [type, source, amount, description] = ["transfer", id("tr"), -(1000 + Math.floor(rnd() * 30_000)), `Marketplace order M-${n}, "seller share"`];
    } else if (r < 0.995) {
      [type, source, amount, description] = ["processor_fee", "", -(100 + Math.floor(rnd() * 900)), "Processor fee: Radar, billing"];
    } else {
      [type, source, amount, description] = ["adjustment", id("du"), -(500 + Math.floor(rnd() * 5000)), "Dispute"];
    }
    balance += amount - fee;
    if (type === "application_fee") expected.skippedApplicationFee++;
    else if (type === "adjustment") expected.skippedUnsupported++;
    else {
      expected.createdRows++;
      expected.created += fee !== 0 ? 2 : 1;
    }
    const quote = (s: string) => (/[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);
    await write([
      id("txn"), type, source, money(amount), money(fee), "", "", money(amount - fee), "cad", created, available,
      quote(description), customer ? money(Math.abs(amount)) : "", customer ? "cad" : "", "", "", "",
    ].join(","));
  }
  out.end();
  await once(out, "finish");
  return { rows, expected };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [file, rows, seed] = process.argv.slice(2);
  if (!file) {
    console.error("Usage: npx tsx scripts/generate-processor-export.ts FILE [ROWS=100000] [SEED=42]");
    process.exit(1);
  }
  const g = await generateProcessorExport(file, Number(rows ?? 100_000), Number(seed ?? 42));
  console.log(JSON.stringify({ file, ...g }));
}
