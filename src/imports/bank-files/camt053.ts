import { XMLParser, XMLValidator } from "fast-xml-parser";
import { isZero, negate, parseAmount } from "./amounts.js";
import { dateOutOfRange, isoDate } from "./dates.js";
import { eventTypeFor } from "./event-type.js";
import { dropRepeatedReferences } from "./mt940.js";
import { BankFileError, type StatementRow } from "./row.js";

/** An ISO 20022 camt.053 document names its namespace (`urn:iso:std:iso:20022:tech:xsd:camt.053.001.xx`) or its `BkToCstmrStmt` element near its start. */
export function looksLikeCamt053(text: string): boolean {
  const start = text.slice(0, 4096);
  return /^\s*</.test(start) && (/camt\.053\.\d{3}/.test(start) || /<(?:[\w.-]+:)?BkToCstmrStmt[\s>]/.test(start));
}

type Node = Record<string, unknown>;
const list = <T>(v: T | T[] | undefined): T[] => (v === undefined || v === null || v === "" ? [] : Array.isArray(v) ? v : [v]);
const node = (v: unknown): Node => (v && typeof v === "object" && !Array.isArray(v) ? (v as Node) : {});
/** An element's text, whether it has attributes (`{ "#text": … }`) or not. */
const text = (v: unknown): string => {
  if (typeof v === "string") return v.trim();
  if (v && typeof v === "object" && "#text" in v) return String((v as Node)["#text"]).trim();
  return "";
};
const path = (v: unknown, ...names: string[]): unknown => names.reduce<unknown>((n, name) => (n && typeof n === "object" ? (n as Node)[name] : undefined), v);

const ARRAYS = new Set(["Stmt", "Ntry", "TxDtls", "Ustrd", "Bal", "NtryDtls", "AddtlNtryInf"]);
const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: "@_",
  removeNSPrefix: true,
  // Strings stay strings: "0012" is a reference, "12.50" an exact amount, never a float.
  parseTagValue: false,
  parseAttributeValue: false,
  // Only XML's own five entities (&amp; …): a DOCTYPE is refused before parsing, so none is declared.
  processEntities: { enabled: true, maxEntityCount: 0, maxTotalExpansions: 1_000_000 },
  htmlEntities: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
  maxNestedTags: 64,
  isArray: (name: string) => ARRAYS.has(name),
});

/**
 * The booked entries (`Ntry`) of every statement (`Stmt`) of an ISO 20022 camt.053 file. CRDT puts
 * money in, DBIT takes it out (a reversal's indicator already says which way its money moves);
 * the date is the booking date (else the value date); the description is the other party's name,
 * else the remittance text or the entry's additional information; the bank's own reference
 * (`AcctSvcrRef`, else a `NtryRef` that is more than a sequence number) is the reference. Where a
 * statement gives opening and closing booked balances, its entries must come from one to the other.
 */
