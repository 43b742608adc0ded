import { hasPrice } from "./amounts.js";
import type { FieldConfidence } from "./types.js";

/**
 * The business name: usually among the first lines, but those also hold logo noise read as
 * letters, titles ("TAX INVOICE"), addresses, phone and registration numbers, URLs and dates.
 * Each of the first lines is scored for looking like a name; the best near the top wins.
 */

const LOOKED_AT = 10;
/** What a name read again elsewhere in the text (the other OCR reading) is worth. */
const REPEATED_BONUS = 1;

// Words that end or make up business names in the receipts' languages (English, Malay).
const BUSINESS_WORD =
  /\b(sdn\.? ?bhd|s\/b|bhd|berhad|inc|incorporated|ltd|limited|llc|llp|plc|corp|corporation|co|company|gmbh|pty|enterprises?|trading|restaurant|restoran|cafe|café|bistro|bakery|bakeries|mart|market|supermarket|store|stores|shop|pharmacy|farmasi|hardware|stationery|books?|bookstore|bookcentre|hotel|kitchen|grill|bar|pizza|deli|foods?|services|solutions|station|motors?|clinic|salon|boutique|studio|kedai|perniagaan|pasaraya|gallery|outlet|centre|center|group|holdings|industries|international|(m))\b/i;

const TITLE =
  /^(simplified |full |official |sales |cash |tax |e-?)*(tax invoice|invoice|receipt|bill|cash sales?|order|quotation|statement|payment|customer copy|merchant copy|duplicate|reprint|copy)s?\b|^(welcome|thank you|thanks|hi|hello|hey|dear|bonjour|good (morning|afternoon|evening)|tel|phone|fax|email|e-mail|gst|vat|hst|abn|reg|co\.? ?reg|company no|co\.? ?no|br no|roc|table|cashier|server|guest|date|time|store #|terminal)\b/i;

// A street word counts only beside a number that follows it on the line ("LOT 7"): "BUILDING
// SUPPLY" is a name. A lookahead for that digit at every place of a line is quadratic in its
// length, so the street word is found first (the leftmost has the most line after it).
const STREET_WORD =
  /\b(jalan|jln|lorong|taman|persiaran|lebuh|lot|street|st\.?|road|rd\.?|avenue|ave\.?|boulevard|blvd|drive|dr\.|lane|ln\.|suite|unit|floor|level|building|bldg|plaza|block|blk|p\.?o\.? box|highway|hwy|way)\b/i;
const POSTCODE_OR_STREET_NUMBER =
  /\b\d{5}\b|\b[A-Z]\d[A-Z] ?\d[A-Z]\d\b|\b[A-Z]{1,2}\d[A-Z\d]? ?\d[A-Z]{2}\b|^\s*(no\.?\s?)?\d+[a-z]?[,\s-]/i;
const LINE_TERMINATOR = /[\n\r\u2028\u2029]/;

function isAddress(name: string): boolean {
  const streetBesideNumber = name.split(LINE_TERMINATOR).some((part) => {
    const street = STREET_WORD.exec(part);
    return street !== null && /\d/.test(part.slice(street.index));
  });
  return streetBesideNumber || POSTCODE_OR_STREET_NUMBER.test(name);
}

// A web address ("shop-name.com") is looked for from the start of each run of its characters only
// (the lookbehind), where a word boundary must be, or one inside the run (a letter beside a
// hyphen): tried from every boundary inside one long run ("a-a-a-…"), the run was read again each time.
const CONTACT = /https?:|www\.|(?<![a-z0-9-])(?:\b|(?=[a-z0-9-]*?(?:[a-z0-9]-|-[a-z0-9])))[a-z0-9-]+\.(com|io|co|ca|app|net|org|my|uk|us|biz|shop|store)\b|@|\b(tel|fax|phone|ph|hp|mobile|whatsapp)\b|\d{3}[-\s.]\d{3,4}[-\s.]?\d{0,4}/i;

/** Registration numbers: "(867388-U)", "JM0326955-V", "GST NO: 000800689824". */
const REGISTRATION = /^\W*[A-Z]{0,3}\s?\d{5,}[-\s]?[A-Z]?\W*$|\b(gst|reg|registration|co\.? ?no|company no|roc|ssm|br no)\b/i;

const DATE_OR_TIME = /\d{1,4}[/.-]\d{1,2}[/.-]\d{2,4}|\d{1,2}:\d{2}/;

/*
 * Every pattern here may meet a line of any length (a text receipt of one 100 KB word): none may
 * try a run of characters again from each place inside it. So a match that must reach the end
 * of the line starts only where its run starts (a lookbehind), and nothing is searched for from
 * every place of a line with a lookahead or lookbehind of unbounded length.
 */

/** A trailing bracketed registration number: "(867388-U)". Tried only from the start of a run of white space. */
const TRAILING_NUMBER_GROUP = /(?<!\s)\s*[([{](?=[^()[\]{}]*\d{3})[^()[\]{}]*(?:[)\]}]\s*)?$/;
/** A legal form and all that follows it on the line. */
const LEGAL_FORM_AND_REST = /(\b(sdn\.? ?bhd|s\/b|berhad|inc|ltd|llc|plc|gmbh|pty\.? ?ltd|limited)\b\.?).*$/i;
/** Trailing characters that are no part of a name, from the start of their run. */
const TRAILING_NOISE = /(?<![^\p{L}\p{N})])[^\p{L}\p{N})]+$/u;

