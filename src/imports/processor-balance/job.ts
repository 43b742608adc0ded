import { randomUUID } from "node:crypto";
import { createReadStream } from "node:fs";
import path from "node:path";
import type pg from "pg";
import { keySegment, type Storage } from "../../storage/index.js";
import { ImportFileError } from "./errors.js";

/** The worker task that imports a processor export already in storage (worker/tasks.ts). */
export const PROCESSOR_IMPORT_TASK = "import_processor_balance";

/**
 * The job's payload. An operator may enqueue it from SQL:
 * `select graphile_worker.add_job('import_processor_balance', json_build_object('organizationId', '…', 'objectKey', '…'))`.
 */
export interface ProcessorImportPayload {
  organizationId: string;
  objectKey: string;
  /** Recorded on the import batch; the object key's last segment when absent. */
  fileName?: string;
  review?: boolean;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The organization a payload names, when it names one (for the job's record even when the payload is bad). */
export function payloadOrganizationId(payload: unknown): string | null {
  const id = (payload as { organizationId?: unknown } | null)?.organizationId;
  return typeof id === "string" && UUID.test(id) ? id : null;
}

/** The payload checked; a malformed one is an ImportFileError (retrying cannot mend it). */
export function processorImportPayload(payload: unknown): ProcessorImportPayload {
  const p = (payload ?? {}) as Record<string, unknown>;
  if (typeof p.organizationId !== "string" || !UUID.test(p.organizationId)) {
    throw new ImportFileError("The job payload needs organizationId, an organization id (UUID).");
  }
  if (typeof p.objectKey !== "string" || p.objectKey === "") throw new ImportFileError("The job payload needs objectKey, the stored file's key.");
  if (p.fileName !== undefined && typeof p.fileName !== "string") throw new ImportFileError("fileName must be a string.");
  if (p.review !== undefined && typeof p.review !== "boolean") throw new ImportFileError("review must be true or false.");
  return { organizationId: p.organizationId, objectKey: p.objectKey, fileName: p.fileName as string | undefined, review: p.review as boolean | undefined };
}

/** Where an uploaded export is kept: per organization, named by time and its own name. */
export function processorImportKey(organizationId: string, fileName: string, now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:.]/g, "");
  return `processor-imports/${organizationId}/${stamp}-${randomUUID().slice(0, 8)}-${keySegment(fileName)}`;
}

/**
 * `--enqueue`: the file goes to storage, then the job is added; when adding fails the upload is
 * removed again. Returns the job id and the object key.
 */
export async function enqueueProcessorImport(db: pg.ClientBase, storage: Storage,
    options: { organizationId: string; file: string; review?: boolean }): Promise<{ jobId: string; objectKey: string }> {
  const fileName = path.basename(options.file);
  const objectKey = processorImportKey(options.organizationId, fileName);
  await storage.put(objectKey, createReadStream(options.file));
  try {
    const payload: ProcessorImportPayload = { organizationId: options.organizationId, objectKey, fileName, review: options.review ?? false };
    // Queued as an operator's job is: on the organization's long-job queue, its key checked.
    const { rows: [job] } = await db.query<{ id: string }>(
      "select app_private.enqueue_operator_job($1, $2, $3::jsonb)::text as id", [PROCESSOR_IMPORT_TASK, options.organizationId, JSON.stringify(payload)]);
    return { jobId: job.id, objectKey };
  } catch (e) {
    await storage.delete(objectKey).catch(() => {});
    throw e;
  }
}
