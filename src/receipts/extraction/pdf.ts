import { getDocumentProxy, renderPageAsImage } from "unpdf";
import { MAX_IMAGE_PIXELS } from "./images.js";

/** Images inside a PDF past this many pixels are not decoded: a page scanned at 300 dpi is about
 * 8.4 megapixels, and a 36 KB file declaring three 36-megapixel images kept a reader busy 67 s. */
export const MAX_PDF_IMAGE_PIXELS = 20_000_000;

/** Scanned PDFs are OCR'd page by page; a receipt rarely runs past its first pages. */
export const MAX_OCR_PAGES = 3;

/** A PDF text layer shorter than this is taken as absent (scanners add a stray space or two). */
const MIN_TEXT_LAYER = 20;

export type PdfProxy = Awaited<ReturnType<typeof getDocumentProxy>>;

export async function openPdf(bytes: Buffer): Promise<PdfProxy> {
  try {
    // pdf.js takes ownership of the array it is given: hand it a copy. Oversized images are not
    // decoded (a tiny file can declare a gigapixel one).
    return await getDocumentProxy(new Uint8Array(bytes), { maxImageSize: MAX_PDF_IMAGE_PIXELS });
  } catch (error) {
    throw new Error(`The PDF could not be read: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** A receipt's text is on its first pages; a file of thousands of pages is not read to the end. */
export const MAX_TEXT_PAGES = 20;

/** The PDF's own text (its first pages), or null when it has no text layer worth the name (a scan). */
export async function pdfTextLayer(pdf: PdfProxy): Promise<string | null> {
  const pages: string[] = [];
  for (let n = 1; n <= Math.min(pdf.numPages, MAX_TEXT_PAGES); n++) {
    const { items } = await (await pdf.getPage(n)).getTextContent();
    pages.push(items.map((item) => ("str" in item ? item.str + (item.hasEOL ? "\n" : "") : "")).join(""));
  }
  const text = pages.join("\n");
  return text.replace(/\s+/g, "").length >= MIN_TEXT_LAYER ? text : null;
}

/** Rendered pages are about this wide: body text then has a letter height OCR reads well,
 * and a poster-sized page does not become a gigapixel image. */
const RENDER_WIDTH = 1700;

/** The first pages rendered as PNG, at a scale where body text is large enough for OCR. */
export async function pdfPageImages(pdf: PdfProxy): Promise<Buffer[]> {
  const pages: Buffer[] = [];
  for (let page = 1; page <= Math.min(pdf.numPages, MAX_OCR_PAGES); page++) {
    const { width, height } = (await pdf.getPage(page)).getViewport({ scale: 1 });
    const scale = Math.min(4, RENDER_WIDTH / Math.max(width, 1));
    // A page far taller than wide would still render to a huge canvas: such a page is skipped.
    if (width * height * scale * scale > MAX_IMAGE_PIXELS) continue;
    const png = await renderPageAsImage(pdf, page, { canvasImport: () => import("@napi-rs/canvas"), scale });
    pages.push(Buffer.from(png));
  }
  return pages;
}
