import { deflateSync } from "node:zlib";
import {
  PDFDocument, PDFName, StandardFonts, concatTransformationMatrix, drawObject, popGraphicsState, pushGraphicsState,
} from "pdf-lib";
import { afterAll, describe, expect, it } from "vitest";
import { closeSandbox, extractInSandbox, sandboxPid } from "../src/receipts/sandbox/index.js";

afterAll(() => closeSandbox());

async function receiptPdf(): Promise<Buffer> {
  const pdf = await PDFDocument.create();
  const page = pdf.addPage([300, 400]);
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  ["Corner Bakery", "Date: 2024-03-05", "Croissant 3.20", "Coffee 4.10", "TOTAL 7.30"]
    .forEach((line, i) => page.drawText(line, { x: 20, y: 360 - i * 18, size: 11, font }));
  return Buffer.from(await pdf.save());
}

/** A small PDF of `pages` pages, each showing one side×side grey image (Flate-compressed, no text):
 * pdf.js decodes and paints it synchronously. The reviewer's bomb was one 10000×10000 page (98 KB). */
async function bombPdf(side = 4_400, pages = 3): Promise<Buffer> {
  const pdf = await PDFDocument.create();
  const image = pdf.context.register(pdf.context.stream(deflateSync(Buffer.alloc(side * side, 0x80), { level: 9 }), {
    Type: "XObject", Subtype: "Image", Width: side, Height: side,
    ColorSpace: "DeviceGray", BitsPerComponent: 8, Filter: "FlateDecode",
  }));
  for (let i = 0; i < pages; i++) {
    const page = pdf.addPage([612, 792]);
    const name = page.node.newXObject("Im", image);
    page.pushOperators(pushGraphicsState(), concatTransformationMatrix(612, 0, 0, 792, 0, 0), drawObject(name), popGraphicsState());
  }
  return Buffer.from(await pdf.save());
}

/** Watches this process's event loop: the largest gap between 50 ms ticks. */
function lagMonitor() {
  let last = performance.now();
  let worst = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last - 50);
    last = now;
  }, 50);
  return { stop: () => { clearInterval(timer); return worst; } };
}

