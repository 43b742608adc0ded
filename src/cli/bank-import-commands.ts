import path from "node:path";
import { BankFileError, flagName, LAYOUT_FLAGS, readBankStatementFile, type BankFileOptions, type LayoutFlags, type StatementRow } from "../imports/bank-files/index.js";
import { CliError, organizationByName, required, sql, type Command, type CommandContext } from "./command.js";

const string = { type: "string" } as const;

/** How many rows a dry run the import refuses still shows. */
const PREVIEW_ON_REFUSAL = 5;

type DuplicateFlag = "duplicate" | "possible duplicate" | "settles pending" | null;

interface DuplicateCheck {
  rowIndex: number; isDuplicate: boolean; isPossibleDuplicate: boolean; matchingEventId: string | null; settlesPendingEvent: boolean;
}

/**
 * import_bank_csv: bank statement files (CSV, OFX, QIF, MT940, camt.053) into a payment account
 * (docs/api.md, Bank statement imports).
 */
export const bankImportCommands: Record<string, Command> = {
  import_bank_csv: {
    usage: "import_bank_csv FILE --org-name N --payment-account NAME [--preset rbc|td|cibc] " +
      "[--map date=COL,description=COL,amount=COL[,indicator=COL] | --map date=COL,description=COL,debit=COL,credit=COL] " +
      "[--date-format M/D/YYYY|D/M/YYYY|YYYY-MM-DD|DD.MM.YYYY|D/M/YY] [--delimiter ,|;|tab|pipe] [--decimal comma|point] " +
      "[--money-out positive|negative] [--account NUMBER] " +
      "[--skip-balance-check] [--save-layout NAME] [--dry-run]",
    options: {
      "org-name": string, "payment-account": string, preset: string, map: string, "date-format": string, delimiter: string, decimal: string, "money-out": string, account: string,
      "skip-balance-check": { type: "boolean" }, "save-layout": string, "dry-run": { type: "boolean" },
    },
    async run(ctx) {
      const file = onlyFile(ctx);
      const orgName = required(ctx, "org-name");
      const accountName = required(ctx, "payment-account");
      const dryRun = ctx.args.values["dry-run"] === true;
      const saveAs = ctx.args.values["save-layout"] as string | undefined;

      const org = await organizationByName(ctx.db, orgName);
      // The account's type tells the reader a card statement, whose exports may write purchases
      // positive; its last four digits, which account of a file of several is this one.
      const [{ id: accountId, accountType, lastFour }] = await sql<{ id: string; accountType: string; lastFour: string | null }>(ctx.db,
        "select a.id, a.account_type as \"accountType\", a.last_four as \"lastFour\" from app_public.accounts a " +
        "where a.id = app_private.payment_account_by_name($1, $2)", [org.id, accountName]);
      // The flags given, or else the layout saved for the account (docs/api.md, From a bank's file).
      const given = layoutFlagsOf(ctx);
      const [{ saved }] = Object.keys(given).length ? [{ saved: null }] : await sql<{ saved: { name: string; flags: LayoutFlags } | null }>(ctx.db,
        "select app_private.bank_import_layout($1, $2) as saved", [org.id, accountId]);
      const flags = saved?.flags ?? given;
      if (saveAs !== undefined && !Object.keys(flags).length) {
        throw new CliError("--save-layout keeps the reading flags a file needed: give them with it (--preset, --map, --date-format, --delimiter, --decimal, --money-out or --account).");
      }
      const read = await readStatement(file, { ...flags, ...(saved ? { fromSavedLayout: true } : {}), accountType, ...(lastFour ? { lastFour } : {}), skipBalanceCheck: ctx.args.values["skip-balance-check"] === true }).catch((e) => {
        if (!saved || !(e instanceof CliError)) throw e;
        throw new CliError(`${e.message} (Read with the layout "${saved.name}" saved for "${accountName}": ${describeFlags(saved.flags)}; ` +
          "give the flags this file needs to read it otherwise.)");
      });
      const statement = saved
        ? { ...read, warnings: [`Read with the layout "${saved.name}" saved for "${accountName}": ${describeFlags(saved.flags)}.`, ...read.warnings] }
        : read;
      // The SQL functions take exactly BankStatementRowInput: the line and the currency stay here
      // (left out as the text is written, not by a copy of every row).
      const rowsJson = JSON.stringify(statement.rows, (key, value) => (key === "line" || key === "currency" ? undefined : value));
      // The whole file in one call of the import (the dry run too, rolled back): the duplicate rules
      // pair identical rows one to one, which chunks would break; one call writes all or nothing;
      // and the preview shows the flags the import itself went by.
      await ctx.db.query("begin");
      let result: { importedCount: number; skippedCount: number; settledCount: number; batchId: string; results: DuplicateCheck[] };
      try {
        [{ result }] = await withLines(sql<{ result: typeof result }>(ctx.db,
          "select app_private.import_bank_statement($1, $2, $3, $4::jsonb, $5) as result",
          [org.id, accountId, statement.currency, rowsJson, path.basename(file)]), file, statement);
        // Kept with the import it read: a dry run or a failed import keeps nothing.
        if (saveAs !== undefined) {
          await sql(ctx.db, "select app_private.save_bank_import_layout($1, $2, $3, $4::jsonb)", [org.id, accountId, saveAs, JSON.stringify(flags)]);
        }
        await ctx.db.query(dryRun ? "rollback" : "commit");
      } catch (e) {
        // A broken connection cannot roll back, and need not: PostgreSQL drops what it began.
        await ctx.db.query("rollback").catch(() => undefined);
        // A dry run shows the rows as they were read even when the import would refuse them.
        if (dryRun && e instanceof CliError && !ctx.args.values.json) {
          const first = statement.rows.slice(0, PREVIEW_ON_REFUSAL).map((row) => ({ ...row, duplicate: null }));
          throw new CliError(`${e.message}\nThe rows as read (${first.length} of ${statement.rows.length}), for the flags to check:\n${table(first)}`);
        }
        throw e;
      }
      const checks = new Map(result.results.map((c) => [c.rowIndex, c]));
      const flagOf = (i: number) => {
        const check = checks.get(i);
        const duplicate: DuplicateFlag = check?.isDuplicate ? "duplicate" : check?.isPossibleDuplicate ? "possible duplicate"
          : check?.settlesPendingEvent ? "settles pending" : null;
        return { duplicate, matchingEventId: check?.matchingEventId ?? null };
      };
      const { importedCount, skippedCount } = result;
      // Rows that settled a pending event in place (docs/api.md, Bank statement imports): neither.
      const settled = result.settledCount ? `, settled ${result.settledCount} pending` : "";
      const batchId = dryRun ? null : result.batchId;

      const summary = (dryRun
        ? `Dry run, nothing written: ${importedCount} rows would be imported into "${accountName}", ${skippedCount} skipped as duplicates${settled}.`
        : `Imported ${importedCount} rows into "${accountName}", skipped ${skippedCount} duplicates${settled} (batch ${batchId}).`) +
        (saveAs === undefined ? "" : dryRun ? ` The layout "${saveAs}" is saved by the import itself, not by a dry run.`
          : ` Saved the layout "${saveAs}" for "${accountName}": ${describeFlags(flags)}.`);
      // The preview is built in the one form that is printed: a file's rows are many.
      const json = ctx.args.values.json === true;
      return {
        result: {
          organizationId: org.id, paymentAccountId: accountId, file: path.basename(file), layout: statement.layout, currency: statement.currency,
          warnings: statement.warnings, rows: json ? statement.rows.map((row, i) => ({ ...row, ...flagOf(i) })) : [],
          importedCount, skippedCount, settledCount: result.settledCount, batchId, dryRun,
        },
        text: json ? summary : [`Read ${file}: ${statement.layout}.`, ...statement.warnings.map((w) => `Warning: ${w}`),
          table(statement.rows.map((row, i) => ({ ...row, ...flagOf(i) }))), summary].join("\n"),
      };
    },
  },
};

