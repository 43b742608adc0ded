import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import path from "node:path";
import { ImportFileError } from "../imports/processor-balance/errors.js";
import { importProcessorBalance } from "../imports/processor-balance/import.js";
import { enqueueProcessorImport } from "../imports/processor-balance/job.js";
import { terminalProgress } from "../imports/processor-balance/progress.js";
import { importSummary } from "../imports/processor-balance/summary.js";
import { createStorage } from "../storage/index.js";
import { CliError, organizationByName, required, sql, type Command } from "./command.js";

const string = { type: "string" } as const;
const boolean = { type: "boolean" } as const;

/** The file to import: a readable regular file, else a clear error. */
async function inputFile(positionals: string[]): Promise<{ file: string; size: number }> {
  if (positionals.length !== 1) throw new CliError("Give exactly one CSV file to import.");
  const file = positionals[0];
  const s = await stat(file).catch(() => undefined);
  if (!s?.isFile()) throw new CliError(`No file "${file}".`);
  return { file, size: s.size };
}

/**
 * import_processor_balance and delete_processor_imports (contract: Server-side commands;
 * docs/api.md, Processor imports).
 */
export const processorImportCommands: Record<string, Command> = {
  import_processor_balance: {
    usage: "import_processor_balance FILE --org-name N [--dry-run] [--review] [--enqueue]",
    options: { "org-name": string, "dry-run": boolean, review: boolean, enqueue: boolean },
    async run(ctx) {
      const { file, size } = await inputFile(ctx.args.positionals);
      const org = await organizationByName(ctx.db, required(ctx, "org-name"));
      const review = ctx.args.values.review === true;
      const fileName = path.basename(file);

      if (ctx.args.values.enqueue) {
        if (ctx.args.values["dry-run"]) throw new CliError("--dry-run cannot be combined with --enqueue.");
        const { jobId, objectKey } = await enqueueProcessorImport(ctx.db, createStorage(ctx.config), { organizationId: org.id, file, review });
        return {
          result: { enqueued: true, jobId, objectKey, organizationId: org.id, fileName },
          text: `Enqueued job ${jobId}: import of ${fileName} into "${org.name}", stored as ${objectKey}.`,
        };
      }

      const progress = terminalProgress(size, { enabled: ctx.args.values.json !== true });
      try {
        const result = await importProcessorBalance(ctx.db, createReadStream(file), {
          organizationId: org.id, fileName, review, dryRun: ctx.args.values["dry-run"] === true,
          onProgress: (p) => progress.update(p),
        });
        progress.done();
        return { result: { organizationId: org.id, fileName, ...result }, text: importSummary(result, fileName) };
      } catch (e) {
        progress.done();
        if (e instanceof ImportFileError) throw new CliError(e.message);
        throw e;
      }
    },
  },
  delete_processor_imports: {
    usage: "delete_processor_imports --org-name N [--batch-id ID] [--dry-run]",
    options: { "org-name": string, "batch-id": string, "dry-run": boolean },
    async run(ctx) {
      const org = await organizationByName(ctx.db, required(ctx, "org-name"));
      const batchId = ctx.args.values["batch-id"];
      if (batchId !== undefined && (typeof batchId !== "string" || batchId.trim() === "")) throw new CliError("--batch-id needs a batch id.");
      const dryRun = ctx.args.values["dry-run"] === true;
      // One statement: one transaction.
      const [{ result: r }] = await sql<{ result: { batches: number; batchIds: string[]; events: number; journalEntries: number; journalLines: number } }>(
        ctx.db, "select app_private.delete_processor_imports($1, $2, $3) as result", [org.id, batchId?.trim() ?? null, dryRun]);
      const scope = batchId ? `batch ${batchId.trim()}` : `all processor imports (${r.batches} batch${r.batches === 1 ? "" : "es"})`;
      return {
        result: { organizationId: org.id, ...r, dryRun },
        text: dryRun
          ? `Dry run: would delete ${r.events} events, ${r.journalEntries} journal entries and ${r.journalLines} lines of ${scope} of "${org.name}".`
          : `Deleted ${r.events} events, ${r.journalEntries} journal entries and ${r.journalLines} lines of ${scope} of "${org.name}".`,
      };
    },
  },
};