describe("receipt extraction sandbox", () => {
  it("reads a PDF with a text layer and a plain-text receipt", async () => {
    const pdf = await extractInSandbox({ bytes: await receiptPdf(), contentType: "application/pdf", dateOrder: "auto" });
    expect(pdf).toMatchObject({ method: "pdf-text", vendorName: "Corner Bakery", amount: "7.30", dateReadings: ["2024-03-05"] });

    const text = await extractInSandbox({
      bytes: Buffer.from("ACME Hardware\n05/03/2024\nTotal: $12.30\n"), contentType: "text/plain", dateOrder: "DMY",
    });
    expect(text).toMatchObject({ method: "text", vendorName: "ACME Hardware", amount: "12.30", dateReadings: ["2024-03-05"] });
  });

  it("passes the reader's own refusals on, permanent ones as permanent", async () => {
    const error = await extractInSandbox({ bytes: Buffer.from("PK"), contentType: "application/zip", dateOrder: "auto" })
      .then(() => undefined, (e: unknown) => e as Error & { permanent?: boolean });
    expect(error?.message).toMatch(/cannot be read/);
    expect(error?.permanent).toBe(true);
  });

  it("does not decode a gigapixel image a tiny PDF declares", async () => {
    const started = Date.now();
    const read = await extractInSandbox({ bytes: await bombPdf(10_000, 1), contentType: "application/pdf", dateOrder: "auto" });
    expect(read).toMatchObject({ vendorName: null, amount: null, dateReadings: [] });
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it("refuses a PDF that takes too long at the deadline without blocking this process, then reads the next document", async () => {
    // Three 19-megapixel images (under the decoding limit): about 27 s of work for a 20 KB file.
    const bomb = await bombPdf();
    expect(bomb.length).toBeLessThan(200_000);
    // A reader already running: the deadline measures the document alone.
    await extractInSandbox({ bytes: Buffer.from("warm up"), contentType: "text/plain", dateOrder: "auto" });
    const firstPid = sandboxPid();

    const monitor = lagMonitor();
    const started = Date.now();
    const error = await extractInSandbox({ bytes: bomb, contentType: "application/pdf", dateOrder: "auto" }, { timeoutMs: 3_000 })
      .then(() => undefined, (e: unknown) => e as Error & { permanent?: boolean });
    const took = Date.now() - started;
    const lag = monitor.stop();
    console.log(`bomb refused after ${took} ms; worst event-loop lag ${Math.round(lag)} ms`);

    expect(error?.message).toBe("Reading the document took longer than 3 s.");
    expect(error?.permanent).toBe(true);
    expect(took).toBeGreaterThanOrEqual(2_900);
    expect(took).toBeLessThan(5_000);
    expect(lag).toBeLessThan(500);
    expect(sandboxPid()).toBeUndefined(); // killed

    const next = await extractInSandbox({ bytes: Buffer.from("Next Shop\n2024-01-02\nTOTAL 5.00\n"), contentType: "text/plain", dateOrder: "auto" });
    expect(next).toMatchObject({ vendorName: "Next Shop", amount: "5.00" });
    expect(sandboxPid()).toBeDefined();
    expect(sandboxPid()).not.toBe(firstPid);
  });

  it("refuses the document in flight when the reader dies, and replaces the reader", async () => {
    const bomb = await bombPdf();
    await extractInSandbox({ bytes: Buffer.from("warm up"), contentType: "text/plain", dateOrder: "auto" });
    const pid = sandboxPid()!;
    const pending = extractInSandbox({ bytes: bomb, contentType: "application/pdf", dateOrder: "auto" }, { timeoutMs: 30_000 })
      .then(() => undefined, (e: unknown) => e as Error & { permanent?: boolean });
    // Another request meanwhile is read by the second reader.
    const queued = extractInSandbox({ bytes: Buffer.from("Queued Co\n2024-02-03\nTOTAL 9.99\n"), contentType: "text/plain", dateOrder: "auto" });
    await new Promise((resolve) => setTimeout(resolve, 500));
    process.kill(pid, "SIGKILL"); // as the kernel's OOM killer, or V8's heap limit, would
    const error = await pending;
    expect(error?.message).toBe("The document could not be read: the reader ran out of memory or crashed.");
    expect(error?.permanent).toBe(true);
    await expect(queued).resolves.toMatchObject({ vendorName: "Queued Co", amount: "9.99" });
    await extractInSandbox({ bytes: Buffer.from("after"), contentType: "text/plain", dateOrder: "auto" });
    expect(sandboxPid()).toBeDefined(); // the killed reader's slot has a new one
    expect(sandboxPid()).not.toBe(pid);
  });

  it("reads another document on the second reader while a slow one holds the first", async () => {
    const slow = extractInSandbox({ bytes: await bombPdf(), contentType: "application/pdf", dateOrder: "auto" }, { timeoutMs: 5_000 })
      .then(() => undefined, (e: unknown) => e as Error);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const started = Date.now();
    await expect(extractInSandbox({ bytes: Buffer.from("Other Org Ltd\n2024-02-03\nTOTAL 4.50\n"), contentType: "text/plain", dateOrder: "auto" }))
      .resolves.toMatchObject({ vendorName: "Other Org Ltd", amount: "4.50" });
    expect(Date.now() - started).toBeLessThan(4_000); // a reader's start, not the slow document's 5 s
    expect((await slow)?.message).toBe("Reading the document took longer than 5 s.");
  });

  it("closes the readers, and starts another on the next request", async () => {
    await extractInSandbox({ bytes: Buffer.from("warm up"), contentType: "text/plain", dateOrder: "auto" });
    expect(sandboxPid()).toBeDefined();
    await closeSandbox();
    expect(sandboxPid()).toBeUndefined();
    await expect(extractInSandbox({ bytes: Buffer.from("Again Ltd\nTOTAL 1.00\n"), contentType: "text/plain", dateOrder: "auto" }))
      .resolves.toMatchObject({ vendorName: "Again Ltd", amount: "1.00" });
  });
});
