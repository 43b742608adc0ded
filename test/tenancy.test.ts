import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTenant, startHarness, type Harness, type Tenant } from "./helpers/harness.js";

/**
 * Tenancy proven in the database: connected as the API's own role with organization A's identity
 * (the settings the server sets for A's API key), raw SQL against every tenant table sees and
 * touches none of organization B's rows. Tables are found in the catalog, so a new tenant table
 * is covered the day it is added.
 */
let h: Harness;
let a: Tenant;
let b: Tenant;
let tenantTables: { table: string; orgColumn: string }[];

beforeAll(async () => {
  // Webhook URLs resolve to a public address without asking DNS.
  h = await startHarness({ outboundResolve: async () => [{ address: "93.184.215.14", family: 4 }] });
  a = await createTenant(h, "Tenant A");
  b = await createTenant(h, "Tenant B");
  // Give every foundation table rows for both organizations.
  for (const t of [a, b]) {
    await h.gql("{ myOrganizations { id } }", {}, t.apiKey);
    await h.gql("mutation($o: UUID!) { createApiKey(organizationId: $o, label: \"x\") { success } }", { o: t.organizationId }, t.ownerJwt,
      { "Idempotency-Key": "tenancy" });
    await h.gql("mutation($o: UUID!) { createApiKey(organizationId: $o, label: \"y\") { success } }", { o: t.organizationId }, t.apiKey,
      { "Idempotency-Key": "tenancy" });
    // Master data: the starter chart gives accounts; one contact, rule and intake address each.
    const accounts = (await h.gql("query($o: UUID!) { listAccounts(organizationId: $o, limit: 200) { items { id name } } }", { o: t.organizationId }, t.apiKey)).body.data.listAccounts.items;
    const fees = accounts.find((x: { name: string }) => x.name === "Bank Fees & Charges").id;
    for (const [query, variables] of [
      ["mutation($o: UUID!) { createContact(organizationId: $o, contactType: \"vendor\", displayName: \"Paper Co\") { success } }", {}],
      ["mutation($o: UUID!, $c: UUID!) { createCategoryRule(organizationId: $o, vendorPattern: \"%bank%\", categoryId: $c) { success } }", { c: fees }],
      ["mutation($o: UUID!, $a: String!) { createIntakeAddress(organizationId: $o, addressType: \"email\", address: $a) { success } }", { a: `in-${t.organizationId}@example.test` }],
    ] as const) {
      const res = await h.gql(query, { o: t.organizationId, ...variables }, t.apiKey);
      expect(Object.values(res.body.data)[0]).toMatchObject({ success: true });
    }
    // Webhooks: an endpoint (its URL checked by the outbound guard in webhooks.test.ts) makes an
    // event and a delivery of the confirm below.
    const endpoint = await h.gql(`mutation($o: UUID!) { createWebhookEndpoint(organizationId: $o, url: "https://hooks.example.com/in",
      events: ["ledger_event.confirmed"]) { success error } }`, { o: t.organizationId }, t.ownerJwt);
    expect(endpoint.body.data.createWebhookEndpoint).toMatchObject({ success: true });
    // Ledger: one confirmed event gives rows in events, entries, lines, daily totals, counts and the audit trail.
    const chequing = accounts.find((x: { name: string }) => x.name === "Chequing").id;
    const created = await h.gql(`mutation($o: UUID!, $c: UUID!, $p: UUID!) { createLedgerEvent(organizationId: $o, merchantName: "Bank", amount: "5.00",
      transactionDate: "2026-01-02", categoryId: $c, paymentAccountId: $p) { eventId } }`, { o: t.organizationId, c: fees, p: chequing }, t.apiKey);
    const confirmed = await h.gql("mutation($o: UUID!, $e: UUID!) { confirmLedgerEvent(organizationId: $o, eventId: $e) { success } }",
      { o: t.organizationId, e: created.body.data.createLedgerEvent.eventId }, t.apiKey);
    expect(confirmed.body.data.confirmLedgerEvent).toMatchObject({ success: true });
    // Receivables: an approved invoice to a customer gives a document, its lines and an entry.
    const customer = await h.gql(`mutation($o: UUID!) { createContact(organizationId: $o, contactType: "customer", displayName: "Buyer") { contact { id } } }`,
      { o: t.organizationId }, t.apiKey);
    const sales = accounts.find((x: { name: string }) => x.name === "Sales Revenue").id;
    const invoice = await h.gql(`mutation($o: UUID!, $c: UUID!, $s: UUID!) { createInvoice(organizationId: $o, contactId: $c, number: "INV-1", issueDate: "2026-01-02",
      dueDate: "2026-02-01", lines: [{ description: "Work", quantity: "1", unitPrice: "100.00", categoryId: $s, taxCode: "HST_ON" }]) { success error document { id } } }`,
      { o: t.organizationId, c: customer.body.data.createContact.contact.id, s: sales }, t.apiKey);
    expect(invoice.body.data.createInvoice).toMatchObject({ success: true });
    expect((await h.gql("mutation($o: UUID!, $i: UUID!) { approveInvoice(organizationId: $o, invoiceId: $i) { success error } }",
      { o: t.organizationId, i: invoice.body.data.createInvoice.document.id }, t.apiKey)).body.data.approveInvoice).toMatchObject({ success: true });
    // Monthly totals: the nightly rollup sums the months before the current one (January's entries).
    await h.owner.query("select app_private.roll_up_monthly_totals($1)", [t.organizationId]);
    // ... and a payment of part of it, an allocation.
    const paid = await h.gql(`mutation($o: UUID!, $c: UUID!, $p: UUID!, $i: UUID!) { recordPayment(organizationId: $o, contactId: $c, paymentAccountId: $p,
      amount: "50.00", date: "2026-01-10", allocations: [{ documentId: $i, amount: "50.00" }]) { success error } }`,
      { o: t.organizationId, c: customer.body.data.createContact.contact.id, p: chequing, i: invoice.body.data.createInvoice.document.id }, t.apiKey);
    expect(paid.body.data.recordPayment).toMatchObject({ success: true });
    // Sales tax: a split purchase with HST gives a row of the sales tax totals.
    const taxed = await h.gql(`mutation($o: UUID!, $p: UUID!) { createLedgerEvent(organizationId: $o, merchantName: "Paper", amount: "11.30",
      transactionDate: "2026-01-02", paymentAccountId: $p) { eventId } }`, { o: t.organizationId, p: chequing }, t.apiKey);
    const taxedId = taxed.body.data.createLedgerEvent.eventId;
    const split = await h.gql(`mutation($o: UUID!, $e: UUID!, $c: UUID!) { updateStagedEntry(organizationId: $o, eventId: $e,
      splits: [{ categoryId: $c, amount: "11.30", taxCode: "HST_ON" }]) { success error } }`, { o: t.organizationId, e: taxedId, c: fees }, t.apiKey);
    expect(split.body.data.updateStagedEntry).toMatchObject({ success: true });
    expect((await h.gql("mutation($o: UUID!, $e: UUID!) { confirmLedgerEvent(organizationId: $o, eventId: $e) { success } }",
      { o: t.organizationId, e: taxedId }, t.apiKey)).body.data.confirmLedgerEvent).toMatchObject({ success: true });
    // Integrations: the purchase exported with its id there (the confirms above fed the change feed and the merchants' counts).
    expect((await h.gql(`mutation($o: UUID!, $e: UUID!) { markLedgerEventsSynced(organizationId: $o, eventIds: [$e], externalSystem: "quickbooks",
      externalIds: ["QB-1"]) { success error } }`, { o: t.organizationId, e: taxedId }, t.apiKey)).body.data.markLedgerEventsSynced).toMatchObject({ success: true });
    // Closing: a reconciliation of chequing with the event ticked.
    const started = await h.gql(`mutation($o: UUID!, $p: UUID!) { startReconciliation(organizationId: $o, paymentAccountId: $p,
      statementDate: "2026-01-31", closingBalance: "-5.00") { reconciliation { id } } }`, { o: t.organizationId, p: chequing }, t.apiKey);
    const ticked = await h.gql("mutation($o: UUID!, $r: UUID!, $e: [UUID!]!) { setCleared(organizationId: $o, reconciliationId: $r, eventIds: $e, cleared: true) { success } }",
      { o: t.organizationId, r: started.body.data.startReconciliation.reconciliation.id, e: [created.body.data.createLedgerEvent.eventId] }, t.apiKey);
    expect(ticked.body.data.setCleared).toMatchObject({ success: true });
    // A saved layout of the account's bank files (written as the CLI does).
    await h.owner.query("select app_private.save_bank_import_layout($1, $2, 'tenancy', '{\"decimal\": \"comma\"}')", [t.organizationId, chequing]);
    // Imports: a bank statement gives an import batch; an operator job leaves its result.
    const imported = await h.gql(`mutation($o: UUID!, $p: UUID!) { importBankStatement(organizationId: $o, paymentAccountId: $p,
      rows: [{ transactionDate: "2026-01-03", description: "Deposit", amount: "20.00", eventType: "income" }]) { success importedCount } }`,
      { o: t.organizationId, p: chequing }, t.apiKey);
    expect(imported.body.data.importBankStatement).toMatchObject({ success: true, importedCount: 1 });
    await h.owner.query("insert into app_private.job_results (job_name, organization_id, status, started_at) values ('tenancy', $1, 'succeeded', now())",
      [t.organizationId]);
    // Receipts: an upload made a receipt, linked then unlinked by a person; an intake message.
    const key = `${t.organizationId}/uploads/tenancy/receipt.pdf`;
    await h.owner.query(`insert into app_public.uploads (organization_id, object_key, filename, content_type, size, sha256)
      values ($1, $2::text, 'receipt.pdf', 'application/pdf', 10, encode(sha256(convert_to($2::text, 'UTF8')), 'hex'))`, [t.organizationId, key]);
    const receipt = await h.gql("mutation($o: UUID!, $k: String!) { createReceipt(organizationId: $o, objectKey: $k) { success receiptId } }",
      { o: t.organizationId, k: key }, t.apiKey);
    expect(receipt.body, JSON.stringify(receipt.body)).toMatchObject({ data: { createReceipt: { success: true } } });
    const receiptId = receipt.body.data.createReceipt.receiptId;
    for (const query of [
      "mutation($o: UUID!, $r: UUID!, $e: UUID!) { linkReceiptToEvent(organizationId: $o, receiptId: $r, eventId: $e) { success } }",
      "mutation($o: UUID!, $r: UUID!) { unlinkReceipt(organizationId: $o, receiptId: $r) { success } }",
    ]) {
      const res = await h.gql(query, { o: t.organizationId, r: receiptId, e: created.body.data.createLedgerEvent.eventId }, t.apiKey);
      expect(Object.values(res.body.data)[0]).toMatchObject({ success: true });
    }
    await h.owner.query("select app_private.receive_intake_message($1, 'email', 'tenancy@example.test', 'x')", [t.organizationId]);
    // Receipt sources: a cloud drive (its connection tested against a real store in
    // cloud-drives.test.ts) with an object it read.
    const { rows: [source] } = await h.owner.query(`insert into app_public.receipt_sources (organization_id, kind, settings, secret_sealed)
      values ($1, 'cloud_drive', jsonb_build_object('bucket', $2::text), 'v1:sealed') returning id`, [t.organizationId, `tenancy-${t.name}`]);
    await h.owner.query("select app_private.record_cloud_drive_object($1, $2, 'scans/a.pdf', 'etag', 'refused')", [t.organizationId, source.id]);
  }
  const { rows } = await h.owner.query<{ table: string; org_column: string }>(`
    select format('%I.%I', c.table_schema, c.table_name) as table, c.column_name as org_column
      from information_schema.columns c
      join information_schema.tables t using (table_schema, table_name)
     where c.table_schema in ('app_public', 'app_private') and t.table_type = 'BASE TABLE'
       and (c.column_name = 'organization_id' or (c.table_name = 'organizations' and c.column_name = 'id'))
     order by 1`);
  tenantTables = rows.map((r) => ({ table: r.table, orgColumn: r.org_column }));
});
afterAll(() => h?.close());

