import { isZero, negate } from "./amounts.js";
import { dateOutOfRange, isoDate } from "./dates.js";
import { eventTypeFor } from "./event-type.js";
import { BankFileError, type StatementRow } from "./row.js";

/**
 * An MT940 statement starts (after SWIFT's `{1:…}{2:…}{4:` blocks, if any) with its `:20:`
 * reference, then `:25:` the account and `:60F:` (or `:60M:`) the opening balance.
 */
export function looksLikeMt940(text: string): boolean {
  const start = text.slice(0, 4096);
  return /^:20:/m.test(start) && /^:25P?:/m.test(start) && /^:6[02][FM]:/m.test(start);
}

interface Field { tag: string; line: number; value: string }
interface Statement { reference: string; account: string; line: number; currency: string; opening?: bigint; closing?: bigint; closingLine?: number; lines: Transaction[] }
interface Transaction { line: number; date: string; amount: string; reference?: string; details: string; supplementary: string; type: string }

// YYMMDD value date, optional MMDD entry date, C/D/RC/RD, optional funds code, amount with decimal
// comma, the transaction type (N/F/S + 3), then the references: all linear, no nested repetition.
const STATEMENT_LINE = /^(\d{6})(\d{4})?(RC|RD|C|D)([A-Z])?(\d{1,15}),(\d*)([NFS][A-Z0-9]{3})?(.*)$/;
const BALANCE = /^([CD])(\d{6})([A-Z]{3})(\d{1,15}),(\d*)$/;

/**
 * The transactions of a SWIFT MT940 file, one or more statements. Each :61: line is signed by its
 * mark (C in, D out; RC, the reversal of a credit, out; RD in), its description from the :86:
 * after it; the currency is the statement's :60F:, and each statement's opening balance plus its
 * lines must come to its closing balance (:62F:), or the file is refused: a line misread or
 * missing would otherwise go in silently. The bank's reference (after `//`) is the reference.
 */
export function readMt940Statement(text: string): { rows: StatementRow[]; warnings: string[]; layout: string } {
  const fields = mt940Fields(text);
  const statements: Statement[] = [];
  let statement: Statement | null = null;
  let last: Transaction | null = null;
  for (const f of fields) {
    switch (f.tag) {
      case "20":
        statement = { reference: f.value.trim(), account: "", line: f.line, currency: "", lines: [] };
        statements.push(statement);
        last = null;
        break;
      case "25": case "25P":
        need(statement, f).account = f.value.split("\n")[0].trim();
        break;
      case "60F": case "60M": {
        const s = need(statement, f);
        const b = balance(f);
        s.currency = b.currency;
        s.opening = b.cents;
        break;
      }
      case "61": {
        const s = need(statement, f);
        if (!s.currency) throw new BankFileError(`Line ${f.line}: a :61: statement line before the opening balance (:60F:) that gives the currency.`);
        last = statementLine(f);
        s.lines.push(last);
        break;
      }
      case "86":
        // Information to the account owner: the line's when it follows a :61:, else the statement's.
        if (last && !last.details) last.details = f.value;
        break;
      case "62F": case "62M": {
        const s = need(statement, f);
        const b = balance(f);
        if (s.currency && b.currency !== s.currency) {
          throw new BankFileError(`Line ${f.line}: the closing balance is in ${b.currency}, the opening balance in ${s.currency}.`);
        }
        s.closing = b.cents;
        s.closingLine = f.line;
        last = null;
        break;
      }
      default:
        // :21:, :28C:, :64:, :65:, :NS: and the like say nothing about a transaction.
        if (f.tag !== "86") last = f.tag === "NS" ? last : null;
    }
  }
  if (statements.length === 0) throw new BankFileError("The MT940 file holds no statement (:20:).");
  const warnings: string[] = [];
  const rows: StatementRow[] = [];
  for (const s of statements) {
    if (s.opening === undefined) throw new BankFileError(`Line ${s.line}: the statement ${s.reference} has no opening balance (:60F:).`);
    if (s.closing === undefined) throw new BankFileError(`Line ${s.line}: the statement ${s.reference} has no closing balance (:62F:); the file is cut short.`);
    const moved = s.lines.reduce((sum, t) => sum + cents(t.amount), 0n);
    if (s.opening + moved !== s.closing) {
      throw new BankFileError(`Line ${s.closingLine}: the statement ${s.reference}'s opening balance ${money(s.opening)} and its ${s.lines.length} lines ` +
        `(${money(moved)}) do not come to its closing balance ${money(s.closing)}: the file is incomplete or not MT940 as written by a bank.`);
    }
    for (const t of s.lines) {
      if (isZero(t.amount)) { warnings.push(`Line ${t.line}: the amount is 0.00; the transaction is left out.`); continue; }
      const { description, memo } = describe(t);
      if (!description) throw new BankFileError(`Line ${t.line}: the transaction has no description (:86:) and no reference.`);
      rows.push({
        line: t.line, transactionDate: t.date, description, amount: t.amount, eventType: eventTypeFor(description, t.amount),
        ...(memo && memo !== description ? { memo } : {}), ...(t.reference ? { reference: t.reference } : {}), currency: s.currency,
      });
    }
  }
  const accounts = new Set(statements.map((s) => s.account));
  if (accounts.size > 1) warnings.push(`The MT940 file holds statements of ${accounts.size} accounts; all their transactions go to the one payment account.`);
  dropRepeatedReferences(rows, warnings);
  const currency = statements[0].currency;
  return { rows, warnings, layout: `MT940, ${statements.length} statement${statements.length === 1 ? "" : "s"}, currency ${currency}` };
}

