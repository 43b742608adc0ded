-- Closing a period: a lock date and the fiscal year's first day in the settings, entries that post
-- on a day of their own or reverse another, and reconciliations of payment accounts.

alter table app_public.organizations add column if not exists lock_date date;
alter table app_public.organizations add column if not exists fiscal_year_start text not null default '01-01'
  -- A day every year has (no 02-29).
  constraint organizations_fiscal_year_start_check check (fiscal_year_start ~ '^(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$'
    and substr(fiscal_year_start, 4)::integer <= case substr(fiscal_year_start, 1, 2)
      when '02' then 28 when '04' then 30 when '06' then 30 when '09' then 30 when '11' then 30 else 31 end);

-- A reversing entry belongs to the event of the entry it reverses, and is live beside it: the one
-- live entry an event has is its posting, not counting the reversal.
alter table app_public.journal_entries add column if not exists reverses_entry_id uuid;
alter table app_public.journal_entries drop constraint if exists journal_entries_reverses_fkey;
alter table app_public.journal_entries add constraint journal_entries_reverses_fkey
  foreign key (organization_id, reverses_entry_id) references app_public.journal_entries (organization_id, id) on delete cascade;
create unique index if not exists journal_entries_reversal_key on app_public.journal_entries (reverses_entry_id)
  where reverses_entry_id is not null;
drop index if exists app_public.journal_entries_live_key;
create unique index journal_entries_live_key on app_public.journal_entries (event_id)
  where voided_at is null and reverses_entry_id is null;

alter table app_public.ledger_events add column if not exists reversal_entry_id uuid;
alter table app_public.ledger_events drop constraint if exists ledger_events_reversal_entry_fkey;
alter table app_public.ledger_events add constraint ledger_events_reversal_entry_fkey
  foreign key (organization_id, reversal_entry_id) references app_public.journal_entries (organization_id, id)
  deferrable initially deferred;

create table if not exists app_public.reconciliations (
  id uuid primary key default app_private.uuid_v7(),
  organization_id uuid not null references app_public.organizations on delete cascade,
  payment_account_id uuid not null,
  statement_date date not null,
  opening_balance numeric(20,2) not null,
  closing_balance numeric(20,2) not null,
  -- Kept when it completes (the events it cleared may be reversed later); worked out while open.
  cleared_balance numeric(20,2),
  status text not null default 'open' check (status in ('open', 'completed', 'undone')),
  -- The completed reconciliation of the account it follows (its closing is this one's opening).
  previous_id uuid,
  created timestamptz not null default now(),
  completed_at timestamptz,
  undone_at timestamptz,
  unique (organization_id, id),
  foreign key (organization_id, payment_account_id) references app_public.accounts (organization_id, id),
  foreign key (organization_id, previous_id) references app_public.reconciliations (organization_id, id),
  -- Completes only with a difference of exactly 0.00.
  constraint reconciliations_completed_difference check (status <> 'completed' or cleared_balance = closing_balance),
  constraint reconciliations_completed_at check ((status = 'open') = (completed_at is null) or status = 'undone')
);
-- One open reconciliation per account.
create unique index if not exists reconciliations_open_key on app_public.reconciliations (organization_id, payment_account_id)
  where status = 'open';
-- One chain per account: each live reconciliation follows a different one (or is the one first).
create unique index if not exists reconciliations_chain_key on app_public.reconciliations
  (organization_id, payment_account_id, coalesce(previous_id, '00000000-0000-0000-0000-000000000000'::uuid))
  where status <> 'undone';
create index if not exists reconciliations_account_idx on app_public.reconciliations
  (organization_id, payment_account_id, created desc, id desc);
alter table app_public.reconciliations enable row level security;
alter table app_public.reconciliations force row level security;

-- The events a reconciliation ticked: an event is cleared in at most one reconciliation.
create table if not exists app_public.reconciliation_clearings (
  event_id uuid primary key,
  organization_id uuid not null,
  reconciliation_id uuid not null,
  foreign key (organization_id, reconciliation_id) references app_public.reconciliations (organization_id, id) on delete cascade,
  foreign key (organization_id, event_id) references app_public.ledger_events (organization_id, id) on delete cascade
);
create index if not exists reconciliation_clearings_reconciliation_idx on app_public.reconciliation_clearings (reconciliation_id);
alter table app_public.reconciliation_clearings enable row level security;
alter table app_public.reconciliation_clearings force row level security;

-- Signatures that gain a parameter.
drop function if exists app_private.post_journal_entries(uuid[]);
drop function if exists app_public.confirm_ledger_event(uuid, uuid);
drop function if exists app_public.update_organization_settings(uuid, text);
drop function if exists app_public.list_ledger_events(uuid, jsonb, boolean, integer, text, text, text, text, jsonb, jsonb, jsonb, text, integer, integer, text, text);

--!include ledger/journal.sql
--!include ledger/lock-date.sql
--!include ledger/events.sql
--!include ledger/transitions.sql
--!include ledger/audit.sql
--!include ledger/reconciliations.sql
--!include organizations/organizations.sql
--!include reports/closing-reports.sql
--!include reporting/views.sql
--!include webhooks/endpoints.sql
--!include webhooks/events.sql
