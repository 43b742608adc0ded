--! Previous: sha1:acfaab348bff0cd40c622e3e3c196ab425fc19e7
--! Hash: sha1:612c0e03ef1c49c2661575e2ed3514c45420ba6f
--! Message: ledger: events, journal, audit, reports

-- Ledger: events, double-entry journal, audit trail, daily totals, reports, SQL reporting schema.
-- Idempotent: drops what it creates first.

drop schema if exists reporting cascade;
drop trigger if exists _600_classify_needs_review on app_public.category_rules;
drop function if exists app_private.tg_category_rules__classify() cascade;
drop table if exists app_public.ledger_event_audit cascade;
drop table if exists app_public.account_daily_totals cascade;
drop table if exists app_public.ledger_event_daily_counts cascade;
drop table if exists app_public.journal_lines cascade;
drop table if exists app_public.journal_entries cascade;
drop table if exists app_public.ledger_events cascade;
do $$
declare f regprocedure;
begin
  for f in select p.oid::regprocedure from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where (n.nspname = 'app_public' and p.proname in ('create_ledger_event', 'update_ledger_event', 'update_staged_entry',
             'confirm_ledger_event', 'reject_ledger_event', 'get_ledger_event', 'list_ledger_events', 'ledger_event_history',
             'dashboard_summary', 'income_statement', 'account_balances'))
       or (n.nspname = 'app_private' and p.proname in ('money', 'parse_amount', 'parse_date', 'direction_for', 'category_fits',
             'event_receipts', 'check_category', 'check_payment_account', 'check_tax_account', 'ledger_event_json',
             'ledger_event_json_by_id', 'post_journal_entry', 'report_period', 'period_totals', 'receipt_count',
             'tg_journal_lines__immutable', 'tg_journal__balanced', 'tg_journal_lines__same_transaction', 'tg_journal_lines__totals', 'tg_ledger_events__counts',
             'tg_ledger_event_audit__append_only', 'tg_ledger_events__audit', 'tg_category_rules__classify'))
  loop
    execute format('drop function %s cascade', f);
  end loop;
end $$;

------------------------------------------------------------------------------------------------
-- Helpers

-- Money leaves the database as a decimal string with exactly two decimals.
create function app_private.money(amount numeric) returns text
  language sql immutable parallel safe as
$$ select amount::numeric(20,2)::text $$;

-- A decimal string with at most 2 fractional digits; positive unless allow_zero.
create function app_private.parse_amount(amount text, message text, allow_zero boolean default false) returns numeric
  language plpgsql immutable as
$$
declare v numeric;
begin
  if amount is null or btrim(amount) !~ '^[0-9]{1,15}(\.[0-9]{1,2})?$' then
    perform app_private.fail(message);
  end if;
  v := btrim(amount)::numeric;
  if v < 0 or (v = 0 and not allow_zero) then perform app_private.fail(message); end if;
  return v;
end $$;

-- A `YYYY-MM-DD` string that names a real day.
create function app_private.parse_date(day text, message text) returns date
  language plpgsql immutable as
$$
begin
  if day is null or day !~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' then perform app_private.fail(message); end if;
  begin
    return day::date;
  exception when others then
    perform app_private.fail(message);
  end;
end $$;

-- Which way money moves relative to the payment account (decisions §6).
create function app_private.direction_for(event_type text) returns text
  language sql immutable parallel safe as
$$ select case event_type when 'income' then 'in' else 'out' end $$;

-- The classifications a category account may have for an event type.
create function app_private.category_fits(event_type text, classification text) returns boolean
  language sql immutable parallel safe as
$$ select case event_type
    when 'expense' then classification in ('expense', 'asset')
    when 'income' then classification = 'revenue'
    when 'refund' then classification in ('revenue', 'expense')
    when 'transfer' then classification in ('asset', 'liability', 'equity')
    else false end $$;

------------------------------------------------------------------------------------------------
-- Ledger events

create table app_public.ledger_events (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app_public.organizations on delete cascade,
  event_type text not null check (event_type in ('expense', 'income', 'transfer', 'refund')),
  direction text not null check (direction in ('in', 'out')),
  merchant_name text not null check (length(merchant_name) between 1 and 500),
  functional_amount numeric(20,2) not null check (functional_amount > 0),
  functional_currency text not null check (functional_currency ~ '^[A-Z]{3}$'),
  transaction_date date not null,
  status text not null default 'needs_review'
    check (status in ('needs_review', 'confirmed', 'synced', 'reconciled', 'pending', 'ignored')),
  memo text not null default '' check (length(memo) <= 5000),
  has_document boolean not null default false,
  category_id uuid,
  payment_account_id uuid,
  tax_amount numeric(20,2) check (tax_amount >= 0),
  tax_account_id uuid,
  tax_code text references app_public.sales_tax_codes (code),
  journal_entry_id uuid,
  reference text,
  backfill_id text,
  created timestamptz not null default now(),
  updated timestamptz not null default now(),
  foreign key (organization_id, category_id) references app_public.accounts (organization_id, id),
  foreign key (organization_id, payment_account_id) references app_public.accounts (organization_id, id),
  foreign key (organization_id, tax_account_id) references app_public.accounts (organization_id, id),
  unique (organization_id, id)
) with (fillfactor = 85); -- room for HOT updates: confirm/reject touch no indexed column
-- The default order, and the filtered pages: status, merchant name and memo ride along so that a
-- date range + status + search is answered from the index alone (filters cannot be index
-- conditions under RLS unless leakproof, and ILIKE is not).
create index ledger_events_date_idx on app_public.ledger_events (organization_id, transaction_date, id)
  include (status, merchant_name, memo, has_document);
create index ledger_events_amount_idx on app_public.ledger_events (organization_id, functional_amount, id);
create index ledger_events_category_idx on app_public.ledger_events (organization_id, category_id, transaction_date);
create index ledger_events_payment_idx on app_public.ledger_events (organization_id, payment_account_id, transaction_date);
create unique index ledger_events_backfill_key on app_public.ledger_events (organization_id, backfill_id) where backfill_id is not null;
alter table app_public.ledger_events enable row level security;
alter table app_public.ledger_events force row level security;
create policy ledger_events_tenant on app_public.ledger_events
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select, insert on app_public.ledger_events to accounting_visitor;
grant update (event_type, direction, merchant_name, functional_amount, transaction_date, status, memo, has_document,
  category_id, payment_account_id, tax_amount, tax_account_id, tax_code, journal_entry_id, reference, updated)
  on app_public.ledger_events to accounting_visitor;
create trigger _100_touch_updated before update on app_public.ledger_events
  for each row execute function app_private.tg__touch_updated();

-- Receipts of an event: none until the receipts issue replaces this function.
create function app_private.event_receipts(event_id uuid) returns jsonb
  language sql stable as
$$ select '[]'::jsonb $$;

------------------------------------------------------------------------------------------------
-- Journal

create table app_public.journal_entries (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app_public.organizations on delete cascade,
  event_id uuid not null,
  txn_date date not null,
  total_amount numeric(20,2) not null check (total_amount > 0),
  voided_at timestamptz,
  created timestamptz not null default now(),
  foreign key (organization_id, event_id) references app_public.ledger_events (organization_id, id) on delete cascade,
  unique (organization_id, id)
);
-- At most one live entry per event, whatever the concurrency.
create unique index journal_entries_live_key on app_public.journal_entries (event_id) where voided_at is null;
create index journal_entries_event_idx on app_public.journal_entries (event_id);
alter table app_public.ledger_events add foreign key (organization_id, journal_entry_id)
  references app_public.journal_entries (organization_id, id) deferrable initially deferred;