export function readCamt053Statement(text_: string): { rows: StatementRow[]; warnings: string[]; layout: string } {
  // No DOCTYPE, no entity declarations: nothing to expand, nothing external to fetch (XXE).
  const doctype = /<!(?:DOCTYPE|ENTITY)\b/i.exec(text_);
  if (doctype) throw new BankFileError(`Line ${lineAt(text_, doctype.index)}: the XML has a <!DOCTYPE> or <!ENTITY> declaration, which no camt.053 statement has; the file is refused.`);
  const valid = XMLValidator.validate(text_);
  if (valid !== true) throw new BankFileError(`Line ${valid.err.line}: the camt.053 file is not well-formed XML: ${valid.err.msg}`);
  let doc: Node;
  try {
    doc = parser.parse(text_) as Node;
  } catch (e) {
    throw new BankFileError(`The file looks like camt.053 but cannot be read: ${(e as Error).message}.`);
  }
  const root = node(path(doc, "Document", "BkToCstmrStmt"));
  const statements = list(root.Stmt).map(node);
  if (statements.length === 0) throw new BankFileError("The camt.053 file holds no statement (Document/BkToCstmrStmt/Stmt).");

  const entryLines = lineNumbers(text_, /<(?:[\w.-]+:)?Ntry[\s>]/g);
  const rows: StatementRow[] = [];
  const warnings: string[] = [];
  let n = 0;
  for (const stmt of statements) {
    const statementCurrency = text(path(stmt, "Acct", "Ccy")).toUpperCase();
    let moved = 0n;
    let currency = statementCurrency;
    for (const entry of list(stmt.Ntry).map(node)) {
      n++;
      const line = entryLines[n - 1] ?? 0;
      const where = line ? `Line ${line} (entry ${n})` : `Entry ${n}`;
      const amt = entry.Amt;
      const magnitude = text(amt);
      const ccy = (typeof amt === "object" && amt ? String((amt as Node)["@_Ccy"] ?? "") : "").trim().toUpperCase();
      if (!/^\d+(?:\.\d+)?$/.test(magnitude)) throw new BankFileError(`${where}: "${magnitude}" in <Amt> is not an amount.`);
      if (!/^[A-Z]{3}$/.test(ccy)) throw new BankFileError(`${where}: <Amt> has no currency (Ccy="…").`);
      const parsed = parseAmount(magnitude);
      if (parsed.problem) throw new BankFileError(`${where}: "${magnitude}" in <Amt> ${parsed.problem}.`);
      const indicator = text(entry.CdtDbtInd);
      if (indicator !== "CRDT" && indicator !== "DBIT") throw new BankFileError(`${where}: <CdtDbtInd> is "${indicator}", not CRDT or DBIT.`);
      const amount = indicator === "DBIT" ? negate(parsed.value!) : parsed.value!;
      const status = text(entry.Sts) || text(path(entry, "Sts", "Cd"));
      if (status && status !== "BOOK") {
        warnings.push(`${where}: the entry is ${status === "PDNG" ? "pending" : `of status ${status}`}, not booked; it is left out.`);
        continue;
      }
      moved += cents(amount);
      currency ||= ccy;
      const booked = text(path(entry, "BookgDt", "Dt")) || text(path(entry, "BookgDt", "DtTm")) || text(path(entry, "ValDt", "Dt")) || text(path(entry, "ValDt", "DtTm"));
      const d = /^(\d{4})-(\d{2})-(\d{2})/.exec(booked);
      const transactionDate = d ? isoDate(Number(d[1]), Number(d[2]), Number(d[3])) : null;
      if (!transactionDate) throw new BankFileError(`${where}: "${booked}" in <BookgDt> is not a date (YYYY-MM-DD).`);
      const outside = dateOutOfRange(transactionDate);
      if (outside) throw new BankFileError(`${where}: the booking date ${transactionDate} is ${outside}.`);
      if (isZero(amount)) { warnings.push(`${where}: the amount is 0.00; the entry is left out.`); continue; }

      const details = list(entry.NtryDtls).map(node).flatMap((d) => list(d.TxDtls).map(node));
      const party = indicator === "DBIT" ? "Cdtr" : "Dbtr";
      const name = details.map((t) => text(path(t, "RltdPties", party, "Nm")) || text(path(t, "RltdPties", party, "Pty", "Nm"))).find((s) => s) ?? "";
      const remittance = details.flatMap((t) => list(path(t, "RmtInf", "Ustrd") as unknown[]).map(text)).filter((s) => s).join(" ");
      const additional = list(entry.AddtlNtryInf).map(text).filter((s) => s).join(" ");
      const description = name || remittance || additional;
      if (!description) throw new BankFileError(`${where}: the entry has no counterparty name, remittance information (Ustrd) or AddtlNtryInf.`);
      const memo = name ? remittance || additional : remittance ? additional : "";
      const ntryRef = text(entry.NtryRef);
      const reference = text(entry.AcctSvcrRef) || (details.length === 1 ? text(path(details[0], "Refs", "AcctSvcrRef")) : "")
        || (/^\d{1,6}$/.test(ntryRef) ? "" : ntryRef);
      rows.push({
        line: line || n, transactionDate, description, amount, eventType: eventTypeFor(description, amount),
        ...(memo && memo !== description ? { memo } : {}), ...(reference ? { reference } : {}), currency: ccy,
      });
    }
    checkBalances(stmt, moved, statements.indexOf(stmt) + 1);
    if (statementCurrency && currency !== statementCurrency) warnings.push(`Statement ${statements.indexOf(stmt) + 1}: the account is in ${statementCurrency}, its entries in ${currency}.`);
  }
  if (n === 0) throw new BankFileError("The file holds no transactions.");
  const accounts = new Set(statements.map((s) => text(path(s, "Acct", "Id", "IBAN")) || text(path(s, "Acct", "Id", "Othr", "Id"))));
  if (accounts.size > 1) warnings.push(`The camt.053 file holds statements of ${accounts.size} accounts; all their transactions go to the one payment account.`);
  dropRepeatedReferences(rows, warnings);
  const currency = rows[0]?.currency ?? text(path(statements[0], "Acct", "Ccy"));
  return { rows, warnings, layout: `camt.053, ${statements.length} statement${statements.length === 1 ? "" : "s"}${currency ? `, currency ${currency}` : ""}` };
}

/** The opening booked (OPBD, else PRCD) balance plus the booked entries must be the closing booked balance (CLBD), where both are given. */
function checkBalances(stmt: Node, moved: bigint, index: number): void {
  const balances = list(stmt.Bal).map(node);
  const find = (...codes: string[]) => balances.find((b) => codes.includes(text(path(b, "Tp", "CdOrPrtry", "Cd"))));
  const signed = (b: Node): bigint | null => {
    const v = text(b.Amt);
    if (!/^\d+(?:\.\d{1,2})?$/.test(v)) return null;
    const c = cents(parseAmount(v).value!);
    return text(b.CdtDbtInd) === "DBIT" ? -c : c;
  };
  const opening = find("OPBD", "PRCD");
  const closing = find("CLBD");
  if (!opening || !closing) return;
  const [o, c] = [signed(opening), signed(closing)];
  if (o === null || c === null) throw new BankFileError(`Statement ${index}: a balance (<Bal>) has an amount that is not one.`);
  if (o + moved !== c) {
    throw new BankFileError(`Statement ${index}: the opening balance ${money(o)} and the booked entries (${money(moved)}) do not come to the closing balance ${money(c)}: ` +
      "the file is incomplete or misread.");
  }
}

const cents = (amount: string): bigint => BigInt(amount.replace(".", ""));
const money = (c: bigint): string => {
  const s = (c < 0n ? -c : c).toString().padStart(3, "0");
  return `${c < 0n ? "-" : ""}${s.slice(0, -2)}.${s.slice(-2)}`;
};

/** The 1-based line of each match, counted in one pass. */
function lineNumbers(s: string, re: RegExp): number[] {
  const result: number[] = [];
  let line = 1;
  let from = 0;
  for (const m of s.matchAll(re)) {
    for (let i = s.indexOf("\n", from); i !== -1 && i < m.index; i = s.indexOf("\n", i + 1)) line++;
    from = m.index;
    result.push(line);
  }
  return result;
}

function lineAt(s: string, index: number): number {
  let line = 1;
  for (let i = s.indexOf("\n"); i !== -1 && i < index; i = s.indexOf("\n", i + 1)) line++;
  return line;
}
