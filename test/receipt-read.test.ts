import { createRequire } from "node:module";
import { PDFDocument, StandardFonts } from "pdf-lib";
import sharp from "sharp";
import { afterAll, describe, expect, it } from "vitest";
import { closeOcr, documentText, extractReceipt } from "../src/receipts/extraction/index.js";
import { paddleAbandonedWork, recogniseWithPaddle } from "../src/receipts/extraction/paddle-ocr.js";

const require = createRequire(import.meta.url);
// The font ships in an npm package: CI machines may have no system fonts at all.
const fontfile = require.resolve("dejavu-fonts-ttf/ttf/DejaVuSansMono.ttf");

const RECEIPT_LINES = [
  "NORTHWIND GROCERY LTD",
  "221 Baker Street",
  "Date: 14/03/2023 13:45",
  "Bread          3.20",
  "Milk           2.10",
  "Subtotal       5.30",
  "GST 5%         0.27",
  "TOTAL          5.57",
  "Cash          10.00",
  "Change         4.43",
];

/** A receipt photographed well: black text on white at a print-like resolution. */
async function receiptPng(lines: string[]): Promise<Buffer> {
  // sharp renders white text on a transparent ground: on black, negated, it is ink on paper.
  const text = await sharp({ text: { text: lines.join("\n"), fontfile, font: "DejaVu Sans Mono", dpi: 220 } })
    .flatten({ background: "#000000" })
    .negate()
    .png()
    .toBuffer();
  return sharp(text)
    .extend({ top: 40, bottom: 40, left: 40, right: 40, background: "#ffffff" })
    .png()
    .toBuffer();
}

async function receiptPdf(lines: string[]): Promise<Buffer> {
  const pdf = await PDFDocument.create();
  const page = pdf.addPage([300, 500]);
  const font = await pdf.embedFont(StandardFonts.Courier);
  lines.forEach((line, i) => page.drawText(line, { x: 20, y: 470 - i * 16, size: 10, font }));
  return Buffer.from(await pdf.save());
}

afterAll(async () => {
  await closeOcr();
});

describe("reading receipt documents", () => {
  it("OCRs an image to the right total and date", async () => {
    const result = await extractReceipt({ bytes: await receiptPng(RECEIPT_LINES), contentType: "image/png", dateOrder: "DMY" });
    expect(result.method).toBe("ocr");
    expect(result.amount).toBe("5.57");
    expect(result.dateReadings).toEqual(["2023-03-14"]);
    expect(result.vendorName).toBe("NORTHWIND GROCERY LTD");
  });

  it("reads a JPEG and a WebP the same way", async () => {
    const png = await receiptPng(RECEIPT_LINES);
    for (const [contentType, bytes] of [
      ["image/jpeg", await sharp(png).jpeg({ quality: 85 }).toBuffer()],
      ["image/webp", await sharp(png).webp({ quality: 85 }).toBuffer()],
    ] as const) {
      const result = await extractReceipt({ bytes, contentType, dateOrder: "DMY" });
      expect(result.amount, contentType).toBe("5.57");
    }
  });

  it("takes a PDF's own text layer", async () => {
    const result = await extractReceipt({ bytes: await receiptPdf(RECEIPT_LINES), contentType: "application/pdf", dateOrder: "auto" });
    expect(result.method).toBe("pdf-text");
    expect(result.amount).toBe("5.57");
    expect(result.dateReadings).toEqual(["2023-03-14"]);
  });

  it("OCRs a PDF without a text layer (a scan)", async () => {
    const pdf = await PDFDocument.create();
    const image = await pdf.embedPng(await receiptPng(RECEIPT_LINES));
    const page = pdf.addPage([image.width / 2, image.height / 2]);
    page.drawImage(image, { x: 0, y: 0, width: image.width / 2, height: image.height / 2 });
    const result = await extractReceipt({ bytes: Buffer.from(await pdf.save()), contentType: "application/pdf", dateOrder: "DMY" });
    expect(result.method).toBe("pdf-ocr");
    expect(result.amount).toBe("5.57");
  });

  it("reads plain text as it is", async () => {
    const text = RECEIPT_LINES.join("\n");
    const result = await extractReceipt({ bytes: Buffer.from(text), contentType: "text/plain; charset=utf-8", dateOrder: "MDY" });
    expect(result).toMatchObject({ method: "text", text, amount: "5.57", dateReadings: ["2023-03-14"] });
  });

  it("caps the text it keeps", async () => {
    const long = `${RECEIPT_LINES.join("\n")}\n${"x".repeat(200_000)}`;
    const result = await extractReceipt({ bytes: Buffer.from(long), contentType: "text/plain", dateOrder: "auto" });
    expect(result.text.length).toBe(100_000);
  });

  it("fails permanently on a corrupt PDF, image or HEIC", async () => {
    // No HEIC encoder is installed, so a real HEIC cannot be made here; a broken one still
    // exercises the decoding path and its error.
    for (const [contentType, bytes] of [
      ["application/pdf", Buffer.from("%PDF-1.7\nthis is not really a pdf")],
      ["image/png", Buffer.from("\x89PNG\r\n\x1a\nbroken")],
      ["image/heic", Buffer.from("not a heic file at all")],
    ] as const) {
      const failure = await extractReceipt({ bytes, contentType, dateOrder: "auto" }).catch((error: unknown) => error);
      expect(failure, contentType).toBeInstanceOf(Error);
      expect((failure as Error & { permanent?: boolean }).permanent, contentType).toBe(true);
    }
  });

  it("refuses an unsupported type permanently", async () => {
    const failure = await documentText(Buffer.from("GIF89a"), "image/gif").catch((error: unknown) => error);
    expect((failure as Error & { permanent?: boolean }).permanent).toBe(true);
  });

  it("refuses an image over the pixel limit", async () => {
    const huge = await sharp({ create: { width: 8000, height: 6000, channels: 3, background: "#ffffff" } }).png().toBuffer();
    const failure = await documentText(huge, "image/png").catch((error: unknown) => error);
    expect((failure as Error).message).toMatch(/megapixels/);
    expect((failure as Error & { permanent?: boolean }).permanent).toBe(true);
  });

  it("reads a tall, thin image within the paddle engine's bounds (shrunk to fit, never refused)", async () => {
    const tall = await sharp({ create: { width: 900, height: 9000, channels: 3, background: "#ffffff" } })
      .composite([{ input: await receiptPng(RECEIPT_LINES), left: 0, top: 0 }]).png().toBuffer();
    const result = await extractReceipt({ bytes: tall, contentType: "image/png", dateOrder: "DMY" });
    expect(result.amount).toBe("5.57");
  });

  // Last: it leaves this process's paddle engine marked as busy with abandoned work.
  it("a PaddleOCR reading past its time is given up for good, and its process asks to be replaced", async () => {
    expect(paddleAbandonedWork()).toBe(false);
    const failure = await recogniseWithPaddle(await receiptPng(RECEIPT_LINES), 1).catch((error: unknown) => error);
    expect(failure).toMatchObject({ permanent: true, message: expect.stringMatching(/took longer than/) });
    expect(paddleAbandonedWork()).toBe(true);
  });
});