alter table app_public.journal_entries enable row level security;
alter table app_public.journal_entries force row level security;
create policy journal_entries_tenant on app_public.journal_entries
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select, insert on app_public.journal_entries to accounting_visitor;
grant update (voided_at) on app_public.journal_entries to accounting_visitor;

create table app_public.journal_lines (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app_public.organizations on delete cascade,
  entry_id uuid not null,
  account_id uuid not null,
  txn_date date not null,           -- the entry's date, kept here so totals survive a cascade
  debit numeric(20,2) not null default 0 check (debit >= 0),
  credit numeric(20,2) not null default 0 check (credit >= 0),
  voided boolean not null default false,
  check ((debit = 0) <> (credit = 0)),
  foreign key (organization_id, entry_id) references app_public.journal_entries (organization_id, id) on delete cascade,
  foreign key (organization_id, account_id) references app_public.accounts (organization_id, id)
);
create index journal_lines_entry_idx on app_public.journal_lines (entry_id);
create index journal_lines_account_idx on app_public.journal_lines (organization_id, account_id, txn_date);
alter table app_public.journal_lines enable row level security;
alter table app_public.journal_lines force row level security;
create policy journal_lines_tenant on app_public.journal_lines
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select, insert on app_public.journal_lines to accounting_visitor;
grant update (voided) on app_public.journal_lines to accounting_visitor;

-- Lines are immutable; the only change is voiding (once).
create function app_private.tg_journal_lines__immutable() returns trigger
  language plpgsql as
$$
begin
  if (new.organization_id, new.entry_id, new.account_id, new.txn_date, new.debit, new.credit)
     is distinct from (old.organization_id, old.entry_id, old.account_id, old.txn_date, old.debit, old.credit)
     or (old.voided and not new.voided) then
    perform app_private.fail('Journal lines cannot be changed; void the entry instead.');
  end if;
  return new;
end $$;
create trigger _100_immutable before update on app_public.journal_lines
  for each row execute function app_private.tg_journal_lines__immutable();

-- At commit: every entry that still exists has lines, and its debits equal its credits.
create function app_private.tg_journal__balanced() returns trigger
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
declare
  entry uuid;
  d numeric; c numeric; n integer;
begin
  if tg_table_name = 'journal_entries' then entry := new.id;
  elsif tg_op = 'DELETE' then entry := old.entry_id;
  else entry := new.entry_id;
  end if;
  if not exists (select 1 from app_public.journal_entries where id = entry) then return null; end if;
  select coalesce(sum(debit), 0), coalesce(sum(credit), 0), count(*) into d, c, n
    from app_public.journal_lines where entry_id = entry;
  if n < 2 or d <> c then
    raise exception 'Journal entry % does not balance (debits %, credits %, % lines).', entry, d, c, n
      using errcode = 'check_violation';
  end if;
  return null;
end $$;
-- Checked once per new entry (with all its lines) and once per changed or removed line. Lines
-- can only be added to an entry posted in the same transaction (below), whose check covers them.
create constraint trigger _900_balanced after insert on app_public.journal_entries
  deferrable initially deferred for each row execute function app_private.tg_journal__balanced();
create constraint trigger _900_balanced after update or delete on app_public.journal_lines
  deferrable initially deferred for each row execute function app_private.tg_journal__balanced();

