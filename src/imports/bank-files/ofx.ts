import { chooseAccount, tallyAccounts, type AccountChoice } from "./accounts.js";
import { isZero, parseAmount } from "./amounts.js";
import { dateOutOfRange, isoDate } from "./dates.js";
import { eventTypeFor } from "./event-type.js";
import { MAX_OFX_BYTES, MAX_STATEMENT_ROWS, tooLarge, tooManyRows } from "./limits.js";
import { BankFileError, type StatementRow } from "./row.js";

/*
 * OFX as banks write it. OFX 1.x is SGML (leaf elements unclosed, aggregates closed), 2.x is XML;
 * real downloads mix the two and break both: lowercase tags, a missing </STMTTRN> or
 * </BANKTRANLIST>, CDATA sections, entities, no OFXHEADER block, a BOM, blank lines. The file is
 * read here by a small tolerant reader (one pass, no backtracking regexes, no entity definitions:
 * only the five XML entities and numeric ones are replaced), and every repair it makes is said in a
 * warning. What would change a number (an amount that is not one, a transaction with no amount or
 * no date, two accounts in one file) refuses the file instead.
 */

/** An `<OFX>` opening tag (any case, space before `>`). */
const OFX_OPEN = /<OFX\s{0,16}>/i;

/**
 * OFX 1.x starts with its `OFXHEADER:` lines, OFX 2.x with `<?xml …?><?OFX …?>`; both hold an
 * `<OFX>` element. A file without either header is OFX when `<OFX>` comes first, after at most an
 * XML declaration, comments or `KEY:VALUE` header lines.
 */
export function looksLikeOfx(text: string): boolean {
  const start = text.slice(0, 4096).replace(/^\uFEFF/, "");
  if (/^\s*OFXHEADER\s*:/i.test(start) || /<\?OFX\b/i.test(start)) return true;
  const at = start.search(OFX_OPEN);
  if (at < 0) return false;
  return start.slice(0, at).split(/\r\n|\r|\n/)
    .every((l) => /^\s*(?:[A-Z][A-Z0-9_]{0,40}\s*:[^<>]*|<\?xml\b[^<>]*\?>\s*|<!--[^<>]*-->\s*)?$/i.test(l));
}

/** One element of the file: a leaf (text) or an aggregate (children). */
interface El { name: string; line: number; text?: string; kids?: El[] }

/** Aggregates of the OFX banking and card statements: never read as a leaf, and said when left unclosed. */
const AGGREGATES = new Set([
  "OFX", "SIGNONMSGSRSV1", "SONRS", "STATUS", "FI", "BANKMSGSRSV1", "STMTTRNRS", "STMTRS", "BANKACCTFROM", "BANKACCTTO",
  "BANKTRANLIST", "BANKTRANLISTP", "STMTTRN", "STMTTRNP", "LEDGERBAL", "AVAILBAL", "BALLIST", "BAL", "CREDITCARDMSGSRSV1",
  "CCSTMTTRNRS", "CCSTMTRS", "CCACCTFROM", "CCACCTTO", "PAYEE", "CURRENCY", "ORIGCURRENCY", "IMAGEDATA", "REWARDINFO",
  "SIGNUPMSGSRSV1", "ACCTINFORS", "ACCTINFOTRNRS", "ACCTINFO", "BANKACCTINFO", "CCACCTINFO",
]);

/** Leaf elements: one written with no value and no closing tag is an empty element, not an aggregate. */
const ELEMENTS = new Set([
  "TRNTYPE", "DTPOSTED", "DTUSER", "DTAVAIL", "TRNAMT", "FITID", "CORRECTFITID", "CORRECTACTION", "SRVRTID", "CHECKNUM",
  "REFNUM", "SIC", "PAYEEID", "NAME", "EXTDNAME", "MEMO", "CURSYM", "CURRATE", "CURDEF", "BANKID", "BRANCHID", "ACCTID",
  "ACCTTYPE", "ACCTKEY", "DTSTART", "DTEND", "BALAMT", "DTASOF", "CODE", "SEVERITY", "MESSAGE", "DTSERVER", "LANGUAGE",
  "DTPROFUP", "DTACCTUP", "ORG", "FID", "TRNUID", "CLTCOOKIE", "ADDR1", "ADDR2", "ADDR3", "CITY", "STATE", "POSTALCODE",
  "COUNTRY", "PHONE", "INV401KSOURCE", "MKTGINFO", "SESSCOOKIE", "ACCESSKEY", "INTU.BID", "INTU.USERID",
]);

