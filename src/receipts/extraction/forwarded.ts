import { hasPrice } from "./amounts.js";

/**
 * A receipt a person forwards from a phone arrives wrapped: a phone signature ("Sent from my
 * iPhone"), a forward marker ("---------- Forwarded message ---------", "Begin forwarded
 * message:") and the forwarded message's headers (From, Date, Subject, To). None of it is the
 * receipt, and neither is the forwarder's note above the marker: left in, the vendor was read from
 * "Forwarded message", then from "For the books.". The forwarded headers still say
 * who sent the receipt, which names the vendor when the receipt itself does not.
 */

const SIGNATURE =
  /^(sent from my\b|sent from (yahoo|outlook|mail|gmail|proton)\b|get outlook for\b|sent via\b|sent with\b|envoy[ée] de mon\b|enviado desde mi\b|von meinem\b.*\bgesendet\b|inviato da\b)/i;
const MARKER = /^(?:-{2,}\s*(?:forwarded message|original message|message transféré|weitergeleitete nachricht)\s*-{2,}|begin forwarded message:?)$/i;
/** A rule: Outlook puts one above the forwarded headers, but receipts draw them between their own
 * sections ("-----", then "Date: Nov 19, 2023"): headers after a rule count only when they name a
 * sender or a subject. */
const RULE = /^(?:-{5,}|_{5,})$/;
const HEADER = /^(from|sent|to|cc|bcc|date|subject|reply-to|de|envoyé|objet|à|von|gesendet|an|betreff)\s*:\s*(.*)$/i;
/** A note a person writes above what they forward is this short, and names no amount. */
const MAX_NOTE_LINES = 6;
/** Quoting of a forwarded body: "> TOTAL 12.00". */
const QUOTE = /^>+\s?/;

export interface Unwrapped {
  lines: string[];
  /** The forwarded message's sender as written ("Corner Bakery <receipts@cornerbakery.com>"). */
  sender: string | null;
  subject: string | null;
  /** The forwarded message's Date header as written ("Mon, Nov 23, 2026 at 9:14 AM"): when the
   * receipt itself prints no date, the day it was sent is the best one there is. */
  date: string | null;
}

/** The receipt's own lines, without the forwarding around them, and the forwarded headers' sender, subject and date. */
export function unwrapForwarded(lines: string[]): Unwrapped {
  let sender: string | null = null;
  let subject: string | null = null;
  let date: string | null = null;
  const kept: string[] = [];
  // Header lines are held until their block ends: a block after a marker, or one naming a sender or a
  // subject, is the forwarded message's; any other (a receipt's own "Date: 07/08/2019" first) stays.
  let held: { line: string; name: string; value: string }[] = [];
  let afterMarker = false;
  let noteLooked = false;
  const endBlock = () => {
    const isHeaders = afterMarker || held.some((h) => ["from", "de", "von", "subject", "objet", "betreff"].includes(h.name));
    // What stands above the first forwarded headers is the forwarder's note ("For the books."),
    // when it is a few lines with no amount; a receipt above a quoted thread stays.
    if (isHeaders && !noteLooked) {
      noteLooked = true;
      if (kept.length <= MAX_NOTE_LINES && !kept.some(hasPrice)) kept.length = 0;
    }
    for (const h of held) {
      if (!isHeaders) kept.push(h.line);
      else if (["from", "de", "von"].includes(h.name)) sender = h.value || sender;
      else if (["subject", "objet", "betreff"].includes(h.name)) subject = h.value || subject;
      // "Sent:" is Outlook's date header. As with the sender, the innermost forwarded message's
      // date is the receipt's (a forward of a forward carries the partner's date first).
      else if (["date", "sent", "envoyé", "gesendet"].includes(h.name)) date = h.value || date;
    }
    held = [];
    afterMarker = false;
  };
  let inBlock = true;
  for (const raw of lines) {
    const line = raw.replace(QUOTE, "").trim();
    if (line === "" || SIGNATURE.test(line)) continue;
    if (MARKER.test(line)) { endBlock(); afterMarker = true; inBlock = true; continue; }
    if (RULE.test(line)) { endBlock(); inBlock = true; kept.push(line); continue; }
    const header = inBlock ? HEADER.exec(line) : null;
    if (header) { held.push({ line, name: header[1].toLowerCase(), value: header[2].trim() }); continue; }
    if (inBlock) endBlock();
    inBlock = false;
    kept.push(line);
  }
  endBlock();
  return { lines: kept, sender, subject, date };
}

/**
 * The vendor a forwarded message's headers name: the sender's display name ("Corner Bakery"),
 * else its mail domain's name (receipts@cornerbakery.com: "Cornerbakery"), else what the subject
 * says the receipt is from ("Your receipt from Corner Bakery"). Mail services' and the person's own
 * addresses name no vendor.
 */
export function vendorFromHeaders(sender: string | null, subject: string | null): string | null {
  // Headers are short; a long one (hostile, or no header) is read no further: the patterns below are not for pages.
  if (sender && sender.length > 320) sender = null;
  if (subject && subject.length > 200) subject = null;
  const fromSubject = subject ? /\b(?:receipt|order|invoice|purchase|payment)s?\b.*?\bfrom\s+(.+?)\s*[.!]?$/i.exec(subject)?.[1] : undefined;
  if (sender) {
    const display = /^\s*"?([^"<]*?)"?\s*<[^>]+>\s*$/.exec(sender)?.[1]?.trim();
    if (display && !/@/.test(display) && !/\b(no[-\s]?reply|do[-\s]?not[-\s]?reply|notifications?|receipts?|mailer|team)\b/i.test(display)) return display;
    const domain = /@([a-z0-9.-]+)/i.exec(sender)?.[1]?.toLowerCase();
    // The registered name: the domain less its top level (and a second-level "co", "com" of co.uk) and mail-service prefixes.
    const parts = domain?.split(".").slice(0, -1).filter((p) => !/^(mail|email|e|m|receipts?|info|noreply|news|notify|com|co|net|org)$/.test(p));
    const name = parts?.pop();
    if (!fromSubject && name && !PERSONAL_MAIL.test(domain!)) return name.charAt(0).toUpperCase() + name.slice(1);
  }
  return fromSubject ?? null;
}

/** Mail services whose addresses belong to people, not shops. */
const PERSONAL_MAIL = /(^|\.)(gmail|googlemail|outlook|hotmail|live|yahoo|icloud|me|mac|aol|proton|protonmail|gmx|yandex)\.[a-z.]+$/i;
