import { parseSync } from "ofx-js";
import { isZero, parseAmount } from "./amounts.js";
import { dateOutOfRange, isoDate } from "./dates.js";
import { eventTypeFor } from "./event-type.js";
import { BankFileError, type StatementRow } from "./row.js";

/** OFX 1.x starts with its `OFXHEADER:` lines, OFX 2.x with `<?xml …?><?OFX …?>`; both hold an `<OFX>` element. */
export function looksLikeOfx(text: string): boolean {
  const start = text.slice(0, 4096);
  return /^\s*OFXHEADER\s*:/i.test(start) || /<\?OFX\b/i.test(start) || /^\s*<OFX>/i.test(start);
}

type Node = Record<string, unknown>;
const list = <T>(v: T | T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);
const str = (v: unknown) => (typeof v === "string" ? v.trim() : "");

/**
 * The transactions of an OFX 1.x (SGML, leaf elements unclosed) or 2.x (XML) statement, bank or
 * credit card. ofx-js turns both into the same tree. FITID, the bank's own id of the transaction,
 * becomes the reference, which is what lets a re-download of an overlapping period skip the rows
 * already imported even where two genuine rows share date, amount and payee.
 */
export function readOfxStatement(text: string): { rows: StatementRow[]; warnings: string[]; layout: string } {
  let ofx: Node;
  try {
    ofx = parseSync(text).OFX as Node;
  } catch (e) {
    throw new BankFileError(`The file looks like OFX but cannot be read: ${(e as Error).message}.`);
  }
  if (!ofx || typeof ofx !== "object") throw new BankFileError("The file looks like OFX but has no <OFX> element.");
  const statements = [
    ...list((ofx.BANKMSGSRSV1 as Node | undefined)?.STMTTRNRS as Node | Node[]).map((r) => r.STMTRS as Node | undefined),
    ...list((ofx.CREDITCARDMSGSRSV1 as Node | undefined)?.CCSTMTTRNRS as Node | Node[]).map((r) => r.CCSTMTRS as Node | undefined),
  ].filter((s): s is Node => !!s && typeof s === "object");
  if (statements.length === 0) throw new BankFileError("The OFX file holds no bank or credit-card statement.");
  const warnings: string[] = [];
  if (statements.length > 1) warnings.push(`The OFX file holds ${statements.length} statements (accounts); all their transactions go to the one payment account.`);
  // Each transaction with its statement's currency (CURDEF); a transaction's own CURRENCY
  // aggregate, when present, says its amount is in that currency instead.
  const transactions = statements.flatMap((s) => list((s.BANKTRANLIST as Node | undefined)?.STMTTRN as Node | Node[])
    .map((t) => ({ t, currency: (str((t.CURRENCY as Node | undefined)?.CURSYM) || str(s.CURDEF)).toUpperCase() })));
  if (transactions.length === 0) throw new BankFileError("The file holds no transactions.");

  // ofx-js keeps no positions: the n-th <STMTTRN> of the text is the n-th transaction.
  const lines = lineNumbers(text, /<STMTTRN>/gi);
  const rows: StatementRow[] = [];
  transactions.forEach(({ t, currency }, i) => {
    const line = lines[i] ?? 0;
    const where = lines[i] ? `Line ${line}` : `Transaction ${i + 1}`;
    const posted = str(t.DTPOSTED);
    const d = /^(\d{4})(\d{2})(\d{2})/.exec(posted);
    const transactionDate = d ? isoDate(Number(d[1]), Number(d[2]), Number(d[3])) : null;
    if (!transactionDate) throw new BankFileError(`${where}: "${posted}" is not an OFX date (YYYYMMDD…) in <DTPOSTED>.`);
    const outside = dateOutOfRange(transactionDate);
    if (outside) throw new BankFileError(`${where}: <DTPOSTED> "${posted}" is ${outside}.`);
    const amount = parseAmount(str(t.TRNAMT), { decimalComma: true });
    if (amount.problem) throw new BankFileError(`${where}: "${str(t.TRNAMT)}" in <TRNAMT> ${amount.problem}.`);
    if (isZero(amount.value!)) {
      warnings.push(`${where}: the amount is 0.00; the transaction is left out.`);
      return;
    }
    const name = str(t.NAME) || str((t.PAYEE as Node | undefined)?.NAME);
    const memo = str(t.MEMO);
    const description = name || memo;
    if (!description) throw new BankFileError(`${where}: the transaction has neither <NAME> nor <MEMO>.`);
    const reference = str(t.FITID);
    rows.push({
      line, transactionDate, description, amount: amount.value!,
      eventType: eventTypeFor(description, amount.value!, str(t.TRNTYPE)),
      ...(name && memo ? { memo } : {}), ...(reference ? { reference } : {}), ...(currency ? { currency } : {}),
    });
  });
  const currency = statements.map((s) => str(s.CURDEF).toUpperCase()).find((c) => c);
  return { rows, warnings, layout: `OFX ${/^\s*OFXHEADER\s*:/i.test(text) ? "1.x (SGML)" : "2.x (XML)"}${currency ? `, currency ${currency}` : ""}` };
}

/** The 1-based line of each match, counted in one pass. */
function lineNumbers(text: string, re: RegExp): number[] {
  const result: number[] = [];
  let line = 1;
  let from = 0;
  for (const m of text.matchAll(re)) {
    for (let i = text.indexOf("\n", from); i !== -1 && i < m.index; i = text.indexOf("\n", i + 1)) line++;
    from = m.index;
    result.push(line);
  }
  return result;
}
