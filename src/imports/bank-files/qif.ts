import { chooseAccount, tallyAccounts, type AccountChoice } from "./accounts.js";
import { decimalHint, isZero, parseAmount, type DecimalMark } from "./amounts.js";
import { DATE_FORMAT_LABEL, dateOutOfRange, detectDateOrder, parseDate, type DateOrder } from "./dates.js";
import { eventTypeFor } from "./event-type.js";
import { BankFileError, type StatementRow } from "./row.js";

/** A comment line some exporters write above a QIF file's first header (`### exported by …`). */
const COMMENT = /^#/;

/**
 * A QIF file names its first section's type (`!Type:Bank`, `!Account`, `!Option:…`) on its first
 * line that is neither blank nor a `#` comment.
 */
export function looksLikeQif(text: string): boolean {
  const first = text.slice(0, 4096).split(/\r\n|\r|\n/).map((l) => l.trim()).find((l) => l !== "" && !COMMENT.test(l)) ?? "";
  return /^!(?:Type|Account|Option|Clear)\b/i.test(first);
}

/** The sections whose records are transactions of one account; the others (categories, classes, memorized payees, the account list) hold none. */
const TRANSACTION_TYPES = /^!Type:\s*(Bank|CCard|Cash|Oth\s*A|Oth\s*L)\s*$/i;
const LIST_SECTIONS = /^!(?:Account|Type:\s*(?:Cat|Class|Memorized|Prices|Security))\s*$/i;

/** `section`: the index of the transaction section it is in (sectionAccounts). */
interface QifRecord { line: number; fields: Map<string, { line: number; value: string }>; section: number }

/**
 * The transactions of a QIF (Quicken Interchange Format) bank, card or cash register. The amount
 * (`T`, or `U` as Quicken 2005+ repeats it) is signed from the account's side already; the date
 * (`D`) is month-first, day-first or year-first with 2- or 4-digit years (`1/31/2025`, `01/31'25`,
 * `31.01.2025`, `2025-01-31`); the order is the one that reads every date of the file, or the
 * operator's `--date-format` when the file does not settle it. QIF has no transaction id: the check
 * number (`N`) goes to the memo, never the reference, since "ATM" or a number a bank restarts
 * would make next month's row look like an imported one.
 */
