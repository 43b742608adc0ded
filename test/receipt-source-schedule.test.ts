import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../src/config.js";
import { sealedBox, secretsKeyOf } from "../src/secrets/sealed-box.js";
import { crontab } from "../worker/tasks.js";
import { createTenant, dataOf, errorOf, startHarness, type Harness, type Tenant } from "./helpers/harness.js";

/**
 * When sources are scanned: each due source is queued once, on its organization's long-job queue
 * (one scan of the organization at a time); a failing one waits longer after each failure; scans
 * already queued are not queued twice.
 * The connections themselves are tested against real servers in mailboxes.test.ts and
 * cloud-drives.test.ts.
 */
let h: Harness;
let t: Tenant;
beforeAll(async () => {
  h = await startHarness();
  t = await createTenant(h);
});
afterAll(async () => {
  await h?.close();
});

const addSource = async (org: string, settings: Record<string, unknown>) => (await h.owner.query(
  `insert into app_public.receipt_sources (organization_id, kind, settings, secret_sealed, next_scan_at)
   values ($1, 'mailbox', $2, $3, now() - interval '1 second') returning id`,
  [org, settings, sealedBox(h.config.secretsKey).seal("pw", "unused")])).rows[0].id as string;
const scanJobs = async (id: string) => (await h.owner.query(
  `select j.id::text, q.queue_name, j.key from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
     left join graphile_worker._private_job_queues q on q.id = j.job_queue_id
    where t.identifier = 'scan_mailbox' and j.payload->>'receiptSourceId' = $1`, [id])).rows;
const queueDue = async () => (await h.owner.query(
  "select app_private.queue_due_source_scans(interval '15 minutes', interval '15 minutes') as n")).rows[0].n as number;

describe("the scan schedule", () => {
  it("queues each due source once, on its organization's queue, and not again until the interval has passed", async () => {
    const id = await addSource(t.organizationId, { host: "mail.example.com", port: 993, secure: true, username: "a", folder: "INBOX" });
    expect(await queueDue()).toBeGreaterThanOrEqual(1);
    expect(await scanJobs(id)).toEqual([{ id: expect.any(String), queue_name: `long:${t.organizationId}`, key: `scan:${id}` }]);
    expect(await queueDue()).toBe(0);
    const { rows: [s] } = await h.owner.query("select next_scan_at - now() > interval '14 minutes' as later from app_public.receipt_sources where id = $1", [id]);
    expect(s.later).toBe(true);
    // A scan asked for while one waits is that one: the same id.
    const sync = () => h.gql(`mutation($o: UUID!, $m: UUID!) { syncMailbox(organizationId: $o, mailboxId: $m) { success error scanId } }`,
      { o: t.organizationId, m: id }, t.ownerJwt);
    const first = dataOf(await sync(), "syncMailbox");
    expect(first).toEqual({ success: true, error: null, scanId: (await scanJobs(id))[0].id });
    expect(dataOf(await sync(), "syncMailbox").scanId).toBe(first.scanId);
    expect(await scanJobs(id)).toHaveLength(1);
  });

  it("waits 1, 2, 4 … minutes after consecutive failures (at most 6 hours), and an interval after a success", async () => {
    const id = await addSource(t.organizationId, { host: "mail2.example.com", port: 993, secure: true, username: "a", folder: "INBOX" });
    const finish = async (error: string | null, more = false) => {
      await h.owner.query("select app_private.finish_source_scan($1, $2, interval '15 minutes', $3)", [id, error, more]);
      return (await h.owner.query(`select status, last_error, failures, round(extract(epoch from next_scan_at - now()) / 60)::int as minutes
         from app_public.receipt_sources where id = $1`, [id])).rows[0];
    };
    expect(await finish("refused")).toEqual({ status: "error", last_error: "refused", failures: 1, minutes: 1 });
    expect(await finish("refused")).toMatchObject({ failures: 2, minutes: 2 });
    expect(await finish("refused")).toMatchObject({ failures: 3, minutes: 4 });
    await h.owner.query("update app_public.receipt_sources set failures = 30 where id = $1", [id]);
    expect(await finish("refused")).toMatchObject({ failures: 31, minutes: 360 });
    expect(await finish(null)).toEqual({ status: "connected", last_error: null, failures: 0, minutes: 15 });
    expect(await finish(null, true)).toMatchObject({ minutes: 0 });
  });

  it("keeps each organization's sources to itself, and to its owners and admins", async () => {
    const other = await createTenant(h);
    const id = await addSource(other.organizationId, { host: "mail3.example.com", port: 993, secure: true, username: "b", folder: "INBOX" });
    expect(dataOf(await h.gql(`query($o: UUID!) { listMailboxes(organizationId: $o) { id } }`, { o: t.organizationId }, t.ownerJwt), "listMailboxes")
      .map((m: { id: string }) => m.id)).not.toContain(id);
    expect(dataOf(await h.gql(`mutation($o: UUID!, $m: UUID!) { syncMailbox(organizationId: $o, mailboxId: $m) { success error } }`,
      { o: t.organizationId, m: id }, t.ownerJwt), "syncMailbox")).toEqual({ success: false, error: "Mailbox not found." });
    expect(errorOf(await h.gql(`query($o: UUID!) { listMailboxes(organizationId: $o) { id } }`, { o: other.organizationId }, t.ownerJwt)).message)
      .toBe("Not A Member Of This Organization.");
    expect(errorOf(await h.gql(`query($o: UUID!) { listCloudDrives(organizationId: $o) { id } }`, { o: t.organizationId }, t.apiKey)).message)
      .toBe("API Keys Cannot Perform Admin Operations.");
  });

  it("tells a scan that its source was disconnected meanwhile, and records nothing for it", async () => {
    const id = await addSource(t.organizationId, { host: "mail4.example.com", port: 993, secure: true, username: "d", folder: "INBOX" });
    const advance = async () => (await h.owner.query("select app_private.advance_source_cursor($1, '{\"lastUid\": 7}') as ok", [id])).rows[0].ok;
    expect(await advance()).toBe(true);
    await h.owner.query("delete from app_public.receipt_sources where id = $1", [id]);
    expect(await advance()).toBe(false);
    const { rows: [{ r }] } = await h.owner.query(
      "select app_private.receive_cloud_drive_object($1, $2, 'scans/a.pdf', 'etag', $3, 'a.pdf', 'application/pdf', 10, repeat('a', 64)) as r",
      [t.organizationId, id, `${t.organizationId}/cloud-drive/x/a.pdf`]);
    expect(r).toBeNull();
    expect((await h.owner.query("select count(*)::int n from app_public.receipts where object_key like '%/cloud-drive/x/%'")).rows[0].n).toBe(0);
  });

  it("runs the queueing each minute from the worker's crontab", () => {
    expect(crontab.split("\n")).toContain("* * * * * queue_source_scans ?max=1");
  });
});