/** Nesting deeper than this is no bank statement (OFX needs 7). */
const MAX_DEPTH = 64;
/** A tag name longer than this is no tag: the `<` is text. */
const MAX_NAME = 64;
/** How far a tag's `>` may be from its `<` (attributes included). */
const MAX_TAG = 1024;

/**
 * Warnings said once per kind: the first occurrence in full, then how many more there were, so a
 * file with a repair on every transaction says it in one line.
 */
class Notes {
  private readonly byKind = new Map<string, { text: string; more: number }>();
  /** `counted`: say how many more there were (not for a habit of the whole file, such as lowercase tags). */
  add(kind: string, text: string, counted = true): void {
    const seen = this.byKind.get(kind);
    if (seen) { if (counted) seen.more++; }
    else this.byKind.set(kind, { text, more: 0 });
  }
  list(): string[] {
    return [...this.byKind.values()].map(({ text, more }) => more === 0 ? text : `${text.replace(/\.$/, "")} (and ${more} more like it in the file).`);
  }
}

/**
 * The transactions of an OFX 1.x (SGML) or 2.x (XML) statement, bank or credit card. FITID, the
 * bank's own id of the transaction, becomes the reference, which is what lets a re-download of an
 * overlapping period skip the rows already imported even where two genuine rows share date,
 * amount and payee.
 */
export function readOfxStatement(text: string, choice: AccountChoice = {}): { rows: StatementRow[]; warnings: string[]; layout: string } {
  if (text.length > MAX_OFX_BYTES) throw tooLarge(text.length, "OFX");
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  const notes = new Notes();
  const open = OFX_OPEN.exec(text);
  if (!open) throw new BankFileError("The file looks like OFX but has no <OFX> element.");
  // The header is short: only its first 4,096 characters are looked at, line by line ([ \t], never \s, across lines).
  const header = text.slice(0, Math.min(open.index, 4096));
  const sgmlHeader = /^[ \t]*OFXHEADER[ \t]*:[ \t]*1/im.test(header) || /^[ \t]*DATA[ \t]*:[ \t]*OFXSGML/im.test(header);
  const xmlHeader = /<\?OFX\b/i.test(header) || /^[ \t]*OFXHEADER[ \t]*:[ \t]*2/im.test(header);
  if (!sgmlHeader && !xmlHeader && !/^[ \t]*OFXHEADER[ \t]*:/im.test(header)) {
    notes.add("no-header", "The file has no OFX header (OFXHEADER:… or <?OFX …?>) before <OFX>; it is read by its tags alone.");
  }
  const { root, closedLeaves, openLeaves } = parseBody(text, open.index, notes, xmlHeader);
  const xml = xmlHeader || (!sgmlHeader && closedLeaves > openLeaves);
  const rows = statementRows(root, notes, choice);
  const currency = rows.currency;
  return { rows: rows.rows, warnings: [...notes.list(), ...rows.warnings], layout: `OFX ${xml ? "2.x (XML)" : "1.x (SGML)"}${currency ? `, currency ${currency}` : ""}` };
}

/* ------------------------------------------------------------------ reading the elements */

const isNameStart = (c: number) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
const isNameChar = (c: number) => isNameStart(c) || (c >= 48 && c <= 57) || c === 46 || c === 45 || c === 58;
const isSpace = (c: number) => c === 32 || c === 9 || c === 10 || c === 13 || c === 12;

/**
 * The `<OFX>` element as a tree, read in one pass from `start`. SGML's rule decides what is a
 * leaf: an element followed by text is a leaf ending at the next tag (its closing tag optional);
 * one followed by a tag is an aggregate, unless it is a known leaf (then it is empty). An
 * aggregate left unclosed ends where its parent's closing tag or the next element of its own name
 * begins.
 */