/** Drops the logo noise around a name: stray punctuation, a trailing registration number. */
export function cleanVendorName(line: string): string {
  const name = withoutTail(line.replace(TRAILING_NUMBER_GROUP, ""))
    .replace(/^[^\p{L}\p{N}(]+/u, "");
  const body = name.replace(TRAILING_NOISE, "");
  // Keep the period of an abbreviated legal form ("SDN. BHD.", "CO.", "INC.").
  const period = name.slice(body.length).startsWith(".") && /\b(bhd|inc|ltd|co|corp|llc|plc|pty)$/i.test(body);
  return mendLegalForm(withoutStrayPunctuation((period ? `${body}.` : body).replace(/\s+/g, " ").trim()));
}

/**
 * OCR reads specks beside a word as punctuation: a colon or semicolon inside a name
 * ("Wellness: First Pharmacy") or a period after a whole word ("GUDANG. HASIL"; abbreviations
 * such as "Co." or "Mr." are short) is dropped. An opened parenthesis whose closing one was
 * lost before the legal form is closed again ("BAKERIES (KL SDN BHD").
 */
function withoutStrayPunctuation(name: string): string {
  let out = name.replace(/(?<=\p{L}{2})[:;](?= \p{L})/gu, "").replace(PERIOD_AFTER_WORD, periodDropped);
  const open = leftOpen(out);
  if (open) out = out.replace(/(\([\p{L}\p{N}. ]*?[\p{L}\p{N}]) (?=(sdn\.? ?bhd|s\/b|berhad|bhd)\b)/iu, "$1) ");
  return out;
}

/**
 * A run of letters, from its start, then a period before another word. The period goes when a
 * word boundary (as `\b` reads it: ASCII word characters) stands five letters or more before it
 * ("GUDANG. HASIL"; an abbreviation such as "Co." is shorter). Written as a lookbehind of five or
 * more letters, this read the letters before every place of a long word again: quadratic.
 */
const PERIOD_AFTER_WORD = /(?<!\p{L})(\p{L}+)\.(?= \p{L})/gu;
const MIN_WORD_BEFORE_PERIOD = 5;

function periodDropped(match: string, letters: string, offset: number, text: string): string {
  const isWordChar = (i: number) => i >= 0 && /\w/.test(text[i]);
  // Letters are counted in code points, as the pattern counts them; a boundary at the start of
  // any but the last four before the period will do.
  const starts: number[] = [];
  for (let i = 0; i < letters.length; i += letters.codePointAt(i)! > 0xffff ? 2 : 1) starts.push(offset + i);
  for (let k = 0; k <= starts.length - MIN_WORD_BEFORE_PERIOD; k++) {
    if (isWordChar(starts[k] - 1) !== isWordChar(starts[k])) return letters;
  }
  return match;
}

/**
 * Nothing of the name follows its legal form; OCR noise often does. `.` stops at a line
 * terminator, so only a legal form after the last one reaches the end: the rest of the text is
 * searched, not each legal form's tail again (the cut is the same).
 */
function withoutTail(name: string): string {
  const last = Math.max(name.lastIndexOf("\n"), name.lastIndexOf("\r"), name.lastIndexOf("\u2028"), name.lastIndexOf("\u2029"));
  return name.slice(0, last + 1) + name.slice(last + 1).replace(LEGAL_FORM_AND_REST, "$1");
}

/** More parentheses opened than closed (counted, not matched into an array of each one). */
function leftOpen(text: string): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x28) depth++;
    else if (c === 0x29) depth--;
  }
  return depth > 0;
}