-- Security invoker: an entry the caller cannot see (another organization's) is left to RLS, which
-- refuses the line with a permission error; a missing entry is left to the foreign key.
create function app_private.tg_journal_lines__same_transaction() returns trigger
  language plpgsql as
$$
begin
  -- created defaults to now(), the transaction's start: equal only within the posting transaction.
  if exists (select 1 from app_public.journal_entries j where j.id = new.entry_id and j.created <> now()) then
    raise exception 'Lines can only be added to a journal entry in the transaction that posts it.'
      using errcode = 'check_violation';
  end if;
  return new;
end $$;
create trigger _100_same_transaction before insert on app_public.journal_lines
  for each row execute function app_private.tg_journal_lines__same_transaction();

------------------------------------------------------------------------------------------------
-- Per-account daily totals of live (not voided) lines, kept in the same transaction.

create table app_public.account_daily_totals (
  organization_id uuid not null references app_public.organizations on delete cascade,
  account_id uuid not null,
  day date not null,
  debit numeric(20,2) not null default 0,
  credit numeric(20,2) not null default 0,
  primary key (organization_id, account_id, day)
);
create index account_daily_totals_day_idx on app_public.account_daily_totals (organization_id, day);
alter table app_public.account_daily_totals enable row level security;
alter table app_public.account_daily_totals force row level security;
create policy account_daily_totals_tenant on app_public.account_daily_totals
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select on app_public.account_daily_totals to accounting_visitor;

-- Statement-level, from the transition tables: one upsert per statement, in key order (no deadlocks).
create function app_private.tg_journal_lines__totals() returns trigger
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
begin
  if tg_op = 'INSERT' then
    insert into app_public.account_daily_totals as t (organization_id, account_id, day, debit, credit)
      select organization_id, account_id, txn_date, sum(debit), sum(credit)
        from new_rows where not voided group by 1, 2, 3 order by 1, 2, 3
      on conflict (organization_id, account_id, day) do update
        set debit = t.debit + excluded.debit, credit = t.credit + excluded.credit;
  elsif tg_op = 'UPDATE' then
    insert into app_public.account_daily_totals as t (organization_id, account_id, day, debit, credit)
      select organization_id, account_id, txn_date, sum(debit), sum(credit) from (
        select organization_id, account_id, txn_date, debit, credit from new_rows where not voided
        union all
        select organization_id, account_id, txn_date, -debit, -credit from old_rows where not voided) x
      group by 1, 2, 3 having sum(debit) <> 0 or sum(credit) <> 0 order by 1, 2, 3
      on conflict (organization_id, account_id, day) do update
        set debit = t.debit + excluded.debit, credit = t.credit + excluded.credit;
  else
    insert into app_public.account_daily_totals as t (organization_id, account_id, day, debit, credit)
      select organization_id, account_id, txn_date, -sum(debit), -sum(credit)
        from old_rows where not voided group by 1, 2, 3 order by 1, 2, 3
      on conflict (organization_id, account_id, day) do update
        set debit = t.debit + excluded.debit, credit = t.credit + excluded.credit;
  end if;
  return null;
end $$;
create trigger _500_totals_insert after insert on app_public.journal_lines
  referencing new table as new_rows for each statement execute function app_private.tg_journal_lines__totals();
create trigger _500_totals_update after update on app_public.journal_lines
  referencing old table as old_rows new table as new_rows for each statement execute function app_private.tg_journal_lines__totals();
create trigger _500_totals_delete after delete on app_public.journal_lines
  referencing old table as old_rows for each statement execute function app_private.tg_journal_lines__totals();

------------------------------------------------------------------------------------------------
-- Event counts per day and status: exact list totals without counting a million rows.

create table app_public.ledger_event_daily_counts (
  organization_id uuid not null references app_public.organizations on delete cascade,
  day date not null,
  status text not null,
  n bigint not null default 0,
  primary key (organization_id, day, status)
);
alter table app_public.ledger_event_daily_counts enable row level security;
alter table app_public.ledger_event_daily_counts force row level security;
create policy ledger_event_daily_counts_tenant on app_public.ledger_event_daily_counts
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select on app_public.ledger_event_daily_counts to accounting_visitor;

create function app_private.tg_ledger_events__counts() returns trigger
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
begin
  if tg_op = 'INSERT' then
    insert into app_public.ledger_event_daily_counts as t (organization_id, day, status, n)
      select organization_id, transaction_date, status, count(*) from new_rows group by 1, 2, 3 order by 1, 2, 3
      on conflict (organization_id, day, status) do update set n = t.n + excluded.n;
  elsif tg_op = 'UPDATE' then
    insert into app_public.ledger_event_daily_counts as t (organization_id, day, status, n)
      select organization_id, d, s, sum(k) from (
        select organization_id, transaction_date d, status s, 1 k from new_rows
        union all
        select organization_id, transaction_date, status, -1 from old_rows) x
      group by 1, 2, 3 having sum(k) <> 0 order by 1, 2, 3
      on conflict (organization_id, day, status) do update set n = t.n + excluded.n;
  else
    insert into app_public.ledger_event_daily_counts as t (organization_id, day, status, n)
      select organization_id, transaction_date, status, -count(*) from old_rows group by 1, 2, 3 order by 1, 2, 3
      on conflict (organization_id, day, status) do update set n = t.n + excluded.n;
  end if;
  return null;
end $$;
create trigger _500_counts_insert after insert on app_public.ledger_events
  referencing new table as new_rows for each statement execute function app_private.tg_ledger_events__counts();
create trigger _500_counts_update after update on app_public.ledger_events
  referencing old table as old_rows new table as new_rows for each statement execute function app_private.tg_ledger_events__counts();
create trigger _500_counts_delete after delete on app_public.ledger_events
  referencing old table as old_rows for each statement execute function app_private.tg_ledger_events__counts();

------------------------------------------------------------------------------------------------
-- Audit trail: append-only. No role may update or delete (revoked, and refused by trigger).

create table app_public.ledger_event_audit (
  id bigint generated always as identity primary key,
  organization_id uuid not null,
  event_id uuid not null,
  action text not null,
  actor_api_key_id uuid,
  actor_user_id uuid,
  occurred_at timestamptz not null default clock_timestamp(),
  changes jsonb not null
);
create index ledger_event_audit_event_idx on app_public.ledger_event_audit (organization_id, event_id, id);
alter table app_public.ledger_event_audit enable row level security;
alter table app_public.ledger_event_audit force row level security;
create policy ledger_event_audit_read on app_public.ledger_event_audit for select
  using (organization_id = app_public.current_organization_id());
create policy ledger_event_audit_append on app_public.ledger_event_audit for insert
  with check (organization_id = app_public.current_organization_id());
revoke all on app_public.ledger_event_audit from public;
grant select on app_public.ledger_event_audit to accounting_visitor;

create function app_private.tg_ledger_event_audit__append_only() returns trigger
  language plpgsql as
$$ begin raise exception 'The audit trail is append-only.' using errcode = 'AP403'; end $$;
create trigger _100_append_only before update or delete on app_public.ledger_event_audit
  for each row execute function app_private.tg_ledger_event_audit__append_only();
create trigger _100_no_truncate before truncate on app_public.ledger_event_audit
  for each statement execute function app_private.tg_ledger_event_audit__append_only();

-- Every insert and change of an event: who, when, what (old and new values of each changed field).
create function app_private.tg_ledger_events__audit() returns trigger
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
declare diff jsonb;
begin
  -- Column by column (cheaper than diffing whole-row JSON on every confirm); null entries dropped.
  if tg_op = 'INSERT' then
    diff := jsonb_strip_nulls(jsonb_build_object(
    'event_type', case when new.event_type is not null then jsonb_build_object('old', null, 'new', to_jsonb(new.event_type)) end,
    'direction', case when new.direction is not null then jsonb_build_object('old', null, 'new', to_jsonb(new.direction)) end,
    'merchant_name', case when new.merchant_name is not null then jsonb_build_object('old', null, 'new', to_jsonb(new.merchant_name)) end,
    'functional_amount', case when new.functional_amount is not null then jsonb_build_object('old', null, 'new', to_jsonb(new.functional_amount)) end,
    'functional_currency', case when new.functional_currency is not null then jsonb_build_object('old', null, 'new', to_jsonb(new.functional_currency)) end,
    'transaction_date', case when new.transaction_date is not null then jsonb_build_object('old', null, 'new', to_jsonb(new.transaction_date)) end,
    'status', case when new.status is not null then jsonb_build_object('old', null, 'new', to_jsonb(new.status)) end,
    'memo', case when new.memo is not null then jsonb_build_object('old', null, 'new', to_jsonb(new.memo)) end,
    'has_document', case when new.has_document is not null then jsonb_build_object('old', null, 'new', to_jsonb(new.has_document)) end,
    'category_id', case when new.category_id is not null then jsonb_build_object('old', null, 'new', to_jsonb(new.category_id)) end,
    'payment_account_id', case when new.payment_account_id is not null then jsonb_build_object('old', null, 'new', to_jsonb(new.payment_account_id)) end,
    'tax_amount', case when new.tax_amount is not null then jsonb_build_object('old', null, 'new', to_jsonb(new.tax_amount)) end,
    'tax_account_id', case when new.tax_account_id is not null then jsonb_build_object('old', null, 'new', to_jsonb(new.tax_account_id)) end,
    'tax_code', case when new.tax_code is not null then jsonb_build_object('old', null, 'new', to_jsonb(new.tax_code)) end,
    'journal_entry_id', case when new.journal_entry_id is not null then jsonb_build_object('old', null, 'new', to_jsonb(new.journal_entry_id)) end,
    'reference', case when new.reference is not null then jsonb_build_object('old', null, 'new', to_jsonb(new.reference)) end,
    'backfill_id', case when new.backfill_id is not null then jsonb_build_object('old', null, 'new', to_jsonb(new.backfill_id)) end));
  else
    diff := jsonb_strip_nulls(jsonb_build_object(
    'event_type', case when old.event_type is distinct from new.event_type then jsonb_build_object('old', to_jsonb(old.event_type), 'new', to_jsonb(new.event_type)) end,
    'direction', case when old.direction is distinct from new.direction then jsonb_build_object('old', to_jsonb(old.direction), 'new', to_jsonb(new.direction)) end,
    'merchant_name', case when old.merchant_name is distinct from new.merchant_name then jsonb_build_object('old', to_jsonb(old.merchant_name), 'new', to_jsonb(new.merchant_name)) end,
    'functional_amount', case when old.functional_amount is distinct from new.functional_amount then jsonb_build_object('old', to_jsonb(old.functional_amount), 'new', to_jsonb(new.functional_amount)) end,
    'functional_currency', case when old.functional_currency is distinct from new.functional_currency then jsonb_build_object('old', to_jsonb(old.functional_currency), 'new', to_jsonb(new.functional_currency)) end,
    'transaction_date', case when old.transaction_date is distinct from new.transaction_date then jsonb_build_object('old', to_jsonb(old.transaction_date), 'new', to_jsonb(new.transaction_date)) end,
    'status', case when old.status is distinct from new.status then jsonb_build_object('old', to_jsonb(old.status), 'new', to_jsonb(new.status)) end,
    'memo', case when old.memo is distinct from new.memo then jsonb_build_object('old', to_jsonb(old.memo), 'new', to_jsonb(new.memo)) end,
    'has_document', case when old.has_document is distinct from new.has_document then jsonb_build_object('old', to_jsonb(old.has_document), 'new', to_jsonb(new.has_document)) end,
    'category_id', case when old.category_id is distinct from new.category_id then jsonb_build_object('old', to_jsonb(old.category_id), 'new', to_jsonb(new.category_id)) end,
    'payment_account_id', case when old.payment_account_id is distinct from new.payment_account_id then jsonb_build_object('old', to_jsonb(old.payment_account_id), 'new', to_jsonb(new.payment_account_id)) end,
    'tax_amount', case when old.tax_amount is distinct from new.tax_amount then jsonb_build_object('old', to_jsonb(old.tax_amount), 'new', to_jsonb(new.tax_amount)) end,
    'tax_account_id', case when old.tax_account_id is distinct from new.tax_account_id then jsonb_build_object('old', to_jsonb(old.tax_account_id), 'new', to_jsonb(new.tax_account_id)) end,
    'tax_code', case when old.tax_code is distinct from new.tax_code then jsonb_build_object('old', to_jsonb(old.tax_code), 'new', to_jsonb(new.tax_code)) end,
    'journal_entry_id', case when old.journal_entry_id is distinct from new.journal_entry_id then jsonb_build_object('old', to_jsonb(old.journal_entry_id), 'new', to_jsonb(new.journal_entry_id)) end,
    'reference', case when old.reference is distinct from new.reference then jsonb_build_object('old', to_jsonb(old.reference), 'new', to_jsonb(new.reference)) end,
    'backfill_id', case when old.backfill_id is distinct from new.backfill_id then jsonb_build_object('old', to_jsonb(old.backfill_id), 'new', to_jsonb(new.backfill_id)) end));
  end if;
  if diff = '{}'::jsonb then return null; end if;
  insert into app_public.ledger_event_audit (organization_id, event_id, action, actor_api_key_id, actor_user_id, changes)
    values (new.organization_id, new.id,
            coalesce(nullif(current_setting('app.audit_action', true), ''), lower(tg_op)),
            app_public.current_api_key_id(), app_public.current_user_id(), diff);
  return null;
end $$;
create trigger _800_audit after insert or update on app_public.ledger_events
  for each row execute function app_private.tg_ledger_events__audit();

------------------------------------------------------------------------------------------------
-- Account checks shared by the operations. Another organization's account is "not found".

create function app_private.check_category(account uuid, event_type text) returns void
  language plpgsql stable as
$$
declare a app_public.accounts;
begin
  select * into a from app_public.accounts where id = account;
  if not found then perform app_private.fail('Category account not found.'); end if;
  if not a.active then perform app_private.fail('Category account is inactive.'); end if;
  if not app_private.category_fits(event_type, a.classification) then
    perform app_private.fail(case event_type
      when 'expense' then 'Category must be an expense or asset account for an expense event.'
      when 'income' then 'Category must be a revenue account for an income event.'
      when 'refund' then 'Category must be a revenue or expense account for a refund event.'
      else 'Category must be an asset, liability or equity account for a transfer event.' end);
  end if;
end $$;

create function app_private.check_payment_account(account uuid) returns void
  language plpgsql stable as
$$
declare a app_public.accounts;
begin
  select * into a from app_public.accounts where id = account;
  if not found then perform app_private.fail('Payment account not found.'); end if;
  if not a.active then perform app_private.fail('Payment account is inactive.'); end if;
  if a.account_type not in ('bank', 'credit_card', 'clearing') then
    perform app_private.fail('Payment account must be a bank, credit card or clearing account.');
  end if;
end $$;

create function app_private.check_tax_account(account uuid) returns void
  language plpgsql stable as
$$
declare a app_public.accounts;
begin
  select * into a from app_public.accounts where id = account;
  if not found then perform app_private.fail('Tax account not found.'); end if;
  if not a.active then perform app_private.fail('Tax account is inactive.'); end if;
  if a.classification not in ('liability', 'asset') then
    perform app_private.fail('Tax account must be a liability or asset account.');
  end if;
end $$;

------------------------------------------------------------------------------------------------
-- JSON of an event, in the contract's shape (plus direction, tax, created, updated).

create function app_private.ledger_event_json(e app_public.ledger_events, c app_public.accounts,
    p app_public.accounts, t app_public.accounts, j app_public.journal_entries) returns jsonb
  language sql stable as
$$
  select jsonb_build_object(
    'id', e.id, 'eventType', e.event_type, 'direction', e.direction, 'merchantName', e.merchant_name,
    'functionalAmount', app_private.money(e.functional_amount), 'functionalCurrency', e.functional_currency,
    'transactionDate', to_char(e.transaction_date, 'YYYY-MM-DD'), 'status', e.status, 'memo', e.memo,
    'hasDocument', e.has_document,
    'account', case when c.id is null then null else jsonb_build_object('id', c.id, 'name', c.name, 'accountType', c.account_type) end,
    'category', case when c.id is null then null else jsonb_build_object('id', c.id, 'name', c.name) end,
    'paymentAccount', case when p.id is null then null else jsonb_build_object('id', p.id, 'name', p.name) end,
    'taxAmount', app_private.money(e.tax_amount), 'taxCode', e.tax_code,
    'taxAccount', case when t.id is null then null else jsonb_build_object('id', t.id, 'name', t.name) end,
    'journalEntry', case when j.id is null then null else jsonb_build_object('id', j.id,
        'txnDate', to_char(j.txn_date, 'YYYY-MM-DD'), 'totalAmount', app_private.money(j.total_amount),
        'voidedAt', app_private.iso(j.voided_at)) end,
    'receipts', app_private.event_receipts(e.id),
    'created', app_private.iso(e.created), 'updated', app_private.iso(e.updated))
$$;

-- One event, or null when it is not visible.
create function app_private.ledger_event_json_by_id(event_id uuid) returns jsonb
  language sql stable as
$$
  select app_private.ledger_event_json(e, c, p, t, j)
    from app_public.ledger_events e
    left join app_public.accounts c on c.id = e.category_id
    left join app_public.accounts p on p.id = e.payment_account_id
    left join app_public.accounts t on t.id = e.tax_account_id
    left join app_public.journal_entries j on j.id = e.journal_entry_id
   where e.id = ledger_event_json_by_id.event_id
$$;

------------------------------------------------------------------------------------------------
-- Mutations

create function app_public.create_ledger_event(organization_id uuid, merchant_name text, amount text,
    transaction_date text, event_type text default 'expense', category_id uuid default null,
    payment_account_id uuid default null) returns jsonb
  language plpgsql volatile as
$$
declare
  v_amount numeric;
  v_date date;
  v_type text := coalesce(event_type, 'expense');
  v_category uuid := category_id;
  v_rule uuid;
  v_id uuid;
begin
  perform app_private.assert_org_access(organization_id, false);
  perform set_config('app.audit_action', 'create', true);
  if merchant_name is null or length(btrim(merchant_name)) = 0 then perform app_private.fail('Merchant name is required.'); end if;
  if length(btrim(merchant_name)) > 500 then perform app_private.fail('Merchant name must be at most 500 characters.'); end if;
  v_amount := app_private.parse_amount(amount, 'Amount must be a positive decimal string.');
  v_date := app_private.parse_date(transaction_date, 'Transaction date must be a date in YYYY-MM-DD format.');
  if v_type not in ('expense', 'income', 'transfer') then
    perform app_private.fail('Event type must be one of: expense, income, transfer.');
  end if;
  if v_category is not null then perform app_private.check_category(v_category, v_type); end if;
  if payment_account_id is not null then
    perform app_private.check_payment_account(payment_account_id);
    if payment_account_id = v_category then perform app_private.fail('Category and payment account must differ.'); end if;
  end if;
  if v_category is null then
    -- Behavior rule 10: the best matching category rule, when its account is usable for this event.
    select r.id, r.account_id into v_rule, v_category
      from app_public.category_rules r
      join app_public.accounts a on a.id = r.account_id
     where r.id = app_private.best_category_rule(create_ledger_event.organization_id, btrim(merchant_name))
       and a.active and app_private.category_fits(v_type, a.classification)
       and a.id is distinct from payment_account_id;
    if v_rule is not null then
      update app_public.category_rules set match_count = match_count + 1 where id = v_rule;
    end if;
  end if;
  insert into app_public.ledger_events (organization_id, event_type, direction, merchant_name, functional_amount,
      functional_currency, transaction_date, category_id, payment_account_id)
    select create_ledger_event.organization_id, v_type, app_private.direction_for(v_type), btrim(merchant_name), v_amount,
      o.functional_currency, v_date, v_category, payment_account_id
      from app_public.organizations o where o.id = create_ledger_event.organization_id
    returning id into v_id;
  return jsonb_build_object('success', true, 'error', null, 'eventId', v_id);
end $$;

create function app_public.update_ledger_event(organization_id uuid, event_id uuid, transaction_date text default null,
    memo text default null, amount text default null, event_type text default null) returns jsonb
  language plpgsql volatile as
$$
declare
  e app_public.ledger_events;
  v_type text;
  v_category uuid;
  v_amount numeric;
  v_tax numeric;
  v_classification text;
begin
  perform app_private.assert_org_access(organization_id, false);
  perform set_config('app.audit_action', 'update', true);
  select * into e from app_public.ledger_events x where x.id = event_id for update;
  if not found then perform app_private.fail('Ledger event not found.', 'AP404'); end if;
  if e.status not in ('needs_review', 'pending') then
    perform app_private.fail('Only events in needs_review or pending can be updated.');
  end if;
  v_type := coalesce(event_type, e.event_type);
  if event_type is not null and event_type not in ('expense', 'income', 'transfer') then
    perform app_private.fail('Event type must be one of: expense, income, transfer.');
  end if;
  v_amount := case when amount is null then e.functional_amount
                   else app_private.parse_amount(amount, 'Amount must be a positive decimal string.') end;
  if memo is not null and length(memo) > 5000 then perform app_private.fail('Memo must be at most 5000 characters.'); end if;
  -- A category that no longer fits the new type is cleared (the event needs classifying again).
  v_category := e.category_id;
  if v_category is not null and v_type <> e.event_type then
    select a.classification into v_classification from app_public.accounts a where a.id = v_category;
    if not app_private.category_fits(v_type, v_classification) then v_category := null; end if;
  end if;
  -- A tax portion computed from a sales tax code follows the amount.
  v_tax := e.tax_amount;
  if e.tax_code is not null and v_amount <> e.functional_amount then
    select round(v_amount * s.rate / (100 + s.rate), 2) into v_tax from app_public.sales_tax_codes s where s.code = e.tax_code;
  end if;
  if v_tax is not null and v_tax >= v_amount then
    perform app_private.fail('Tax amount must be less than the amount.');
  end if;
  update app_public.ledger_events x set
      transaction_date = case when update_ledger_event.transaction_date is null then x.transaction_date
        else app_private.parse_date(update_ledger_event.transaction_date, 'Transaction date must be a date in YYYY-MM-DD format.') end,
      memo = coalesce(update_ledger_event.memo, x.memo),
      functional_amount = v_amount,
      event_type = v_type,
      direction = app_private.direction_for(v_type),
      category_id = v_category,
      tax_amount = v_tax
    where x.id = e.id;
  return jsonb_build_object('success', true, 'error', null, 'event', app_private.ledger_event_json_by_id(e.id));
end $$;

-- Classify: category, payment account and tax (decisions §6, §7). Absent arguments keep their value.
create function app_public.update_staged_entry(organization_id uuid, event_id uuid, category_id uuid default null,
    payment_id uuid default null, tax_amount text default null, tax_account_id uuid default null,
    tax_code text default null) returns jsonb
  language plpgsql volatile as
$$
declare
  e app_public.ledger_events;
  v_category uuid;
  v_payment uuid;
  v_tax numeric;
  v_tax_account uuid;
  v_tax_code text;
  v_rate numeric;
begin
  perform app_private.assert_org_access(organization_id, false);
  perform set_config('app.audit_action', 'classify', true);
  select * into e from app_public.ledger_events x where x.id = event_id for update;
  if not found then perform app_private.fail('Ledger event not found.', 'AP404'); end if;
  if e.status in ('confirmed', 'synced', 'reconciled') then perform app_private.fail('Event is already confirmed.'); end if;
  if e.status not in ('needs_review', 'pending') then
    perform app_private.fail('Only events in needs_review or pending can be updated.');
  end if;
  v_category := coalesce(category_id, e.category_id);
  v_payment := coalesce(payment_id, e.payment_account_id);
  if category_id is not null then perform app_private.check_category(category_id, e.event_type); end if;
  if payment_id is not null then perform app_private.check_payment_account(payment_id); end if;
  if v_category = v_payment then perform app_private.fail('Category and payment account must differ.'); end if;

  v_tax_code := coalesce(tax_code, e.tax_code);
  v_tax := e.tax_amount;
  if tax_code is not null then
    select s.rate into v_rate from app_public.sales_tax_codes s where s.code = update_staged_entry.tax_code;
    if v_rate is null then perform app_private.fail('Unknown tax code.'); end if;
    v_tax := round(e.functional_amount * v_rate / (100 + v_rate), 2);
  end if;
  if tax_amount is not null then
    v_tax := app_private.parse_amount(tax_amount, 'Tax amount must be a decimal string of at least 0.', true);
    if tax_code is null then v_tax_code := null; end if; -- an explicit amount replaces a computed one
  end if;
  if v_tax is not null and v_tax >= e.functional_amount then
    perform app_private.fail('Tax amount must be less than the amount.');
  end if;
  v_tax_account := coalesce(tax_account_id, e.tax_account_id);
  if tax_account_id is not null then perform app_private.check_tax_account(tax_account_id); end if;
  if coalesce(v_tax, 0) > 0 and v_tax_account is null then
    -- The organization's sales tax account (the starter chart's GST/HST Payable).
    select a.id into v_tax_account from app_public.accounts a
     where a.account_type = 'tax_payable' and a.active order by a.created, a.id limit 1;
    if v_tax_account is null then perform app_private.fail('A tax account is required for a tax amount.'); end if;
  end if;
  if v_tax_account is not null and v_tax_account in (v_category, v_payment) then
    perform app_private.fail('The tax account must differ from the category and payment accounts.');
  end if;

  update app_public.ledger_events x set category_id = v_category, payment_account_id = v_payment,
      tax_amount = v_tax, tax_account_id = v_tax_account, tax_code = v_tax_code
    where x.id = e.id;
  return jsonb_build_object('success', true, 'error', null, 'event', app_private.ledger_event_json_by_id(e.id));