function parseBody(text: string, start: number, notes: Notes, declaredXml: boolean): { root: El; closedLeaves: number; openLeaves: number } {
  const n = text.length;
  let lineCursor = 0;
  let lineNo = 1;
  const lineOf = (pos: number) => {
    for (; lineCursor < pos; lineCursor++) {
      const c = text.charCodeAt(lineCursor);
      if (c === 10 || (c === 13 && text.charCodeAt(lineCursor + 1) !== 10)) lineNo++;
    }
    return lineNo;
  };
  const top: El = { name: "#document", line: 1, kids: [] };
  const stack: El[] = [top];
  let pending: { name: string; line: number; parts: string[] } | null = null;
  let stray: string[] = [];
  let strayLine = 0;
  let closedLeaves = 0;
  let openLeaves = 0;
  let done = false;

  const parent = () => stack[stack.length - 1];
  /** Text from `pos`: a pending element's value, else (when not blank) text outside any element. */
  const addText = (s: string, pos: number) => {
    if (pending) pending.parts.push(s);
    else if (/\S/.test(s)) {
      if (stray.length === 0) strayLine = lineOf(pos + s.search(/\S/));
      stray.push(s);
    }
  };
  const flushStray = () => {
    if (stray.length === 0) return;
    const s = stray.join("").trim();
    stray = [];
    notes.add("stray-text", `Line ${strayLine}: text outside any element ("${clip(s)}", in <${parent().name}>) is ignored.`);
  };
  /** Decides what the last opening tag was, now that the next tag (or the end) has come. */
  const resolve = () => {
    if (!pending) return;
    const { name, line: at, parts } = pending;
    pending = null;
    const value = parts.join("").trim();
    if ((value !== "" && !AGGREGATES.has(name)) || ELEMENTS.has(name)) {
      parent().kids!.push({ name, line: at, text: value });
      openLeaves++;
      if (declaredXml) notes.add("open-leaf", `Line ${at}: <${name}> has no closing tag in an OFX 2.x (XML) file; its value is read up to the next tag, as in OFX 1.x.`);
      return;
    }
    if (value !== "") notes.add("aggregate-text", `Line ${at}: text inside <${name}> before its first element ("${clip(value)}") is ignored.`);
    if (stack.length > MAX_DEPTH) throw new BankFileError(`Line ${at}: the elements are nested more than ${MAX_DEPTH} deep; this is not a bank statement.`);
    const el: El = { name, line: at, kids: [] };
    parent().kids!.push(el);
    stack.push(el);
  };
  /** Closes the open elements down to stack[index], that one included; `explicit` when its closing tag was written. */
  const closeTo = (index: number, explicit: boolean, line: number, by: string) => {
    while (stack.length > index) {
      const el = stack.pop()!;
      const own = explicit && stack.length === index;
      if (own) continue;
      if (AGGREGATES.has(el.name)) {
        notes.add(`unclosed-${el.name}`, `Line ${el.line}: <${el.name}> is never closed (no </${el.name}>); it is taken to end ${by === "" ? "at the end of the file" : `where ${by} is, on line ${line}`}.`);
      } else {
        // Not known as an aggregate and never closed: it was an empty element; what followed it is its parent's.
        const p = parent();
        p.kids!.push(...el.kids!);
        el.kids = undefined;
        el.text = "";
        notes.add("empty-element", `Line ${el.line}: <${el.name}> has neither a value nor a closing tag; it is read as an empty element.`);
      }
    }
  };
  const openTag = (name: string, selfClosing: boolean, line: number) => {
    resolve();
    if (name === "OFX" && stack.length > 1) {
      // A second <OFX> before the first is closed: another document, not an aggregate to close and go on from.
      // Its SGML header, read as text inside the first, is where it begins.
      throw secondDocument(/^\s*OFXHEADER/i.test(stray.join("")) ? strayLine : line, "before the first one's </OFX>");
    }
    flushStray();
    if (stack.length === 1 && top.kids!.length > 0) {
      // A second root: whatever follows </OFX> is not part of the statement.
      done = true;
      return;
    }
    // An element of a name already open closes that one first: OFX never nests an aggregate in
    // one of its own name, so a second <STMTTRN> means the first ended.
    for (let i = stack.length - 1; i >= 1; i--) {
      if (stack[i].name === name) { closeTo(i, false, line, `the next <${name}>`); break; }
    }
    if (selfClosing) parent().kids!.push({ name, line, text: "" });
    else pending = { name, line, parts: [] };
  };
  const closeTag = (name: string, line: number) => {
    if (pending && pending.name === name) {
      parent().kids!.push({ name, line: pending.line, text: pending.parts.join("").trim() });
      pending = null;
      closedLeaves++;
      return;
    }
    resolve();
    flushStray();
    let i = stack.length - 1;
    while (i >= 1 && stack[i].name !== name) i--;
    if (i < 1) {
      notes.add("stray-close", `Line ${line}: </${name}> closes no open element; it is ignored.`);
      return;
    }
    closeTo(i, true, line, `</${name}>`);
    if (stack.length === 1) done = true;
  };
  const tagName = (from: number) => {
    let j = from;
    while (j < n && j - from <= MAX_NAME && isNameChar(text.charCodeAt(j))) j++;
    return j - from > MAX_NAME ? -1 : j;
  };
  /** The index of the `>` ending the tag from `from`, or -1 when there is none near (no `<` before it). */
  const tagEnd = (from: number) => {
    for (let j = from; j < n && j - from < MAX_TAG; j++) {
      const c = text.charCodeAt(j);
      if (c === 62) return j;
      if (c === 60) return -1;
    }
    return -1;
  };

  let i = start;
  while (i < n && !done) {
    const lt = text.indexOf("<", i);
    if (lt === -1) { addText(decodeEntities(text.slice(i), lineOf(i), notes), i); break; }
    if (lt > i) addText(decodeEntities(text.slice(i, lt), lineOf(i), notes), i);
    const line = lineOf(lt);
    if (text.startsWith("<!--", lt)) {
      const end = text.indexOf("-->", lt + 4);
      if (end < 0) { notes.add("comment", `Line ${line}: a comment (<!--) is never closed; the rest of the file is ignored.`); break; }
      i = end + 3;
      continue;
    }
    if (text.slice(lt, lt + 9).toUpperCase() === "<![CDATA[") {
      const end = text.indexOf("]]>", lt + 9);
      if (end < 0) throw new BankFileError(`Line ${line}: a CDATA section (<![CDATA[) is never closed (no ]]>).`);
      addText(text.slice(lt + 9, end), lt + 9);
      i = end + 3;
      continue;
    }
    if (text.startsWith("<?", lt)) {
      const end = text.indexOf("?>", lt + 2);
      i = end < 0 ? n : end + 2;
      continue;
    }
    if (text.startsWith("<!", lt)) {
      // <!DOCTYPE …> with or without an internal subset: skipped whole; nothing it defines is used.
      const close = text.indexOf(">", lt + 2);
      const bracket = text.indexOf("[", lt + 2);
      let end = close;
      if (bracket >= 0 && (close < 0 || bracket < close)) {
        const sub = text.indexOf("]", bracket + 1);
        end = sub < 0 ? -1 : text.indexOf(">", sub + 1);
      }
      notes.add("doctype", `Line ${line}: the declaration "<!${clip(text.slice(lt + 2, Math.min(n, lt + 30)))}" is ignored (no entities are taken from it).`);
      i = end < 0 ? n : end + 1;
      continue;
    }
    const closing = text.charCodeAt(lt + 1) === 47;
    const nameFrom = lt + (closing ? 2 : 1);
    const nameEnd = isNameStart(text.charCodeAt(nameFrom)) ? tagName(nameFrom) : -1;
    const end = nameEnd < 0 ? -1 : tagEnd(nameEnd);
    if (end < 0 || (nameEnd < end && !isSpace(text.charCodeAt(nameEnd)) && text.charCodeAt(nameEnd) !== 47)) {
      notes.add("bare-lt", `Line ${line}: a "<" that starts no tag is read as text.`);
      addText("<", lt);
      i = lt + 1;
      continue;
    }
    const written = text.slice(nameFrom, nameEnd);
    const name = written.toUpperCase();
    if (written !== name) notes.add("case", `Line ${line}: tag names are not in upper case (<${closing ? "/" : ""}${written}>); they are read as upper case.`, false);
    if (closing) closeTag(name, line);
    else openTag(name, text.charCodeAt(end - 1) === 47, line);
    i = end + 1;
  }
  resolve();
  flushStray();
  if (stack.length > 1) closeTo(1, false, lineOf(n), "");
  if (done && /\S/.test(text.slice(i))) {
    const closedAt = lineOf(i);
    const rest = text.slice(i);
    const next = rest.search(/<(?:OFX|STMTTRN)[\s>/]/i);
    if (next >= 0 && /^<STMTTRN/i.test(rest.slice(next))) {
      throw new BankFileError(`Line ${lineOf(i + next)}: a transaction (<STMTTRN>) follows </OFX> (line ${closedAt}), outside the statement: it would be left out. Correct the file, or export it again.`);
    }
    if (next >= 0) {
      // Its header (OFXHEADER:, <?xml, <?OFX), when it has one, is where the second document begins.
      const header = rest.slice(0, next).search(/OFXHEADER|<\?(?:xml|OFX)\b/i);
      throw secondDocument(lineOf(i + (header >= 0 ? header : next)), `after the first one's </OFX> on line ${closedAt}`);
    }
    notes.add("after-ofx", `Line ${closedAt}: what follows </OFX> is ignored.`);
  }
  const root = top.kids!.find((k) => k.name === "OFX" && k.kids);
  if (!root) throw new BankFileError("The file looks like OFX but has no <OFX> element.");
  return { root, closedLeaves, openLeaves };
}