/** OCR's usual misreadings of Malaysian legal forms ("SON BHD", "SDM. BHD.", "5/B"). */
function mendLegalForm(name: string): string {
  return name
    .replace(/\bS[O0D][MN]\b(?=\.? ?BHD\b)|\bSD[MH]\b(?=\.? ?BHD\b)/, "SDN")
    .replace(/(?<=\bSDN\.? ?)(8HD|BH0|8H0)\b/, "BHD")
    .replace(/(?<=\s)[5$]\/[B8]$|(?<=\s)S\/8$/, "S/B");
}

function letters(text: string): number {
  return (text.match(/\p{L}/gu) ?? []).length;
}

/** How much a line reads like a business name rather than noise or some other header line. */
export function nameScore(line: string): number {
  const name = cleanVendorName(line);
  if (letters(name) < 3) return -Infinity;
  if (TITLE.test(name) || CONTACT.test(name) || DATE_OR_TIME.test(name) || REGISTRATION.test(name)) return -Infinity;
  // A line with a price on it is an item or a total, not the shop.
  if (hasPrice(line)) return -Infinity;
  const business = BUSINESS_WORD.test(name);
  if (isAddress(name) && !business) return -Infinity;
  const compact = name.replace(/\s/g, "");
  const letterShare = letters(compact) / compact.length;
  if (letterShare < 0.6) return -Infinity;
  const words = name.split(" ").filter((w) => letters(w) > 0);
  // Logo noise reads as short lowercase or vowel-less fragments ("finsp 3p", "CW diego dps").
  const wordLike = words.filter((w) => /[aeiouy]/i.test(w) && letters(w) >= 2).length / words.length;
  const styled = words.filter((w) => /^[^\p{Ll}]*$/u.test(w) || /^\p{Lu}/u.test(w)).length / words.length;
  let score = 2 * wordLike + 2 * styled + letterShare;
  if (business) score += 3;
  if (words.length === 1 && letters(name) < 4) score -= 2;
  if (name.length > 60) score -= 1;
  return score;
}

/** A registered company's name ends with its legal form. */
const LEGAL_ENDING = /\b(sdn\.? ?bhd|s\/b|bhd|berhad|inc|ltd|llc|llp|plc|limited|corp|co|gmbh|pty\.? ?ltd)\W*$/i;

/**
 * A long legal name wraps over lines ("AIK HUAT HARDWARE" / "ENTERPRISE (SETIA" / "ALAM) SDN
 * BHD"): when a line lacks the legal ending and the next one or two lines supply it, they are
 * read together.
 */
function withContinuation(lines: string[], i: number): string {
  let name = lines[i];
  if (LEGAL_ENDING.test(cleanVendorName(name))) return name;
  for (let k = i + 1; k < Math.min(lines.length, i + 3); k++) {
    const next = lines[k];
    // Only a line that cannot stand alone continues a name: one opening with a business word
    // ("CO. (M) SDN BHD"), or one closing a parenthesis left open ("ALAM) SDN BHD").
    const open = leftOpen(name);
    if (!open && !new RegExp(`^\\W*${BUSINESS_WORD.source.slice(2)}`, "i").test(next)) break;
    if (CONTACT.test(next) || DATE_OR_TIME.test(next) || TITLE.test(next) || /\d{3,}/.test(withoutClosingParenthesis(next))) break;
    name = `${name} ${next}`;
    if (LEGAL_ENDING.test(cleanVendorName(name))) return name;
  }
  return lines[i];
}

