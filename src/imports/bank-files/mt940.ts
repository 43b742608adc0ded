import { chooseAccount, tallyAccounts, type AccountChoice } from "./accounts.js";
import { dropTrailingZeros, isZero, negate } from "./amounts.js";
import { dateOutOfRange, fullYear, isoDate } from "./dates.js";
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
interface Statement { reference: string; account: string; line: number; currency: string; opening?: Exact; closing?: Exact; closingLine?: number; lines: Transaction[] }
interface Transaction { line: number; date: string; amount: string; reference?: string; ownReference?: string; details: string; supplementary: string; type: string }

// YYMMDD value date, optional MMDD entry date, C/D/RC/RD, optional funds code, amount with decimal
// comma, the transaction type (N/F/S + 3), then the references: all linear, no nested repetition.
const STATEMENT_LINE = /^(\d{6})(\d{4})?(RC|RD|C|D)([A-Z])?(\d{1,15}),(\d*)([NFS][A-Z0-9]{3})?(.*)$/;
const BALANCE = /^([CD])(\d{6})([A-Z]{3})(\d{1,15}),(\d*)$/;

/**
 * The transactions of a SWIFT MT940 file, one or more statements. Each :61: line is signed by its
 * mark (C in, D out; RC, the reversal of a credit, out; RD in), its description from the :86:
 * after it; the currency is the statement's :60F:, and each statement's opening balance plus its
 * lines must come to its closing balance (:62F:), or the file is refused: a line misread or
 * missing would otherwise go in silently (`skipBalanceCheck`: read with a warning instead). The
 * bank's reference (after `//`) is the reference. A line with neither :86: nor a reference is
 * described by its supplementary details, else its transaction type (NTRF …), with a warning.
 */