/** Transactions past the first document would be left out in silence: the file is refused instead. */
const secondDocument = (line: number, where: string) =>
  new BankFileError(`The file holds a second OFX document from line ${line}, ${where}: its transactions would be left out. Import each as a file of its own.`);

/** The five XML entities and numeric ones replaced; anything else kept as written (and said). */
function decodeEntities(s: string, line: number, notes: Notes): string {
  if (!s.includes("&")) return s;
  return s.replace(/&(?:#(\d{1,7})|#[xX]([0-9A-Fa-f]{1,6})|([A-Za-z][A-Za-z0-9]{0,31}));/g, (whole, dec?: string, hex?: string, named?: string) => {
    if (named !== undefined) {
      const known = NAMED[named.toLowerCase()];
      if (known !== undefined) return known;
      notes.add("entity", `Line ${line}: "${whole}" is not one of the XML entities (&amp; &lt; &gt; &quot; &apos;); it is kept as written.`);
      return whole;
    }
    const code = dec !== undefined ? Number(dec) : parseInt(hex!, 16);
    if (code === 0 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) {
      notes.add("entity", `Line ${line}: "${whole}" is no character; it is kept as written.`);
      return whole;
    }
    return String.fromCodePoint(code);
  });
}
const NAMED: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

const clip = (s: string) => (s.length > 40 ? `${s.slice(0, 40)}…` : s);

