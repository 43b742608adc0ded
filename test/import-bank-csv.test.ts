import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, type CliRun } from "./helpers/cli.js";
import { createTenant, startHarness, type Harness, type Tenant } from "./helpers/harness.js";
import { accountsOf, addAccount, createEvent } from "./ledger-fixtures.js";

let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(() => h?.close());

/** `npm run cli -- import_bank_csv …` as the operator runs it, against this test file's database. */
const importFile = (file: string, ...args: string[]): Promise<CliRun> =>
  runCli(h.databaseUrl, "import_bank_csv", `data/samples/bank/${file}`, ...args);

/** The events on an account, by date and merchant (one import's events share their creation time). */
async function eventsOn(accountId: string) {
  const { rows } = await h.owner.query(
    `select id, transaction_date::text as date, merchant_name, functional_amount::text as amount, direction, event_type, status,
            source, reference, memo, import_batch_id
       from app_public.ledger_events where payment_account_id = $1 order by transaction_date, merchant_name, created`, [accountId]);
  return rows;
}
const batches = async (org: string) =>
  (await h.owner.query("select count(*)::int n from app_public.import_batches where organization_id = $1", [org])).rows[0].n;
/** Signed cents of the events, money out negative: the statement's net movement. */
const net = (events: { amount: string; direction: string }[]) =>
  events.reduce((s, e) => s + (e.direction === "out" ? -1 : 1) * Math.round(Number(e.amount) * 100), 0);

async function tenantWithCard(): Promise<{ t: Tenant; chequing: string; card: string }> {
  const t = await createTenant(h);
  const card = await addAccount(h, t, "Business Visa", "credit_card", "liability");
  return { t, chequing: (await accountsOf(h, t)).Chequing, card };
}