/**
 * The line without a parenthesis that closes it ("ALAM) SDN BHD (M) 1234" keeps its digits;
 * "(1234-X)" is taken off): what `/\([^)]*\)\W*$/` removes, found in one pass. That pattern tried
 * every "(" and read on to the next ")", quadratic on a line of "(((…".
 */
function withoutClosingParenthesis(line: string): string {
  let tail = line.length;
  while (tail > 0 && !/\w/.test(line[tail - 1])) tail--;
  let open = -1;
  for (let i = 0; i < line.length; i++) {
    if (line[i] === "(" && open < 0) open = i;
    else if (line[i] === ")") {
      if (i >= tail && open >= 0) return line.slice(0, open);
      open = -1;
    }
  }
  return line;
}

/** E-mailed receipts name the shop in a sentence: "Thanks for your order from X!". */
const NAMED_IN_SENTENCE = /\b(?:receipt|order|purchase|invoice|payment|visit|shopping)\s+(?:from|at|with)\s+(.{3,60}?\.?)(?:[!,:;]|\.?\s*$|\.\s|\s+-|\s+here\b|\s+is\b)/i;

/**
 * The shop's name: one named in a sentence near the top, else the line that reads most like a
 * business name among the first few. `high` when it is registered (ends with its legal form),
 * read alike by both OCR readings, or named in a sentence; `medium` otherwise.
 */
export function findVendor(lines: string[], readingStarts: number[] = [0]): { name: string; confidence: FieldConfidence } | null {
  for (const line of lines.slice(0, LOOKED_AT)) {
    const named = NAMED_IN_SENTENCE.exec(line)?.[1];
    if (named && nameScore(named) > 1) return { name: cleanVendorName(named), confidence: "high" };
  }
  // An image's two OCR readings both print the name; logo noise seldom reads alike twice.
  const key = (text: string) => cleanVendorName(text).toLowerCase().replace(/[^\p{L}\p{N}]/gu, "");
  const seen = new Map<string, number>();
  for (const line of lines) seen.set(key(line), (seen.get(key(line)) ?? 0) + 1);
  let best: { name: string; score: number; repeated: boolean } | null = null;
  // The top of each OCR reading: one engine may lose the name that the other reads.
  for (const [k, start] of readingStarts.entries()) {
    const next = readingStarts[k + 1] ?? lines.length;
    const reading = lines.slice(start, next);
    for (let i = start; i < Math.min(next, start + LOOKED_AT); i++) {
      const line = withContinuation(reading, i - start);
      // Nearer the top is likelier; a business word can outweigh a few lines of distance.
      const repeated = (seen.get(key(lines[i])) ?? 0) > 1;
      const score = nameScore(line) - 0.6 * (i - start) + (repeated ? REPEATED_BONUS : 0);
      if (score > (best?.score ?? -Infinity)) best = { name: cleanVendorName(line), score, repeated };
    }
  }
  if (!best || best.score <= 1) return null;
  return { name: spacedAlike(best.name, lines, key), confidence: best.repeated || LEGAL_ENDING.test(best.name) ? "high" : "medium" };
}

/**
 * The same name as another reading spells it with more words: OCR drops the spaces of tightly
 * printed names ("BLUEWATERBAKERY&CAFE") or reads them as a dot or a quote ("Inkwell'Print");
 * it seldom adds one.
 */
function spacedAlike(name: string, lines: string[], key: (text: string) => string): string {
  const wanted = key(name);
  const words = (text: string) => text.split(" ").length;
  let best = name;
  for (const line of lines) {
    const other = cleanVendorName(line);
    // Never letter by letter: "S T A R B U C K S" is a logo read apart, not a better spelling.
    if (key(other) === wanted && words(other) > words(best) && !/(^|\s)\p{L}(\s|$)/u.test(other)) best = other;
  }
  return best;
}