/* ------------------------------------------------------------------ the statements */

const kids = (el: El | undefined, name: string) => (el?.kids ?? []).filter((k) => k.name === name);
const child = (el: El | undefined, name: string) => el?.kids?.find((k) => k.name === name);
/** A leaf's value, whitespace runs made one space; "" when absent. */
const value = (el: El | undefined, name: string) => (child(el, name)?.text ?? "").replace(/\s+/g, " ").trim();

/** The elements of those names under `el`, not looking inside one found. Iterative: depth is bounded anyway. */
function findAll(el: El, names: Set<string>): El[] {
  const found: El[] = [];
  const todo: El[] = [...(el.kids ?? [])].reverse();
  while (todo.length > 0) {
    const e = todo.pop()!;
    if (names.has(e.name)) found.push(e);
    else if (e.kids) for (let i = e.kids.length - 1; i >= 0; i--) todo.push(e.kids[i]);
  }
  return found;
}

interface Statement { el: El; card: boolean; account: string; acctId: string; key: string; transactions: El[]; currency: string }

function statementOf(el: El, index: number): Statement {
  const card = el.name === "CCSTMTRS";
  const from = child(el, card ? "CCACCTFROM" : "BANKACCTFROM");
  const acctId = value(from, "ACCTID");
  const type = value(from, "ACCTTYPE");
  const ending = acctId.length > 4 ? `ending ${acctId.slice(-4)}` : acctId;
  const account = acctId
    ? `${card ? "credit card" : `bank account${type ? ` (${type})` : ""}`} ${ending}`
    : `${card ? "a credit card" : "a bank account"} with no <ACCTID> (statement on line ${el.line})`;
  return {
    el, card, account, acctId,
    // A statement with no ACCTID is an account of its own (two such on one line must not merge).
    key: acctId ? `${card ? "CC" : "BANK"}|${value(from, "BANKID")}|${acctId}` : `statement ${index}`,
    transactions: findAll(el, new Set(["STMTTRN"])),
    currency: value(el, "CURDEF").toUpperCase(),
  };
}

/**
 * A file holding several statements is read when they are all of one account (a long period
 * split by month); those with no transactions are left out (a card with nothing that month).
 * Statements of two accounts with transactions: one account's are read, as chooseAccount says.
 */
