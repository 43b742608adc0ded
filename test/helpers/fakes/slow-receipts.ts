import sharp from "sharp";

/**
 * Receipt files that are slow to read, as a tenant could upload them.
 *
 * `slowOcrImage`: a page packed with small print (a 3000×4000 PNG of about 5 MB): tesseract works
 * through it word by word, past the OCR deadline (measured: the 90 s document budget ran out on
 * an idle machine), so each attempt costs the reader its whole deadline.
 */
export async function slowOcrImage(width = 3000, height = 4000): Promise<Buffer> {
  const words = ["TOTAL", "CAFE", "12.34", "TAX", "GST", "VISA", "ITEM", "QTY", "$4.50", "SUBTOTAL", "2026-05-01", "CHANGE"];
  let seed = 7; // a fixed sequence: the same image every run
  const pick = () => words[Math.floor(((seed = (seed * 48_271) % 2_147_483_647) / 2_147_483_647) * words.length)];
  const size = 14;
  const lines: string[] = [];
  for (let y = size; y < height; y += size + 4) {
    let line = "";
    while (line.length < width / (size * 0.6)) line += pick() + " ";
    lines.push(`<text x="4" y="${y}" font-family="monospace" font-size="${size}">${line}</text>`);
  }
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><rect width="100%" height="100%" fill="white"/>${lines.join("")}</svg>`;
  return sharp(Buffer.from(svg)).png({ compressionLevel: 9 }).toBuffer();
}

/**
 * A text receipt of one word, `bytes` letters long: a regular expression with a look-behind over
 * letters (`(?<=\b\p{L}{5,})\.`) scans back over the whole word at every position (issue 32:
 * 40k characters 8.5 s, 100k 56 s).
 */
export function oneWordText(bytes = 100 * 1024): Buffer {
  return Buffer.from("Receipt".padEnd(bytes, "a"), "utf8");
}
