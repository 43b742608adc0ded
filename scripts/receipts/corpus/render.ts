/** Renders receipt lines to PNG (sharp text + seeded noise) and PDF (pdf-lib, standard fonts). */
import { writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { PDFDocument, StandardFonts, rgb, type PDFFont } from "pdf-lib";
import sharp from "sharp";
import { toText, type Line } from "./layout.ts";
import type { Rng } from "./rng.ts";

const require = createRequire(import.meta.url);

/** DejaVu TTFs from the npm package (never system fonts); `font` is the Pango family name. */
const FONTS = [
  { file: "DejaVuSansMono.ttf", font: "DejaVu Sans Mono", weight: 5 },
  { file: "DejaVuSansMono-Bold.ttf", font: "DejaVu Sans Mono Bold", weight: 1 },
  { file: "DejaVuSans.ttf", font: "DejaVu Sans", weight: 1.5 },
  { file: "DejaVuSansCondensed.ttf", font: "DejaVu Sans Condensed", weight: 1.5 },
  { file: "DejaVuSerif.ttf", font: "DejaVu Serif", weight: 1 },
] as const;

function fontPath(file: string): string {
  return require.resolve(`dejavu-fonts-ttf/ttf/${file}`);
}

function escapeMarkup(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

export interface PngStyle {
  font: string;
  dpi: number;
  angle: number;
  blur: number;
  speckle: number;
}

/** Draws `text` (already laid out, see `toText`). */
export async function renderPng(laidOut: string, rng: Rng, file: string): Promise<PngStyle> {
  const f = rng.weighted(FONTS.map((x) => [x, x.weight] as const));
  const text = laidOut.replace(/\n+$/, "");
  const dpi = rng.int(105, 170);
  const angle = rng.chance(0.7) ? Math.round((rng.next() * 4 - 2) * 10) / 10 : 0;
  const blur = rng.chance(0.3) ? Math.round((0.4 + rng.next() * 0.4) * 100) / 100 : 0;
  const speckle = Math.round((0.0005 + rng.next() * 0.0025) * 10000) / 10000;

  const textPng = await sharp({
    text: { text: escapeMarkup(text), fontfile: fontPath(f.file), font: f.font, dpi, align: "left", rgba: true },
  })
    .png()
    .toBuffer();
  const margin = () => rng.int(24, 72);
  const framed = await sharp(textPng)
    .flatten({ background: "#ffffff" })
    .extend({ top: margin(), bottom: margin(), left: margin(), right: margin(), background: "#ffffff" })
    .png()
    .toBuffer();
  let pipeline = sharp(framed);
  if (angle !== 0) pipeline = pipeline.rotate(angle, { background: "#ffffff" });
  const { data, info } = await pipeline.greyscale().raw().toBuffer({ resolveWithObject: true });
  const ch = info.channels;
  // Seeded grain and speckles (dust / thermal-paper flecks).
  const grain = rng.chance(0.4) ? rng.int(2, 8) : 0;
  for (let i = 0; i < info.width * info.height; i++) {
    let v = data[i * ch]!;
    if (grain > 0) v = Math.max(0, Math.min(255, v + Math.floor((rng.next() - 0.5) * 2 * grain)));
    if (rng.next() < speckle) v = rng.int(40, 170);
    for (let c = 0; c < ch; c++) data[i * ch + c] = v;
  }
  let out = sharp(data, { raw: { width: info.width, height: info.height, channels: ch } });
  if (blur > 0) out = out.blur(Math.max(0.3, blur));
  await out.withMetadata({ density: dpi }).png({ compressionLevel: 6 }).toFile(file);
  return { font: f.font, dpi, angle, blur, speckle };
}

export async function renderPdf(lines: Line[], rng: Rng, file: string, opts: { narrow: boolean; vendorLine: string; creation: Date }): Promise<{ font: string }> {
  const doc = await PDFDocument.create({ updateMetadata: false });
  doc.setProducer("receipt-corpus");
  doc.setCreator("receipt-corpus");
  doc.setCreationDate(opts.creation);
  doc.setModificationDate(opts.creation);
  if (opts.narrow) {
    const font = await doc.embedFont(rng.pick([StandardFonts.Courier, StandardFonts.CourierBold]));
    const size = 8;
    const lead = 10;
    const text = toText(lines, 40).replace(/\n+$/, "").split("\n");
    const page = doc.addPage([226, text.length * lead + 48]);
    let y = page.getHeight() - 24 - size;
    for (const s of text) {
      if (s) page.drawText(s, { x: 17, y, size, font, color: rgb(0, 0, 0) });
      y -= lead;
    }
  } else {
    const family = rng.pick(["Helvetica", "Times"] as const);
    const font = await doc.embedFont(family === "Helvetica" ? StandardFonts.Helvetica : StandardFonts.TimesRoman);
    const bold = await doc.embedFont(family === "Helvetica" ? StandardFonts.HelveticaBold : StandardFonts.TimesRomanBold);
    const page = doc.addPage([612, 792]);
    const size = rng.pick([9.5, 10, 11]);
    const lead = size * 1.45;
    const left = 56;
    const right = 556;
    let y = 792 - 60;
    const draw = (s: string, x: number, f: PDFFont, sz: number) => page.drawText(s, { x, y, size: sz, font: f, color: rgb(0, 0, 0) });
    for (const line of lines) {
      switch (line.k) {
        case "blank": y -= lead * 0.6; continue;
        case "rule":
          page.drawLine({ start: { x: left, y: y + size * 0.3 }, end: { x: right, y: y + size * 0.3 }, thickness: 0.5, color: rgb(0.4, 0.4, 0.4) });
          y -= lead * 0.7;
          continue;
        case "l": draw(line.s, left, font, size); break;
        case "c": {
          const isName = line.s === opts.vendorLine;
          const f = isName ? bold : font;
          const sz = isName ? size + 5 : size;
          draw(line.s, (left + right) / 2 - f.widthOfTextAtSize(line.s, sz) / 2, f, sz);
          if (isName) y -= lead * 0.4;
          break;
        }
        case "lr": {
          const f = /^(total|amount paid)/i.test(line.l) ? bold : font;
          draw(line.l, left, f, size);
          draw(line.r, right - f.widthOfTextAtSize(line.r, size), f, size);
          break;
        }
      }
      y -= lead;
    }
  }
  await writeFile(file, await doc.save({ useObjectStreams: false }));
  return { font: opts.narrow ? "Courier" : "Helvetica/Times" };
}

/**
 * A phone's photo of a printed receipt, from its rendered PNG: the paper enlarged to fill most of
 * a 12-megapixel portrait frame, turned a few degrees, on a grey table, shaded from one corner,
 * a little out of focus, saved as a phone's JPEG. What a person snaps and mails in, and what the
 * scans of the corpus and of SROIE are not.
 */
export async function photograph(png: Buffer, rng: Rng): Promise<Buffer> {
  const [frameW, frameH] = [3024, 4032];
  const { width, height } = await sharp(png).metadata();
  const fill = 0.6 + rng.next() * 0.25;
  const scale = Math.min((frameW * fill) / width!, (frameH * fill) / height!);
  const angle = (rng.chance(0.5) ? -1 : 1) * (2 + rng.next() * 6);
  const table = rng.int(90, 160);
  const background = { r: table, g: table + 2, b: table + 5 };
  const paper = await sharp(png)
    .resize(Math.round(width! * scale), Math.round(height! * scale))
    .rotate(angle, { background })
    .blur(0.8 + rng.next() * 0.8)
    .toBuffer();
  const paperSize = await sharp(paper).metadata();
  // Rotation may make the paper wider than the frame: the frame grows to hold it, as a photo would
  // be taken from further away.
  const [w, h] = [Math.max(frameW, paperSize.width!), Math.max(frameH, paperSize.height!)];
  const shade = Buffer.from(`<svg width="${w}" height="${h}"><defs><linearGradient id="g" x1="${rng.int(0, 1)}" y1="0" x2="${rng.int(0, 1)}" y2="1">` +
    `<stop offset="0" stop-color="#000" stop-opacity="0"/><stop offset="1" stop-color="#000" stop-opacity="${(0.1 + rng.next() * 0.25).toFixed(2)}"/>` +
    `</linearGradient></defs><rect width="100%" height="100%" fill="url(#g)"/></svg>`);
  return sharp({ create: { width: w, height: h, channels: 3, background } })
    .composite([{ input: paper, gravity: "center" }, { input: shade }])
    .jpeg({ quality: rng.int(72, 90) })
    .toBuffer();
}
