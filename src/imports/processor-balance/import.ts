import type { Readable } from "node:stream";
import type pg from "pg";
import { callerFailure } from "../../db/sql-errors.js";
import { ImportFileError } from "./errors.js";
import type { LayoutName } from "./layouts.js";
import { readProcessorRows } from "./reader.js";

export interface ImportOptions {
  organizationId: string;
  /** Recorded on the import batch (a path's base name, an object key). */
  fileName: string;
  /** Everything is done, then rolled back: the counts of a real run, nothing written. */
  dryRun?: boolean;
  /** Leave the events in needs_review (classified) instead of confirming them. */
  review?: boolean;
  /** Rows per round trip to PostgreSQL. */
  chunkSize?: number;
  onProgress?(progress: { phase: "reading" | "posting"; rows: number; bytes: number }): void;
}

/** What app_private.processor_import_post returns, and whether it was a dry run. */
export interface ImportResult {
  batchId: string;
  layout: LayoutName;
  rows: number;
  /** Events created (a charge with a fee makes two). */
  created: number;
  /** Rows that created events. */
  createdRows: number;
  skippedApplicationFee: number;
  skippedDuplicate: number;
  skippedUnsupported: number;
  unsupported: { line: number; id: string; type: string }[];
  skippedZeroAmount: number;
  status: "confirmed" | "needs_review";
  dryRun: boolean;
}

/**
 * Imports a processor export (docs/api.md, Processor imports) in ONE transaction on `db`: rows are
 * streamed into a staging table in chunks (each chunk one statement, the next one parsed
 * meanwhile), then one set-based SQL call posts them all. A bad file, a failure or a dry run rolls
 * everything back. `db` must not be inside a transaction.
 */
export async function importProcessorBalance(db: pg.ClientBase, input: Readable, options: ImportOptions): Promise<ImportResult> {
  const chunkSize = options.chunkSize ?? 2500;
  let layout: LayoutName | undefined;
  let rows = 0;
  let bytes = 0;
  await db.query("begin");
  try {
    await db.query("select app_private.processor_import_begin($1)", [options.organizationId]);
    let pending: Promise<unknown> | undefined;
    for await (const chunk of readProcessorRows(input, { chunkSize, onLayout: (c) => { layout = c.layout; } })) {
      await pending;
      pending = db.query(
        "select app_private.processor_import_stage($1::integer[], $2::text[], $3::text[], $4::numeric[], $5::numeric[], $6::date[], $7::text[], $8::text[], $9::text[])",
        [chunk.lines, chunk.ids, chunk.types, chunk.amounts, chunk.fees, chunk.days, chunk.descriptions, chunk.sources, chunk.currencies]);
      // Awaited before the next chunk or the post; until then its failure must not count as unhandled.
      pending.catch(() => {});
      rows += chunk.lines.length;
      bytes = chunk.bytes;
      options.onProgress?.({ phase: "reading", rows, bytes });
    }
    await pending;
    options.onProgress?.({ phase: "posting", rows, bytes });
    const { rows: [{ result }] } = await db.query<{ result: Omit<ImportResult, "dryRun"> }>(
      "select app_private.processor_import_post($1, $2, $3, $4) as result",
      [options.organizationId, layout, options.fileName, options.review ?? false]);
    await db.query(options.dryRun ? "rollback" : "commit");
    return { ...result, dryRun: options.dryRun ?? false };
  } catch (e) {
    await db.query("rollback").catch(() => {});
    // Our SQL's refusals (an unusable account, an unknown organization) are the operator's to fix.
    const failure = callerFailure(e);
    if (failure?.business && !(e instanceof ImportFileError)) throw new ImportFileError(failure.message);
    throw e;
  } finally {
    input.destroy(); // also when the read never started
  }
}