function pickStatements(root: El, notes: Notes, choice: AccountChoice): Statement[] {
  const all = findAll(root, new Set(["STMTRS", "CCSTMTRS"])).map((el, i) => statementOf(el, i));
  if (all.length === 0) throw new BankFileError("The OFX file holds no bank or credit-card statement.");
  const accounts = tallyAccounts(all, (s) => ({
    key: s.key, id: s.acctId,
    label: s.account, detail: `${s.currency ? `in ${s.currency}, ` : ""}from line ${s.el.line}`,
    suggest: s.acctId.length > 4 ? s.acctId.slice(-4) : s.acctId || "NUMBER",
  }), (s) => s.transactions.length);
  const chosen = chooseAccount("OFX", accounts, choice);
  chosen.warnings.forEach((w) => notes.add("account", w));
  const used = all.filter((s) => s.transactions.length > 0 && (chosen.key === undefined || s.key === chosen.key));
  if (used.length === 0) throw new BankFileError("The file holds no transactions.");
  const empty = all.filter((s) => s.transactions.length === 0);
  if (empty.length > 0 && chosen.by === "only") {
    notes.add("empty-statement", `The OFX file also holds ${empty.length === 1 ? "a statement" : `${empty.length} statements`} with no transactions ` +
      `(${empty.map((s) => s.account).join("; ")}); only ${used[0].account} is read.`);
  }
  if (used.length > 1) notes.add("same-account", `The OFX file holds ${used.length} statements of ${used[0].account}; their transactions are read together.`);
  return used;
}

function statementRows(root: El, notes: Notes, choice: AccountChoice): { rows: StatementRow[]; warnings: string[]; currency: string | undefined } {
  const statements = pickStatements(root, notes, choice);
  const count = statements.reduce((sum, s) => sum + s.transactions.length, 0);
  if (count > MAX_STATEMENT_ROWS) throw tooManyRows();
  const warnings: string[] = [];
  const rows: StatementRow[] = [];
  for (const s of statements) {
    for (const t of s.transactions) {
      const row = transactionRow(t, s, notes, warnings);
      if (row) rows.push(row);
    }
  }
  return { rows, warnings, currency: statements.map((s) => s.currency).find((c) => c) };
}

/** One <STMTTRN> as a row; null for an amount of 0 (said). Anything that would be a guess at a number refuses the file. */
function transactionRow(t: El, s: Statement, notes: Notes, warnings: string[]): StatementRow | null {
  const where = `Line ${t.line}`;
  const fitid = value(t, "FITID");
  const named = fitid ? ` (FITID ${fitid})` : "";

  const transactionDate = transactionDateOf(t, where, notes);
  const amountText = single(t, "TRNAMT", where);
  if (amountText === undefined) throw new BankFileError(`${where}: the transaction${named} has no <TRNAMT> (its amount); the file is refused rather than read without it.`);
  const amount = ofxAmount(amountText, where, notes);
  if (amount.problem) throw new BankFileError(`${where}: "${amountText}" in <TRNAMT>${named} ${amount.problem}.`);
  if (isZero(amount.value!)) {
    warnings.push(`${where}: the amount is 0.00; the transaction is left out.`);
    return null;
  }

  const name = value(t, "NAME");
  const memo = value(t, "MEMO");
  const payee = value(child(t, "PAYEE"), "NAME");
  const checkNumber = value(t, "CHECKNUM");
  let description = name || memo;
  if (!description) {
    if (payee) description = payee;
    else if (checkNumber) description = `Cheque ${checkNumber}`;
    else if (fitid) description = fitid;
    else throw new BankFileError(`${where}: the transaction has no <NAME>, <MEMO>, <PAYEE>, <CHECKNUM> or <FITID> to describe it.`);
    const from = payee ? "the payee's <NAME> in <PAYEE>" : checkNumber ? "its <CHECKNUM>" : "its <FITID>";
    notes.add(`description-${payee ? "payee" : checkNumber ? "checknum" : "fitid"}`, `${where}: the transaction has neither <NAME> nor <MEMO>; its description is ${from}: "${description}".`);
  }
  const currency = (value(child(t, "CURRENCY"), "CURSYM") || s.currency).toUpperCase();
  return {
    line: t.line, transactionDate, description, amount: amount.value!,
    eventType: eventTypeFor(description, amount.value!, value(t, "TRNTYPE")),
    ...(name && memo ? { memo } : {}), ...(fitid ? { reference: fitid } : {}), ...(currency ? { currency } : {}),
  };
}