end $$;

-- Posts the journal entry of a locked, classified event (decisions §6). Returns the entry id.
create function app_private.post_journal_entry(event_id uuid) returns uuid
  language plpgsql volatile as
$$
declare
  e app_public.ledger_events;
  v_entry uuid;
  v_tax numeric;
begin
  select * into e from app_public.ledger_events x where x.id = event_id;
  v_tax := coalesce(e.tax_amount, 0);
  insert into app_public.journal_entries (organization_id, event_id, txn_date, total_amount)
    values (e.organization_id, e.id, e.transaction_date, e.functional_amount) returning id into v_entry;
  -- out: debit category (+ tax), credit payment; in: debit payment, credit category (+ tax).
  insert into app_public.journal_lines (organization_id, entry_id, account_id, txn_date, debit, credit)
    select e.organization_id, v_entry, l.account_id, e.transaction_date,
           case when l.debit_side then l.amount else 0 end, case when l.debit_side then 0 else l.amount end
      from (values
        (e.category_id, e.functional_amount - v_tax, e.direction = 'out'),
        (e.tax_account_id, v_tax, e.direction = 'out'),
        (e.payment_account_id, e.functional_amount, e.direction = 'in')) l (account_id, amount, debit_side)
     where l.amount > 0
     order by l.account_id;
  return v_entry;
