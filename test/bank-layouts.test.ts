import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { addAccount } from "./ledger-fixtures.js";
import { createTenant, startHarness, type Harness, type Tenant } from "./helpers/harness.js";

/**
 * Saved layouts (docs/api.md, From a bank's file): `--save-layout NAME` keeps the reading flags a
 * payment account's files need, with the import that read the file; the account's next imports
 * that give no flags read with them.
 */
let h: Harness;
let t: Tenant;
const dir = mkdtempSync(path.join(os.tmpdir(), "bank-layouts-"));
// A statement whose amounts read two ways ("1,250" could be 1.25 or 1250) until told the mark.
const file = (name: string, lines: string[]) => {
  const p = path.join(dir, name);
  writeFileSync(p, lines.join("\n") + "\n");
  return p;
};
const january = file("jan.csv", ["Date;Description;Amount", "2025-01-02;RENT;-1,250", "2025-01-05;SALARY;2,500"]);
const february = file("feb.csv", ["Date;Description;Amount", "2025-02-02;RENT;-1,250", "2025-02-05;SALARY;2,750"]);

beforeAll(async () => {
  h = await startHarness();
  t = await createTenant(h, `Layouts ${Date.now()}`);
});
afterAll(async () => {
  await h?.close();
  rmSync(dir, { recursive: true, force: true });
});

const importFile = (p: string, ...flags: string[]) =>
  runCli(h.databaseUrl, "import_bank_csv", p, "--org-name", t.name, "--payment-account", "Chequing", "--json", ...flags);