describe("import_bank_csv: the reference samples, detected and with their preset; a second run imports 0", () => {
  it("RBC chequing: 25 rows, signed from the file, into Chequing (named in any case)", async () => {
    const { t, chequing } = await tenantWithCard();
    const first = await importFile("rbc_chequing_sample.csv", "--org-name", t.name, "--payment-account", "CHEQUING", "--json");
    expect(first.code).toBe(0);
    expect(first.json).toMatchObject({ importedCount: 25, skippedCount: 0, dryRun: false, paymentAccountId: chequing, file: "rbc_chequing_sample.csv" });
    expect(first.json.batchId).toMatch(/^[0-9a-f-]{36}$/);
    expect(first.json.layout).toContain("CSV (detected): header row on line 1");
    expect(first.json.rows).toHaveLength(25);
    expect(first.json.rows[0]).toMatchObject({
      line: 2, transactionDate: "2025-09-02", description: "Online Banking payment - 4821 NORTHSTAR HYDRO", amount: "-142.37",
      eventType: "expense", duplicate: null,
    });

    const events = await eventsOn(chequing);
    expect(events).toHaveLength(25);
    expect(events.every((e) => e.status === "needs_review" && e.source === "bank_import")).toBe(true);
    expect(events.find((e) => e.merchant_name === "Online Banking payment - 4821 NORTHSTAR HYDRO"))
      .toMatchObject({ date: "2025-09-02", amount: "142.37", direction: "out", event_type: "expense" });
    expect(events.find((e) => e.merchant_name === "Misc Payment PROCESSOR PAYOUT")).toMatchObject({ direction: "in", event_type: "transfer" });
    expect(events.find((e) => e.merchant_name === "Interest")).toMatchObject({ amount: "0.42", direction: "in", event_type: "income" });
    expect(events.filter((e) => e.direction === "out")).toHaveLength(17);
    expect(net(events)).toBe(first.json.rows.reduce((s: number, r: { amount: string }) => s + Math.round(Number(r.amount) * 100), 0));

    const again = await importFile("rbc_chequing_sample.csv", "--org-name", t.name, "--payment-account", "Chequing", "--preset", "rbc", "--json");
    expect(again.json).toMatchObject({ importedCount: 0, skippedCount: 25 });
    expect(again.json.rows.every((r: { duplicate: string }) => r.duplicate === "duplicate")).toBe(true);
    expect(await eventsOn(chequing)).toHaveLength(25);
  });

  it("TD chequing: withdrawals out, deposits in; the events move the balance from 6418.35 to 4590.51", async () => {
    const { t, chequing } = await tenantWithCard();
    const first = await importFile("td_chequing_sample.csv", "--org-name", t.name, "--payment-account", "Chequing", "--preset", "td", "--json");
    expect(first.json).toMatchObject({ importedCount: 25, skippedCount: 0 });
    const events = await eventsOn(chequing);
    expect(events).toHaveLength(25);
    expect(641835 + net(events)).toBe(459051);
    expect(events[0]).toMatchObject({ date: "2025-09-02", merchant_name: "GC 0412-DEPOSIT", amount: "1250.00", direction: "in", event_type: "income" });
    expect(events[1]).toMatchObject({ date: "2025-09-02", merchant_name: "MONTHLY ACCOUNT FEE", amount: "19.00", direction: "out", event_type: "expense" });
    expect(events.find((e) => e.merchant_name === "TFR-TO C/C")).toMatchObject({ direction: "out", event_type: "transfer" });

    const again = await importFile("td_chequing_sample.csv", "--org-name", t.name, "--payment-account", "Chequing", "--json");
    expect(again.json).toMatchObject({ importedCount: 0, skippedCount: 25 });
    expect(await eventsOn(chequing)).toHaveLength(25);
  });

  it("CIBC credit card: purchases out of the card account, payments and refunds in", async () => {
    const { t, card } = await tenantWithCard();
    const first = await importFile("cibc_credit_card_sample.csv", "--org-name", t.name, "--payment-account", "business visa", "--json");
    expect(first.json).toMatchObject({ importedCount: 25, skippedCount: 0 });
    const events = await eventsOn(card);
    expect(events).toHaveLength(25);
    expect(events.filter((e) => e.direction === "in").map((e) => [e.merchant_name, e.amount, e.event_type])).toEqual([
      ["OFFICE SUPPLY 044 MISSISSAUGA, ON", "24.86", "income"],
      ["PAYMENT THANK YOU/PAIEMENT MERCI", "1200.00", "transfer"],
      ["HOTEL LAKESHORE OTTAWA, ON", "289.40", "income"],
      ["PAYMENT THANK YOU/PAIEMENT MERCI", "900.00", "transfer"],
    ]);
    expect(events.find((e) => e.merchant_name.startsWith("RESTAURANT"))).toMatchObject({ merchant_name: "RESTAURANT BORÉAL TORONTO, ON", direction: "out", event_type: "expense" });

    // The same statement downloaded as Windows-1252 with CRLF is the same statement.
    const again = await importFile("cibc_credit_card_cp1252_crlf.csv", "--org-name", t.name, "--payment-account", "Business Visa", "--preset", "cibc", "--json");
    expect(again.json).toMatchObject({ importedCount: 0, skippedCount: 25 });
    expect(await eventsOn(card)).toHaveLength(25);
  });

  it("OFX 1.x then OFX 2.x of the same statement: FITIDs as references, the second imports 0; the TD CSV then adds only the other 20", async () => {
    const { t, chequing } = await tenantWithCard();
    const sgml = await importFile("chequing_sample_ofx102.ofx", "--org-name", t.name, "--payment-account", "Chequing", "--json");
    expect(sgml.json).toMatchObject({ importedCount: 5, skippedCount: 0 });
    expect(sgml.json.layout).toMatch(/^OFX 1\.x \(SGML\)/);
    const events = await eventsOn(chequing);
    expect(events.map((e) => [e.date, e.merchant_name, e.amount, e.direction, e.reference])).toEqual([
      ["2025-09-02", "GC 0412-DEPOSIT", "1250.00", "in", "20250902-0002"],
      ["2025-09-02", "MONTHLY ACCOUNT FEE", "19.00", "out", "20250902-0001"],
      ["2025-09-03", "SEND E-TFR ***4kP", "480.00", "out", "20250903-0001"],
      ["2025-09-04", "PAYROLL SVC PAY", "1980.55", "out", "20250904-0001"],
      ["2025-09-05", "CHQ#00211-0123456789", "725.00", "out", "20250905-0001"],
    ]);

    const xml = await importFile("chequing_sample_ofx211.ofx", "--org-name", t.name, "--payment-account", "Chequing", "--json");
    expect(xml.json).toMatchObject({ importedCount: 0, skippedCount: 5 });
    expect(xml.json.layout).toMatch(/^OFX 2\.x \(XML\)/);

    const csv = await importFile("td_chequing_sample.csv", "--org-name", t.name, "--payment-account", "Chequing", "--json");
    expect(csv.json).toMatchObject({ importedCount: 20, skippedCount: 5 });
    expect(csv.json.rows.slice(0, 6).map((r: { duplicate: string | null }) => r.duplicate))
      .toEqual(["duplicate", "duplicate", "duplicate", "duplicate", "duplicate", null]);
    expect(await eventsOn(chequing)).toHaveLength(25);
  });

  it("an OFX 2.x statement on its own: NAME the merchant, MEMO the memo", async () => {
    const { t, chequing } = await tenantWithCard();
    const r = await importFile("chequing_sample_ofx211.ofx", "--org-name", t.name, "--payment-account", "Chequing", "--json");
    expect(r.json).toMatchObject({ importedCount: 5, skippedCount: 0 });
    const events = await eventsOn(chequing);
    expect(events.find((e) => e.reference === "20250902-0002")).toMatchObject({ merchant_name: "GC 0412-DEPOSIT", memo: "BRANCH 0412 & ATM" });
    expect(events.find((e) => e.reference === "20250902-0001")).toMatchObject({ merchant_name: "MONTHLY ACCOUNT FEE", memo: "" });
  });
});