end $$;

create function app_public.confirm_ledger_event(organization_id uuid, event_id uuid) returns jsonb
  language plpgsql volatile as
$$
declare
  e app_public.ledger_events;
  v_entry uuid;
begin
  perform app_private.assert_org_access(organization_id, false);
  perform set_config('app.audit_action', 'confirm', true);
  -- The row lock serializes concurrent confirms: the first posts, the others see it confirmed.
  select * into e from app_public.ledger_events x where x.id = event_id for update;
  if not found then perform app_private.fail('Ledger event not found.', 'AP404'); end if;
  if e.status in ('confirmed', 'synced', 'reconciled') then perform app_private.fail('Event is already confirmed.'); end if;
  if e.status not in ('needs_review', 'pending') then
    perform app_private.fail('Only events in needs_review or pending can be confirmed.');
  end if;
  if e.category_id is null or e.payment_account_id is null then
    perform app_private.fail('Category and payment account are required to confirm.');
  end if;
  -- The accounts may have changed since classification.
  perform app_private.check_category(e.category_id, e.event_type);
  perform app_private.check_payment_account(e.payment_account_id);
  if coalesce(e.tax_amount, 0) > 0 then perform app_private.check_tax_account(e.tax_account_id); end if;
  if coalesce(e.tax_amount, 0) >= e.functional_amount then perform app_private.fail('Tax amount must be less than the amount.'); end if;
  v_entry := app_private.post_journal_entry(e.id);
  update app_public.ledger_events x set status = 'confirmed', journal_entry_id = v_entry where x.id = e.id;
  return jsonb_build_object('success', true, 'error', null, 'eventId', e.id, 'journalEntryId', v_entry);