describe("saved layouts", () => {
  it("a file that needs a flag is refused naming it; a dry run with --save-layout saves nothing", async () => {
    const refused = await importFile(january);
    expect(refused.code).toBe(1);
    expect(refused.json.error).toContain("Give --decimal point (1,234.56) or --decimal comma (1.234,56).");
    const dry = await importFile(january, "--decimal", "comma", "--save-layout", "Credit union", "--dry-run");
    expect(dry.code).toBe(0);
    expect(dry.json.rows.map((r: any) => r.amount)).toEqual(["-1.25", "2.50"]);
    expect((await h.owner.query("select count(*)::int n from app_public.bank_import_layouts where organization_id = $1", [t.organizationId])).rows[0].n).toBe(0);
  });

  it("is kept with the import, and the account's next import reads with it, saying so", async () => {
    const first = await importFile(january, "--decimal", "point", "--save-layout", "Credit union");
    expect(first.code, first.stderr).toBe(0);
    expect(first.json.rows.map((r: any) => r.amount)).toEqual(["-1250.00", "2500.00"]);
    const { rows } = await h.owner.query("select name, flags from app_public.bank_import_layouts where organization_id = $1", [t.organizationId]);
    expect(rows).toEqual([{ name: "Credit union", flags: { decimal: "point" } }]);
    const next = await importFile(february);
    expect(next.code, next.stderr).toBe(0);
    expect(next.json.rows.map((r: any) => r.amount)).toEqual(["-1250.00", "2750.00"]);
    expect(next.json.warnings[0]).toBe('Read with the layout "Credit union" saved for "Chequing": --decimal point.');
    expect(next.json.importedCount).toBe(2);
  });

  it("flags given replace the saved ones for that import; --save-layout without flags is refused", async () => {
    const given = await importFile(february, "--decimal", "comma", "--dry-run");
    expect(given.code, given.stderr).toBe(0);
    expect(given.json.rows.map((r: any) => r.amount)).toEqual(["-1.25", "2.75"]);
    expect(given.json.warnings.some((w: string) => w.startsWith("Read with the layout"))).toBe(false);
    const bare = await runCli(h.databaseUrl, "import_bank_csv", february, "--org-name", t.name, "--payment-account", "Processor Clearing", "--save-layout", "x", "--json");
    expect(bare.code).toBe(1);
    expect(bare.json.error).toContain("--save-layout keeps the reading flags a file needed");
  });

  it("the database refuses a layout holding anything but reading flags", async () => {
    const { rows: [acc] } = await h.owner.query("select id from app_public.accounts where organization_id = $1 and name = 'Chequing'", [t.organizationId]);
    await expect(h.owner.query("select app_private.save_bank_import_layout($1, $2, 'x', '{\"evil\": \"1\"}')", [t.organizationId, acc.id]))
      .rejects.toThrow('A layout cannot hold "evil".');
  });

  it("a card account's file with purchases positive: refused naming --money-out, then booked as money out and the flag kept", async () => {
    await addAccount(h, t, "Business Visa", "credit_card", "liability");
    const card = file("card.csv", ["Date,Description,Amount", "2025-03-01,CORNER CAFE,4.75", "2025-03-03,HARDWARE DEPOT,128.40", "2025-03-15,PAYMENT,-150.00"]);
    const toCard = (...flags: string[]) =>
      runCli(h.databaseUrl, "import_bank_csv", card, "--org-name", t.name, "--payment-account", "Business Visa", "--json", ...flags);
    const refused = await toCard();
    expect(refused.code).toBe(1);
    expect(refused.json.error).toContain("If the positive amounts are purchases, give --money-out positive");
    const read = await toCard("--money-out", "positive", "--save-layout", "Visa export");
    expect(read.code, read.stderr).toBe(0);
    expect(read.json.rows.map((r: any) => r.amount)).toEqual(["-4.75", "-128.40", "150.00"]);
    const { rows } = await h.owner.query("select flags from app_public.bank_import_layouts where organization_id = $1 and name = 'Visa export'", [t.organizationId]);
    expect(rows).toEqual([{ flags: { moneyOut: "positive" } }]);
    const again = await toCard("--dry-run");
    expect(again.json.warnings[0]).toBe('Read with the layout "Visa export" saved for "Business Visa": --money-out positive.');
    expect(again.json).toMatchObject({ importedCount: 0, skippedCount: 3 });
  });

  it("a file of two accounts goes to the payment account whose last four digits it holds; --account chooses another, and is kept", async () => {
    const savings = await addAccount(h, t, "Savings", "bank", "asset");
    await h.owner.query("update app_public.accounts set last_four = '9999' where id = $1", [savings]);
    const both = file("login.csv", ["Date,Description,Amount,Account", "2025-04-01,TRANSFER TO SAVINGS,-250.00,01234-5012345",
      "2025-04-01,TRANSFER FROM CHEQUING,250.00,01234-5099999", "2025-04-02,COFFEE,-4.50,01234-5012345"]);
    const into = (account: string, ...flags: string[]) =>
      runCli(h.databaseUrl, "import_bank_csv", both, "--org-name", t.name, "--payment-account", account, "--json", ...flags);
    const toSavings = await into("Savings");
    expect(toSavings.code, toSavings.stderr).toBe(0);
    expect(toSavings.json.rows.map((r: any) => r.amount)).toEqual(["250.00"]);
    expect(toSavings.json.warnings[0]).toMatch(/^The CSV file holds 2 accounts' transactions; only 01234-5099999 is read, its number ending in 9999/);
    // Chequing has no last four digits here: refused, naming --account, and nothing written.
    const refused = await into("Chequing");
    expect(refused.code).toBe(1);
    expect(refused.json.error).toContain("give --account NUMBER");
    const chequing = await into("Chequing", "--account", "2345", "--save-layout", "Login export");
    expect(chequing.code, chequing.stderr).toBe(0);
    expect(chequing.json.rows.map((r: any) => r.amount)).toEqual(["-250.00", "-4.50"]);
    const again = await into("Chequing", "--dry-run");
    expect(again.json.warnings[0]).toBe('Read with the layout "Login export" saved for "Chequing": --account 2345.');
    expect(again.json).toMatchObject({ importedCount: 0, skippedCount: 2 });
  });
});