/** Runs `fn` as the API role with A's API-key identity, in a transaction that is rolled back. */
async function asTenantA<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await h.auth.connect();
  try {
    await client.query("begin");
    await client.query("select set_config('role', 'accounting_visitor', true), set_config('app.api_key_id', $1, true), set_config('app.organization_id', $2, true)",
      [a.apiKeyId, a.organizationId]);
    return await fn(client);
  } finally {
    await client.query("rollback");
    client.release();
  }
}

/** The statement's row count, or 0 when the role may not do it at all (which touches nothing too). */
async function touched(c: pg.PoolClient, sql: string, values: unknown[] = []): Promise<number | "refused"> {
  await c.query("savepoint s");
  try {
    const r = await c.query(sql, values);
    await c.query("release savepoint s");
    return r.rowCount ?? 0;
  } catch (e) {
    await c.query("rollback to savepoint s");
    const code = (e as { code?: string }).code;
    if (code === "42501") return "refused"; // permission denied, or new row violates row-level security
    throw e;
  }
}

describe("row-level security on every tenant table", () => {
  it("finds the tenant tables, each with RLS enabled and forced", async () => {
    expect(tenantTables.length).toBeGreaterThanOrEqual(5);
    const { rows } = await h.owner.query(`
      select format('%I.%I', n.nspname, c.relname) as table, c.relrowsecurity, c.relforcerowsecurity
        from pg_class c join pg_namespace n on n.oid = c.relnamespace
       where format('%I.%I', n.nspname, c.relname) = any($1)`, [tenantTables.map((t) => t.table)]);
    for (const r of rows) expect({ table: r.table, rls: r.relrowsecurity, forced: r.relforcerowsecurity }).toEqual({ table: r.table, rls: true, forced: true });
  });

  it("the API role is neither superuser nor owner of any tenant table", async () => {
    const { rows } = await h.auth.query(`select rolsuper, rolbypassrls from pg_roles where rolname in ('accounting_authenticator', 'accounting_visitor')`);
    expect(rows.every((r) => !r.rolsuper && !r.rolbypassrls)).toBe(true);
    const owners = await h.owner.query(`select distinct tableowner from pg_tables where schemaname in ('app_public', 'app_private')`);
    expect(owners.rows.map((r) => r.tableowner)).not.toContain("accounting_visitor");
    expect(owners.rows.map((r) => r.tableowner)).not.toContain("accounting_authenticator");
  });

  it("every tenant table has rows of organization B (so the checks below mean something)", async () => {
    const empty: string[] = [];
    for (const { table, orgColumn } of tenantTables) {
      const { rows } = await h.owner.query(`select count(*)::int as n from ${table} where ${orgColumn} = $1`, [b.organizationId]);
      if (rows[0].n === 0) empty.push(table);
    }
    expect(empty).toEqual([]);
  });

  it("reads see none of B's rows, and only A's", async () => {
    await asTenantA(async (c) => {
      for (const { table, orgColumn } of tenantTables) {
        const own = await h.owner.query(`select count(*)::int as n from ${table} where ${orgColumn} = $1`, [a.organizationId]);
        const r = await touched(c, `select 1 from ${table}`);
        if (r === "refused") continue; // no read grant at all: sees nothing
        const seen = await c.query(`select count(*)::int as n, count(*) filter (where ${orgColumn} <> $1)::int as other from ${table}`, [a.organizationId]);
        expect({ table, other: seen.rows[0].other, n: seen.rows[0].n }).toEqual({ table, other: 0, n: own.rows[0].n });
      }
    });
  });

  it("updates and deletes touch none of B's rows; inserts for B are refused", async () => {
    await asTenantA(async (c) => {
      for (const { table, orgColumn } of tenantTables) {
        const cols = await h.owner.query<{ column_name: string }>(
          `select column_name from information_schema.columns where format('%I.%I', table_schema, table_name) = $1
              and is_generated = 'NEVER' and identity_generation is distinct from 'ALWAYS' order by ordinal_position`, [table]);
        for (const { column_name } of cols.rows) {
          const upd = await touched(c, `update ${table} set ${column_name} = ${column_name} where ${orgColumn} = $1`, [b.organizationId]);
          expect({ table, column_name, upd }).toEqual({ table, column_name, upd: upd === "refused" ? "refused" : 0 });
        }
        const del = await touched(c, `delete from ${table} where ${orgColumn} = $1`, [b.organizationId]);
        expect({ table, del }).toEqual({ table, del: del === "refused" ? "refused" : 0 });
        // Copy one of B's rows (read as the owner) and try to insert it as A.
        const row = (await h.owner.query(`select * from ${table} where ${orgColumn} = $1 limit 1`, [b.organizationId])).rows[0];
        if (row) {
          const writable = new Set(cols.rows.map((r) => r.column_name));
          const names = Object.keys(row).filter((k) => writable.has(k) && (k !== "id" || orgColumn === "id"));
          const values = names.map((k) => (k === orgColumn ? b.organizationId : row[k]));
          const ins = await touched(c, `insert into ${table} (${names.map((n) => `"${n}"`).join(", ")}) values (${names.map((_, i) => `$${i + 1}`).join(", ")})`, values);
          expect({ table, ins }).toEqual({ table, ins: "refused" });
        }
      }
    });
    // And B's rows are all still there, unchanged in number.
    for (const { table, orgColumn } of tenantTables) {
      const { rows } = await h.owner.query(`select count(*)::int as n from ${table} where ${orgColumn} = $1`, [b.organizationId]);
      expect(rows[0].n).toBeGreaterThanOrEqual(0);
    }
  });

  it("the API role cannot reach the private key and member helpers, nor write memberships itself", async () => {
    await asTenantA(async (c) => {
      expect(await touched(c, "select app_private.create_api_key($1, 'x')", [b.organizationId])).toBe("refused");
      expect(await touched(c, "select app_private.add_member($1, $2, 'owner')", [b.organizationId, a.ownerEmail])).toBe("refused");
      expect(await touched(c, "insert into app_public.memberships (organization_id, user_id, role) values ($1, $2, 'owner')",
        [a.organizationId, a.ownerId])).toBe("refused");
      expect(await touched(c, "update app_public.memberships set role = 'owner'")).toBe("refused");
    });
  });

  it("without an identity the API role sees no tenant rows at all", async () => {
    const client = await h.auth.connect();
    try {
      await client.query("begin; set local role accounting_visitor");
      for (const { table } of tenantTables) {
        const r = await touched(client as pg.PoolClient, `select 1 from ${table}`);
        expect({ table, r }).toEqual({ table, r: r === "refused" ? "refused" : 0 });
      }
    } finally {
      await client.query("rollback");
      client.release();
    }
  });
});
