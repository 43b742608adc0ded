import type { ImportResult } from "./import.js";

const LAYOUT_TITLES = { A: "balance history export", B: "itemized balance change report" } as const;

/**
 * The operator's reading of an import's counts (the events created, the three kinds of rows
 * skipped, and the batch id).
 */
export function importSummary(r: ImportResult, fileName: string): string {
  const lines = [
    `${r.dryRun ? "Dry run (nothing written): " : ""}${fileName}, ${LAYOUT_TITLES[r.layout] ?? "processor export"} (layout ${r.layout}), ${r.rows} rows`,
    `  created: ${r.created} events (${r.status}) from ${r.createdRows} rows`,
    `  skipped (application fee): ${r.skippedApplicationFee}`,
    `  skipped (duplicate): ${r.skippedDuplicate}`,
    `  skipped (unsupported): ${r.skippedUnsupported}`,
  ];
  const shown = r.unsupported.slice(0, 50);
  for (const u of shown) lines.push(`    line ${u.line}: ${u.id} (${u.type || "no type"})`);
  if (r.unsupported.length > shown.length) lines.push(`    … and ${r.unsupported.length - shown.length} more (all of them with --json)`);
  if (r.skippedZeroAmount > 0) lines.push(`  skipped (zero amount and fee): ${r.skippedZeroAmount}`);
  lines.push(`  batch id: ${r.batchId}${r.dryRun ? " (not kept)" : ""}`);
  return lines.join("\n");
}