export function readQifStatement(text: string, dateOrder?: DateOrder, decimal?: DecimalMark, choice: AccountChoice = {}):
  { rows: StatementRow[]; warnings: string[]; layout: string } {
  const warnings: string[] = [];
  let records: QifRecord[] = [];
  // Each transaction section's account: the name (N) of the !Account record just above it, when Quicken wrote one.
  const sectionAccounts: { name: string; line: number }[] = [];
  let accountList = false;
  let listedName = "";
  const lines = text.split(/\r\n|\r|\n/);
  let section: "transactions" | "list" | "investment" | null = null;
  let sections = 0;
  const investments: { line: number; header: string; records: number }[] = [];
  let current: QifRecord | null = null;
  for (let i = 0; i < lines.length; i++) {
    const line = i + 1;
    const raw = lines[i].trim();
    if (raw === "") continue;
    // Comment lines above the first header.
    if (section === null && COMMENT.test(raw)) continue;
    if (raw.startsWith("!")) {
      if (current && current.fields.size > 0) throw new BankFileError(`Line ${current.line}: the record has no end (^) before the header on line ${line}.`);
      current = null;
      if (TRANSACTION_TYPES.test(raw)) {
        section = "transactions";
        sections++;
        sectionAccounts.push({ name: listedName, line });
        listedName = "";
        continue;
      }
      if (LIST_SECTIONS.test(raw)) { section = "list"; accountList = /^!Account\s*$/i.test(raw); continue; }
      if (/^!(?:Option|Clear):/i.test(raw)) continue;
      // An investment account's section (buys, sells, dividends) is no register of this account: left out, with a warning.
      if (/^!Type:\s*Invst/i.test(raw)) { section = "investment"; investments.push({ line, header: raw, records: 0 }); continue; }
      throw new BankFileError(`Line ${line}: "${raw.slice(0, 40)}" is not a QIF header this import reads (!Type:Bank, !Type:CCard, !Type:Cash, !Type:Oth A, !Type:Oth L).`);
    }
    if (section === null) throw new BankFileError(`Line ${line}: a QIF record before any !Type header.`);
    if (section === "list") {
      if (accountList && /^N/i.test(raw)) listedName = raw.slice(1).trim();
      continue;
    }
    if (section === "investment") { if (raw === "^") investments[investments.length - 1].records++; continue; }
    if (raw === "^") {
      if (current) records.push(current);
      current = null;
      continue;
    }
    const code = raw[0].toUpperCase();
    const value = raw.slice(1).trim();
    current ??= { line, fields: new Map(), section: sections - 1 };
    // Splits (S, E, $) and address lines (A) repeat; the transaction's own fields are the first of each.
    if (!current.fields.has(code)) current.fields.set(code, { line, value });
  }
  if (current && current.fields.size > 0) {
    // The last record's ^ is often left off; a record with a date and an amount is whole without it.
    if (current.fields.has("D") && (current.fields.has("T") || current.fields.has("U"))) records.push(current);
    else throw new BankFileError(`Line ${current.line}: the last record has no end (^) and lacks a date or an amount.`);
  }
  if (sections === 0 && investments.length > 0) {
    throw new BankFileError(`Line ${investments[0].line}: the QIF file holds investment transactions (${investments[0].header}), not a bank or card statement.`);
  }
  for (const inv of investments) {
    warnings.push(`Line ${inv.line}: the investment section (${inv.header}${inv.records ? `, ${inv.records} record${inv.records > 1 ? "s" : ""}` : ""}) is left out: only bank, card and cash transactions are read.`);
  }
  if (sections === 0) throw new BankFileError("The QIF file has no !Type:Bank, !Type:CCard or !Type:Cash section: it holds no transactions.");
  // Each section's records counted in one pass: a file may hold thousands of sections.
  const perSection = new Array<number>(sectionAccounts.length).fill(0);
  for (const r of records) perSection[r.section]++;
  const accounts = tallyAccounts(sectionAccounts.map((a, i) => ({ ...a, i })), (a) => ({
    key: a.name, id: a.name, label: a.name ? `the account "${a.name}"` : "the sections with no !Account name", detail: `from line ${a.line}`,
    suggest: /\s/.test(a.name) ? JSON.stringify(a.name) : a.name || "NAME",
  }), (a) => perSection[a.i]);
  const chosen = chooseAccount("QIF", accounts, choice);
  warnings.push(...chosen.warnings);
  if (chosen.key !== undefined) records = records.filter((r) => sectionAccounts[r.section].name === chosen.key);
  const read = sectionAccounts.filter((a) => a.name === chosen.key).length;
  if (read > 1) warnings.push(`The QIF file holds ${read} sections of one account; their transactions are read together.`);

  const dates = records.map((r) => {
    const d = r.fields.get("D");
    if (!d) throw new BankFileError(`Line ${r.line}: the transaction has no date (D).`);
    if (!r.fields.has("T") && !r.fields.has("U")) throw new BankFileError(`Line ${r.line}: the transaction has no amount (T).`);
    const normal = normalizeQifDate(d.value);
    if (!normal) throw new BankFileError(`Line ${d.line}: "${d.value}" is not a QIF date (like 1/31/2025, 01/31'25, 31.01.2025 or 2025-01-31).`);
    return { line: d.line, text: normal, original: d.value };
  });
  let order = dateOrder;
  if (!order && dates.length > 0) {
    try {
      order = detectDateOrder(dates);
    } catch (e) {
      if (!(e instanceof BankFileError)) throw e;
      const example = dates.find((c) => parseDate(c.text, "MDY") !== parseDate(c.text, "DMY"))?.original ?? dates[0].original;
      throw new BankFileError(`The dates (e.g. "${example}") read as month/day and as day/month: no date in the file settles which. ` +
        `Say which with --date-format M/D/YYYY or --date-format D/M/YYYY.`);
    }
  }

  const mark = decimalMark(records, decimal);
  const qifAmount = (cell: string) => parseAmount(cell.trim(), { decimal: mark });
  const rows: StatementRow[] = [];
  records.forEach((r, i) => {
    const d = dates[i];
    const transactionDate = parseDate(d.text, order!);
    if (!transactionDate) throw new BankFileError(`Line ${d.line}: "${d.original}" is not a date (${DATE_FORMAT_LABEL[order!]}).`);
    const outside = dateOutOfRange(transactionDate);
    if (outside) throw new BankFileError(`Line ${d.line}: "${d.original}" is ${outside}.`);
    const t = r.fields.get("T");
    const u = r.fields.get("U");
    const cell = (t ?? u)!;
    const amount = qifAmount(cell.value);
    if (amount.problem) throw new BankFileError(`Line ${cell.line}: "${cell.value}" ${amount.problem}.`);
    if (t && u) {
      const other = qifAmount(u.value);
      if (other.value !== amount.value) throw new BankFileError(`Line ${u.line}: the U amount "${u.value}" differs from the T amount "${t.value}" on line ${t.line}.`);
    }
    if (isZero(amount.value!)) {
      warnings.push(`Line ${r.line}: the amount is 0.00; the transaction is left out.`);
      return;
    }
    const payee = r.fields.get("P")?.value ?? "";
    const memoText = r.fields.get("M")?.value ?? "";
    const number = r.fields.get("N")?.value ?? "";
    const description = payee || memoText;
    if (!description) throw new BankFileError(`Line ${r.line}: the transaction has neither a payee (P) nor a memo (M).`);
    const memo = [payee ? memoText : "", number ? `No. ${number}` : ""].filter((s) => s).join("; ");
    rows.push({
      line: r.line, transactionDate, description, amount: amount.value!, eventType: eventTypeFor(description, amount.value!),
      ...(memo ? { memo } : {}),
    });
  });
  return { rows, warnings, layout: `QIF, dates ${DATE_FORMAT_LABEL[order ?? "MDY"]}${dateOrder ? " (given)" : ""}` };
}

