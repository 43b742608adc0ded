import { randomUUID } from "node:crypto";

/**
 * An HTML-only e-mail whose body is one `<table>` of about `bytes` of HTML: rows of long
 * reference numbers and amounts with no whitespace between the tags, quoted-printable encoded
 * (its soft line breaks keep SMTP's lines short and decode to nothing), as a mailer sends HTML.
 * With no whitespace anywhere, HTML-to-text conversion sees the whole table as one word, and
 * wrapping that word costs time that grows with the square of its length (measured on a loaded
 * 2-CPU machine: 1 MB 9.9 s, 2 MB 41 s; issue 32: 4 MB froze the API for 37.6 s).
 */
export function htmlTableMessage(options: { bytes: number; to: string; from?: string; messageId?: string; subject?: string }): Buffer {
  const rows: string[] = ["<html><body><table>"];
  let size = rows[0].length;
  for (let i = 0; size < options.bytes; i++) {
    const reference = ((i * 2654435761) % 4294967296).toString(16).padStart(8, "0").repeat(8);
    const row = `<tr><td>${reference}</td><td>${(i % 89) + 1}.50</td></tr>`;
    rows.push(row);
    size += row.length;
  }
  rows.push("</table></body></html>");
  const head = [
    `From: ${options.from ?? "sender@soak.test"}`,
    `To: ${options.to}`,
    `Subject: ${options.subject ?? "Statement"}`,
    `Date: ${new Date().toUTCString()}`,
    `Message-ID: ${options.messageId ?? `<${randomUUID()}@soak.test>`}`,
    "MIME-Version: 1.0",
    "Content-Type: text/html; charset=utf-8",
    "Content-Transfer-Encoding: quoted-printable",
    "",
    "",
  ].join("\r\n");
  return Buffer.from(head + softWrapped(rows.join("")) + "\r\n", "utf8");
}

/** Quoted-printable of ASCII without `=`: only soft line breaks, every 75 characters. */
function softWrapped(ascii: string): string {
  const lines: string[] = [];
  for (let at = 0; at < ascii.length; at += 75) lines.push(ascii.slice(at, at + 75));
  return lines.join("=\r\n");
}
