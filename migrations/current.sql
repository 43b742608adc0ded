-- Time-ordered ids for the tables imports write in bulk.
--!include inputs/ids.sql
--!include inputs/values.sql
alter table app_public.ledger_events alter column id set default app_private.uuid_v7();
alter table app_public.journal_entries alter column id set default app_private.uuid_v7();
alter table app_public.journal_lines alter column id set default app_private.uuid_v7();
-- The composite key (organization, event) already ties an entry to its organization and cascades
-- its deletion: the plain key only costs a check per entry. (Lines keep theirs: deleting an
-- organization must remove them before the accounts they name.)
alter table app_public.journal_entries drop constraint journal_entries_organization_id_fkey;

-- Imports: where each event came from (a bank statement, a processor export), one row per import
-- run, and the results of operator jobs.
create table app_public.import_batches (
  id uuid primary key default app_private.uuid_v7(),
  organization_id uuid not null references app_public.organizations on delete cascade,
  source text not null check (source in ('bank_import', 'processor_import')),
  -- Bank imports: the batch id itself; processor imports: `processor:<UTC timestamp>` (decisions §10).
  batch_key text not null check (length(batch_key) between 1 and 200),
  payment_account_id uuid,
  file_name text check (length(file_name) <= 500),
  actor_api_key_id uuid,
  actor_user_id uuid,
  created timestamptz not null default now(),
  unique (organization_id, id),
  unique (organization_id, batch_key),
  foreign key (organization_id, payment_account_id) references app_public.accounts (organization_id, id)
);
alter table app_public.import_batches enable row level security;
alter table app_public.import_batches force row level security;

alter table app_public.ledger_events
  add column source text not null default 'manual' check (source in ('manual', 'bank_import', 'processor_import')),
  add column import_batch_id uuid,
  -- The source's own id of the row (a processor balance transaction id, `<id>:fee` for its fee).
  add column source_id text check (length(source_id) between 1 and 300),
  add constraint ledger_events_import_batch_fkey foreign key (organization_id, import_batch_id)
    references app_public.import_batches (organization_id, id);
-- A source row is imported once per organization, whichever batch and however many runs at once.
create unique index ledger_events_source_key on app_public.ledger_events (organization_id, source, source_id)
  where source_id is not null;
create index ledger_events_import_batch_idx on app_public.ledger_events (import_batch_id)
  where import_batch_id is not null;
-- Duplicate candidates of a statement row: same day and amount, on any payment account.
create index ledger_events_duplicate_idx on app_public.ledger_events (organization_id, transaction_date, functional_amount);
create index ledger_events_reference_idx on app_public.ledger_events (organization_id, payment_account_id, reference)
  where reference is not null;

-- Every operator job (imports now, mailbox scans later) records its outcome here.
create table app_private.job_results (
  id bigint generated always as identity primary key,
  job_name text not null,
  job_id text,
  attempt integer,
  organization_id uuid references app_public.organizations on delete cascade,
  payload jsonb not null default '{}',
  status text not null check (status in ('succeeded', 'failed')),
  result jsonb,
  error text,
  started_at timestamptz not null,
  finished_at timestamptz not null default clock_timestamp()
);
create index job_results_job_idx on app_private.job_results (job_name, finished_at);
-- Operators read it; no API role has a grant. RLS as on every table with an organization.
alter table app_private.job_results enable row level security;
alter table app_private.job_results force row level security;

-- Deleting journal entries (delete_processor_imports) has the deferred foreign key from
-- ledger_events.journal_entry_id check each one: by index, not by reading every event per entry.
create index ledger_events_journal_entry_idx on app_public.ledger_events (journal_entry_id)
  where journal_entry_id is not null;

-- The audit trail and the journal written set-based (statement-level triggers, one posting function).
--!include ledger/audit.sql
--!include ledger/events.sql
--!include ledger/journal.sql
--!include ledger/transitions.sql
drop function if exists app_private.tg_ledger_events__audit_delete();
drop function if exists app_private.post_journal_entry(uuid);
drop function if exists app_private.field_changes(jsonb, jsonb);

-- Imports.
--!include chart/accounts.sql
--!include rules/category-rules.sql
--!include imports/bank-statements.sql
--!include imports/processor-balance.sql
--!include jobs/job-results.sql
