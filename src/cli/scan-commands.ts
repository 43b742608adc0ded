import { CliError, organizationByName, required, sql, type Command } from "./command.js";

interface Scan {
  scanId: string; attempt: number; kind: string; receiptSourceId: string; source: string | null; status: string;
  scanned: number | null; created: number | null; duplicates: number | null; refused: number | null; skipped: number | null; failed: number | null;
  error: string | null; startedAt: string; finishedAt: string;
}

const n = (v: number | null) => (v === null ? "-" : String(v));

/**
 * list_scans: what the scans of an organization's mailboxes and cloud drives did (docs/api.md,
 * Receipt sources).
 */
export const scanCommands: Record<string, Command> = {
  list_scans: {
    usage: "list_scans --org-name N [--limit 50] [--json]",
    options: { "org-name": { type: "string" }, limit: { type: "string" } },
    async run(ctx) {
      const org = await organizationByName(ctx.db, required(ctx, "org-name"));
      const rawLimit = ctx.args.values.limit;
      const limit = rawLimit === undefined ? 50 : Number(rawLimit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new CliError("--limit must be a whole number from 1 to 1000.");
      const [{ scans }] = await sql<{ scans: Scan[] }>(ctx.db, "select app_private.list_source_scans($1, $2) as scans", [org.id, limit]);
      const lines = scans.map((s) => [
        s.startedAt, s.finishedAt, s.scanId, s.kind, s.source ?? `(disconnected ${s.receiptSourceId})`, s.status,
        n(s.scanned), n(s.created), n(s.duplicates), n(s.refused), n(s.skipped), n(s.failed), s.error ?? "",
      ].join("\t"));
      const header = ["started", "finished", "scan", "kind", "source", "status", "scanned", "created", "duplicates", "refused", "skipped", "failed", "error"].join("\t");
      return {
        result: { organizationId: org.id, scans },
        text: scans.length === 0 ? `No scans yet for "${org.name}".` : [header, ...lines].join("\n"),
      };
    },
  },
};
