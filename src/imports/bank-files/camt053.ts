import { chooseAccount, tallyAccounts, type AccountChoice } from "./accounts.js";
import { XMLParser, XMLValidator } from "fast-xml-parser";
import { isZero, negate, parseAmount } from "./amounts.js";
import { dateOutOfRange, isoDate } from "./dates.js";
import { eventTypeFor } from "./event-type.js";
import { absoluteExact, compareExact, dropRepeatedReferences, type Exact, exactOf, exactSum, negated, showExact, SKIP_BALANCE_CHECK } from "./mt940.js";
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
/** A value quoted in a message, cut short: a hostile file's 10 MB "amount" is not repeated whole. */
const clip = (s: string) => (s.length > 40 ? `${s.slice(0, 40)}…` : s);
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
 * the date is the booking date (else, with a warning, the value date, else the statement's closing
 * date); the description is the other party's name, else the remittance text or the entry's
 * additional information, else (with a warning) its bank transaction code; the bank's own reference
 * (`AcctSvcrRef`, else a `NtryRef` that is more than a sequence number) is the reference. Where a
 * statement gives opening and closing booked balances, its entries must come from one to the other
 * (balances read exactly, whatever their decimals), or the file is refused (`skipBalanceCheck`:
 * read with a warning instead).
 */