end $$;

create function app_public.reject_ledger_event(organization_id uuid, event_id uuid) returns jsonb
  language plpgsql volatile as
$$
declare e app_public.ledger_events;
begin
  perform app_private.assert_org_access(organization_id, false);
  perform set_config('app.audit_action', 'reject', true);
  select * into e from app_public.ledger_events x where x.id = event_id for update;
  if not found then perform app_private.fail('Ledger event not found.', 'AP404'); end if;
  if e.status = 'ignored' then perform app_private.fail('Event is already rejected.'); end if;
  -- A posted entry is voided: kept for audit, out of every report.
  if e.journal_entry_id is not null then
    update app_public.journal_lines l set voided = true where l.entry_id = e.journal_entry_id and not l.voided;
    update app_public.journal_entries j set voided_at = now() where j.id = e.journal_entry_id and j.voided_at is null;
  end if;
  update app_public.ledger_events x set status = 'ignored' where x.id = e.id;
  return jsonb_build_object('success', true, 'error', null, 'eventId', e.id);
end $$;

------------------------------------------------------------------------------------------------
-- Queries

create function app_public.get_ledger_event(organization_id uuid, event_id uuid) returns jsonb
  language plpgsql stable as
$$
declare r jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  r := app_private.ledger_event_json_by_id(event_id);
  if r is null then perform app_private.fail('Ledger event not found.', 'AP404'); end if;
  return r;
end $$;

create function app_public.list_ledger_events(organization_id uuid, status jsonb default null,
    has_document boolean default null, since_days integer default null, date_from text default null,
    date_to text default null, amount_min text default null, amount_max text default null,
    account_ids jsonb default null, category_ids jsonb default null, payment_account_ids jsonb default null,
    search text default null, "limit" integer default null, "offset" integer default null,
    sort_by text default null, sort_dir text default null) returns jsonb
  language plpgsql stable as
$$
declare
  statuses constant text[] := array['needs_review', 'confirmed', 'synced', 'reconciled', 'pending', 'ignored'];
  v_limit integer := app_private.page_size("limit");
  v_offset integer := app_private.page_offset("offset");
  v_dir text := app_private.sort_dir(sort_dir, 'desc');
  v_status text[];
  v_from date;
  v_to date;
  v_min numeric;
  v_max numeric;
  v_accounts uuid[];
  v_categories uuid[];
  v_payments uuid[];
  v_pattern text;
  v_order text;
  v_where text := '';
  v_total bigint;
  v_items jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  perform app_private.check_sort_by(sort_by, array['transactionDate', 'functionalAmount', 'merchantName', 'status', 'created']);
  v_order := case coalesce(sort_by, 'transactionDate')
    when 'transactionDate' then 'e.transaction_date' when 'functionalAmount' then 'e.functional_amount'
    when 'merchantName' then 'lower(e.merchant_name)' when 'status' then 'e.status' else 'e.created' end;
  if status is not null then
    select array_agg(s) into v_status from jsonb_array_elements_text(status) s;
    if not (coalesce(v_status, '{}') <@ statuses) then
      perform app_private.fail(format('status must be any of: %s.', array_to_string(statuses, ', ')));
    end if;
    v_where := v_where || ' and e.status = any ($2)';
  end if;
  if since_days is not null then
    if since_days < 0 then perform app_private.fail('sinceDays must not be negative.'); end if;
    v_from := current_date - since_days;
  end if;
  if date_from is not null then
    v_from := greatest(v_from, app_private.parse_date(date_from, 'dateFrom must be a date in YYYY-MM-DD format.'));
  end if;
  if date_to is not null then v_to := app_private.parse_date(date_to, 'dateTo must be a date in YYYY-MM-DD format.'); end if;
  if v_from is not null then v_where := v_where || ' and e.transaction_date >= $3'; end if;
  if v_to is not null then v_where := v_where || ' and e.transaction_date <= $4'; end if;
  if has_document is not null then v_where := v_where || ' and e.has_document = $5'; end if;
  if amount_min is not null then
    v_min := app_private.parse_amount(amount_min, 'amountMin must be a decimal string.', true);
    v_where := v_where || ' and e.functional_amount >= $6';
  end if;
  if amount_max is not null then
    v_max := app_private.parse_amount(amount_max, 'amountMax must be a decimal string.', true);
    v_where := v_where || ' and e.functional_amount <= $7';
  end if;
  if account_ids is not null then
    select coalesce(array_agg(x::uuid), '{}') into v_accounts from jsonb_array_elements_text(account_ids) x;
    v_where := v_where || ' and e.category_id = any ($8)';
  end if;
  if category_ids is not null then
    select coalesce(array_agg(x::uuid), '{}') into v_categories from jsonb_array_elements_text(category_ids) x;
    v_where := v_where || ' and e.category_id = any ($9)';
  end if;
  if payment_account_ids is not null then
    select coalesce(array_agg(x::uuid), '{}') into v_payments from jsonb_array_elements_text(payment_account_ids) x;
    v_where := v_where || ' and e.payment_account_id = any ($10)';
  end if;
  if search is not null and search <> '' then
    v_pattern := app_private.like_pattern(search);
    v_where := v_where || ' and (e.merchant_name ilike $11 or e.memo ilike $11)';
  end if;

  -- The total: from the per-day status counts when only status and dates filter, else counted.
  if has_document is null and v_min is null and v_max is null and v_accounts is null and v_categories is null
     and v_payments is null and v_pattern is null then
    select coalesce(sum(c.n), 0) into v_total from app_public.ledger_event_daily_counts c
     where c.organization_id = list_ledger_events.organization_id
       and (v_status is null or c.status = any (v_status))
       and (v_from is null or c.day >= v_from) and (v_to is null or c.day <= v_to);
  else
    execute 'select count(*) from app_public.ledger_events e where e.organization_id = $1' || v_where
      into v_total
      using organization_id, v_status, v_from, v_to, has_document, v_min, v_max, v_accounts, v_categories, v_payments, v_pattern;
  end if;

  -- The page, in one statement: ids in total order, then each event with its accounts and entry.
  execute format($q$
    with page as (
      select e.id, row_number() over () as ord from (
        select e.id from app_public.ledger_events e
         where e.organization_id = $1 %1$s
         order by %2$s %3$s, e.id %3$s
         limit $12 offset $13) e)
    select coalesce(jsonb_agg(app_private.ledger_event_json(e, c, p, t, j) order by page.ord), '[]'::jsonb)
      from page
      join app_public.ledger_events e on e.id = page.id
      left join app_public.accounts c on c.id = e.category_id
      left join app_public.accounts p on p.id = e.payment_account_id
      left join app_public.accounts t on t.id = e.tax_account_id
      left join app_public.journal_entries j on j.id = e.journal_entry_id
  $q$, v_where, v_order, v_dir)
    into v_items
    using organization_id, v_status, v_from, v_to, has_document, v_min, v_max, v_accounts, v_categories, v_payments,
          v_pattern, v_limit, v_offset;
  return jsonb_build_object('items', v_items, 'totalCount', v_total, 'pageSize', v_limit, 'offset', v_offset);
