import type pg from "pg";

/**
 * What one scan of a source did (docs/api.md, Receipt sources), recorded in
 * app_private.job_results: messages or objects seen, receipts created, duplicates (seen before:
 * same Message-ID or file), refused files (not a receipt type, or too large), and skipped ones (a
 * message without a receipt file; an object already read). Filled in as the scan goes, so a scan
 * that fails still reports what it did.
 */
export interface ScanReport {
  scanned: number;
  created: number;
  duplicates: number;
  refused: number;
  skipped: number;
  /** Objects that could not be read this time (a broken download, a refusal of that one object): read again on the next pass. */
  failed: number;
  /** It stopped at its limit with more to read: the next scan is queued at once. */
  more: boolean;
  /** The source was disconnected during the scan, which stopped there. */
  disconnected?: boolean;
}

export const emptyScanReport = (): ScanReport => ({ scanned: 0, created: 0, duplicates: 0, refused: 0, skipped: 0, failed: 0, more: false });

/** Where a scan reads and writes. */
export interface ScanSource<S> {
  id: string;
  organizationId: string;
  settings: S;
  secret: string;
  cursor: Record<string, unknown>;
}

/** Keeps a scan's progress; false when the source was disconnected meanwhile (the scan stops). */
export async function advanceCursor(owner: pg.Pool, sourceId: string, cursor: Record<string, unknown>): Promise<boolean> {
  const { rows: [{ connected }] } = await owner.query<{ connected: boolean }>(
    "select app_private.advance_source_cursor($1, $2) as connected", [sourceId, JSON.stringify(cursor)]);
  return connected;
}