describe("import_bank_csv: preview, dry run and refusals", () => {
  it("--dry-run prints the preview with duplicate flags and writes nothing", async () => {
    const { t, chequing } = await tenantWithCard();
    // Same day and amount as the first TD row, another merchant: a possible duplicate, still imported.
    await createEvent(h, t, { merchantName: "BANK FEE (ENTERED BY HAND)", amount: "19.00", transactionDate: "2025-09-02", eventType: "expense", paymentAccountId: chequing });
    const before = await eventsOn(chequing);

    const json = await importFile("td_chequing_sample.csv", "--org-name", t.name, "--payment-account", "Chequing", "--dry-run", "--json");
    expect(json.code).toBe(0);
    expect(json.json).toMatchObject({ dryRun: true, importedCount: 25, skippedCount: 0, batchId: null });
    expect(json.json.rows[0]).toMatchObject({ description: "MONTHLY ACCOUNT FEE", duplicate: "possible duplicate", matchingEventId: before[0].id });
    expect(json.json.rows.filter((r: { duplicate: string | null }) => r.duplicate !== null)).toHaveLength(1);

    const text = await importFile("td_chequing_sample.csv", "--org-name", t.name, "--payment-account", "Chequing", "--dry-run");
    expect(text.code).toBe(0);
    const lines = text.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^Read data\/samples\/bank\/td_chequing_sample\.csv: CSV \(detected\): no header row/);
    expect(lines[1]).toMatch(/^DATE\s+DESCRIPTION\s+AMOUNT\s+TYPE\s+DUPLICATE$/);
    expect(lines[2]).toMatch(/^2025-09-02\s+MONTHLY ACCOUNT FEE\s+-19\.00\s+expense\s+possible duplicate$/);
    expect(lines[3]).toMatch(/^2025-09-02\s+GC 0412-DEPOSIT\s+1250\.00\s+income$/);
    expect(lines.at(-1)).toBe('Dry run, nothing written: 25 rows would be imported into "Chequing", 0 skipped as duplicates.');

    expect(await eventsOn(chequing)).toEqual(before);
    expect(await batches(t.organizationId)).toBe(0);

    const real = await importFile("td_chequing_sample.csv", "--org-name", t.name, "--payment-account", "Chequing");
    expect(real.code).toBe(0);
    expect(real.stdout.trimEnd().split("\n").at(-1)).toMatch(/^Imported 25 rows into "Chequing", skipped 0 duplicates \(batch [0-9a-f-]{36}\)\.$/);
    expect(await eventsOn(chequing)).toHaveLength(26);
  });

  it("a bad file: the line named, exit code 1, nothing written", async () => {
    const { t, chequing } = await tenantWithCard();
    const plain = await importFile("td_chequing_bad_date.csv", "--org-name", t.name, "--payment-account", "Chequing");
    expect(plain.code).toBe(1);
    expect(plain.stderr.trim()).toBe('data/samples/bank/td_chequing_bad_date.csv: Line 7: "13/45/2025" is not a date (M/D/YYYY).');
    const json = await importFile("td_chequing_bad_date.csv", "--org-name", t.name, "--payment-account", "Chequing", "--json");
    expect(json).toMatchObject({ code: 1, json: { error: 'data/samples/bank/td_chequing_bad_date.csv: Line 7: "13/45/2025" is not a date (M/D/YYYY).' } });
    expect(await eventsOn(chequing)).toHaveLength(0);
    expect(await batches(t.organizationId)).toBe(0);
  });

  it("dates the file does not settle need --date-format; with it the file imports", async () => {
    const { t, chequing } = await tenantWithCard();
    const refused = await importFile("day_month_ambiguous.csv", "--org-name", t.name, "--payment-account", "Chequing", "--json");
    expect(refused.code).toBe(1);
    expect(refused.json.error).toContain("--date-format");
    expect(await eventsOn(chequing)).toHaveLength(0);
    const told = await importFile("day_month_ambiguous.csv", "--org-name", t.name, "--payment-account", "Chequing", "--date-format", "DD/MM/YYYY", "--json");
    expect(told.json).toMatchObject({ importedCount: 4 });
    expect((await eventsOn(chequing)).map((e) => [e.date, e.event_type])).toEqual([
      ["2025-09-03", "expense"], ["2025-09-05", "income"], ["2025-10-08", "income"], ["2025-10-11", "transfer"],
    ]);
  });

  it("an unknown organization or payment account, a missing file, bad options: exit code 1, nothing written", async () => {
    const { t, chequing } = await tenantWithCard();
    expect(await importFile("td_chequing_sample.csv", "--org-name", "No Such Org", "--payment-account", "Chequing", "--json"))
      .toMatchObject({ code: 1, json: { error: 'No organization named "No Such Org".' } });
    expect(await importFile("td_chequing_sample.csv", "--org-name", t.name, "--payment-account", "Savings", "--json"))
      .toMatchObject({ code: 1, json: { error: 'No active bank, credit card or clearing account named "Savings".' } });
    // An expense account is not a payment account.
    expect((await importFile("td_chequing_sample.csv", "--org-name", t.name, "--payment-account", "Bank Fees & Charges", "--json")).code).toBe(1);
    expect(await importFile("no_such_file.csv", "--org-name", t.name, "--payment-account", "Chequing", "--json"))
      .toMatchObject({ code: 1, json: { error: "Cannot read data/samples/bank/no_such_file.csv: no such file." } });
    expect(await importFile("td_chequing_sample.csv", "--payment-account", "Chequing", "--json"))
      .toMatchObject({ code: 1, json: { error: "--org-name is required." } });
    expect((await importFile("td_chequing_sample.csv", "--org-name", t.name, "--payment-account", "Chequing", "--preset", "bmo", "--json")).json.error)
      .toMatch(/--preset must be one of rbc, td, cibc/);
    expect(await eventsOn(chequing)).toHaveLength(0);
    expect(await batches(t.organizationId)).toBe(0);
  });
});

