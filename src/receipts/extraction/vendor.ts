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

// A street word counts only beside a number ("12 King St", "LOT 7"): "BUILDING SUPPLY" is a name.
const ADDRESS =
  /(?=.*\d)\b(jalan|jln|lorong|taman|persiaran|lebuh|lot|street|st\.?|road|rd\.?|avenue|ave\.?|boulevard|blvd|drive|dr\.|lane|ln\.|suite|unit|floor|level|building|bldg|plaza|block|blk|p\.?o\.? box|highway|hwy|way)\b|\b\d{5}\b|\b[A-Z]\d[A-Z] ?\d[A-Z]\d\b|\b[A-Z]{1,2}\d[A-Z\d]? ?\d[A-Z]{2}\b|^\s*(no\.?\s?)?\d+[a-z]?[,\s-]/i;

const CONTACT = /https?:|www\.|\b[a-z0-9-]+\.(com|io|co|ca|app|net|org|my|uk|us|biz|shop|store)\b|@|\b(tel|fax|phone|ph|hp|mobile|whatsapp)\b|\d{3}[-\s.]\d{3,4}[-\s.]?\d{0,4}/i;

/** Registration numbers: "(867388-U)", "JM0326955-V", "GST NO: 000800689824". */
const REGISTRATION = /^\W*[A-Z]{0,3}\s?\d{5,}[-\s]?[A-Z]?\W*$|\b(gst|reg|registration|co\.? ?no|company no|roc|ssm|br no)\b/i;

const DATE_OR_TIME = /\d{1,4}[/.-]\d{1,2}[/.-]\d{2,4}|\d{1,2}:\d{2}/;

/** Drops the logo noise around a name: stray punctuation, a trailing registration number. */
export function cleanVendorName(line: string): string {
  const name = line
    .replace(/\s*[([{][^()[\]{}]*\d{3,}[^()[\]{}]*[)\]}]?\s*$/, "")
    // Nothing of the name follows its legal form; OCR noise often does.
    .replace(/(\b(sdn\.? ?bhd|s\/b|berhad|inc|ltd|llc|plc|gmbh|pty\.? ?ltd|limited)\b\.?).*$/i, "$1")
    .replace(/^[^\p{L}\p{N}(]+/u, "");
  const body = name.replace(/[^\p{L}\p{N})]+$/u, "");
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
  let out = name.replace(/(?<=\p{L}{2})[:;](?= \p{L})/gu, "").replace(/(?<=\b\p{L}{5,})\.(?= \p{L})/gu, "");
  const open = (out.match(/\(/g) ?? []).length > (out.match(/\)/g) ?? []).length;
  if (open) out = out.replace(/(\([\p{L}\p{N}. ]*?[\p{L}\p{N}]) (?=(sdn\.? ?bhd|s\/b|berhad|bhd)\b)/iu, "$1) ");
  return out;
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
  if (/\d[.,]\d{2}\b/.test(line)) return -Infinity;
  const business = BUSINESS_WORD.test(name);
  if (ADDRESS.test(name) && !business) return -Infinity;
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
    const open = (name.match(/\(/g) ?? []).length > (name.match(/\)/g) ?? []).length;
    if (!open && !new RegExp(`^\\W*${BUSINESS_WORD.source.slice(2)}`, "i").test(next)) break;
    if (CONTACT.test(next) || DATE_OR_TIME.test(next) || TITLE.test(next) || /\d{3,}/.test(next.replace(/\([^)]*\)\W*$/, ""))) break;
    name = `${name} ${next}`;
    if (LEGAL_ENDING.test(cleanVendorName(name))) return name;
  }
  return lines[i];
}

/** E-mailed receipts name the shop in a sentence: "Thanks for your order from X!". */
const NAMED_IN_SENTENCE = /\b(?:receipt|order|purchase|invoice|payment|visit|shopping)\s+(?:from|at|with)\s+(.{3,60}?\.?)(?:[!,:;]|\.?\s*$|\.\s|\s+-|\s+here\b|\s+is\b)/i;

export function findVendor(lines: string[]): string | null {
  for (const line of lines.slice(0, LOOKED_AT)) {
    const named = NAMED_IN_SENTENCE.exec(line)?.[1];
    if (named && nameScore(named) > 1) return cleanVendorName(named);
  }
  // An image's two OCR readings both print the name; logo noise seldom reads alike twice.
  const key = (text: string) => cleanVendorName(text).toLowerCase().replace(/[^\p{L}\p{N}]/gu, "");
  const seen = new Map<string, number>();
  for (const line of lines) seen.set(key(line), (seen.get(key(line)) ?? 0) + 1);
  let best: { name: string; score: number } | null = null;
  for (let i = 0; i < Math.min(lines.length, LOOKED_AT); i++) {
    const line = withContinuation(lines, i);
    // Nearer the top is likelier; a business word can outweigh a few lines of distance.
    const repeated = (seen.get(key(lines[i])) ?? 0) > 1 ? REPEATED_BONUS : 0;
    const score = nameScore(line) - 0.6 * i + repeated;
    if (score > (best?.score ?? -Infinity)) best = { name: cleanVendorName(line), score };
  }
  return best && best.score > 1 ? best.name : null;
}
