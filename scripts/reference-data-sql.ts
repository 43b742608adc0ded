/**
 * Prints the SQL that loads the global reference data from data/gifi.csv and
 * data/sales_tax_codes.csv: `npx tsx scripts/reference-data-sql.ts`. Its output is pasted into the
 * migration, so the data is never retyped by hand.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "csv-parse/sync";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

export function readCsv(file: string): Record<string, string>[] {
  return parse(readFileSync(path.join(root, "data", file), "utf8"), {
    columns: true, bom: true, skip_empty_lines: true, trim: true,
  }) as Record<string, string>[];
}

const lit = (s: string) => `'${s.replace(/'/g, "''")}'`;
const num = (s: string) => {
  if (!/^\d+(\.\d+)?$/.test(s)) throw new Error(`Not a rate: ${s}`);
  return s;
};

export function referenceDataSql(): string {
  const gifi = readCsv("gifi.csv");
  const taxes = readCsv("sales_tax_codes.csv");
  for (const r of gifi) if (!r.code || !r.name || !r.classification || !r.account_type) throw new Error(`Incomplete GIFI row: ${JSON.stringify(r)}`);
  const out: string[] = [];
  out.push(`-- ${gifi.length} GIFI codes from data/gifi.csv`);
  out.push("insert into app_public.tax_codes (code, name, classification, account_type) values");
  out.push(gifi.map((r) => `  (${lit(r.code)}, ${lit(r.name)}, ${lit(r.classification)}, ${lit(r.account_type)})`).join(",\n") + ";");
  out.push(`-- ${taxes.length} sales tax codes from data/sales_tax_codes.csv`);
  out.push("insert into app_public.sales_tax_codes (code, name, rate, jurisdiction, recoverable) values");
  out.push(taxes.map((r) => `  (${lit(r.code)}, ${lit(r.name)}, ${num(r.rate)}, ${lit(r.jurisdiction)}, ${lit(r.recoverable)})`).join(",\n") + ";");
  return out.join("\n");
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  console.log(referenceDataSql());
}