/**
 * The operator knows the file's lines, not the rows sent: the SQL functions name a bad row by its
 * 0-based index ("Row 3: …"), looked up here (rows the reader left out, zero amounts, are not sent),
 * and refuse another currency, said here with the file's.
 */
async function withLines<T>(query: Promise<T>, file: string, statement: { rows: StatementRow[]; currency: string | null }): Promise<T> {
  try {
    return await query;
  } catch (e) {
    if (!(e instanceof CliError)) throw e;
    const m = /^Row (\d+)\b:?\s*(.*)$/s.exec(e.message);
    const row = m ? statement.rows[Number(m[1])] : undefined;
    if (m && row) throw new CliError(`${file}: Line ${row.line}: ${m[2].replace(/^must/, "the row must")}`);
    if (e.message.startsWith("currency must be")) {
      throw new CliError(`${file}: the amounts are in ${statement.currency}; ${e.message} An organization keeps its books in one currency: ` +
        `import the file into an organization kept in ${statement.currency}.`);
    }
    throw e;
  }
}

function onlyFile(ctx: CommandContext): string {
  const { positionals } = ctx.args;
  if (positionals.length !== 1) throw new CliError("Give one statement file: import_bank_csv FILE --org-name N --payment-account NAME.");
  return positionals[0];
}

/** The reading flags given on the command line, by their option names (LAYOUT_FLAGS). */
function layoutFlagsOf(ctx: CommandContext): LayoutFlags {
  const flags: LayoutFlags = {};
  for (const name of LAYOUT_FLAGS) {
    const value = ctx.args.values[flagName(name).slice(2)];
    if (typeof value === "string") flags[name] = value;
  }
  return flags;
}

const describeFlags = (flags: LayoutFlags) =>
  Object.entries(flags).map(([k, v]) => `${flagName(k)} ${v}`).join(" ");

async function readStatement(file: string, options: BankFileOptions) {
  try {
    return await readBankStatementFile(file, options);
  } catch (e) {
    if (e instanceof BankFileError) throw new CliError(`${file}: ${e.message}`);
    const code = (e as NodeJS.ErrnoException).code;
    if (code) {
      const why = code === "ENOENT" ? "no such file" : code === "EISDIR" ? "it is a folder" : code === "EACCES" ? "permission denied" : (e as Error).message;
      throw new CliError(`Cannot read ${file}: ${why}.`);
    }
    throw e;
  }
}

/** The preview: one line per row, widths fitted to the content, long descriptions cut. */
function table(rows: (StatementRow & { duplicate: DuplicateFlag })[]): string {
  const cut = (s: string, n: number) => (s.length > n ? s.slice(0, n - 1) + "…" : s);
  const lines = [["DATE", "DESCRIPTION", "AMOUNT", "TYPE", "DUPLICATE"],
    ...rows.map((r) => [r.transactionDate, cut(r.description, 48), r.amount, r.eventType, r.duplicate ?? ""])];
  // Folded, not spread into Math.max: a file's rows are more than a call takes arguments.
  const widths = lines[0].map((_, c) => lines.reduce((w, l) => Math.max(w, l[c].length), 0));
  return lines.map((l) => l.map((v, c) => (c === 2 ? v.padStart(widths[c]) : v.padEnd(widths[c]))).join("  ").trimEnd()).join("\n");
}