/** A leaf that must say one thing: absent → undefined; written twice with two values → refused. */
function single(t: El, name: string, where: string): string | undefined {
  const values = [...new Set(kids(t, name).map((k) => (k.text ?? "").trim()))];
  if (values.length > 1) throw new BankFileError(`${where}: the transaction has ${values.length} different <${name}> (${values.map((v) => `"${v}"`).join(", ")}).`);
  return values.length === 0 || values[0] === "" ? undefined : values[0];
}

/*
 * An OFX date: YYYYMMDD, then optionally the time (HHMM, HHMMSS, .XXX), a "T" before it, and the
 * time zone in brackets ([-4:EDT], [+5.30:IST], [0]). The date is the day as the bank wrote it:
 * the time zone says where that day was, not a reason to move it.
 */
const OFX_DATE = /^(\d{4})(\d{2})(\d{2})(?:T?\d{2}(?::?\d{2}(?::?\d{2}(?:[.,]\d{1,6})?)?)?)?\s{0,4}(?:\[\s{0,4}[+-]?\d{1,2}(?:[.:]\d{1,2})?\s{0,4}(?::\s{0,4}[A-Za-z][A-Za-z0-9_/+-]{0,31}\s{0,4})?\])?(?:Z)?$/;

function transactionDateOf(t: El, where: string, notes: Notes): string {
  let field = "DTPOSTED";
  let posted = single(t, "DTPOSTED", where);
  if (posted === undefined) {
    posted = single(t, "DTUSER", where);
    if (posted === undefined) throw new BankFileError(`${where}: the transaction has no <DTPOSTED> (nor <DTUSER>): no date to book it on.`);
    field = "DTUSER";
  }
  // Beyond the grammar, the first 8 digits still say the day when what follows them is no digit (said).
  const strict = OFX_DATE.exec(posted);
  const d = strict ?? /^(\d{4})(\d{2})(\d{2})(?!\d)/.exec(posted);
  const transactionDate = d ? isoDate(Number(d[1]), Number(d[2]), Number(d[3])) : null;
  if (transactionDate && !strict) {
    notes.add("date-rest", `${where}: <${field}> "${clip(posted)}" has more than an OFX date and time after its day; the date is read from its first 8 digits, ${transactionDate}.`);
  }
  if (!transactionDate) throw new BankFileError(`${where}: "${posted}" is not an OFX date (YYYYMMDD…) in <${field}>.`);
  const outside = dateOutOfRange(transactionDate);
  if (outside) throw new BankFileError(`${where}: <${field}> "${posted}" is ${outside}.`);
  if (field === "DTUSER") notes.add("dtuser", `${where}: the transaction has no <DTPOSTED>; its date is <DTUSER>'s, ${transactionDate}.`);
  return transactionDate;
}

/**
 * TRNAMT as banks write it. OFX takes a point or a comma as the decimal separator and no
 * thousands separator: `12,50` is 12.50 (said, once), `1.234,56` is 1234.56, `1,234.56` is
 * 1234.56. A comma followed by exactly three digits and nothing else (`1,250`) is 1.25 by OFX and
 * 1250 by habit: refused, never guessed.
 */
function ofxAmount(written: string, where: string, notes: Notes): { value?: string; problem?: string } {
  const s = written.replace(/\s+/g, "");
  const sign = /^[-+−]/.test(s) ? s[0] : "";
  const digits = s.slice(sign.length);
  if (/^\d{1,3}(?:,\d{3})+$/.test(digits)) {
    return { problem: "is ambiguous: a comma is the decimal separator in OFX (1.250) but reads as a thousands separator (1250); the file is refused rather than guessed" };
  }
  let plain = s;
  if (/^\d*,\d{1,2}$/.test(digits)) plain = `${sign}${digits.replace(",", ".")}`;
  else if (/^\d{1,3}(?:\.\d{3})+,\d{1,2}$/.test(digits)) plain = `${sign}${digits.replace(/\./g, "").replace(",", ".")}`;
  const amount = parseAmount(plain);
  // parseAmount's own hints name CSV options; an OFX amount gets only what is wrong with it.
  if (amount.problem) return { problem: /more than 2 decimals/.test(amount.problem) ? "has more than 2 decimals (the books keep cents; an amount is never rounded)" : "is not an amount" };
  if (plain !== s) notes.add("decimal-comma", `${where}: <TRNAMT> "${written}" is written with a decimal comma; it is read as ${amount.value}.`);
  return { value: amount.value };
}