/**
 * References are what the import pairs re-downloaded rows by (the k-th row of a reference is the
 * k-th event of it): a bank that repeats one within a file does not make them unique, and pairing
 * by them would take a new row for an old one. Such a file's rows go without references.
 */
export function dropRepeatedReferences(rows: StatementRow[], warnings: string[]): void {
  const seen = new Map<string, number>();
  for (const r of rows) {
    if (!r.reference) continue;
    const first = seen.get(r.reference);
    if (first !== undefined) {
      warnings.push(`Lines ${first} and ${r.line} share the reference "${r.reference}": the file's references are not unique, so none is kept; duplicates are found by date, amount and description.`);
      for (const row of rows) delete row.reference;
      return;
    }
    seen.set(r.reference, r.line);
  }
}

/** The fields, each with its first line; continuation lines joined with "\n". SWIFT envelope blocks and the `-` ending a message are skipped. */
function mt940Fields(text: string): Field[] {
  const fields: Field[] = [];
  const lines = text.split(/\r\n|\r|\n/);
  let current: Field | null = null;
  for (let i = 0; i < lines.length; i++) {
    let raw = lines[i].replace(/\s+$/, "");
    // `{1:F01…}{2:O940…}{4:` before the body, `-}` or `-}{5:…}` after it.
    if (/^\{[1-5]:/.test(raw)) {
      raw = raw.replace(/^(?:\{[1-3]:[^{}]*(?:\{[^{}]*\}[^{}]*)*\})*/, "");
      if (raw.startsWith("{4:")) raw = raw.slice(3);
      else if (raw.startsWith("{5:")) raw = "";
    }
    if (raw === "" || raw === "-" || raw.startsWith("-}")) { if (raw !== "") current = null; continue; }
    const tag = /^:(\d{2}[A-Z]?|NS):/.exec(raw);
    if (tag) {
      current = { tag: tag[1], line: i + 1, value: raw.slice(tag[0].length) };
      fields.push(current);
    } else if (current) {
      current.value += "\n" + raw;
    } else if (fields.length > 0) {
      throw new BankFileError(`Line ${i + 1}: "${raw.slice(0, 40)}" is neither an MT940 field (:20:, :61:, …) nor a continuation of one.`);
    }
    // Lines before the first field (a bank's own header) are skipped.
  }
  return fields;
}

function need(s: Statement | null, f: Field): Statement {
  if (!s) throw new BankFileError(`Line ${f.line}: :${f.tag}: before the statement's :20: reference.`);
  return s;
}

function balance(f: Field): { currency: string; cents: bigint } {
  const m = BALANCE.exec(f.value.trim());
  if (!m) throw new BankFileError(`Line ${f.line}: ":${f.tag}:${f.value.trim()}" is not an MT940 balance (C or D, YYMMDD, currency, amount like 1234,56).`);
  const amount = decimal(m[4], m[5], f);
  return { currency: m[3], cents: (m[1] === "D" ? -1n : 1n) * cents(amount) };
}

function statementLine(f: Field): Transaction {
  const [first, ...rest] = f.value.split("\n");
  const m = STATEMENT_LINE.exec(first.trim());
  if (!m) throw new BankFileError(`Line ${f.line}: ":61:${first.trim().slice(0, 60)}" is not an MT940 statement line (YYMMDD[MMDD], C/D/RC/RD, amount like 12,50, type).`);
  const valueDate = yymmdd(m[1], f);
  let date = valueDate;
  if (m[2]) {
    // The booking (entry) date: its year is the value date's, or the next or last when the two straddle New Year.
    const year = Number(valueDate.slice(0, 4));
    const month = Number(m[2].slice(0, 2));
    const valueMonth = Number(valueDate.slice(5, 7));
    const entryYear = month - valueMonth > 6 ? year - 1 : valueMonth - month > 6 ? year + 1 : year;
    const entry = isoDate(entryYear, month, Number(m[2].slice(2)));
    if (!entry) throw new BankFileError(`Line ${f.line}: the entry date "${m[2]}" (MMDD) is not a date.`);
    date = entry;
  }
  const outside = dateOutOfRange(date);
  if (outside) throw new BankFileError(`Line ${f.line}: the date ${date} is ${outside}.`);
  const magnitude = decimal(m[5], m[6], f);
  // C and RD (a debit reversed) put money in; D and RC (a credit reversed) take it out.
  const amount = m[3] === "C" || m[3] === "RD" ? magnitude : negate(magnitude);
  // The account owner's reference (before `//`) is the payer's own, often NONREF or repeated;
  // the bank's (after it) names the booking.
  const bank = splitOnce(m[8] ?? "", "//")[1]?.trim() ?? "";
  const reference = bank && bank.toUpperCase() !== "NONREF" ? bank : undefined;
  return { line: f.line, date, amount, ...(reference ? { reference } : {}), details: "", supplementary: rest.join(" ").trim(), type: m[7] ?? "" };
}

function splitOnce(s: string, separator: string): [string, string | undefined] {
  const i = s.indexOf(separator);
  return i === -1 ? [s, undefined] : [s.slice(0, i), s.slice(i + separator.length)];
}

function decimal(whole: string, fraction: string, f: Field): string {
  const kept = fraction.replace(/0+$/, "");
  if (kept.length > 2) throw new BankFileError(`Line ${f.line}: the amount ${whole},${fraction} has more than 2 decimals.`);
  return `${whole.replace(/^0+(?=\d)/, "")}.${kept.padEnd(2, "0")}`;
}

function yymmdd(s: string, f: Field): string {
  const yy = Number(s.slice(0, 2));
  const date = isoDate(yy < 80 ? 2000 + yy : 1900 + yy, Number(s.slice(2, 4)), Number(s.slice(4, 6)));
  if (!date) throw new BankFileError(`Line ${f.line}: "${s}" is not a date (YYMMDD).`);
  return date;
}

const cents = (amount: string): bigint => BigInt(amount.replace(".", ""));
const money = (c: bigint): string => {
  const s = (c < 0n ? -c : c).toString().padStart(3, "0");
  return `${c < 0n ? "-" : ""}${s.slice(0, -2)}.${s.slice(-2)}`;
};

/**
 * The description and memo from :86:. Structured forms: German `?20`…`?29` purpose with `?32`/`?33`
 * the other party; Dutch `/NAME/…/REMI/…`. Otherwise the text itself, its 65-character lines joined.
 */
function describe(t: Transaction): { description: string; memo: string } {
  const info = t.details;
  if (/^\d{3}\?\d{2}/.test(info.replace(/\n/g, ""))) {
    const flat = info.replace(/\n/g, "");
    const parts = new Map<string, string>();
    for (const m of flat.slice(3).matchAll(/\?(\d{2})([^?]*)/g)) parts.set(m[1], (parts.get(m[1]) ?? "") + m[2]);
    const pick = (from: number, to: number) => [...parts].filter(([k]) => Number(k) >= from && Number(k) <= to).map(([, v]) => v.trim()).filter((v) => v).join(" ");
    const purpose = pick(20, 29) || pick(60, 63);
    const name = pick(32, 33);
    return { description: name || purpose || (parts.get("00") ?? "").trim(), memo: name ? purpose : "" };
  }
  if (/^\/[A-Z]{2,4}\//.test(info)) {
    const flat = info.replace(/\n/g, "");
    const tags = new Map<string, string>();
    for (const m of flat.matchAll(/\/([A-Z]{2,4})\/([^/]*(?:\/(?![A-Z]{2,4}\/)[^/]*)*)/g)) if (!tags.has(m[1])) tags.set(m[1], m[2].trim());
    const name = tags.get("NAME") ?? "";
    const remittance = tags.get("REMI") ?? "";
    return { description: name || remittance || flat.trim(), memo: name ? remittance : "" };
  }
  const lines = info.split("\n");
  const text = lines.map((l, i) => (i > 0 && lines[i - 1].length < 65 ? " " : "") + l).join("").trim();
  return { description: text || t.supplementary || t.reference || "", memo: text && t.supplementary ? t.supplementary : "" };
}
