import type { JobRow, SoakContext } from "../harness.js";
import { gql } from "../http.js";
import type { Tenant } from "../tenants.js";

/** The receipt-source operations an owner runs (by JWT), as the attacker B runs them. */
export interface SourceState { id: string; status: string; lastError: string | null; lastScannedAt: string | null }

/** How a connect that got no answer at all (the server gone, a timeout) is told from a refusal. */
export const NO_ANSWER = "no answer";

/** Refused by the service with a reason (not merely unanswered). */
export const refusedWithReason = (r: { id?: string; error?: string }) => !r.id && Boolean(r.error) && !r.error!.startsWith(NO_ANSWER);

/** A connect's outcome in words. */
export const describeConnect = (r: { id?: string; error?: string; ms: number }) =>
  r.id ? `connected in ${r.ms} ms` : r.error!.startsWith(NO_ANSWER) ? `${r.error} (after ${r.ms} ms)` : `refused in ${r.ms} ms: ${r.error}`;

const ask = (ctx: SoakContext, org: Tenant, query: string, variables: Record<string, unknown>, timeoutMs = 60_000) =>
  gql(ctx.url, org.ownerAuth, query, { o: org.id, ...variables }, { organizationId: org.id, timeoutMs });

/** A connect mutation, timed: the new source's id, or why there is none (a refusal, or no answer). */
async function connect(ctx: SoakContext, org: Tenant, field: string, source: string, mutation: string, variables: Record<string, unknown>,
    timeoutMs?: number): Promise<{ id?: string; error?: string; ms: number }> {
  const started = Date.now();
  try {
    const r = (await ask(ctx, org, mutation, variables, timeoutMs))[field];
    return r.success ? { id: r[source].id, ms: Date.now() - started } : { error: r.error, ms: Date.now() - started };
  } catch (e) {
    return { error: `${NO_ANSWER}: ${(e as Error).message}`, ms: Date.now() - started };
  }
}

export const connectMailbox = (ctx: SoakContext, org: Tenant, port: number, username: string) =>
  connect(ctx, org, "connectMailbox", "mailbox", `mutation($o: UUID!, $port: Int!, $u: String!) { connectMailbox(organizationId: $o, host: "127.0.0.1", port: $port, secure: false,
      username: $u, password: "hostile", folder: "INBOX") { success error mailbox { id } } }`, { port, u: username });

export async function syncMailbox(ctx: SoakContext, org: Tenant, id: string): Promise<string> {
  const d = await ask(ctx, org, `mutation($o: UUID!, $m: UUID!) { syncMailbox(organizationId: $o, mailboxId: $m) { success error scanId } }`, { m: id });
  return d.syncMailbox.success ? `scan ${d.syncMailbox.scanId} queued` : `refused: ${d.syncMailbox.error}`;
}

export async function disconnectMailbox(ctx: SoakContext, org: Tenant, id: string): Promise<string> {
  const d = await ask(ctx, org, `mutation($o: UUID!, $m: UUID!) { disconnectMailbox(organizationId: $o, mailboxId: $m) { success error } }`, { m: id });
  return d.disconnectMailbox.success ? "disconnected" : `refused: ${d.disconnectMailbox.error}`;
}

export async function mailboxes(ctx: SoakContext, org: Tenant): Promise<SourceState[]> {
  const d = await ask(ctx, org, `query($o: UUID!) { listMailboxes(organizationId: $o) { id status lastError lastScannedAt } }`, {}, 15_000);
  return d.listMailboxes;
}

export const connectCloudDrive = (ctx: SoakContext, org: Tenant, endpoint: string, bucket: string) =>
  connect(ctx, org, "connectCloudDrive", "cloudDrive", `mutation($o: UUID!, $e: String!, $b: String!) { connectCloudDrive(organizationId: $o, endpoint: $e, bucket: $b, prefix: "",
      accessKeyId: "AKIASOAK", secretAccessKey: "hostile-secret", region: "us-east-1") { success error cloudDrive { id } } }`, { e: endpoint, b: bucket }, 120_000);

export async function syncCloudDrive(ctx: SoakContext, org: Tenant, id: string): Promise<string> {
  const d = await ask(ctx, org, `mutation($o: UUID!, $c: UUID!) { syncCloudDrive(organizationId: $o, cloudDriveId: $c) { success error scanId } }`, { c: id });
  return d.syncCloudDrive.success ? `scan ${d.syncCloudDrive.scanId} queued` : `refused: ${d.syncCloudDrive.error}`;
}

export async function cloudDrives(ctx: SoakContext, org: Tenant): Promise<SourceState[]> {
  const d = await ask(ctx, org, `query($o: UUID!) { listCloudDrives(organizationId: $o) { id status lastError lastScannedAt } }`, {}, 15_000);
  return d.listCloudDrives;
}

/** The jobs of these tasks, in a line each: what a reader of the figures needs of them. */
export function describeJobs(jobs: JobRow[], tasks: string[]): string[] {
  return jobs.filter((j) => tasks.includes(j.task)).map((j) =>
    `${j.task} #${j.id}: attempt ${j.attempts}/${j.maxAttempts}, ${j.lockedBy ? `locked by ${j.lockedBy} since ${iso(j.lockedAt)}` : "not locked"}`
    + (j.lastError ? `, last error: ${j.lastError.slice(0, 160)}` : ""));
}

const iso = (v: unknown) => (v instanceof Date ? v.toISOString().slice(11, 19) : String(v));

/** Keeps the latest answer of `read` every `everyMs` until the run ends (a frozen server leaves the last one). */
export function keepReading<T>(ctx: SoakContext, read: () => Promise<T>, everyMs = 10_000): { latest(): T | undefined; done: Promise<void> } {
  let latest: T | undefined;
  const done = (async () => {
    while (!ctx.signal.aborted) {
      latest = await read().catch(() => latest);
      await ctx.sleep(everyMs);
    }
  })();
  return { latest: () => latest, done };
}