describe("import_bank_csv: review findings (sides of money, currency, lines in SQL's messages)", () => {
  it("a CIBC card file with no payment in the period imports its purchases as money out", async () => {
    const { t, card } = await tenantWithCard();
    const r = await importFile("cibc_credit_card_no_payment.csv", "--org-name", t.name, "--payment-account", "Business Visa", "--json");
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ importedCount: 8, warnings: [] });
    const events = await eventsOn(card);
    expect(events).toHaveLength(8);
    expect(events.every((e) => e.direction === "out" && e.event_type === "expense")).toBe(true);
  });

  it("a file with one unsigned amount column is refused, never read as money in: nothing written", async () => {
    const { t, card, chequing } = await tenantWithCard();
    const r = await importFile("card_unsigned_amount.csv", "--org-name", t.name, "--payment-account", "Business Visa", "--json");
    expect(r.code).toBe(1);
    // Into a bank account: which columns say the sides.
    // Into the card: its payment is positive like the purchases, so no sign flag can part them.
    expect(r.json.error).toMatch(/^data\/samples\/bank\/card_unsigned_amount\.csv: Every amount in column 3 \("Amount"\) is positive, the card's payment on line 4 \("PAYMENT THANK YOU"\) too: the amounts are unsigned.*debit=COL,credit=COL/);
    const told = await importFile("card_unsigned_amount.csv", "--org-name", t.name, "--payment-account", "Business Visa", "--money-out", "positive", "--json");
    expect(told.code).toBe(1);
    expect(told.json.error).toContain("the amounts are unsigned, and --money-out cannot tell purchases from payments");
    const bank = await importFile("card_unsigned_amount.csv", "--org-name", t.name, "--payment-account", "Chequing", "--json");
    expect(bank.code).toBe(1);
    expect(bank.json.error).toMatch(/^data\/samples\/bank\/card_unsigned_amount\.csv: Cannot tell money in from money out: "Amount" \(column 3\) holds no negative amount.*--preset.*debit=COL,credit=COL.*amount=COL/);
    expect(await eventsOn(chequing)).toHaveLength(0);
    expect(await eventsOn(card)).toHaveLength(0);
    expect(await batches(t.organizationId)).toBe(0);
  });

  it("amounts in USD (RBC's USD$ column, an OFX CURDEF USD) are refused for a CAD organization, the dry run too: nothing written", async () => {
    const { t, chequing } = await tenantWithCard();
    const message = "currency must be the organization's currency (CAD).";
    for (const file of ["rbc_usd_sample.csv", "chequing_sample_ofx102_usd.ofx"]) {
      for (const dry of [[], ["--dry-run"]]) {
        const r = await importFile(file, "--org-name", t.name, "--payment-account", "Chequing", ...dry, "--json");
        expect(r.code).toBe(1);
        expect(r.json.error).toBe(`data/samples/bank/${file}: the amounts are in USD; ${message} An organization keeps its books in one currency: import the file into an organization kept in USD.`);
      }
    }
    const mixed = await importFile("rbc_mixed_currency.csv", "--org-name", t.name, "--payment-account", "Chequing", "--json");
    expect(mixed.code).toBe(1);
    expect(mixed.json.error).toMatch(/^data\/samples\/bank\/rbc_mixed_currency\.csv: Line 5: the amount is in USD, the rows before it in CAD/);
    expect(await eventsOn(chequing)).toHaveLength(0);
    expect(await batches(t.organizationId)).toBe(0);
    // The file's CAD goes to import_bank_statement as its currency, which takes it.
    const cad = await importFile("rbc_chequing_sample.csv", "--org-name", t.name, "--payment-account", "Chequing", "--json");
    expect(cad.json).toMatchObject({ importedCount: 25, currency: "CAD" });
  });

  it("a row SQL refuses is named by its file line, rows left out (0.00) counted", async () => {
    const { t, chequing } = await tenantWithCard();
    for (const dry of [["--dry-run"], []]) {
      const r = await importFile("td_chequing_long_description.csv", "--org-name", t.name, "--payment-account", "Chequing", ...dry, "--json");
      expect(r.code).toBe(1);
      expect(r.json.error).toBe("data/samples/bank/td_chequing_long_description.csv: Line 5: description must be at most 500 characters.");
    }
    expect(await eventsOn(chequing)).toHaveLength(0);
    expect(await batches(t.organizationId)).toBe(0);
  });
});
