-- Category rules with conditions, outcomes and an order; suggestions from confirmed history; the
-- change feed, events marked synced with their external ids, and pending bank rows.

alter table app_public.category_rules add column if not exists priority integer not null default 100;
alter table app_public.category_rules add column if not exists direction text;
alter table app_public.category_rules add column if not exists amount_min numeric(20,2);
alter table app_public.category_rules add column if not exists amount_max numeric(20,2);
alter table app_public.category_rules add column if not exists payment_account_id uuid;
alter table app_public.category_rules add column if not exists contact_id uuid;
alter table app_public.category_rules add column if not exists tax_code text;
alter table app_public.category_rules add column if not exists splits jsonb;
alter table app_public.category_rules drop constraint if exists category_rules_priority_check;
alter table app_public.category_rules add constraint category_rules_priority_check check (priority between 0 and 1000000);
alter table app_public.category_rules drop constraint if exists category_rules_direction_check;
alter table app_public.category_rules add constraint category_rules_direction_check check (direction in ('in', 'out'));
alter table app_public.category_rules drop constraint if exists category_rules_amount_range;
alter table app_public.category_rules add constraint category_rules_amount_range
  check (amount_min >= 0 and amount_max >= 0 and amount_min <= amount_max); -- each null-tolerant, so either bound may be absent
alter table app_public.category_rules drop constraint if exists category_rules_splits_check;
alter table app_public.category_rules add constraint category_rules_splits_check
  check (splits is null or jsonb_typeof(splits) = 'array' and tax_code is null);
alter table app_public.category_rules drop constraint if exists category_rules_payment_account_fkey;
alter table app_public.category_rules add constraint category_rules_payment_account_fkey
  foreign key (organization_id, payment_account_id) references app_public.accounts (organization_id, id);
alter table app_public.category_rules drop constraint if exists category_rules_contact_fkey;
alter table app_public.category_rules add constraint category_rules_contact_fkey
  foreign key (organization_id, contact_id) references app_public.contacts (organization_id, id);
alter table app_public.category_rules drop constraint if exists category_rules_tax_code_fkey;
alter table app_public.category_rules add constraint category_rules_tax_code_fkey
  foreign key (tax_code) references app_public.sales_tax_codes (code);
-- Two rules may share a pattern when their conditions differ.
drop index if exists app_public.category_rules_pattern_key;
create unique index if not exists category_rules_conditions_key on app_public.category_rules
  (organization_id, lower(vendor_pattern), direction, amount_min, amount_max, payment_account_id) nulls not distinct;
create index if not exists category_rules_contact_idx on app_public.category_rules (organization_id, contact_id) where contact_id is not null;

-- What one rule is asked about an event: set-based choice over many events at once.
do $$ begin
  if to_regtype('app_private.rule_subject') is null then
    create type app_private.rule_subject as (id uuid, merchant_name text, direction text, amount numeric,
      payment_account_id uuid, event_type text, transaction_date date, contact_id uuid);
  end if;
end $$;

-- How often each category was confirmed for a merchant (its name with case, spaces, digits and
-- store numbers left out), kept by a trigger on the events.
create table if not exists app_public.merchant_category_counts (
  organization_id uuid not null references app_public.organizations (id) on delete cascade,
  merchant text not null,
  category_id uuid not null,
  -- No check that it stays at 0 or more: a decrement arrives as an insert of -1 that meets the row.
  confirmations integer not null,
  primary key (organization_id, merchant, category_id)
);
alter table app_public.merchant_category_counts drop constraint if exists merchant_category_counts_confirmations_check;
alter table app_public.merchant_category_counts enable row level security;
alter table app_public.merchant_category_counts force row level security;

-- The change feed: one row per change of an event, kept 30 days.
create table if not exists app_public.ledger_change_feed (
  organization_id uuid not null references app_public.organizations (id) on delete cascade,
  -- The writing transaction's id (xid8 as bigint, which PostGraphile reads).
  txid bigint not null default pg_current_xact_id()::text::bigint,
  id bigint generated always as identity,
  event_id uuid not null,
  kind text not null check (kind in ('created', 'updated', 'classified', 'confirmed', 'reconciled', 'ignored',
    'reversed', 'synced', 'deleted')),
  at timestamptz not null default now(),
  primary key (organization_id, txid, id)
);
create index if not exists ledger_change_feed_at_idx on app_public.ledger_change_feed using brin (at);
alter table app_public.ledger_change_feed enable row level security;
alter table app_public.ledger_change_feed force row level security;

-- The ids an event has in the systems it was exported to.
create table if not exists app_public.ledger_event_external_refs (
  organization_id uuid not null,
  event_id uuid not null,
  external_system text not null check (length(external_system) between 1 and 100),
  external_id text not null check (length(external_id) between 1 and 255),
  synced_at timestamptz not null default now(),
  primary key (organization_id, event_id, external_system),
  foreign key (organization_id, event_id) references app_public.ledger_events (organization_id, id) on delete cascade
);
create unique index if not exists ledger_event_external_refs_external_key
  on app_public.ledger_event_external_refs (organization_id, external_system, external_id);
alter table app_public.ledger_event_external_refs enable row level security;
alter table app_public.ledger_event_external_refs force row level security;

-- Pending bank rows waiting for their posted row, found by account and day.
create index if not exists ledger_events_pending_idx on app_public.ledger_events (organization_id, payment_account_id, transaction_date)
  where status = 'pending';

--!include rules/category-rules.sql
--!include rules/suggestions.sql
--!include ledger/changes.sql
--!include ledger/external-refs.sql
--!include ledger/pending.sql
--!include ledger/events.sql
--!include ledger/transitions.sql
--!include ledger/reconciliations.sql
--!include imports/bank-statements.sql
--!include access/idempotency.sql

-- The counts of what is confirmed so far.
insert into app_public.merchant_category_counts (organization_id, merchant, category_id, confirmations)
  select e.organization_id, app_private.merchant_family(e.merchant_name), e.category_id, count(*)
    from app_public.ledger_events e
   where e.status in ('confirmed', 'synced', 'reconciled') and e.category_id is not null
     and app_private.merchant_family(e.merchant_name) <> ''
   group by 1, 2, 3
  on conflict do nothing;
