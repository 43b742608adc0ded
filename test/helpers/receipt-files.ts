import { PDFDocument, StandardFonts } from "pdf-lib";
import MailComposer from "nodemailer/lib/mail-composer";

/** A one-page PDF receipt with a text layer, one line of Courier per entry. */
export async function receiptPdf(lines: string[]): Promise<Buffer> {
  const doc = await PDFDocument.create();
  const page = doc.addPage([300, 400]);
  const courier = await doc.embedFont(StandardFonts.Courier);
  lines.forEach((line, i) => page.drawText(line, { x: 20, y: 370 - i * 16, size: 10, font: courier }));
  return Buffer.from(await doc.save());
}

/** A raw RFC 5322 message, as nodemailer composes it. */
export function rawMessage(mail: ConstructorParameters<typeof MailComposer>[0]): Promise<Buffer> {
  return new MailComposer(mail).compile().build();
}