end $$;

create function app_public.ledger_event_history(organization_id uuid, event_id uuid) returns jsonb
  language plpgsql stable as
$$
declare r jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  select jsonb_agg(jsonb_build_object(
      'id', a.id, 'eventId', a.event_id, 'action', a.action,
      'actorType', case when a.actor_api_key_id is not null then 'api_key' when a.actor_user_id is not null then 'user' else 'system' end,
      'actorId', coalesce(a.actor_api_key_id, a.actor_user_id),
      'occurredAt', app_private.iso(a.occurred_at),
      'changes', (select coalesce(jsonb_agg(jsonb_build_object('field', k.key,
            'oldValue', case when jsonb_typeof(k.value -> 'old') in ('null') or k.value -> 'old' is null then null else k.value ->> 'old' end,
            'newValue', case when jsonb_typeof(k.value -> 'new') in ('null') or k.value -> 'new' is null then null else k.value ->> 'new' end)
            order by k.key), '[]'::jsonb)
          from jsonb_each(a.changes) k))
      order by a.id)
    into r
    from app_public.ledger_event_audit a
   where a.organization_id = ledger_event_history.organization_id and a.event_id = ledger_event_history.event_id;
  if r is null then perform app_private.fail('Ledger event not found.', 'AP404'); end if;
  return r;
end $$;

------------------------------------------------------------------------------------------------
-- Reports: read from the daily totals (decisions §6, §11).

-- Balances as of a day: debit-normal accounts (asset, expense) debits - credits, others credits - debits.
create or replace function app_private.account_balances(org uuid, as_of date default current_date)
  returns table (account_id uuid, balance numeric)
  language sql stable as
$$
  select t.account_id,
         case when a.classification in ('asset', 'expense') then sum(t.debit) - sum(t.credit)
              else sum(t.credit) - sum(t.debit) end
    from app_public.account_daily_totals t
    join app_public.accounts a on a.id = t.account_id
   where t.organization_id = org and t.day <= as_of
   group by t.account_id, a.classification
$$;
grant execute on function app_private.account_balances(uuid, date) to accounting_visitor;

create function app_public.account_balances(organization_id uuid) returns jsonb
  language plpgsql stable as
$$
begin
  perform app_private.assert_org_access(organization_id, false);
  return coalesce((
    select jsonb_agg(jsonb_build_object('accountId', a.id, 'accountName', a.name, 'accountType', a.account_type,
        'classification', a.classification, 'balance', app_private.money(coalesce(b.balance, 0)))
        order by lower(a.name), a.id)
      from app_public.accounts a
      left join app_private.account_balances(account_balances.organization_id) b on b.account_id = a.id
     where a.organization_id = account_balances.organization_id and a.active), '[]'::jsonb);
end $$;

-- A report period: null means the default; both ends inclusive.
create function app_private.report_period(start_date text, end_date text, default_start date) returns daterange
  language plpgsql stable as
$$
declare
  s date := default_start;
  e date := current_date;
begin
  if start_date is not null then s := app_private.parse_date(start_date, 'startDate must be a date in YYYY-MM-DD format.'); end if;
  if end_date is not null then e := app_private.parse_date(end_date, 'endDate must be a date in YYYY-MM-DD format.'); end if;
  if s > e then perform app_private.fail('startDate must not be after endDate.'); end if;
  return daterange(s, e, '[]');
end $$;

-- Revenue and expense totals per account over a period, from the daily totals.
create function app_private.period_totals(org uuid, period daterange)
  returns table (account_id uuid, account_name text, classification text, total numeric)
  language sql stable as
$$
  select a.id, a.name, a.classification,
         case when a.classification = 'revenue' then sum(t.credit) - sum(t.debit) else sum(t.debit) - sum(t.credit) end
    from app_public.account_daily_totals t
    join app_public.accounts a on a.id = t.account_id
   where t.organization_id = org and t.day >= lower(period) and t.day < upper(period)
     and a.classification in ('revenue', 'expense')
   group by a.id, a.name, a.classification
  having sum(t.debit) <> 0 or sum(t.credit) <> 0
$$;

create function app_public.dashboard_summary(organization_id uuid, start_date text default null, end_date text default null)
  returns jsonb
  language plpgsql stable as
$$
declare
  period daterange;
  revenue numeric;
  expenses numeric;
  unreviewed bigint;
begin
  perform app_private.assert_org_access(organization_id, false);
  period := app_private.report_period(start_date, end_date, date_trunc('month', current_date)::date);
  select coalesce(sum(total) filter (where classification = 'revenue'), 0),
         coalesce(sum(total) filter (where classification = 'expense'), 0)
    into revenue, expenses from app_private.period_totals(organization_id, period);
  select coalesce(sum(n), 0) into unreviewed from app_public.ledger_event_daily_counts c
   where c.organization_id = dashboard_summary.organization_id and c.status = 'needs_review';
  return jsonb_build_object('totalRevenue', app_private.money(revenue), 'totalExpenses', app_private.money(expenses),
    'netIncome', app_private.money(revenue - expenses),
    'receiptCount', app_private.receipt_count(organization_id, period),
    'unreviewedCount', unreviewed);