/**
 * The file's decimal mark, settled by the whole file as a CSV column's is, never cell by cell: an
 * amount only one mark reads (-12,50; 1,234.56) settles it; two that disagree, or amounts that all
 * read two ways (1.250), are refused unless `--decimal` says it. Quicken's own files write a point.
 */
function decimalMark(records: QifRecord[], given: DecimalMark | undefined): DecimalMark {
  if (given) return given;
  const seen: Partial<Record<DecimalMark | "either", { line: number; value: string }>> = {};
  for (const r of records) {
    for (const cell of [r.fields.get("T"), r.fields.get("U")]) {
      const hint = cell ? decimalHint(cell.value) : undefined;
      if (cell && hint && !seen[hint]) seen[hint] = cell;
    }
  }
  if (seen.comma && seen.point) {
    throw new BankFileError(`The amounts are written with a decimal comma ("${seen.comma.value}", line ${seen.comma.line}) and with a decimal point ` +
      `("${seen.point.value}", line ${seen.point.line}): give --decimal comma or --decimal point to say which the file uses.`);
  }
  if (seen.comma || seen.point) return seen.comma ? "comma" : "point";
  if (seen.either) {
    throw new BankFileError(`Line ${seen.either.line}: "${seen.either.value}" reads two ways (a decimal mark or a thousands separator) and no amount ` +
      "of the file settles which. Give --decimal point (1,234.56) or --decimal comma (1.234,56).");
  }
  return "point";
}

/**
 * The date with a 4-digit year, its separators as written: `01/31'25` → `01/31/2025`, `1/ 5' 4`
 * (Quicken pads with spaces) → `1/5/2004`, `1/31/98` → `1/31/1998`. An apostrophe before the year
 * is Quicken's mark of 2000 and later; a 2-digit year without it is 19xx only when 20xx would be
 * more than a year ahead. Null when it is not date-shaped.
 */
function normalizeQifDate(value: string): string | null {
  const s = value.replace(/\s+/g, "");
  if (/^\d{4}[-/.]\d{1,2}[-/.]\d{1,2}$/.test(s)) return s;
  const m = /^(\d{1,2})([-/.])(\d{1,2})(?:([-/.])(\d{4}|\d{2})|'(\d{4}|\d{1,2}))$/.exec(s);
  if (!m) return null;
  let year: number;
  // `2/10'2020`: some exporters write the apostrophe before a 4-digit year too.
  if (m[6] !== undefined) year = m[6].length === 4 ? Number(m[6]) : 2000 + Number(m[6]);
  else if (m[5].length === 4) year = Number(m[5]);
  else {
    const yy = Number(m[5]);
    year = 2000 + yy <= new Date().getUTCFullYear() + 1 ? 2000 + yy : 1900 + yy;
  }
  return `${m[1]}${m[2]}${m[3]}${m[2]}${year}`;
}
