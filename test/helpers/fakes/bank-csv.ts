import { createWriteStream } from "node:fs";
import { once } from "node:events";

/**
 * A bank statement CSV of about `bytes` (header `Date,Description,Amount`, signed amounts, dates
 * over one year), written in chunks so that a 200 MB file never sits in memory. Descriptions and
 * amounts vary so that no two rows are duplicates.
 */
export async function writeBankCsv(file: string, bytes: number): Promise<{ rows: number; bytes: number }> {
  const out = createWriteStream(file);
  let written = 0;
  let rows = 0;
  const header = "Date,Description,Amount\n";
  out.write(header);
  written += header.length;
  while (written < bytes) {
    let chunk = "";
    for (let i = 0; i < 10_000 && written + chunk.length < bytes; i++, rows++) {
      const day = new Date(Date.UTC(2025, 0, 1 + (rows % 365))).toISOString().slice(0, 10);
      const cents = (rows % 99_991) + 1;
      const amount = `${rows % 7 === 0 ? "" : "-"}${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, "0")}`;
      chunk += `${day},VENDOR ${rows % 50_000} STORE ${rows},${amount}\n`;
    }
    written += chunk.length;
    if (!out.write(chunk)) await once(out, "drain");
  }
  out.end();
  await once(out, "finish");
  return { rows, bytes: written };
}