end $$;

-- Receipts that arrived in the period, rejected ones excluded: 0 until the receipts issue replaces this.
create function app_private.receipt_count(org uuid, period daterange) returns integer
  language sql stable as
$$ select 0 $$;

create function app_public.income_statement(organization_id uuid, start_date text default null, end_date text default null)
  returns jsonb
  language plpgsql stable as
$$
declare
  period daterange;
  r jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  period := app_private.report_period(start_date, end_date, date_trunc('year', current_date)::date);
  select jsonb_build_object(
      'incomeAccounts', coalesce(jsonb_agg(jsonb_build_object('accountId', account_id, 'accountName', account_name,
          'total', app_private.money(total)) order by lower(account_name), account_id) filter (where classification = 'revenue'), '[]'::jsonb),
      'expenseAccounts', coalesce(jsonb_agg(jsonb_build_object('accountId', account_id, 'accountName', account_name,
          'total', app_private.money(total)) order by lower(account_name), account_id) filter (where classification = 'expense'), '[]'::jsonb),
      'totalIncome', app_private.money(coalesce(sum(total) filter (where classification = 'revenue'), 0)),
      'totalExpenses', app_private.money(coalesce(sum(total) filter (where classification = 'expense'), 0)),
      'netIncome', app_private.money(coalesce(sum(total) filter (where classification = 'revenue'), 0)
                                     - coalesce(sum(total) filter (where classification = 'expense'), 0)))
    into r
    from app_private.period_totals(organization_id, period);
  return r;
end $$;

grant execute on function app_private.money(numeric), app_private.parse_amount(text, text, boolean),
  app_private.parse_date(text, text), app_private.direction_for(text), app_private.category_fits(text, text),
  app_private.event_receipts(uuid), app_private.check_category(uuid, text), app_private.check_payment_account(uuid),
  app_private.check_tax_account(uuid),
  app_private.ledger_event_json(app_public.ledger_events, app_public.accounts, app_public.accounts, app_public.accounts, app_public.journal_entries),
  app_private.ledger_event_json_by_id(uuid), app_private.post_journal_entry(uuid),
  app_private.report_period(text, text, date), app_private.period_totals(uuid, daterange),
  app_private.receipt_count(uuid, daterange)
  to accounting_visitor;
grant execute on function app_public.create_ledger_event(uuid, text, text, text, text, uuid, uuid),
  app_public.update_ledger_event(uuid, uuid, text, text, text, text),
  app_public.update_staged_entry(uuid, uuid, uuid, uuid, text, uuid, text),
  app_public.confirm_ledger_event(uuid, uuid), app_public.reject_ledger_event(uuid, uuid),
  app_public.get_ledger_event(uuid, uuid),
  app_public.list_ledger_events(uuid, jsonb, boolean, integer, text, text, text, text, jsonb, jsonb, jsonb, text, integer, integer, text, text),
  app_public.ledger_event_history(uuid, uuid), app_public.dashboard_summary(uuid, text, text),
  app_public.income_statement(uuid, text, text), app_public.account_balances(uuid)
  to accounting_visitor;

------------------------------------------------------------------------------------------------
-- A new category rule classifies the organization's uncategorized events in review that it is
-- the best rule for, and counts them.
create function app_private.tg_category_rules__classify() returns trigger
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
declare n integer;
begin
  perform set_config('app.audit_action', 'rule', true);
  update app_public.ledger_events e set category_id = new.account_id
    from app_public.accounts a
   where a.id = new.account_id and a.active
     and e.organization_id = new.organization_id and e.status = 'needs_review' and e.category_id is null
     and e.merchant_name ilike new.vendor_pattern
     and app_private.category_fits(e.event_type, a.classification)
     and e.payment_account_id is distinct from a.id
     and app_private.best_category_rule(new.organization_id, e.merchant_name) = new.id;
  get diagnostics n = row_count;
  if n > 0 then
    update app_public.category_rules r set match_count = r.match_count + n where r.id = new.id;
  end if;
  return null;
end $$;
create trigger _600_classify_needs_review after insert on app_public.category_rules
  for each row execute function app_private.tg_category_rules__classify();

------------------------------------------------------------------------------------------------
-- SQL reporting for analysts (decisions §11). Views run with the caller's rights
-- (security_invoker), so the tables' RLS scopes them to `app.organization_id`.

create schema reporting;
grant usage on schema reporting to reporting_reader, accounting_visitor;
grant usage on schema app_public to reporting_reader;
grant select on app_public.ledger_events, app_public.journal_entries, app_public.journal_lines,
  app_public.accounts, app_public.account_daily_totals to reporting_reader;

-- Every live line of the books: posted entries of confirmed, synced or reconciled events.
create view reporting.general_ledger with (security_invoker = true) as
  select l.id, l.organization_id, l.entry_id, e.id as event_id, l.txn_date,
         date_trunc('month', l.txn_date)::date as month,
         l.account_id, a.name as account_name, a.account_type, a.classification,
         l.debit, l.credit,
         case when a.classification in ('asset', 'expense') then l.debit - l.credit else l.credit - l.debit end as amount,
         e.merchant_name, e.memo, e.event_type, e.status as event_status
    from app_public.journal_lines l
    join app_public.journal_entries j on j.id = l.entry_id and j.voided_at is null
    join app_public.ledger_events e on e.id = j.event_id and e.status in ('confirmed', 'synced', 'reconciled')
    join app_public.accounts a on a.id = l.account_id
   where not l.voided;

-- Debits and credits per account over all time; the sums of both columns are equal.
create view reporting.trial_balance with (security_invoker = true) as
  select a.organization_id, a.id as account_id, a.name as account_name, a.account_type, a.classification,
         coalesce(sum(t.debit), 0)::numeric(20,2) as debit, coalesce(sum(t.credit), 0)::numeric(20,2) as credit,
         (case when a.classification in ('asset', 'expense') then coalesce(sum(t.debit), 0) - coalesce(sum(t.credit), 0)
               else coalesce(sum(t.credit), 0) - coalesce(sum(t.debit), 0) end)::numeric(20,2) as balance
    from app_public.accounts a
    left join app_public.account_daily_totals t on t.account_id = a.id
   group by a.organization_id, a.id, a.name, a.account_type, a.classification;

-- Revenue and expense per account and month (revenue credits - debits, expense debits - credits).
create view reporting.income_statement_monthly with (security_invoker = true) as
  select t.organization_id, date_trunc('month', t.day)::date as month, a.id as account_id, a.name as account_name,
         a.classification,
         (case when a.classification = 'revenue' then sum(t.credit) - sum(t.debit) else sum(t.debit) - sum(t.credit) end)::numeric(20,2) as total
    from app_public.account_daily_totals t
    join app_public.accounts a on a.id = t.account_id
   where a.classification in ('revenue', 'expense')
   group by t.organization_id, date_trunc('month', t.day), a.id, a.name, a.classification
  having sum(t.debit) <> 0 or sum(t.credit) <> 0;

grant select on reporting.general_ledger, reporting.trial_balance, reporting.income_statement_monthly to reporting_reader;
grant select on reporting.general_ledger to accounting_visitor;

-- GraphQL: the general ledger (only) as a read-only connection with aggregates (plugins/reporting.ts).
comment on view reporting.general_ledger is E'@name general_ledger_entry\nEvery live line of the books: posted entries of confirmed, synced or reconciled events.';