export function readCamt053Statement(text_: string, options: { skipBalanceCheck?: boolean } & AccountChoice = {}): { rows: StatementRow[]; warnings: string[]; layout: string } {
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
  const all = list(root.Stmt).map(node);
  if (all.length === 0) throw new BankFileError("The camt.053 file holds no statement (Document/BkToCstmrStmt/Stmt).");
  const accountOf = (stmt: Node) => text(path(stmt, "Acct", "Id", "IBAN")) || text(path(stmt, "Acct", "Id", "Othr", "Id"));
  const chosen = chooseAccount("camt.053", tallyAccounts(all, (stmt) => {
    const id = accountOf(stmt);
    const ccy = text(path(stmt, "Acct", "Ccy")).toUpperCase();
    return { key: id, id, label: id || "the statements with no account (<Acct><Id>)", ...(ccy ? { detail: `in ${ccy}` } : {}), suggest: id || "NUMBER" };
  }, (stmt) => list(stmt.Ntry).length), options);
  const statements = chosen.key === undefined ? all : all.filter((stmt) => accountOf(stmt) === chosen.key);

  const entryLines = lineNumbers(text_, /<(?:[\w.-]+:)?Ntry[\s>]/g);
  const rows: StatementRow[] = [];
  const warnings: string[] = [];
  // n numbers the file's entries, those of statements not read too, as their lines are numbered.
  let n = 0;
  let entries = 0;
  const chosenOnes = new Set(statements);
  for (const [i, stmt] of all.entries()) {
    if (!chosenOnes.has(stmt)) {
      n += list(stmt.Ntry).length;
      continue;
    }
    const index = i + 1;
    const statementCurrency = text(path(stmt, "Acct", "Ccy")).toUpperCase();
    const moved: Exact[] = [];
    let currency = statementCurrency;
    const byValueDate: string[] = [];
    const byStatementDate: string[] = [];
    const undescribed: { where: string; description: string }[] = [];
    for (const entry of list(stmt.Ntry).map(node)) {
      n++;
      entries++;
      const line = entryLines[n - 1] ?? 0;
      const where = line ? `Line ${line} (entry ${n})` : `Entry ${n}`;
      const amt = entry.Amt;
      const magnitude = text(amt);
      const ccy = (typeof amt === "object" && amt ? String((amt as Node)["@_Ccy"] ?? "") : "").trim().toUpperCase();
      if (!/^\d+(?:\.\d+)?$/.test(magnitude)) throw new BankFileError(`${where}: "${clip(magnitude)}" in <Amt> is not an amount.`);
      if (!/^[A-Z]{3}$/.test(ccy)) throw new BankFileError(`${where}: <Amt> has no currency (Ccy="…").`);
      const parsed = parseAmount(magnitude);
      if (parsed.problem) throw new BankFileError(`${where}: "${clip(magnitude)}" in <Amt> ${parsed.problem}.`);
      const indicator = text(entry.CdtDbtInd);
      if (indicator !== "CRDT" && indicator !== "DBIT") throw new BankFileError(`${where}: <CdtDbtInd> is "${indicator}", not CRDT or DBIT.`);
      const amount = indicator === "DBIT" ? negate(parsed.value!) : parsed.value!;
      const status = entryStatus(entry, where);
      if (status && status !== "BOOK") {
        warnings.push(`${where}: the entry is ${status === "PDNG" ? "pending" : `of status ${status}`}, not booked; it is left out.`);
        continue;
      }
      moved.push(exactOf(amount));
      currency ||= ccy;
      // The booking date; an empty <BookgDt><Dt/> or none: the value date; neither: the statement's.
      let dated = "BookgDt";
      let booked = dateIn(entry.BookgDt);
      if (!booked) {
        booked = dateIn(entry.ValDt);
        if (booked) { dated = "ValDt"; byValueDate.push(where); } else {
          booked = statementDate(stmt, doc);
          if (!booked) throw new BankFileError(`${where}: the entry has no booking date (<BookgDt>) or value date (<ValDt>), and its statement no date either.`);
          dated = "the statement's date";
          byStatementDate.push(where);
        }
      }
      const d = /^(\d{4})-(\d{2})-(\d{2})/.exec(booked);
      const transactionDate = d ? isoDate(Number(d[1]), Number(d[2]), Number(d[3])) : null;
      if (!transactionDate) throw new BankFileError(`${where}: "${booked}" in <${dated === "ValDt" ? "ValDt" : dated === "BookgDt" ? "BookgDt" : "Stmt"}> is not a date (YYYY-MM-DD).`);
      const outside = dateOutOfRange(transactionDate);
      if (outside) throw new BankFileError(`${where}: the booking date ${transactionDate} is ${outside}.`);
      if (isZero(amount)) { warnings.push(`${where}: the amount is 0.00; the entry is left out.`); continue; }

      const details = list(entry.NtryDtls).map(node).flatMap((d) => list(d.TxDtls).map(node));
      const party = indicator === "DBIT" ? "Cdtr" : "Dbtr";
      const name = details.map((t) => text(path(t, "RltdPties", party, "Nm")) || text(path(t, "RltdPties", party, "Pty", "Nm"))).find((s) => s) ?? "";
      const remittance = details.flatMap((t) => list(path(t, "RmtInf", "Ustrd") as unknown[]).map(text)).filter((s) => s).join(" ");
      const additional = list(entry.AddtlNtryInf).map(text).filter((s) => s).join(" ");
      let description = name || remittance || additional;
      if (!description) {
        // No name, no text: the bank transaction code (and the batch's size) says what it is.
        const code = transactionCode(entry);
        const batch = list(entry.NtryDtls).map(node).map((d) => text(path(d, "Btch", "NbOfTxs"))).find((s) => s);
        description = `camt.053 ${code || (indicator === "DBIT" ? "debit" : "credit")}${batch ? `, a batch of ${batch} transaction${batch === "1" ? "" : "s"}` : ""}`;
        undescribed.push({ where, description });
      }
      const memo = name ? remittance || additional : remittance ? additional : "";
      const ntryRef = text(entry.NtryRef);
      const reference = text(entry.AcctSvcrRef) || (details.length === 1 ? text(path(details[0], "Refs", "AcctSvcrRef")) : "")
        || (/^\d{1,6}$/.test(ntryRef) ? "" : ntryRef);
      rows.push({
        line: line || n, transactionDate, description, amount, eventType: eventTypeFor(description, amount),
        ...(memo && memo !== description ? { memo } : {}), ...(reference ? { reference } : {}), currency: ccy,
      });
    }
    // One warning for each kind, naming the first entry: a bank that leaves something out leaves it out of every entry.
    const some = (w: string[]) => (w.length === 1 ? w[0] : `${w[0]} and ${w.length - 1} more entr${w.length === 2 ? "y" : "ies"} of statement ${index}`);
    if (byValueDate.length) warnings.push(`${some(byValueDate)}: no booking date (<BookgDt> empty or absent); the value date (<ValDt>) is used.`);
    if (byStatementDate.length) {
      warnings.push(`${some(byStatementDate)}: neither a booking date (<BookgDt>) nor a value date (<ValDt>); the statement's date ${statementDate(stmt, doc).slice(0, 10)} is used.`);
    }
    if (undescribed.length) {
      warnings.push(`${some(undescribed.map((u) => u.where))}: no counterparty name, remittance information (Ustrd) or AddtlNtryInf; ` +
        `described by the bank transaction code (<BkTxCd>), e.g. "${undescribed[0].description}".`);
    }
    checkBalances(stmt, exactSum(moved), index, options, warnings);
    if (statementCurrency && currency !== statementCurrency) warnings.push(`Statement ${index}: the account is in ${statementCurrency}, its entries in ${currency}.`);
  }
  if (entries === 0) throw new BankFileError("The file holds no transactions.");
  warnings.unshift(...chosen.warnings);
  dropRepeatedReferences(rows, warnings);
  const currency = rows[0]?.currency ?? text(path(statements[0], "Acct", "Ccy"));
  return { rows, warnings, layout: `camt.053, ${statements.length} statement${statements.length === 1 ? "" : "s"}${currency ? `, currency ${currency}` : ""}` };
}

