import { BankFileError } from "./row.js";

/**
 * Files holding several accounts' transactions (an RBC export of a login's accounts, a Rabobank
 * camt.053 download, an OFX file of a bank account and its card). An import goes to one payment
 * account, so one account's transactions are read: the one `--account` names, else the one whose
 * number ends in the payment account's last four digits; else the file is refused, naming its
 * accounts. Never all of them into one account: a transfer between two of them would be booked
 * twice, and each account's balance would be wrong.
 */
export interface StatementAccount {
  /** What tells the file's accounts apart (a statement with no account number is one of its own). */
  key: string;
  /** The account's number in the file (IBAN, account number, ACCTID), which --account matches; "" when the file gives none. */
  id: string;
  /** How a message names it ("NL17RABO0310029597", "bank account (CHECKING) ending 6655"). */
  label: string;
  /** Said after its count of transactions ("in CAD, from line 15"). */
  detail?: string;
  /** What a user types after --account to choose it. */
  suggest: string;
  /** Its transactions in the file. */
  count: number;
}

export interface AccountChoice {
  /** `--account`: the account's number, or its last digits. */
  account?: string;
  /** The payment account's last four digits, when it has them. */
  lastFour?: string;
}

/** Letters and digits only, upper case: an IBAN written in groups is the same IBAN. */
export const accountKey = (s: string) => s.replace(/[^0-9a-z]/gi, "").toUpperCase();

const transactions = (n: number) => `${n} transaction${n === 1 ? "" : "s"}`;
const listed = (accounts: StatementAccount[]) => accounts.map((a) => `${a.label} (${transactions(a.count)}${a.detail ? ` ${a.detail}` : ""})`).join("; ");

/**
 * The account whose transactions are read (its key; `by` says how it was chosen: the only one with
 * transactions, --account, or the last four digits), or no key when the file holds no transactions.
 * `accounts` are the file's accounts in file order, those without transactions too: the statements
 * of the others are not read, nor checked.
 */
export function chooseAccount(format: string, accounts: StatementAccount[], choice: AccountChoice):
  { key?: string; by?: "only" | "account" | "lastFour"; warnings: string[] } {
  const used = accounts.filter((a) => a.count > 0);
  const others = (key: string) => used.filter((a) => a.key !== key);
  const leftOut = (key: string) => {
    const rest = others(key);
    return rest.length ? `; left out: ${listed(rest)}` : "";
  };
  if (choice.account !== undefined) {
    const wanted = accountKey(choice.account);
    if (wanted === "") throw new BankFileError("--account needs the account's number, or its last digits.");
    const matches = accounts.filter((a) => a.id !== "" && accountKey(a.id).endsWith(wanted));
    if (matches.length === 0) {
      throw new BankFileError(`--account ${choice.account}: no statement in the file is of that account; it holds ${listed(accounts)}.`);
    }
    const exact = matches.filter((a) => accountKey(a.id) === wanted);
    const [chosen] = exact.length === 1 ? exact : matches;
    if (exact.length !== 1 && matches.length > 1) {
      throw new BankFileError(`--account ${choice.account} matches ${matches.length} accounts of the file (${listed(matches)}); give more of its number.`);
    }
    if (chosen.count === 0) {
      throw new BankFileError(`--account ${choice.account}: ${chosen.label} has no transactions in the file; it holds ${listed(used)}.`);
    }
    return { key: chosen.key, by: "account", warnings: others(chosen.key).length ? [`Only ${chosen.label} is read, as --account says${leftOut(chosen.key)}.`] : [] };
  }
  if (used.length <= 1) return { key: used[0]?.key, by: used.length ? "only" : undefined, warnings: [] };
  const lastFour = accountKey(choice.lastFour ?? "");
  const byLastFour = lastFour.length === 4 ? used.filter((a) => a.id !== "" && accountKey(a.id).endsWith(lastFour)) : [];
  if (byLastFour.length === 1) {
    const [chosen] = byLastFour;
    return {
      key: chosen.key, by: "lastFour",
      warnings: [`The ${format} file holds ${used.length} accounts' transactions; only ${chosen.label} is read, its number ending in ${lastFour} ` +
        `as the payment account's does${leftOut(chosen.key)}. Give --account to read another.`],
    };
  }
  throw new BankFileError(`The ${format} file holds the transactions of ${used.length} accounts: ${listed(used)}. An import goes to one payment ` +
    `account: give --account NUMBER (its number or name as the file writes it, or the number's last digits: e.g. --account ${used[0].suggest}) to read one account's ` +
    "transactions, and import the file once for each account.");
}

/** The file's accounts from its statements (or rows) in file order, one entry per account with its transactions counted. */
export function tallyAccounts<T>(items: T[], accountOf: (item: T) => Omit<StatementAccount, "count">, countOf: (item: T) => number): StatementAccount[] {
  const byKey = new Map<string, StatementAccount>();
  for (const item of items) {
    const account = accountOf(item);
    const seen = byKey.get(account.key);
    if (seen) seen.count += countOf(item);
    else byKey.set(account.key, { ...account, count: countOf(item) });
  }
  return [...byKey.values()];
}