export function readMt940Statement(text: string, options: { skipBalanceCheck?: boolean } & AccountChoice = {}): { rows: StatementRow[]; warnings: string[]; layout: string } {
  const fields = mt940Fields(text);
  const statements: Statement[] = [];
  let statement: Statement | null = null;
  let last: Transaction | null = null;
  for (const f of fields) {
    switch (f.tag) {
      case SEPARATOR:
        // `-` between statements: what follows, up to the next :20:, belongs to none.
        statement = null;
        last = null;
        break;
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
        s.opening = b.amount;
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
        s.closing = b.amount;
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
  const accounts = tallyAccounts(statements, (s) => ({
    key: s.account, id: accountNumber(s), label: s.account || `the statements with no account (:25:)`, suggest: accountNumber(s) || "NUMBER",
  }), (s) => s.lines.length);
  const chosen = chooseAccount("MT940", accounts, options);
  const read = chosen.key === undefined ? statements : statements.filter((s) => s.account === chosen.key);
  const warnings: string[] = [...chosen.warnings];
  const rows: StatementRow[] = [];
  const undescribed: { line: number; description: string }[] = [];
  for (const s of read) {
    if (s.opening === undefined) throw new BankFileError(`Line ${s.line}: the statement ${s.reference} has no opening balance (:60F:).`);
    if (s.closing === undefined) throw new BankFileError(`Line ${s.line}: the statement ${s.reference} has no closing balance (:62F:); the file is cut short.`);
    const moved = exactSum(s.lines.map((t) => exactOf(t.amount)));
    const expected = exactSum([s.opening, moved]);
    if (compareExact(expected, s.closing) !== 0) {
      const figures = `the statement ${s.reference}'s opening balance ${showExact(s.opening)} and its ${s.lines.length} line${s.lines.length === 1 ? "" : "s"} ` +
        `(${showExact(moved)}) do not come to its closing balance ${showExact(s.closing)}`;
      if (!options.skipBalanceCheck) {
        throw new BankFileError(`Line ${s.closingLine}: ${figures}: the file is incomplete or not MT940 as written by a bank. ${SKIP_BALANCE_CHECK}`);
      }
      warnings.push(`Line ${s.closingLine}: ${figures} (they come to ${showExact(expected)}, ${showExact(absoluteExact(exactSum([s.closing, negated(expected)])))} from it); read anyway, as --skip-balance-check asks.`);
    }
    for (const t of s.lines) {
      if (isZero(t.amount)) { warnings.push(`Line ${t.line}: the amount is 0.00; the transaction is left out.`); continue; }
      let { description, memo } = describe(t);
      if (!t.details.trim() && !t.reference) {
        // Nothing from :86: and no bank reference: what the :61: line itself says.
        description = t.supplementary || typeDescription(t.type, t.amount);
        memo = t.ownReference ?? "";
        undescribed.push({ line: t.line, description });
      }
      rows.push({
        line: t.line, transactionDate: t.date, description, amount: t.amount, eventType: eventTypeFor(description, t.amount),
        ...(memo && memo !== description ? { memo } : {}), ...(t.reference ? { reference: t.reference } : {}), currency: s.currency,
      });
    }
  }
  if (undescribed.length > 0) {
    warnings.push(`${lineList(undescribed.map((u) => u.line))}: the transaction has no description (:86:) and no bank reference; it is described by ` +
      `what its :61: line says (its supplementary details, else its transaction type), e.g. "${undescribed[0].description}" (line ${undescribed[0].line}).`);
  }
  dropRepeatedReferences(rows, warnings);
  const currency = read[0].currency;
  return { rows, warnings, layout: `MT940, ${read.length} statement${read.length === 1 ? "" : "s"}, currency ${currency}` };
}

/** The account number of :25: without the currency code some banks append (NL69INGB0123456789EUR, 123456789/EUR). */
function accountNumber(s: Statement): string {
  const id = s.account.replace(/\s+/g, "");
  return s.currency && id.toUpperCase().endsWith(s.currency) ? id.slice(0, -3).replace(/\/$/, "") : id;
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

/** "Line 5", "Lines 5, 13", "Lines 1, 2, 3, 4, 5 and 9 more". */
export function lineList(lines: number[]): string {
  const shown = lines.length > 5 ? `${lines.slice(0, 5).join(", ")} and ${lines.length - 5} more` : lines.join(", ");
  return `${lines.length === 1 ? "Line" : "Lines"} ${shown}`;
}

/** The refusal's last sentence when a statement's balances do not add up. */
export const SKIP_BALANCE_CHECK = "If the file is complete, import it with --skip-balance-check.";

/** The pseudo-field of a `-` line between statements. */
const SEPARATOR = "-";
/** Fields of one line: a line after one of them that is no field is no continuation either. */
const ONE_LINE = /^(?:6[02][FM]|64|65)$/;
/** Fields after which the statement is over (its closing and available balances). */
const CLOSING = /^(?:62[FM]|64|65)$/;

/**
 * The fields, each with its first line; continuation lines joined with "\n". SWIFT envelope blocks
 * are skipped; a `-` line (ending a message or separating statements) gives a SEPARATOR field. Lines
 * outside a statement (a bank's preamble such as ABN AMRO's `ABNANL2A` / `940` before each :20:,
 * or whatever follows a closing balance) are skipped; a line inside one that is no field and no
 * continuation of one is refused.
 */
function mt940Fields(text: string): Field[] {
  const fields: Field[] = [];
  const lines = text.split(/\r\n|\r|\n/);
  let current: Field | null = null;
  let inStatement = false;
  for (let i = 0; i < lines.length; i++) {
    // trimEnd, not /\s+$/: tried from every space of a long run inside the line, that backtracks quadratically.
    let raw = lines[i].trimEnd();
    // `{1:F01…}{2:O940…}{4:` before the body, `-}` or `-}{5:…}` after it.
    if (/^\{[1-5]:/.test(raw)) {
      raw = raw.replace(/^(?:\{[1-3]:[^{}]*(?:\{[^{}]*\}[^{}]*)*\})*/, "");
      if (raw.startsWith("{4:")) raw = raw.slice(3);
      else if (raw.startsWith("{5:")) raw = "";
    }
    if (raw === "") continue;
    if (raw === "-" || raw.startsWith("-}")) {
      if (fields.length > 0 && fields[fields.length - 1].tag !== SEPARATOR) fields.push({ tag: SEPARATOR, line: i + 1, value: "" });
      current = null;
      inStatement = false;
      continue;
    }
    const tag = /^:(\d{2}[A-Z]?|NS):/.exec(raw);
    if (tag) {
      current = { tag: tag[1], line: i + 1, value: raw.slice(tag[0].length) };
      fields.push(current);
      if (current.tag === "20") inStatement = true;
      else if (CLOSING.test(current.tag)) inStatement = false;
    } else if (current && !ONE_LINE.test(current.tag)) {
      current.value += "\n" + raw;
    } else if (inStatement) {
      throw new BankFileError(`Line ${i + 1}: "${raw.slice(0, 40)}" is neither an MT940 field (:20:, :61:, …) nor a continuation of one.`);
    } else {
      // Outside a statement (before its :20:, after its closing balance): a bank's own header, skipped.
      current = null;
    }
  }
  return fields;
}

function need(s: Statement | null, f: Field): Statement {
  if (!s) throw new BankFileError(`Line ${f.line}: :${f.tag}: before the statement's :20: reference.`);
  return s;
}

/** A balance read exactly, whatever its decimals (D: a debit balance, below zero; D0,00 is zero). */
function balance(f: Field): { currency: string; amount: Exact } {
  const m = BALANCE.exec(f.value.trim());
  if (!m) throw new BankFileError(`Line ${f.line}: ":${f.tag}:${f.value.trim().slice(0, 60)}" is not an MT940 balance (C or D, YYMMDD, currency, amount like 1234,56).`);
  const amount = exactOf(`${m[4]}.${m[5]}`);
  return { currency: m[3], amount: m[1] === "D" ? negated(amount) : amount };
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
  const [own, bankPart] = splitOnce(m[8] ?? "", "//");
  const bank = bankPart?.trim() ?? "";
  const reference = bank && bank.toUpperCase() !== "NONREF" ? bank : undefined;
  const ownReference = own.trim() && own.trim().toUpperCase() !== "NONREF" ? own.trim() : undefined;
  return {
    line: f.line, date, amount, ...(reference ? { reference } : {}), ...(ownReference ? { ownReference } : {}),
    details: "", supplementary: rest.join(" ").trim(), type: m[7] ?? "",
  };
}

function splitOnce(s: string, separator: string): [string, string | undefined] {
  const i = s.indexOf(separator);
  return i === -1 ? [s, undefined] : [s.slice(0, i), s.slice(i + separator.length)];
}

function decimal(whole: string, fraction: string, f: Field): string {
  const kept = dropTrailingZeros(fraction);
  if (kept.length > 2) throw new BankFileError(`Line ${f.line}: the amount ${`${whole},${fraction}`.slice(0, 40)} has more than 2 decimals.`);
  return `${whole.replace(/^0+(?=\d)/, "")}.${kept.padEnd(2, "0")}`;
}

/** The year by the same rule as a CSV's two-digit years (00–69 are 20xx): one file's 75 is never 2075 and another's 1975. */
function yymmdd(s: string, f: Field): string {
  const date = isoDate(fullYear(s.slice(0, 2)), Number(s.slice(2, 4)), Number(s.slice(4, 6)));
  if (!date) throw new BankFileError(`Line ${f.line}: "${s}" is not a date (YYMMDD).`);
  return date;
}

/** An exact decimal: units at a scale (18.150 is 18150 at 3), never a float, never rounded. */
export interface Exact { units: bigint; scale: number }

/** "-18.150", "18.", "0.5" read exactly. */
export function exactOf(value: string): Exact {
  const m = /^(-)?(\d*)(?:\.(\d*))?$/.exec(value.trim());
  if (!m) throw new Error(`not a decimal: ${value}`);
  const fraction = m[3] ?? "";
  return { units: BigInt((m[2] || "0") + fraction) * (m[1] ? -1n : 1n), scale: fraction.length };
}

const rescaled = (d: Exact, scale: number): bigint => d.units * 10n ** BigInt(scale - d.scale);
export const negated = (d: Exact): Exact => ({ units: -d.units, scale: d.scale });
export const absoluteExact = (d: Exact): Exact => ({ units: d.units < 0n ? -d.units : d.units, scale: d.scale });

export function exactSum(values: Exact[]): Exact {
  const scale = Math.max(2, ...values.map((v) => v.scale));
  return { units: values.reduce((sum, v) => sum + rescaled(v, scale), 0n), scale };
}

export function compareExact(a: Exact, b: Exact): number {
  const scale = Math.max(a.scale, b.scale);
  const [x, y] = [rescaled(a, scale), rescaled(b, scale)];
  return x === y ? 0 : x < y ? -1 : 1;
}

/** At least 2 decimals, more only where they are not zeros: 18.150 is "18.15", 27.0501 "27.0501". */
export function showExact(d: Exact): string {
  const scale = Math.max(2, d.scale);
  const units = rescaled(d, scale);
  const digits = (units < 0n ? -units : units).toString().padStart(scale + 1, "0");
  const fraction = dropTrailingZeros(digits.slice(-scale)).padEnd(2, "0");
  return `${units < 0n ? "-" : ""}${digits.slice(0, -scale)}.${fraction}`;
}

/** SWIFT's transaction type codes (the 3 letters after N or F in a :61: line), the common ones. */
const TYPE_CODES: Record<string, string> = {
  BOE: "bill of exchange", BRF: "brokerage fee", CHG: "charges", CHK: "cheque", CLR: "cash letter", CMI: "cash management",
  COL: "collection", COM: "commission", DCR: "documentary credit", DDT: "direct debit", DIV: "dividend", EQA: "equivalent amount",
  FEX: "foreign exchange", INT: "interest", LBX: "lock box", LDP: "loan deposit", MSC: "miscellaneous", ODC: "overdraft charge",
  RTI: "returned item", SEC: "securities", STO: "standing order", TCK: "travellers cheque", TRF: "transfer", VDA: "value date adjustment",
};

/** "MT940 NTRF transfer", "MT940 S103 (SWIFT MT103)", "MT940 N000"; without a type code "MT940 debit" or "MT940 credit". */
function typeDescription(type: string, amount: string): string {
  if (!type) return `MT940 ${amount.startsWith("-") ? "debit" : "credit"}`;
  if (type.startsWith("S")) return `MT940 ${type} (SWIFT MT${type.slice(1)})`;
  const label = TYPE_CODES[type.slice(1)];
  return label ? `MT940 ${type} ${label}` : `MT940 ${type}`;
}

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