/**
 * The entry's status: `<Sts>BOOK</Sts>` (camt.053.001.02 to .07), `<Sts><Cd>BOOK</Cd></Sts>` or the
 * bank's own `<Sts><Prtry>PDNG</Prtry></Sts>` (.08 on); "" when there is none, as in a statement of
 * booked entries only. A status written but not read would count a pending entry as booked: refused.
 */
function entryStatus(entry: Node, where: string): string {
  const sts = entry.Sts;
  const status = text(sts) || text(path(sts, "Cd")) || text(path(sts, "Prtry"));
  if (!status && sts !== undefined && sts !== "" && Object.keys(node(sts)).length > 0) {
    throw new BankFileError(`${where}: the entry's status (<Sts>) holds neither a code (<Cd>) nor a proprietary one (<Prtry>); the file is refused rather than the entry taken for booked.`);
  }
  return status.toUpperCase();
}

/** The date (YYYY-MM-DD…) of a `<BookgDt>` or `<ValDt>`: its `Dt`, else its `DtTm`; "" when empty or absent. */
function dateIn(v: unknown): string {
  return text(path(v, "Dt")) || text(path(v, "DtTm"));
}

/** The date a statement closes on: its closing booked balance's, else the end of its period, else when it was made. */
function statementDate(stmt: Node, doc: Node): string {
  const closing = list(stmt.Bal).map(node).find((b) => text(path(b, "Tp", "CdOrPrtry", "Cd")) === "CLBD");
  return (closing ? dateIn(closing.Dt) : "") || text(path(stmt, "FrToDt", "ToDtTm")) || text(path(stmt, "FrToDt", "ToDt"))
    || text(stmt.CreDtTm) || text(path(doc, "Document", "BkToCstmrStmt", "GrpHdr", "CreDtTm"));
}

/** `PMNT/RCDT/ESCT` (ISO domain, family, sub-family) or the bank's proprietary code. */
function transactionCode(entry: Node): string {
  const domain = path(entry, "BkTxCd", "Domn");
  const iso = [text(path(domain, "Cd")), text(path(domain, "Fmly", "Cd")), text(path(domain, "Fmly", "SubFmlyCd"))].filter((s) => s).join("/");
  return iso || text(path(entry, "BkTxCd", "Prtry", "Cd"));
}

/**
 * The opening booked (OPBD, else PRCD) balance plus the booked entries must be the closing booked
 * balance (CLBD), where both are given. A balance is read exactly (18.15000 is 18.15; 18.151 stays
 * 18.151, never rounded); DBIT is a debit balance, below zero. Other types (ITBD, OPAV, CLAV, …) are not compared.
 */
function checkBalances(stmt: Node, moved: Exact, index: number, options: { skipBalanceCheck?: boolean }, warnings: string[]): void {
  const balances = list(stmt.Bal).map(node);
  const find = (...codes: string[]) => codes.map((code) => balances.find((b) => text(path(b, "Tp", "CdOrPrtry", "Cd")) === code)).find((b) => b);
  const signed = (b: Node, what: string): { amount: Exact; currency: string } => {
    const v = text(b.Amt);
    if (!/^\d+(?:\.\d+)?$/.test(v)) throw new BankFileError(`Statement ${index}: the ${what} balance (<Bal>) "${clip(v)}" is not an amount.`);
    const indicator = text(b.CdtDbtInd);
    if (indicator && indicator !== "CRDT" && indicator !== "DBIT") throw new BankFileError(`Statement ${index}: the ${what} balance's <CdtDbtInd> is "${indicator}", not CRDT or DBIT.`);
    const amount = exactOf(v);
    const currency = (typeof b.Amt === "object" && b.Amt ? String((b.Amt as Node)["@_Ccy"] ?? "") : "").trim().toUpperCase();
    return { amount: indicator === "DBIT" ? negated(amount) : amount, currency };
  };
  const opening = find("OPBD", "PRCD");
  const closing = find("CLBD");
  if (!opening || !closing) return;
  const [o, c] = [signed(opening, "opening"), signed(closing, "closing")];
  const expected = exactSum([o.amount, moved]);
  if (compareExact(expected, c.amount) === 0) return;
  const show = (b: { amount: Exact; currency: string }) => `${b.currency && b.currency !== o.currency ? `${b.currency} ` : ""}${showExact(b.amount)}`;
  const figures = `the opening balance ${showExact(o.amount)} and the booked entries (${showExact(moved)}) do not come to the closing balance ${show(c)}`;
  if (!options.skipBalanceCheck) throw new BankFileError(`Statement ${index}: ${figures}: the file is incomplete or misread. ${SKIP_BALANCE_CHECK}`);
  warnings.push(`Statement ${index}: ${figures} (they come to ${showExact(expected)}, ${showExact(absoluteExact(exactSum([c.amount, negated(expected)])))} from it); read anyway, as --skip-balance-check asks.`);
}

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
