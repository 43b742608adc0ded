import { extractText, getDocumentProxy, renderPageAsImage } from "unpdf";

/** Scanned PDFs are OCR'd page by page; a receipt rarely runs past its first pages. */
export const MAX_OCR_PAGES = 3;

/** A PDF text layer shorter than this is taken as absent (scanners add a stray space or two). */
const MIN_TEXT_LAYER = 20;

export type PdfProxy = Awaited<ReturnType<typeof getDocumentProxy>>;

export async function openPdf(bytes: Buffer): Promise<PdfProxy> {
  try {
    // pdf.js takes ownership of the array it is given: hand it a copy.
    return await getDocumentProxy(new Uint8Array(bytes));
  } catch (error) {
    throw new Error(`The PDF could not be read: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** The PDF's own text, or null when it has no text layer worth the name (a scan). */
export async function pdfTextLayer(pdf: PdfProxy): Promise<string | null> {
  const { text } = await extractText(pdf, { mergePages: true });
  return text.replace(/\s+/g, "").length >= MIN_TEXT_LAYER ? text : null;
}

/** Rendered pages are about this wide: body text then has a letter height OCR reads well,
 * and a poster-sized page does not become a gigapixel image. */
const RENDER_WIDTH = 1700;

/** The first pages rendered as PNG, at a scale where body text is large enough for OCR. */
export async function pdfPageImages(pdf: PdfProxy): Promise<Buffer[]> {
  const pages: Buffer[] = [];
  for (let page = 1; page <= Math.min(pdf.numPages, MAX_OCR_PAGES); page++) {
    const { width } = (await pdf.getPage(page)).getViewport({ scale: 1 });
    const png = await renderPageAsImage(pdf, page, {
      canvasImport: () => import("@napi-rs/canvas"),
      scale: Math.min(4, RENDER_WIDTH / Math.max(width, 1)),
    });
    pages.push(Buffer.from(png));
  }
  return pages;
}
