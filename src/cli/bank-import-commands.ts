import { readFileSync } from "node:fs";
import path from "node:path";
import { BankFileError, readBankFile, type StatementRow } from "../imports/bank-files/index.js";
import { CliError, required, sql, type Command, type CommandContext } from "./command.js";

const string = { type: "string" } as const;

type DuplicateFlag = "duplicate" | "possible duplicate" | null;

interface DuplicateCheck { rowIndex: number; isDuplicate: boolean; isPossibleDuplicate: boolean; matchingEventId: string | null }

/** import_bank_csv: bank CSV and OFX files into a payment account (decisions §8). */
export const bankImportCommands: Record<string, Command> = {
  import_bank_csv: {
    usage: "import_bank_csv FILE --org-name N --payment-account NAME [--preset rbc|td|cibc] " +
      "[--map date=COL,description=COL,amount=COL[,indicator=COL] | --map date=COL,description=COL,debit=COL,credit=COL] " +
      "[--date-format M/D/YYYY|D/M/YYYY|YYYY-MM-DD] [--dry-run]",
    options: {
      "org-name": string, "payment-account": string, preset: string, map: string, "date-format": string,
      "dry-run": { type: "boolean" },
    },
    async run(ctx) {
      const file = onlyFile(ctx);
      const orgName = required(ctx, "org-name");
      const accountName = required(ctx, "payment-account");
      const dryRun = ctx.args.values["dry-run"] === true;
      const statement = readStatement(file, ctx);

      const [org] = await sql<{ id: string; name: string; functional_currency: string }>(ctx.db,
        "select id, name, functional_currency from app_private.organization_by_name($1)", [orgName]);
      const [{ id: accountId }] = await sql<{ id: string }>(ctx.db,
        "select app_private.payment_account_by_name($1, $2) as id", [org.id, accountName]);
      // Amounts in another currency would be booked as the organization's: refused before anything
      // (the dry run too), as import_bank_statement refuses them.
      if (statement.currency !== null && statement.currency !== org.functional_currency) {
        throw new CliError(`${file}: the amounts are in ${statement.currency}; currency must be the organization's currency (${org.functional_currency}).`);
      }
      // The SQL functions take exactly BankStatementRowInput: the line and the currency stay here.
      const rowsJson = JSON.stringify(statement.rows.map(({ line: _line, currency: _currency, ...row }) => row));
      const onRows = <T>(query: Promise<T>) => withLines(query, file, statement.rows);
      const [{ checks }] = await onRows(sql<{ checks: DuplicateCheck[] }>(ctx.db,
        "select app_private.check_bank_statement_dups($1, $2, $3::jsonb) as checks", [org.id, accountId, rowsJson]));
      const flags = new Map(checks.map((c) => [c.rowIndex, c]));
      const preview = statement.rows.map((row, i) => {
        const check = flags.get(i);
        const duplicate: DuplicateFlag = check?.isDuplicate ? "duplicate" : check?.isPossibleDuplicate ? "possible duplicate" : null;
        return { ...row, duplicate, matchingEventId: check?.matchingEventId ?? null };
      });

      let importedCount: number, skippedCount: number, batchId: string | null = null;
      if (dryRun) {
        skippedCount = preview.filter((r) => r.duplicate === "duplicate").length;
        importedCount = preview.length - skippedCount;
      } else {
        // The whole file in one call: the duplicate rules pair identical rows one to one, which
        // chunks would break, and one call writes all of it or nothing.
        const [{ result }] = await onRows(sql<{ result: { importedCount: number; skippedCount: number; batchId: string } }>(ctx.db,
          "select app_private.import_bank_statement($1, $2, $3, $4::jsonb, $5) as result",
          [org.id, accountId, statement.currency, rowsJson, path.basename(file)]));
        ({ importedCount, skippedCount, batchId } = result);
      }

      const summary = dryRun
        ? `Dry run, nothing written: ${importedCount} rows would be imported into "${accountName}", ${skippedCount} skipped as duplicates.`
        : `Imported ${importedCount} rows into "${accountName}", skipped ${skippedCount} duplicates (batch ${batchId}).`;
      return {
        result: {
          organizationId: org.id, paymentAccountId: accountId, file: path.basename(file), layout: statement.layout, currency: statement.currency,
          warnings: statement.warnings, rows: preview, importedCount, skippedCount, batchId, dryRun,
        },
        text: [`Read ${file}: ${statement.layout}.`, ...statement.warnings.map((w) => `Warning: ${w}`), table(preview), summary].join("\n"),
      };
    },
  },
};

/**
 * The SQL functions name a bad row by its 0-based index in the rows sent ("Row 3: …"); the
 * operator knows the file's lines. Rows the reader left out (zero amounts) are not sent, so the
 * index is looked up, not computed.
 */
async function withLines<T>(query: Promise<T>, file: string, rows: StatementRow[]): Promise<T> {
  try {
    return await query;
  } catch (e) {
    const m = e instanceof CliError ? /^Row (\d+)\b:?\s*(.*)$/s.exec(e.message) : null;
    const row = m ? rows[Number(m[1])] : undefined;
    if (m && row) throw new CliError(`${file}: Line ${row.line}: ${m[2].replace(/^must/, "the row must")}`);
    throw e;
  }
}

function onlyFile(ctx: CommandContext): string {
  const { positionals } = ctx.args;
  if (positionals.length !== 1) throw new CliError("Give one statement file: import_bank_csv FILE --org-name N --payment-account NAME.");
  return positionals[0];
}

function readStatement(file: string, ctx: CommandContext) {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new CliError(`Cannot read ${file}: ${code === "ENOENT" ? "no such file" : code === "EISDIR" ? "it is a folder" : (e as Error).message}.`);
  }
  const option = (name: string) => ctx.args.values[name] as string | undefined;
  try {
    return readBankFile(bytes, { preset: option("preset"), map: option("map"), dateFormat: option("date-format") });
  } catch (e) {
    if (e instanceof BankFileError) throw new CliError(`${file}: ${e.message}`);
    throw e;
  }
}

/** The preview: one line per row, widths fitted to the content, long descriptions cut. */
function table(rows: (StatementRow & { duplicate: DuplicateFlag })[]): string {
  const cut = (s: string, n: number) => (s.length > n ? s.slice(0, n - 1) + "…" : s);
  const lines = [["DATE", "DESCRIPTION", "AMOUNT", "TYPE", "DUPLICATE"],
    ...rows.map((r) => [r.transactionDate, cut(r.description, 48), r.amount, r.eventType, r.duplicate ?? ""])];
  const widths = lines[0].map((_, c) => Math.max(...lines.map((l) => l[c].length)));
  return lines.map((l) => l.map((v, c) => (c === 2 ? v.padStart(widths[c]) : v.padEnd(widths[c]))).join("  ").trimEnd()).join("\n");
}
