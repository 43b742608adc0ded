import { startEndlessS3 } from "../../../test/helpers/fakes/s3.js";
import { startSwitchingProxy } from "../../../test/helpers/fakes/switching-proxy.js";
import type { AttackResult, Scenario } from "../harness.js";
import { cloudDrives, connectCloudDrive, describeConnect, describeJobs, keepReading, refusedWithReason, syncCloudDrive } from "./sources.js";

/**
 * Issue 32, item 3: B's cloud drive on an S3-compatible endpoint whose ListObjectsV2 answer never
 * ends. Before: the AWS SDK buffered it; one connection test added ~1 GB, four in parallel
 * 3.16 GB, a scan 6 GB after 5 minutes, and the memory stayed. First four connection tests at
 * once against the endless listing; then a drive that passed its connection test (a store that
 * behaved while checked) is switched to the endless listing and scanned.
 */
export const s3Endless: Scenario = {
  name: "s3-endless",
  title: "item 3: a tenant's S3 endpoint whose listing never ends: 4 connection tests at once, then a scan",
  defaultSeconds: 120,
  async attack(ctx): Promise<AttackResult> {
    const b = ctx.attacker;
    const endless = await startEndlessS3({ listing: "endless" });
    const tame = await startEndlessS3({ listing: "endless-pages" });
    const proxy = await startSwitchingProxy(tame.port);
    ctx.onCleanup(() => Promise.all([proxy.close(), endless.close(), tame.close()]));
    const figures: Record<string, unknown> = {};

    ctx.phase("4 connection tests");
    const tests = await Promise.all([1, 2, 3, 4].map((n) => connectCloudDrive(ctx, b, endless.endpoint, `endless-${n}`)));
    figures.connectionTests = tests.map(describeConnect);
    figures.endlessListingSentMb = Math.round(endless.bytesSent() / 2 ** 20);
    if (ctx.signal.aborted) return { figures, checks: { connectionTestsRefused: tests.every(refusedWithReason) } };

    ctx.phase("scan");
    const drive = await connectCloudDrive(ctx, b, `http://127.0.0.1:${proxy.port}`, "receipts");
    figures.scannedDrive = drive.id ? `connected in ${drive.ms} ms (a listing that ends), then switched to the endless one` : `refused: ${drive.error}`;
    let last: Awaited<ReturnType<typeof cloudDrives>>[number] | undefined;
    if (drive.id) {
      proxy.switchTo(endless.port);
      figures.sync = await syncCloudDrive(ctx, b, drive.id);
      const state = keepReading(ctx, async () => (await cloudDrives(ctx, b)).find((d) => d.id === drive.id));
      await state.done;
      last = state.latest();
      figures.driveAtEnd = last ? `${last.status}${last.lastError ? `: ${last.lastError}` : ""}` : "never read";
    }
    figures.endlessListingSentMbInAll = Math.round(endless.bytesSent() / 2 ** 20);
    figures.scanJobs = await ctx.jobs().then((j) => describeJobs(j, ["scan_cloud_drive"]), (e: Error) => [e.message]);
    return {
      figures,
      checks: {
        connectionTestsRefused: tests.every(refusedWithReason),
        scanRefusedWithReason: drive.id ? last?.status === "error" && Boolean(last.lastError) : null,
      },
    };
  },
};
