import { createTenant, dataOf, type Harness, type Tenant } from "./helpers/harness.js";

/** Shared by the ledger and report tests: GraphQL documents and raw-SQL views of the books. */
export const EVENT_FIELDS = `id eventType direction merchantName functionalAmount functionalCurrency transactionDate status memo
  hasDocument account { id name accountType } paymentAccount { id name } category { id name } taxAmount taxCode
  taxAccount { id name } journalEntry { id txnDate totalAmount voidedAt } receipts { id filename objectKey uploadedAt } created updated`;

export const CREATE = `mutation($org: UUID!, $merchantName: String!, $amount: String!, $transactionDate: String!, $eventType: String, $categoryId: UUID, $paymentAccountId: UUID) {
  createLedgerEvent(organizationId: $org, merchantName: $merchantName, amount: $amount, transactionDate: $transactionDate,
    eventType: $eventType, categoryId: $categoryId, paymentAccountId: $paymentAccountId) { success error eventId } }`;
export const UPDATE = `mutation($org: UUID!, $eventId: UUID!, $transactionDate: String, $memo: String, $amount: String, $eventType: String) {
  updateLedgerEvent(organizationId: $org, eventId: $eventId, transactionDate: $transactionDate, memo: $memo, amount: $amount,
    eventType: $eventType) { success error event { ${EVENT_FIELDS} } } }`;
export const CLASSIFY = `mutation($org: UUID!, $eventId: UUID!, $categoryId: UUID, $paymentId: UUID, $taxAmount: String, $taxAccountId: UUID, $taxCode: String) {
  updateStagedEntry(organizationId: $org, eventId: $eventId, categoryId: $categoryId, paymentId: $paymentId, taxAmount: $taxAmount,
    taxAccountId: $taxAccountId, taxCode: $taxCode) { success error } }`;
export const CONFIRM = `mutation($org: UUID!, $eventId: UUID!) { confirmLedgerEvent(organizationId: $org, eventId: $eventId) { success error eventId journalEntryId } }`;
export const REJECT = `mutation($org: UUID!, $eventId: UUID!) { rejectLedgerEvent(organizationId: $org, eventId: $eventId) { success error eventId } }`;
export const GET = `query($org: UUID!, $eventId: UUID!) { getLedgerEvent(organizationId: $org, eventId: $eventId) { ${EVENT_FIELDS} } }`;

export type Accounts = Record<string, string>;

/** The tenant's accounts by name (the starter chart plus what a test added). */
export async function accountsOf(h: Harness, t: Tenant): Promise<Accounts> {
  const { rows } = await h.owner.query("select id, name from app_public.accounts where organization_id = $1", [t.organizationId]);
  return Object.fromEntries(rows.map((r) => [r.name, r.id]));
}

/**
 * A tenant made as the operator would, and its accounts by name: the starter chart, and `extra`
 * (name: [accountType, classification]) added as the operator would.
 */
export async function tenantWithAccounts(h: Harness, extra: Record<string, [accountType: string, classification: string]> = {}):
    Promise<{ t: Tenant; acc: Accounts }> {
  const t = await createTenant(h);
  const acc = await accountsOf(h, t);
  for (const [name, [accountType, classification]] of Object.entries(extra)) acc[name] = await addAccount(h, t, name, accountType, classification);
  return { t, acc };
}

/** An extra account, written as the operator would (the chart's own API is tested elsewhere). */
export async function addAccount(h: Harness, t: Tenant, name: string, accountType: string, classification: string, active = true): Promise<string> {
  const { rows: [a] } = await h.owner.query(
    "insert into app_public.accounts (organization_id, name, account_type, classification, active) values ($1, $2, $3, $4, $5) returning id",
    [t.organizationId, name, accountType, classification, active]);
  return a.id;
}

export async function call(h: Harness, t: Tenant, doc: string, vars: Record<string, unknown>, field: string) {
  return dataOf(await h.gql(doc, { org: t.organizationId, ...vars }, t.apiKey), field);
}

export async function createEvent(h: Harness, t: Tenant, vars: Record<string, unknown>): Promise<string> {
  const r = await call(h, t, CREATE, { merchantName: "Vendor", amount: "10.00", transactionDate: "2026-03-01", ...vars }, "createLedgerEvent");
  if (!r.success) throw new Error(r.error);
  return r.eventId;
}

/** A confirmed event: created, classified, confirmed. */
export async function bookEvent(h: Harness, t: Tenant, vars: Record<string, unknown>, classify: Record<string, unknown>): Promise<string> {
  const id = await createEvent(h, t, vars);
  const c = await call(h, t, CLASSIFY, { eventId: id, ...classify }, "updateStagedEntry");
  if (!c.success) throw new Error(c.error);
  const r = await call(h, t, CONFIRM, { eventId: id }, "confirmLedgerEvent");
  if (!r.success) throw new Error(r.error);
  return id;
}

/** The raw row of an event, to show that a refusal changed nothing. */
export async function eventRow(h: Harness, id: string) {
  const { rows } = await h.owner.query("select * from app_public.ledger_events where id = $1", [id]);
  return rows[0];
}

export async function count(h: Harness, sql: string, params: unknown[] = []): Promise<number> {
  const { rows } = await h.owner.query(`select count(*)::int as n from (${sql}) x`, params);
  return rows[0].n;
}

/**
 * Balances recomputed from the journal lines of live entries (docs/api.md, Money and the ledger):
 * booked events' postings, and both entries of a reversed one.
 */
export async function balancesFromLines(h: Harness, org: string): Promise<Record<string, string>> {
  const { rows } = await h.owner.query(`
    select a.name, (case when a.classification in ('asset', 'expense') then coalesce(sum(l.debit - l.credit), 0)
                         else coalesce(sum(l.credit - l.debit), 0) end)::numeric(20,2)::text as balance
      from app_public.accounts a
      left join (app_public.journal_lines l
                 join app_public.journal_entries j on j.id = l.entry_id and j.voided_at is null
                 join app_public.ledger_events e on e.id = j.event_id)
        on l.account_id = a.id and l.txn_date <= current_date
     where a.organization_id = $1 and a.active
     group by a.id, a.name, a.classification`, [org]);
  return Object.fromEntries(rows.map((r) => [r.name, r.balance]));
}

/** Bank lines imported into the chequing account by API key, as a bank statement import makes them. */
export async function importBankLines(h: Harness, t: Tenant, rows: Record<string, unknown>[]): Promise<{ success: boolean; importedCount: number }> {
  const accounts = await accountsOf(h, t);
  return call(h, t, `mutation($org: UUID!, $p: UUID!, $rows: [BankStatementRowInput!]!) {
    importBankStatement(organizationId: $org, paymentAccountId: $p, rows: $rows) { success error importedCount } }`,
  { p: accounts.Chequing, rows }, "importBankStatement");
}