describe("SECRETS_KEY and the scan intervals", () => {
  it("takes a 32-byte key as hex or base64, refusing anything else", () => {
    const hex = "ab".repeat(32);
    expect(secretsKeyOf(hex)).toEqual(Buffer.alloc(32, 0xab));
    expect(secretsKeyOf(Buffer.alloc(32, 7).toString("base64"))).toEqual(Buffer.alloc(32, 7));
    expect(() => secretsKeyOf("too-short")).toThrow("SECRETS_KEY must be 32 bytes: 64 hex digits or base64.");
    const box = sealedBox(Buffer.alloc(32, 1));
    const sealed = box.seal("hunter2", "mailbox:x");
    expect(sealed).not.toContain("hunter2");
    expect(box.seal("hunter2", "mailbox:x")).not.toBe(sealed); // a fresh IV each time
    expect(box.open(sealed, "mailbox:x")).toBe("hunter2");
    expect(() => sealedBox(Buffer.alloc(32, 2)).open(sealed, "mailbox:x")).toThrow(/SECRETS_KEY differs/);
  });

  it("reads MAILBOX_SCAN_INTERVAL and CLOUD_DRIVE_SCAN_INTERVAL as durations of at least a minute", () => {
    const env = { DATA_DIR: h.config.dataDir, SECRETS_KEY: "cd".repeat(32) };
    expect(loadConfig(env)).toMatchObject({ mailboxScanIntervalSeconds: 900, cloudDriveScanIntervalSeconds: 900 });
    expect(loadConfig({ ...env, MAILBOX_SCAN_INTERVAL: "5" })).toMatchObject({ mailboxScanIntervalSeconds: 300, cloudDriveScanIntervalSeconds: 300 });
    expect(loadConfig({ ...env, MAILBOX_SCAN_INTERVAL: "1h", CLOUD_DRIVE_SCAN_INTERVAL: "120s" }))
      .toMatchObject({ mailboxScanIntervalSeconds: 3600, cloudDriveScanIntervalSeconds: 120 });
    expect(() => loadConfig({ ...env, MAILBOX_SCAN_INTERVAL: "30s" })).toThrow(/MAILBOX_SCAN_INTERVAL must be a duration of at least a minute/);
    expect(() => loadConfig({ ...env, SECRETS_KEY: "nope" })).toThrow(/SECRETS_KEY must be 32 bytes/);
  });
});
