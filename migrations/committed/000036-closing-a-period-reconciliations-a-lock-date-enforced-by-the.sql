--! Previous: sha1:c330607f3fb93380c701a1fa5a76aaea442f6ac0
--! Hash: sha1:23c970f01268d38cbf0c12409b7428e10e6483bd
--! Message: Closing a period: reconciliations, a lock date enforced by the journal's triggers, reversing entries and posting dates, balance sheet and trial balance

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

--! Included ledger/journal.sql
-- The double-entry journal: one live entry per event, balanced at commit, lines immutable once
-- posted (only voided), per-account daily totals kept by the posting transaction.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.account_daily_totals
drop policy if exists account_daily_totals_tenant on app_public.account_daily_totals;
create policy account_daily_totals_tenant on app_public.account_daily_totals
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select on app_public.account_daily_totals to accounting_visitor;
grant select on app_public.account_daily_totals to reporting_reader;

-- app_public.journal_entries
drop policy if exists journal_entries_tenant on app_public.journal_entries;
create policy journal_entries_tenant on app_public.journal_entries
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant insert, select on app_public.journal_entries to accounting_visitor;
grant select on app_public.journal_entries to reporting_reader;
grant update (voided_at) on app_public.journal_entries to accounting_visitor;

-- Checked once per new entry (with all its lines) and once per changed or removed line. Lines
-- can only be added to an entry posted in the same transaction (below), whose check covers them.
drop trigger if exists _900_balanced on app_public.journal_entries;
create constraint trigger _900_balanced after insert on app_public.journal_entries
  deferrable initially deferred for each row execute function app_private.tg_journal__balanced();

-- app_public.journal_lines
drop policy if exists journal_lines_tenant on app_public.journal_lines;
create policy journal_lines_tenant on app_public.journal_lines
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant insert, select on app_public.journal_lines to accounting_visitor;
grant select on app_public.journal_lines to reporting_reader;
grant update (voided) on app_public.journal_lines to accounting_visitor;

drop trigger if exists _100_immutable on app_public.journal_lines;
create trigger _100_immutable before update on app_public.journal_lines
  for each row execute function app_private.tg_journal_lines__immutable();

drop trigger if exists _100_same_transaction on app_public.journal_lines;
drop trigger if exists _200_same_transaction on app_public.journal_lines;
create trigger _200_same_transaction after insert on app_public.journal_lines
  referencing new table as new_rows for each statement execute function app_private.tg_journal_lines__same_transaction();

drop trigger if exists _500_totals_delete on app_public.journal_lines;
create trigger _500_totals_delete after delete on app_public.journal_lines
  referencing old table as old_rows for each statement execute function app_private.tg_journal_lines__totals();

drop trigger if exists _500_totals_insert on app_public.journal_lines;
create trigger _500_totals_insert after insert on app_public.journal_lines
  referencing new table as new_rows for each statement execute function app_private.tg_journal_lines__totals();

drop trigger if exists _500_totals_update on app_public.journal_lines;
create trigger _500_totals_update after update on app_public.journal_lines
  referencing old table as old_rows new table as new_rows for each statement execute function app_private.tg_journal_lines__totals();

drop trigger if exists _900_balanced on app_public.journal_lines;
create constraint trigger _900_balanced after update or delete on app_public.journal_lines
  deferrable initially deferred for each row execute function app_private.tg_journal__balanced();

------------------------------------------------------------------------------------------------

-- Posts the journal entries of locked, classified events (docs/api.md, Money and the ledger) and
-- marks them confirmed, set-based whatever the number of events (an import posts 100,000 at once).
-- An event may come with its entry's id already set (an import inserts its events confirmed, with
-- the id of the entry posted here, and so spares itself an update of every event); the deferred
-- foreign key and the balance check hold either way at commit. The entry is dated `posting_date`
-- when given, else on its event's transaction date (docs/api.md, Closing a period).
create or replace function app_private.post_journal_entries(event_ids uuid[], posting_date date default null)
  returns table (event_id uuid, entry_id uuid)
  language plpgsql volatile as
$$
begin
  update app_public.ledger_events x set status = 'confirmed', journal_entry_id = app_private.uuid_v7()
   where x.id = any (event_ids) and x.journal_entry_id is null;
  return query
  with entries as (
    insert into app_public.journal_entries (id, organization_id, event_id, txn_date, total_amount)
      select e.journal_entry_id, e.organization_id, e.id, coalesce(posting_date, e.transaction_date), e.functional_amount
        from app_public.ledger_events e where e.id = any (event_ids) order by e.journal_entry_id
      returning journal_entries.event_id, journal_entries.id, journal_entries.txn_date
  ),
  lines as (
    -- out: debit category (+ tax), credit payment; in: debit payment, credit category (+ tax).
    insert into app_public.journal_lines (organization_id, entry_id, account_id, txn_date, debit, credit)
      select e.organization_id, n.id, l.account_id, n.txn_date,
             case when l.debit_side then l.amount else 0 end, case when l.debit_side then 0 else l.amount end
        from entries n
        join app_public.ledger_events e on e.id = n.event_id
        cross join lateral (values
          (e.category_id, e.functional_amount - coalesce(e.tax_amount, 0), e.direction = 'out'),
          (e.tax_account_id, coalesce(e.tax_amount, 0), e.direction = 'out'),
          (e.payment_account_id, e.functional_amount, e.direction = 'in')) l (account_id, amount, debit_side)
       where l.amount > 0
       order by n.id, l.account_id
  )
  select n.event_id, n.id from entries n;
end $$;
grant execute on function app_private.post_journal_entries(event_ids uuid[], posting_date date) to accounting_visitor;

-- At commit: every entry that still exists has lines, and its debits equal its credits.
create or replace function app_private.tg_journal__balanced() returns trigger
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
  -- One query per entry (an import commits 100,000 of them): its lines' sums, or nothing when
  -- the entry itself is gone (deleted with its event).
  select coalesce(sum(l.debit), 0), coalesce(sum(l.credit), 0), count(l.id) into d, c, n
    from app_public.journal_entries j left join app_public.journal_lines l on l.entry_id = j.id
   where j.id = entry
   group by j.id;
  if found and (n < 2 or d <> c) then
    raise exception 'Journal entry % does not balance (debits %, credits %, % lines).', entry, d, c, n
      using errcode = 'check_violation';
  end if;
  return null;
end $$;
grant execute on function app_private.tg_journal__balanced() to accounting_visitor;

-- Lines are immutable; the only change is voiding (once).
create or replace function app_private.tg_journal_lines__immutable() returns trigger
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
grant execute on function app_private.tg_journal_lines__immutable() to accounting_visitor;

-- Lines join only an entry posted by the same transaction, whose balance check covers them.
-- Security invoker: an entry the caller cannot see (another organization's) is left to RLS, which
-- refuses the line with a permission error; a missing entry is left to the foreign key.
create or replace function app_private.tg_journal_lines__same_transaction() returns trigger
  language plpgsql as
$$
begin
  -- created defaults to now(), the transaction's start: equal only within the posting transaction.
  if exists (select 1 from new_rows l join app_public.journal_entries j on j.id = l.entry_id where j.created <> now()) then
    raise exception 'Lines can only be added to a journal entry in the transaction that posts it.'
      using errcode = 'check_violation';
  end if;
  return null;
end $$;
grant execute on function app_private.tg_journal_lines__same_transaction() to accounting_visitor;

create or replace function app_private.tg_journal_lines__totals() returns trigger
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
        from old_rows r where not voided
         -- Rows of an organization being deleted go with it.
         and exists (select 1 from app_public.organizations o where o.id = r.organization_id)
       group by 1, 2, 3 order by 1, 2, 3
      on conflict (organization_id, account_id, day) do update
        set debit = t.debit + excluded.debit, credit = t.credit + excluded.credit;
  end if;
  return null;
end $$;
grant execute on function app_private.tg_journal_lines__totals() to accounting_visitor;
--! EndIncluded ledger/journal.sql
--! Included ledger/lock-date.sql
-- The lock date (docs/api.md, Closing a period): no journal line dated on or before an
-- organization's lock date is added, voided or removed, whoever writes it (a request, the CLI's
-- imports, the worker, an operator's job), because the journal's own triggers refuse it.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.


-- Statement-level: an import of 100,000 lines is one check. The organizations' rows are locked
-- FOR SHARE, so that a change of the lock date (an update of that row) waits for the postings in
-- flight and a posting waits for a change in flight, then reads the new date: a posting racing a
-- lock either lands before it or is refused. The rows of an organization being deleted (not
-- visible any more) go with it.
create or replace function app_private.tg_journal_lines__locked() returns trigger
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
declare
  v_lock date;
begin
  perform 1 from app_public.organizations o where o.id in (select distinct l.organization_id from changed_rows l)
   order by o.id for share;
  select o.lock_date into v_lock
    from app_public.organizations o
    join (select l.organization_id, min(l.txn_date) as first_day from changed_rows l group by 1) l on l.organization_id = o.id
   where l.first_day <= o.lock_date
   limit 1;
  if v_lock is not null then
    perform app_private.fail(format('The books are locked through %s.', to_char(v_lock, 'YYYY-MM-DD')));
  end if;
  return null;
end $$;
grant execute on function app_private.tg_journal_lines__locked() to accounting_visitor;

-- The message a write into the locked period gets, before it writes anything (the trigger above
-- is what enforces it).
create or replace function app_private.check_lock_date(org uuid, day date) returns void
  language plpgsql stable as
$$
declare v_lock date;
begin
  select o.lock_date into v_lock from app_public.organizations o where o.id = org;
  if day <= v_lock then
    perform app_private.fail(format('The books are locked through %s.', to_char(v_lock, 'YYYY-MM-DD')));
  end if;
end $$;
grant execute on function app_private.check_lock_date(org uuid, day date) to accounting_visitor;

------------------------------------------------------------------------------------------------

-- Triggers, after the functions they call.

-- app_public.journal_lines
drop trigger if exists _300_locked_insert on app_public.journal_lines;
create trigger _300_locked_insert after insert on app_public.journal_lines
  referencing new table as changed_rows for each statement execute function app_private.tg_journal_lines__locked();

drop trigger if exists _300_locked_update on app_public.journal_lines;
create trigger _300_locked_update after update on app_public.journal_lines
  referencing old table as changed_rows for each statement execute function app_private.tg_journal_lines__locked();

drop trigger if exists _300_locked_delete on app_public.journal_lines;
create trigger _300_locked_delete after delete on app_public.journal_lines
  referencing old table as changed_rows for each statement execute function app_private.tg_journal_lines__locked();
--! EndIncluded ledger/lock-date.sql
--! Included ledger/events.sql
-- Ledger events: creation, edits, the staged entry, lists and lookups, and the daily counts the
-- dashboard reads (contract: LedgerEvent; docs/api.md, Errors, Paging and Money and the ledger).
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.ledger_event_daily_counts
drop policy if exists ledger_event_daily_counts_tenant on app_public.ledger_event_daily_counts;
create policy ledger_event_daily_counts_tenant on app_public.ledger_event_daily_counts
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select on app_public.ledger_event_daily_counts to accounting_visitor;

-- app_public.ledger_events
drop policy if exists ledger_events_tenant on app_public.ledger_events;
create policy ledger_events_tenant on app_public.ledger_events
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant insert, select on app_public.ledger_events to accounting_visitor;
grant select on app_public.ledger_events to reporting_reader;
grant update (category_id, direction, event_type, functional_amount, has_document, journal_entry_id, memo, merchant_name, payment_account_id, reference, reversal_entry_id, status, tax_account_id, tax_amount, tax_code, transaction_date, updated) on app_public.ledger_events to accounting_visitor;

drop trigger if exists _100_touch_updated on app_public.ledger_events;
create trigger _100_touch_updated before update on app_public.ledger_events
  for each row execute function app_private.tg__touch_updated();

drop trigger if exists _500_counts_delete on app_public.ledger_events;
create trigger _500_counts_delete after delete on app_public.ledger_events
  referencing old table as old_rows for each statement execute function app_private.tg_ledger_events__counts();

drop trigger if exists _500_counts_insert on app_public.ledger_events;
create trigger _500_counts_insert after insert on app_public.ledger_events
  referencing new table as new_rows for each statement execute function app_private.tg_ledger_events__counts();

drop trigger if exists _500_counts_update on app_public.ledger_events;
create trigger _500_counts_update after update on app_public.ledger_events
  referencing old table as old_rows new table as new_rows for each statement execute function app_private.tg_ledger_events__counts();

drop trigger if exists _800_audit on app_public.ledger_events;
drop trigger if exists _800_audit_insert on app_public.ledger_events;
create trigger _800_audit_insert after insert on app_public.ledger_events
  referencing new table as new_rows for each statement execute function app_private.tg_ledger_events__audit();

drop trigger if exists _800_audit_update on app_public.ledger_events;
create trigger _800_audit_update after update on app_public.ledger_events
  referencing old table as old_rows new table as new_rows for each statement execute function app_private.tg_ledger_events__audit();

drop trigger if exists _800_audit_delete on app_public.ledger_events;
create trigger _800_audit_delete after delete on app_public.ledger_events
  referencing old table as old_rows for each statement execute function app_private.tg_ledger_events__audit();

------------------------------------------------------------------------------------------------

-- The classifications a category account may have for an event type.
create or replace function app_private.category_fits(event_type text, classification text) returns boolean
  language sql immutable parallel safe as
$$ select case event_type
    when 'expense' then classification in ('expense', 'asset')
    when 'income' then classification = 'revenue'
    when 'refund' then classification in ('revenue', 'expense')
    when 'transfer' then classification in ('asset', 'liability', 'equity')
    else false end $$;
grant execute on function app_private.category_fits(event_type text, classification text) to accounting_visitor;

create or replace function app_private.check_category(account uuid, event_type text) returns void
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
grant execute on function app_private.check_category(account uuid, event_type text) to accounting_visitor;

create or replace function app_private.check_payment_account(account uuid) returns void
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
grant execute on function app_private.check_payment_account(account uuid) to accounting_visitor;

create or replace function app_private.check_tax_account(account uuid) returns void
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
grant execute on function app_private.check_tax_account(account uuid) to accounting_visitor;

-- Which way money moves relative to the payment account: income in, an expense or a transfer out
-- (docs/api.md, Money and the ledger).
create or replace function app_private.direction_for(event_type text) returns text
  language sql immutable parallel safe as
$$ select case event_type when 'income' then 'in' else 'out' end $$;
grant execute on function app_private.direction_for(event_type text) to accounting_visitor;

-- Receipts linked to an event, oldest first (contract: receipts `{id, filename, objectKey, uploadedAt}`).
create or replace function app_private.event_receipts(event_id uuid) returns jsonb
  language sql stable as
$$ select coalesce(jsonb_agg(jsonb_build_object('id', r.id, 'filename', r.filename, 'objectKey', r.object_key,
     'uploadedAt', app_private.iso(r.uploaded_at), 'contentType', r.content_type, 'status', r.status)
     order by r.uploaded_at, r.id), '[]'::jsonb)
     from app_public.receipts r where r.event_id = event_receipts.event_id $$;
grant execute on function app_private.event_receipts(event_id uuid) to accounting_visitor;

create or replace function app_private.ledger_event_json(e app_public.ledger_events, c app_public.accounts,
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
    'reversalEntry', (select jsonb_build_object('id', r.id, 'txnDate', to_char(r.txn_date, 'YYYY-MM-DD'),
        'totalAmount', app_private.money(r.total_amount), 'voidedAt', app_private.iso(r.voided_at))
        from app_public.journal_entries r where r.id = e.reversal_entry_id),
    'cleared', exists (select 1 from app_public.reconciliation_clearings k where k.event_id = e.id),
    'receipts', app_private.event_receipts(e.id),
    'source', e.source, 'importBatchId', e.import_batch_id, 'reference', e.reference,
    'created', app_private.iso(e.created), 'updated', app_private.iso(e.updated))
$$;
grant execute on function app_private.ledger_event_json(e app_public.ledger_events, c app_public.accounts, p app_public.accounts, t app_public.accounts, j app_public.journal_entries) to accounting_visitor;

-- One event, or null when it is not visible.
create or replace function app_private.ledger_event_json_by_id(event_id uuid) returns jsonb
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
grant execute on function app_private.ledger_event_json_by_id(event_id uuid) to accounting_visitor;

create or replace function app_private.tg_ledger_events__counts() returns trigger
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
      select organization_id, transaction_date, status, -count(*) from old_rows r
       -- Rows of an organization being deleted go with it.
       where exists (select 1 from app_public.organizations o where o.id = r.organization_id)
       group by 1, 2, 3 order by 1, 2, 3
      on conflict (organization_id, day, status) do update set n = t.n + excluded.n;
  end if;
  return null;
end $$;
grant execute on function app_private.tg_ledger_events__counts() to accounting_visitor;

create or replace function app_public.create_ledger_event(organization_id uuid, merchant_name text, amount text,
    transaction_date text, event_type text default 'expense', category_id uuid default null,
    payment_account_id uuid default null) returns jsonb
  language plpgsql volatile as
$$
declare
  v_merchant text := app_private.clean_text(merchant_name);
  v_amount numeric;
  v_date date;
  v_type text := coalesce(event_type, 'expense');
  v_category uuid := category_id;
  v_rule uuid;
  v_id uuid;
begin
  perform app_private.assert_org_access(organization_id, false);
  perform set_config('app.audit_action', 'create', true);
  if v_merchant is null or length(v_merchant) = 0 then perform app_private.fail('Merchant name is required.'); end if;
  if length(v_merchant) > 500 then perform app_private.fail('Merchant name must be at most 500 characters.'); end if;
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
     where r.id = app_private.best_category_rule(create_ledger_event.organization_id, v_merchant)
       and a.active and app_private.category_fits(v_type, a.classification)
       and a.id is distinct from payment_account_id;
    if v_rule is not null then
      update app_public.category_rules set match_count = match_count + 1 where id = v_rule;
    end if;
  end if;
  insert into app_public.ledger_events (organization_id, event_type, direction, merchant_name, functional_amount,
      functional_currency, transaction_date, category_id, payment_account_id)
    select create_ledger_event.organization_id, v_type, app_private.direction_for(v_type), v_merchant, v_amount,
      o.functional_currency, v_date, v_category, payment_account_id
      from app_public.organizations o where o.id = create_ledger_event.organization_id
    returning id into v_id;
  perform app_private.record_webhook_event(organization_id, 'ledger_event.created', v_id);
  return jsonb_build_object('success', true, 'error', null, 'eventId', v_id);
end $$;
grant execute on function app_public.create_ledger_event(organization_id uuid, merchant_name text, amount text, transaction_date text, event_type text, category_id uuid, payment_account_id uuid) to accounting_visitor;

create or replace function app_public.get_ledger_event(organization_id uuid, event_id uuid) returns jsonb
  language plpgsql stable as
$$
declare r jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  r := app_private.ledger_event_json_by_id(event_id);
  if r is null then perform app_private.fail('Ledger event not found.', 'AP404'); end if;
  return r;
end $$;
grant execute on function app_public.get_ledger_event(organization_id uuid, event_id uuid) to accounting_visitor;

-- One event's memo against a search pattern, read from the table by id. A function, not a
-- subquery: the planner would hash a subquery over every memo of the table instead of reading
-- the few events of the page's range that have one.
create or replace function app_private.memo_matches(event_id uuid, pattern text) returns boolean
  language plpgsql stable as
$$
begin
  return exists (select 1 from app_public.ledger_events m where m.id = event_id and m.memo ilike pattern);
end $$;
grant execute on function app_private.memo_matches(event_id uuid, pattern text) to accounting_visitor;

create or replace function app_public.list_ledger_events(organization_id uuid, status jsonb default null,
    has_document boolean default null, since_days integer default null, date_from text default null,
    date_to text default null, amount_min text default null, amount_max text default null,
    account_ids jsonb default null, category_ids jsonb default null, payment_account_ids jsonb default null,
    search text default null, "limit" integer default null, "offset" integer default null,
    sort_by text default null, sort_dir text default null, reconciliation_id uuid default null) returns jsonb
  language plpgsql stable as
$$
declare
  statuses constant text[] := array['needs_review', 'confirmed', 'synced', 'reconciled', 'pending', 'ignored'];
  max_since_days constant integer := 36500;
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
  v_reconciliation app_public.reconciliations;
begin
  perform app_private.assert_org_access(organization_id, false);
  perform app_private.check_sort_by(sort_by, array['transactionDate', 'functionalAmount', 'merchantName', 'status', 'created']);
  v_order := case coalesce(sort_by, 'transactionDate')
    when 'transactionDate' then 'e.transaction_date' when 'functionalAmount' then 'e.functional_amount'
    when 'merchantName' then 'lower(e.merchant_name)' when 'status' then 'e.status' else 'e.created' end;
  if status is not null then
    if jsonb_typeof(status) <> 'array' then
      perform app_private.fail(format('status must be any of: %s.', array_to_string(statuses, ', ')));
    end if;
    -- An empty list matches nothing, in the page and in the total alike.
    select coalesce(array_agg(s), '{}') into v_status from jsonb_array_elements_text(status) s;
    if not (coalesce(v_status, '{}') <@ statuses) then
      perform app_private.fail(format('status must be any of: %s.', array_to_string(statuses, ', ')));
    end if;
    v_where := v_where || ' and e.status = any ($2)';
  end if;
  if since_days is not null then
    if since_days < 0 then perform app_private.fail('sinceDays must not be negative.'); end if;
    if since_days > max_since_days then
      perform app_private.fail(format('sinceDays must be between 0 and %s.', max_since_days));
    end if;
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
    v_accounts := app_private.uuid_list(account_ids, 'accountIds');
    v_where := v_where || ' and e.category_id = any ($8)';
  end if;
  if category_ids is not null then
    v_categories := app_private.uuid_list(category_ids, 'categoryIds');
    v_where := v_where || ' and e.category_id = any ($9)';
  end if;
  if payment_account_ids is not null then
    v_payments := app_private.uuid_list(payment_account_ids, 'paymentAccountIds');
    v_where := v_where || ' and e.payment_account_id = any ($10)';
  end if;
  if search is not null and search <> '' then
    v_pattern := app_private.like_pattern(search);
    -- Answered from the date index (merchant_name and has_memo are in it); only events that have
    -- a memo are read from the table (a memo of up to 5,000 characters cannot ride in an index).
    v_where := v_where || ' and (e.merchant_name ilike $11 or (e.has_memo and app_private.memo_matches(e.id, $11)))';
  end if;

  if reconciliation_id is not null then
    select * into v_reconciliation from app_public.reconciliations r where r.id = list_ledger_events.reconciliation_id;
    if not found then perform app_private.fail('Reconciliation not found.', 'AP404'); end if;
    -- An open one: the account's confirmed events up to the statement date, and those it ticked;
    -- a completed one: those it cleared (docs/api.md, Closing a period).
    v_where := v_where || case when v_reconciliation.status = 'open' then
      ' and e.payment_account_id = ($14).payment_account_id and e.transaction_date <= ($14).statement_date
        and (e.status in (''confirmed'', ''synced'')
             or exists (select 1 from app_public.reconciliation_clearings k where k.event_id = e.id and k.reconciliation_id = ($14).id))'
      else ' and exists (select 1 from app_public.reconciliation_clearings k where k.event_id = e.id and k.reconciliation_id = ($14).id)' end;
  end if;

  -- The total: from the per-day status counts when only status and dates filter, else counted.
  if reconciliation_id is null and has_document is null and v_min is null and v_max is null and v_accounts is null and v_categories is null
     and v_payments is null and v_pattern is null then
    select coalesce(sum(c.n), 0) into v_total from app_public.ledger_event_daily_counts c
     where c.organization_id = list_ledger_events.organization_id
       and (v_status is null or c.status = any (v_status))
       and (v_from is null or c.day >= v_from) and (v_to is null or c.day <= v_to);
  else
    execute 'select count(*) from app_public.ledger_events e where e.organization_id = $1' || v_where
      into v_total
      using organization_id, v_status, v_from, v_to, has_document, v_min, v_max, v_accounts, v_categories, v_payments, v_pattern,
            null::integer, null::integer, v_reconciliation;
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
          v_pattern, v_limit, v_offset, v_reconciliation;
  return jsonb_build_object('items', v_items, 'totalCount', v_total, 'pageSize', v_limit, 'offset', v_offset);
end $$;
grant execute on function app_public.list_ledger_events(organization_id uuid, status jsonb, has_document boolean, since_days integer, date_from text, date_to text, amount_min text, amount_max text, account_ids jsonb, category_ids jsonb, payment_account_ids jsonb, search text, "limit" integer, "offset" integer, sort_by text, sort_dir text, reconciliation_id uuid) to accounting_visitor;

create or replace function app_public.update_ledger_event(organization_id uuid, event_id uuid, transaction_date text default null,
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
  v_memo text := normalize(memo, NFC);
begin
  perform app_private.assert_org_access(organization_id, false);
  perform set_config('app.audit_action', 'update', true);
  select * into e from app_public.ledger_events x where x.id = event_id for update;
  if not found then perform app_private.fail('Ledger event not found.', 'AP404'); end if;
  if e.status = 'reconciled' then perform app_private.fail('Event is reconciled.'); end if;
  if e.status not in ('needs_review', 'pending') then
    perform app_private.fail('Only events in needs_review or pending can be updated.');
  end if;
  v_type := coalesce(event_type, e.event_type);
  if event_type is not null and event_type not in ('expense', 'income', 'transfer') then
    perform app_private.fail('Event type must be one of: expense, income, transfer.');
  end if;
  v_amount := case when amount is null then e.functional_amount
                   else app_private.parse_amount(amount, 'Amount must be a positive decimal string.') end;
  if v_memo is not null and length(v_memo) > 5000 then perform app_private.fail('Memo must be at most 5000 characters.'); end if;
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
      memo = coalesce(v_memo, x.memo),
      functional_amount = v_amount,
      event_type = v_type,
      -- Only a change of type recomputes the direction: an imported event's comes from the sign.
      direction = case when update_ledger_event.event_type is null then x.direction else app_private.direction_for(v_type) end,
      category_id = v_category,
      tax_amount = v_tax
    where x.id = e.id;
  return jsonb_build_object('success', true, 'error', null, 'event', app_private.ledger_event_json_by_id(e.id));
end $$;
grant execute on function app_public.update_ledger_event(organization_id uuid, event_id uuid, transaction_date text, memo text, amount text, event_type text) to accounting_visitor;

-- Classify: category, payment account and tax (docs/api.md, Money and the ledger; a tax code
-- without an amount takes the code's rate). Absent arguments keep their value.
create or replace function app_public.update_staged_entry(organization_id uuid, event_id uuid, category_id uuid default null,
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
  if e.status = 'reconciled' then perform app_private.fail('Event is reconciled.'); end if;
  if e.status in ('confirmed', 'synced') then perform app_private.fail('Event is already confirmed.'); end if;
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
grant execute on function app_public.update_staged_entry(organization_id uuid, event_id uuid, category_id uuid, payment_id uuid, tax_amount text, tax_account_id uuid, tax_code text) to accounting_visitor;
--! EndIncluded ledger/events.sql
--! Included ledger/transitions.sql
-- The transitions of an event that post, void or reverse its journal entry (contract: States and
-- transitions; docs/api.md, Closing a period).
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Posted on the event's transaction date, or on `posting_date` (an event dated in a locked period is
-- posted into the open one).
create or replace function app_public.confirm_ledger_event(organization_id uuid, event_id uuid, posting_date text default null)
  returns jsonb
  language plpgsql volatile as
$$
declare
  e app_public.ledger_events;
  v_entry uuid;
  v_date date;
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
  v_date := case when posting_date is null then e.transaction_date
                 else app_private.parse_date(posting_date, 'Posting date must be a date in YYYY-MM-DD format.') end;
  perform app_private.check_lock_date(organization_id, v_date);
  select p.entry_id into v_entry from app_private.post_journal_entries(array[e.id], v_date) p;
  perform app_private.record_webhook_event(organization_id, 'ledger_event.confirmed', e.id);
  return jsonb_build_object('success', true, 'error', null, 'eventId', e.id, 'journalEntryId', v_entry);
end $$;
grant execute on function app_public.confirm_ledger_event(organization_id uuid, event_id uuid, posting_date text) to accounting_visitor;

create or replace function app_public.reject_ledger_event(organization_id uuid, event_id uuid) returns jsonb
  language plpgsql volatile as
$$
declare e app_public.ledger_events;
begin
  perform app_private.assert_org_access(organization_id, false);
  perform set_config('app.audit_action', 'reject', true);
  select * into e from app_public.ledger_events x where x.id = event_id for update;
  if not found then perform app_private.fail('Ledger event not found.', 'AP404'); end if;
  if e.reversal_entry_id is not null then perform app_private.fail('Event is already reversed.'); end if;
  if e.status = 'ignored' then perform app_private.fail('Event is already rejected.'); end if;
  if e.status = 'reconciled' then perform app_private.fail('Event is reconciled.'); end if;
  -- A posted entry is voided: kept for audit, out of every report.
  if e.journal_entry_id is not null then
    perform app_private.check_lock_date(organization_id, (select j.txn_date from app_public.journal_entries j where j.id = e.journal_entry_id));
    update app_public.journal_lines l set voided = true where l.entry_id = e.journal_entry_id and not l.voided;
    update app_public.journal_entries j set voided_at = now() where j.id = e.journal_entry_id and j.voided_at is null;
  end if;
  perform app_private.unclear_event(e.id);
  update app_public.ledger_events x set status = 'ignored' where x.id = e.id;
  perform app_private.record_webhook_event(organization_id, 'ledger_event.rejected', e.id);
  return jsonb_build_object('success', true, 'error', null, 'eventId', e.id);
end $$;
grant execute on function app_public.reject_ledger_event(organization_id uuid, event_id uuid) to accounting_visitor;

-- A correction that leaves the entry's period as it was: a reversing entry (every line of the
-- posted entry, debit and credit swapped) dated `posting_date` (today when not given), kept beside
-- the original; the event is ignored from then on (docs/api.md, Closing a period).
create or replace function app_public.reverse_ledger_event(organization_id uuid, event_id uuid, posting_date text default null)
  returns jsonb
  language plpgsql volatile as
$$
declare
  e app_public.ledger_events;
  j app_public.journal_entries;
  v_date date;
  v_entry uuid := app_private.uuid_v7();
begin
  perform app_private.assert_org_access(organization_id, false);
  perform set_config('app.audit_action', 'reverse', true);
  select * into e from app_public.ledger_events x where x.id = event_id for update;
  if not found then perform app_private.fail('Ledger event not found.', 'AP404'); end if;
  if e.reversal_entry_id is not null then perform app_private.fail('Event is already reversed.'); end if;
  if e.status not in ('confirmed', 'synced', 'reconciled') then
    perform app_private.fail('Only confirmed events can be reversed.');
  end if;
  select * into j from app_public.journal_entries x where x.id = e.journal_entry_id;
  v_date := case when posting_date is null then current_date
                 else app_private.parse_date(posting_date, 'Posting date must be a date in YYYY-MM-DD format.') end;
  if v_date < j.txn_date then
    perform app_private.fail(format('Posting date must not be before the entry it reverses (%s).', to_char(j.txn_date, 'YYYY-MM-DD')));
  end if;
  perform app_private.check_lock_date(organization_id, v_date);
  insert into app_public.journal_entries (id, organization_id, event_id, txn_date, total_amount, reverses_entry_id)
    values (v_entry, e.organization_id, e.id, v_date, j.total_amount, j.id);
  insert into app_public.journal_lines (organization_id, entry_id, account_id, txn_date, debit, credit)
    select l.organization_id, v_entry, l.account_id, v_date, l.credit, l.debit
      from app_public.journal_lines l where l.entry_id = j.id and not l.voided order by l.id;
  perform app_private.unclear_event(e.id);
  update app_public.ledger_events x set status = 'ignored', reversal_entry_id = v_entry where x.id = e.id;
  perform app_private.record_webhook_event(organization_id, 'ledger_event.reversed', e.id);
  return jsonb_build_object('success', true, 'error', null, 'eventId', e.id, 'journalEntryId', v_entry);
end $$;
grant execute on function app_public.reverse_ledger_event(organization_id uuid, event_id uuid, posting_date text) to accounting_visitor;
--! EndIncluded ledger/transitions.sql
--! Included ledger/audit.sql
-- The audit trail: every change and deletion of an event, append-only, and its history.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.ledger_event_audit
drop policy if exists ledger_event_audit_append on app_public.ledger_event_audit;
create policy ledger_event_audit_append on app_public.ledger_event_audit for insert
  with check (organization_id = app_public.current_organization_id());

drop policy if exists ledger_event_audit_read on app_public.ledger_event_audit;
create policy ledger_event_audit_read on app_public.ledger_event_audit for select
  using (organization_id = app_public.current_organization_id());
grant select on app_public.ledger_event_audit to accounting_visitor;

drop trigger if exists _100_append_only on app_public.ledger_event_audit;
create trigger _100_append_only before update or delete on app_public.ledger_event_audit
  for each row execute function app_private.tg_ledger_event_audit__append_only();

drop trigger if exists _100_no_truncate on app_public.ledger_event_audit;
create trigger _100_no_truncate before truncate on app_public.ledger_event_audit
  for each statement execute function app_private.tg_ledger_event_audit__append_only();

------------------------------------------------------------------------------------------------

create or replace function app_private.tg_ledger_event_audit__append_only() returns trigger
  language plpgsql as
$$ begin raise exception 'The audit trail is append-only.' using errcode = 'AP403'; end $$;
grant execute on function app_private.tg_ledger_event_audit__append_only() to accounting_visitor;

-- Every insert, change and deletion of events: who, when, what (an insert: {field: value} of each
-- field with a value; a change or deletion: {field: {old, new}} of each field that differs, nulls
-- left out). Statement-level, from the transition tables: an import
-- of 100,000 events writes its trail in one statement, not 100,000 trigger calls. The fields are
-- listed one by one: three times cheaper than diffing whole rows as JSON, which an import of
-- 5,000 rows notices. test/audit-trail.test.ts checks that the list names every column.
create or replace function app_private.tg_ledger_events__audit() returns trigger
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
declare
  -- Each changed row as old row o and new row n; the missing one is an empty row of the same
  -- type, so that the fields are plain columns (reading them from a row value costs double).
  v_rows text := case tg_op
    -- An imported event's creation is recorded once per import run, by its import batch (who,
    -- when, which file): an import of 100,000 events writes one row, not 100,000. Nothing is lost:
    -- its later changes and its deletion record their old values here, as every event's do.
    when 'INSERT' then 'new_rows n left join (select * from new_rows limit 0) o on true where n.import_batch_id is null'
    when 'UPDATE' then 'new_rows n join old_rows o on o.id = n.id'
    -- An organization being deleted takes its events with it: nothing to record for it.
    else 'old_rows o left join (select * from old_rows limit 0) n on true
           where exists (select 1 from app_public.organizations g where g.id = o.organization_id)' end;
  -- The changes: an insert records the new row's fields that have a value ({field: value}, the
  -- cheapest form, for imports of 100,000 events); a change or a deletion each differing field.
  v_changes text := case tg_op
    when 'INSERT' then $c$jsonb_strip_nulls(to_jsonb(n)) - array['id', 'organization_id', 'created', 'updated', 'has_memo']$c$
    else format($c$jsonb_strip_nulls(jsonb_build_object(
%s))$c$, $f$
      'event_type', case when o.event_type is distinct from n.event_type then jsonb_build_object('old', o.event_type, 'new', n.event_type) end,
      'direction', case when o.direction is distinct from n.direction then jsonb_build_object('old', o.direction, 'new', n.direction) end,
      'merchant_name', case when o.merchant_name is distinct from n.merchant_name then jsonb_build_object('old', o.merchant_name, 'new', n.merchant_name) end,
      'functional_amount', case when o.functional_amount is distinct from n.functional_amount then jsonb_build_object('old', o.functional_amount, 'new', n.functional_amount) end,
      'functional_currency', case when o.functional_currency is distinct from n.functional_currency then jsonb_build_object('old', o.functional_currency, 'new', n.functional_currency) end,
      'transaction_date', case when o.transaction_date is distinct from n.transaction_date then jsonb_build_object('old', o.transaction_date, 'new', n.transaction_date) end,
      'status', case when o.status is distinct from n.status then jsonb_build_object('old', o.status, 'new', n.status) end,
      'memo', case when o.memo is distinct from n.memo then jsonb_build_object('old', o.memo, 'new', n.memo) end,
      'has_document', case when o.has_document is distinct from n.has_document then jsonb_build_object('old', o.has_document, 'new', n.has_document) end,
      'category_id', case when o.category_id is distinct from n.category_id then jsonb_build_object('old', o.category_id, 'new', n.category_id) end,
      'payment_account_id', case when o.payment_account_id is distinct from n.payment_account_id then jsonb_build_object('old', o.payment_account_id, 'new', n.payment_account_id) end,
      'tax_amount', case when o.tax_amount is distinct from n.tax_amount then jsonb_build_object('old', o.tax_amount, 'new', n.tax_amount) end,
      'tax_account_id', case when o.tax_account_id is distinct from n.tax_account_id then jsonb_build_object('old', o.tax_account_id, 'new', n.tax_account_id) end,
      'tax_code', case when o.tax_code is distinct from n.tax_code then jsonb_build_object('old', o.tax_code, 'new', n.tax_code) end,
      'journal_entry_id', case when o.journal_entry_id is distinct from n.journal_entry_id then jsonb_build_object('old', o.journal_entry_id, 'new', n.journal_entry_id) end,
      'reversal_entry_id', case when o.reversal_entry_id is distinct from n.reversal_entry_id then jsonb_build_object('old', o.reversal_entry_id, 'new', n.reversal_entry_id) end,
      'reference', case when o.reference is distinct from n.reference then jsonb_build_object('old', o.reference, 'new', n.reference) end,
      'backfill_id', case when o.backfill_id is distinct from n.backfill_id then jsonb_build_object('old', o.backfill_id, 'new', n.backfill_id) end,
      'source', case when o.source is distinct from n.source then jsonb_build_object('old', o.source, 'new', n.source) end,
      'import_batch_id', case when o.import_batch_id is distinct from n.import_batch_id then jsonb_build_object('old', o.import_batch_id, 'new', n.import_batch_id) end,
      'source_id', case when o.source_id is distinct from n.source_id then jsonb_build_object('old', o.source_id, 'new', n.source_id) end
$f$) end;
begin
  -- Dynamic SQL sees the transition tables too (they are registered for the whole function).
  execute format($q$
    insert into app_public.ledger_event_audit (organization_id, event_id, action, actor_api_key_id, actor_user_id, changes)
      select d.organization_id, d.id, $1, $2, $3, d.changes
        from (select coalesce(n.organization_id, o.organization_id) organization_id, coalesce(n.id, o.id) id, %s changes
                from %s) d
       where d.changes <> '{}'::jsonb
       order by d.id
  $q$, v_changes, v_rows)
  using coalesce(nullif(current_setting('app.audit_action', true), ''), lower(tg_op)),
        app_public.current_api_key_id(), app_public.current_user_id();
  return null;
end $$;
grant execute on function app_private.tg_ledger_events__audit() to accounting_visitor;

create or replace function app_public.ledger_event_history(organization_id uuid, event_id uuid) returns jsonb
  language plpgsql stable as
$$
declare r jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  select jsonb_agg(x.entry order by x.occurred_at, x.ord, x.id)
    into r
    from (
      -- An imported event's first entry: its import run.
      select b.created occurred_at, 0 ord, 0::bigint id, jsonb_build_object(
          'id', 'import:' || b.id, 'eventId', e.id, 'action', 'import',
          'actorType', case when b.actor_api_key_id is not null then 'api_key' when b.actor_user_id is not null then 'user' else 'system' end,
          'actorId', coalesce(b.actor_api_key_id, b.actor_user_id),
          'occurredAt', app_private.iso(b.created),
          'changes', jsonb_build_array(
            jsonb_build_object('field', 'import_batch_id', 'oldValue', null, 'newValue', b.id),
            jsonb_build_object('field', 'source', 'oldValue', null, 'newValue', e.source))) entry
        from app_public.ledger_events e
        join app_public.import_batches b on b.organization_id = e.organization_id and b.id = e.import_batch_id
       where e.organization_id = ledger_event_history.organization_id and e.id = ledger_event_history.event_id
      union all
      select a.occurred_at, 1, a.id, jsonb_build_object(
          'id', a.id, 'eventId', a.event_id, 'action', a.action,
          'actorType', case when a.actor_api_key_id is not null then 'api_key' when a.actor_user_id is not null then 'user' else 'system' end,
          'actorId', coalesce(a.actor_api_key_id, a.actor_user_id),
          'occurredAt', app_private.iso(a.occurred_at),
          -- A field is {old, new} (a change, a deletion) or its value alone (an insert: new, no old).
          'changes', (select coalesce(jsonb_agg(jsonb_build_object('field', k.key,
                'oldValue', case when jsonb_typeof(k.value) = 'object' then nullif(k.value -> 'old', 'null') #>> '{}' end,
                'newValue', case when jsonb_typeof(k.value) = 'object' then nullif(k.value -> 'new', 'null') #>> '{}'
                                 else nullif(k.value, 'null') #>> '{}' end)
                order by k.key), '[]'::jsonb)
              from jsonb_each(a.changes) k))
        from app_public.ledger_event_audit a
       where a.organization_id = ledger_event_history.organization_id and a.event_id = ledger_event_history.event_id) x;
  if r is null then perform app_private.fail('Ledger event not found.', 'AP404'); end if;
  return r;
end $$;
grant execute on function app_public.ledger_event_history(organization_id uuid, event_id uuid) to accounting_visitor;
--! EndIncluded ledger/audit.sql
--! Included ledger/reconciliations.sql
-- Reconciliation of a payment account against a bank or card statement (docs/api.md, Closing a
-- period): start one, tick the events the statement shows, complete it when the difference is
-- exactly 0.00, undo the account's latest. A reconciled event is fixed: nothing but its receipts,
-- an undo or a reversal changes it.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.reconciliations
drop policy if exists reconciliations_tenant on app_public.reconciliations;
create policy reconciliations_tenant on app_public.reconciliations
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select, insert on app_public.reconciliations to accounting_visitor;
grant update (status, cleared_balance, completed_at, undone_at) on app_public.reconciliations to accounting_visitor;
grant select on app_public.reconciliations to reporting_reader;

-- app_public.reconciliation_clearings
drop policy if exists reconciliation_clearings_tenant on app_public.reconciliation_clearings;
create policy reconciliation_clearings_tenant on app_public.reconciliation_clearings
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select, insert, delete on app_public.reconciliation_clearings to accounting_visitor;
grant select on app_public.reconciliation_clearings to reporting_reader;


-- A reconciled event keeps its amount, date, accounts and text; only its status (back to confirmed
-- by an undo, to ignored by a reversal), its reversal and its receipts change. Nor is it deleted
-- (a processor import's deletion), unless its organization goes.
create or replace function app_private.tg_ledger_events__reconciled() returns trigger
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
begin
  if tg_op = 'DELETE' then
    if exists (select 1 from old_rows o where o.status = 'reconciled'
                 and exists (select 1 from app_public.organizations g where g.id = o.organization_id)) then
      perform app_private.fail('Event is reconciled.');
    end if;
    return null;
  end if;
  if (new.organization_id, new.event_type, new.direction, new.merchant_name, new.functional_amount, new.functional_currency,
      new.transaction_date, new.memo, new.category_id, new.payment_account_id, new.tax_amount, new.tax_account_id,
      new.tax_code, new.journal_entry_id, new.reference)
     is distinct from
     (old.organization_id, old.event_type, old.direction, old.merchant_name, old.functional_amount, old.functional_currency,
      old.transaction_date, old.memo, old.category_id, old.payment_account_id, old.tax_amount, old.tax_account_id,
      old.tax_code, old.journal_entry_id, old.reference)
     or new.status not in ('reconciled', 'confirmed', 'ignored') then
    perform app_private.fail('Event is reconciled.');
  end if;
  return new;
end $$;
grant execute on function app_private.tg_ledger_events__reconciled() to accounting_visitor;

-- A statement's balance: a decimal string with at most two places, negative for an overdrawn
-- bank account or a card in credit.
create or replace function app_private.parse_balance(balance text, message text) returns numeric
  language plpgsql immutable as
$$
declare s text := btrim(balance);
begin
  if s like '-%' then return -app_private.parse_amount(substr(s, 2), message, true); end if;
  return app_private.parse_amount(s, message, true);
end $$;
grant execute on function app_private.parse_balance(balance text, message text) to accounting_visitor;

-- Opening balance plus the cleared events still posted: money in adds to an asset account's
-- balance and takes from a liability's (a card's balance is what is owed), money out the reverse.
create or replace function app_private.reconciliation_cleared_balance(r app_public.reconciliations) returns numeric
  language sql stable as
$$
  select r.opening_balance + coalesce(sum(case when e.direction = 'in' then e.functional_amount else -e.functional_amount end
           * case when a.classification = 'liability' then -1 else 1 end), 0)
    from app_public.reconciliation_clearings c
    join app_public.ledger_events e on e.id = c.event_id and e.status in ('confirmed', 'synced', 'reconciled')
    join app_public.accounts a on a.id = r.payment_account_id
   where c.reconciliation_id = r.id
$$;
grant execute on function app_private.reconciliation_cleared_balance(r app_public.reconciliations) to accounting_visitor, reporting_reader;

create or replace function app_private.reconciliation_json(r app_public.reconciliations) returns jsonb
  language sql stable as
$$
  select jsonb_build_object('id', r.id,
    'paymentAccount', (select jsonb_build_object('id', a.id, 'name', a.name) from app_public.accounts a where a.id = r.payment_account_id),
    'statementDate', to_char(r.statement_date, 'YYYY-MM-DD'),
    'openingBalance', app_private.money(r.opening_balance), 'closingBalance', app_private.money(r.closing_balance),
    'clearedBalance', app_private.money(b.cleared), 'difference', app_private.money(r.closing_balance - b.cleared),
    'clearedCount', (select count(*) from app_public.reconciliation_clearings c where c.reconciliation_id = r.id),
    'status', r.status, 'created', app_private.iso(r.created), 'completedAt', app_private.iso(r.completed_at),
    'undoneAt', app_private.iso(r.undone_at))
    from (select case when r.status = 'open' then app_private.reconciliation_cleared_balance(r)
                      else r.cleared_balance end as cleared) b
$$;
grant execute on function app_private.reconciliation_json(r app_public.reconciliations) to accounting_visitor;

-- The reconciliation, locked for the change the caller makes (a tick and a completion of the same
-- reconciliation take turns).
create or replace function app_private.lock_reconciliation(reconciliation_id uuid) returns app_public.reconciliations
  language plpgsql volatile as
$$
declare r app_public.reconciliations;
begin
  select * into r from app_public.reconciliations x where x.id = reconciliation_id for update;
  if not found then perform app_private.fail('Reconciliation not found.', 'AP404'); end if;
  return r;
end $$;
grant execute on function app_private.lock_reconciliation(reconciliation_id uuid) to accounting_visitor;

-- An event rejected or reversed is no longer there to clear in a reconciliation still open.
create or replace function app_private.unclear_event(event_id uuid) returns void
  language sql volatile as
$$
  delete from app_public.reconciliation_clearings c
   using app_public.reconciliations r
   where c.event_id = unclear_event.event_id and r.id = c.reconciliation_id and r.status = 'open'
$$;
grant execute on function app_private.unclear_event(event_id uuid) to accounting_visitor;

create or replace function app_public.start_reconciliation(organization_id uuid, payment_account_id uuid,
    statement_date text, closing_balance text) returns jsonb
  language plpgsql volatile as
$$
declare
  v_date date;
  v_closing numeric;
  prev app_public.reconciliations;
  r app_public.reconciliations;
begin
  perform app_private.assert_org_access(organization_id, false);
  v_date := app_private.parse_date(statement_date, 'Statement date must be a date in YYYY-MM-DD format.');
  v_closing := app_private.parse_balance(closing_balance, 'Closing balance must be a decimal string such as 1234.56 or -20.00.');
  perform app_private.check_payment_account(payment_account_id);
  -- The account's reconciliations are started and undone one at a time (an import's foreign keys
  -- on the account take a lock this does not wait for).
  perform 1 from app_public.accounts a where a.id = payment_account_id for no key update;
  if exists (select 1 from app_public.reconciliations x
              where x.organization_id = start_reconciliation.organization_id
                and x.payment_account_id = start_reconciliation.payment_account_id and x.status = 'open') then
    perform app_private.fail('This account already has an open reconciliation.');
  end if;
  select * into prev from app_public.reconciliations x
   where x.organization_id = start_reconciliation.organization_id
     and x.payment_account_id = start_reconciliation.payment_account_id and x.status = 'completed'
     and not exists (select 1 from app_public.reconciliations s where s.previous_id = x.id and s.status <> 'undone');
  if prev.id is not null and v_date <= prev.statement_date then
    perform app_private.fail(format('Statement date must be after the previous reconciliation''s (%s).',
      to_char(prev.statement_date, 'YYYY-MM-DD')));
  end if;
  insert into app_public.reconciliations (organization_id, payment_account_id, statement_date, opening_balance,
      closing_balance, previous_id)
    values (organization_id, payment_account_id, v_date, coalesce(prev.closing_balance, 0), v_closing, prev.id)
    returning * into r;
  return jsonb_build_object('success', true, 'error', null, 'reconciliation', app_private.reconciliation_json(r));
end $$;
grant execute on function app_public.start_reconciliation(organization_id uuid, payment_account_id uuid, statement_date text, closing_balance text) to accounting_visitor;

-- Ticks (or unticks) events: confirmed events of the reconciliation's account dated on or before
-- its statement date.
create or replace function app_public.set_cleared(organization_id uuid, reconciliation_id uuid, event_ids jsonb,
    cleared boolean) returns jsonb
  language plpgsql volatile as
$$
declare
  max_events constant integer := 1000;
  r app_public.reconciliations;
  v_ids uuid[];
  bad record;
begin
  perform app_private.assert_org_access(organization_id, false);
  v_ids := app_private.uuid_list(event_ids, 'eventIds');
  if cardinality(v_ids) > max_events then perform app_private.fail(format('eventIds must have at most %s items.', max_events)); end if;
  if cleared is null then perform app_private.fail('cleared must be true or false.'); end if;
  r := app_private.lock_reconciliation(reconciliation_id);
  if r.status <> 'open' then perform app_private.fail(format('Reconciliation is %s.', r.status)); end if;
  if cleared then
    select i.id, e.id as found, e.status, e.payment_account_id, e.transaction_date into bad
      from unnest(v_ids) i (id)
      left join app_public.ledger_events e on e.id = i.id
     where e.id is null or e.payment_account_id is distinct from r.payment_account_id
        or e.status not in ('confirmed', 'synced') or e.transaction_date > r.statement_date
     limit 1;
    if bad.id is not null then
      perform app_private.fail(case
        when bad.found is null then 'Ledger event not found.'
        when bad.status = 'reconciled' then 'Event is reconciled.'
        when bad.payment_account_id is distinct from r.payment_account_id then format('Event %s is not on the account being reconciled.', bad.id)
        when bad.status not in ('confirmed', 'synced') then format('Event %s is not confirmed.', bad.id)
        else format('Event %s is dated after the statement date.', bad.id) end,
        case when bad.found is null then 'AP404' else 'AP400' end);
    end if;
    insert into app_public.reconciliation_clearings (event_id, organization_id, reconciliation_id)
      select distinct i, r.organization_id, r.id from unnest(v_ids) i order by 1
      on conflict (event_id) do nothing;
  else
    delete from app_public.reconciliation_clearings c where c.reconciliation_id = r.id and c.event_id = any (v_ids);
  end if;
  return jsonb_build_object('success', true, 'error', null, 'reconciliation', app_private.reconciliation_json(r));
end $$;
grant execute on function app_public.set_cleared(organization_id uuid, reconciliation_id uuid, event_ids jsonb, cleared boolean) to accounting_visitor;

create or replace function app_public.complete_reconciliation(organization_id uuid, reconciliation_id uuid) returns jsonb
  language plpgsql volatile as
$$
declare
  r app_public.reconciliations;
  v_cleared numeric;
begin
  perform app_private.assert_org_access(organization_id, false);
  perform set_config('app.audit_action', 'reconcile', true);
  r := app_private.lock_reconciliation(reconciliation_id);
  if r.status = 'completed' then perform app_private.fail('Reconciliation is already completed.'); end if;
  if r.status <> 'open' then perform app_private.fail(format('Reconciliation is %s.', r.status)); end if;
  v_cleared := app_private.reconciliation_cleared_balance(r);
  if v_cleared <> r.closing_balance then
    perform app_private.fail(format('The difference must be 0.00 to complete the reconciliation; it is %s.',
      app_private.money(r.closing_balance - v_cleared)));
  end if;
  -- Ticks of events rejected or reversed since are not part of it.
  delete from app_public.reconciliation_clearings c
   using app_public.ledger_events e
   where c.reconciliation_id = r.id and e.id = c.event_id and e.status not in ('confirmed', 'synced');
  update app_public.ledger_events e set status = 'reconciled'
    from app_public.reconciliation_clearings c
   where c.reconciliation_id = r.id and e.id = c.event_id;
  update app_public.reconciliations x set status = 'completed', cleared_balance = v_cleared, completed_at = now()
   where x.id = r.id returning * into r;
  perform app_private.record_webhook_event(organization_id, 'reconciliation.completed', r.id, app_private.reconciliation_json(r));
  return jsonb_build_object('success', true, 'error', null, 'reconciliation', app_private.reconciliation_json(r));
end $$;
grant execute on function app_public.complete_reconciliation(organization_id uuid, reconciliation_id uuid) to accounting_visitor;

-- Owner or admin, and only the account's latest (the one no live reconciliation follows): its
-- events go back to confirmed and it stays listed as undone.
create or replace function app_public.undo_reconciliation(organization_id uuid, reconciliation_id uuid) returns jsonb
  language plpgsql volatile as
$$
declare r app_public.reconciliations;
begin
  perform app_private.assert_org_access(organization_id, true);
  perform set_config('app.audit_action', 'undo_reconciliation', true);
  select * into r from app_public.reconciliations x where x.id = reconciliation_id;
  if not found then perform app_private.fail('Reconciliation not found.', 'AP404'); end if;
  perform 1 from app_public.accounts a where a.id = r.payment_account_id for no key update;
  r := app_private.lock_reconciliation(reconciliation_id);
  if r.status = 'undone' then perform app_private.fail('Reconciliation is already undone.'); end if;
  if exists (select 1 from app_public.reconciliations s where s.previous_id = r.id and s.status <> 'undone') then
    perform app_private.fail('Only the account''s latest reconciliation can be undone.');
  end if;
  update app_public.ledger_events e set status = 'confirmed'
    from app_public.reconciliation_clearings c
   where c.reconciliation_id = r.id and e.id = c.event_id and e.status = 'reconciled';
  delete from app_public.reconciliation_clearings c where c.reconciliation_id = r.id;
  update app_public.reconciliations x set status = 'undone', undone_at = now() where x.id = r.id returning * into r;
  return jsonb_build_object('success', true, 'error', null, 'reconciliation', app_private.reconciliation_json(r));
end $$;
grant execute on function app_public.undo_reconciliation(organization_id uuid, reconciliation_id uuid) to accounting_visitor;

-- An account's reconciliations, newest first.
create or replace function app_public.list_reconciliations(organization_id uuid, payment_account_id uuid,
    "limit" integer default null, "offset" integer default null) returns jsonb
  language plpgsql stable as
$$
declare
  v_limit integer := app_private.page_size("limit");
  v_offset integer := app_private.page_offset("offset");
begin
  perform app_private.assert_org_access(organization_id, false);
  return jsonb_build_object(
    'items', coalesce((select jsonb_agg(app_private.reconciliation_json(p) order by p.created desc, p.id desc)
       from (select * from app_public.reconciliations x
              where x.organization_id = list_reconciliations.organization_id
                and x.payment_account_id = list_reconciliations.payment_account_id
              order by x.created desc, x.id desc limit v_limit offset v_offset) p), '[]'::jsonb),
    'totalCount', (select count(*) from app_public.reconciliations x
                    where x.organization_id = list_reconciliations.organization_id
                      and x.payment_account_id = list_reconciliations.payment_account_id),
    'pageSize', v_limit, 'offset', v_offset);
end $$;
grant execute on function app_public.list_reconciliations(organization_id uuid, payment_account_id uuid, "limit" integer, "offset" integer) to accounting_visitor;

------------------------------------------------------------------------------------------------

-- Triggers, after the functions they call.

-- app_public.ledger_events
drop trigger if exists _200_reconciled on app_public.ledger_events;
create trigger _200_reconciled before update on app_public.ledger_events
  for each row when (old.status = 'reconciled') execute function app_private.tg_ledger_events__reconciled();

drop trigger if exists _200_reconciled_delete on app_public.ledger_events;
create trigger _200_reconciled_delete after delete on app_public.ledger_events
  referencing old table as old_rows for each statement execute function app_private.tg_ledger_events__reconciled();
--! EndIncluded ledger/reconciliations.sql
--! Included organizations/organizations.sql
-- Organizations: created by the operator with a starter chart; listed for the caller.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.organizations
-- An organization is its own tenant: its id plays the part of organization_id.
drop policy if exists organizations_tenant on app_public.organizations;
create policy organizations_tenant on app_public.organizations
  using (id = app_public.current_organization_id());
grant select on app_public.organizations to accounting_visitor;
grant update (date_order, lock_date, fiscal_year_start) on app_public.organizations to accounting_visitor;

------------------------------------------------------------------------------------------------

create or replace function app_private.create_organization(name text, currency text default 'CAD')
  returns app_public.organizations
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
declare
  o app_public.organizations;
  nm text := app_private.clean_text(create_organization.name);
  cur text := upper(btrim(coalesce(currency, 'CAD')));
  scope text := current_setting('app.organization_id', true);
begin
  if nm is null or nm = '' then perform app_private.fail('Name is required.'); end if;
  if length(nm) > 200 then perform app_private.fail('Name must be at most 200 characters.'); end if;
  if cur !~ '^[A-Z]{3}$' then perform app_private.fail('Currency must be a three-letter code such as CAD.'); end if;
  begin
    insert into app_public.organizations (name, functional_currency) values (nm, cur) returning * into o;
  exception when unique_violation then
    perform app_private.fail('An organization with this name already exists.');
  end;
  -- The new organization in scope while its starter chart is written (RLS is forced), then back.
  perform set_config('app.organization_id', o.id::text, true);
  perform app_private.create_starter_chart(o.id);
  perform set_config('app.organization_id', coalesce(scope, ''), true);
  return o;
end $$;

create or replace function app_public.my_organizations() returns jsonb
  language plpgsql stable security definer set search_path = pg_catalog, app_public as
$$
declare
  key_id uuid := app_public.current_api_key_id();
  uid uuid := app_public.current_user_id();
begin
  if key_id is null and uid is null then perform app_private.fail('Authentication Required.', 'AU401'); end if;
  return coalesce((
    select jsonb_agg(jsonb_build_object('id', o.id, 'name', o.name) order by lower(o.name), o.id)
    from app_public.organizations o
    where (key_id is not null and o.id = (select k.organization_id from app_public.api_keys k where k.id = key_id))
       or (key_id is null and o.id in (select m.organization_id from app_public.memberships m where m.user_id = uid))
  ), '[]'::jsonb);
end $$;
grant execute on function app_public.my_organizations() to accounting_visitor;

-- The operator names organizations (CLI --org-name): compared as stored, case-insensitively in NFC.
create or replace function app_private.organization_by_name(name text) returns app_public.organizations
  language plpgsql stable security definer set search_path = pg_catalog, app_public as
$$
declare o app_public.organizations;
begin
  select * into o from app_public.organizations x where lower(x.name) = lower(app_private.clean_text(organization_by_name.name));
  if not found then perform app_private.fail(format('No organization named "%s".', btrim(organization_by_name.name)), 'AP404'); end if;
  return o;
end $$;

-- Settings an owner or admin changes: how receipts' ambiguous dates are read (docs/api.md,
-- Extraction), the lock date and the fiscal year's first day (docs/api.md, Closing a period).
-- `lock_date` is 'keep' when the caller did not give it: an explicit null unlocks.
create or replace function app_public.update_organization_settings(organization_id uuid, date_order text default null,
    lock_date text default 'keep', fiscal_year_start text default null) returns jsonb
  language plpgsql volatile as
$$
declare o app_public.organizations;
begin
  perform app_private.assert_org_access(organization_id, true);
  if date_order is not null and date_order not in ('auto', 'DMY', 'MDY') then
    perform app_private.fail('dateOrder must be one of: auto, DMY, MDY.');
  end if;
  if fiscal_year_start is not null and not (fiscal_year_start ~ '^(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$'
      and to_char(make_date(2001, substr(fiscal_year_start, 1, 2)::integer, 1) + interval '1 month' - interval '1 day', 'DD')
          >= substr(fiscal_year_start, 4)) then
    perform app_private.fail('fiscalYearStart must be a day of the year in MM-DD format, such as 01-01 or 04-01.');
  end if;
  -- The row's lock: postings in flight (which hold it shared, ledger/lock-date.sql) commit first.
  update app_public.organizations x set
      date_order = coalesce(update_organization_settings.date_order, x.date_order),
      lock_date = case when update_organization_settings.lock_date = 'keep' then x.lock_date
        when update_organization_settings.lock_date is null then null
        else app_private.parse_date(update_organization_settings.lock_date, 'lockDate must be a date in YYYY-MM-DD format.') end,
      fiscal_year_start = coalesce(update_organization_settings.fiscal_year_start, x.fiscal_year_start)
   where x.id = update_organization_settings.organization_id
   returning * into o;
  return jsonb_build_object('success', true, 'error', null, 'organization', app_private.organization_settings_json(o));
end $$;
grant execute on function app_public.update_organization_settings(organization_id uuid, date_order text, lock_date text, fiscal_year_start text) to accounting_visitor;

create or replace function app_private.organization_settings_json(o app_public.organizations) returns jsonb
  language sql stable as
$$ select jsonb_build_object('id', o.id, 'name', o.name, 'functionalCurrency', o.functional_currency, 'dateOrder', o.date_order,
     'lockDate', to_char(o.lock_date, 'YYYY-MM-DD'), 'fiscalYearStart', o.fiscal_year_start) $$;
grant execute on function app_private.organization_settings_json(o app_public.organizations) to accounting_visitor;
--! EndIncluded organizations/organizations.sql
--! Included reports/closing-reports.sql
-- The reports a period is closed with: the balance sheet and the trial balance as of a day, from
-- the per-account daily totals (docs/api.md, Closing a period).
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- The first day of the fiscal year `as_of` falls in, from the organization's `MM-DD`.
create or replace function app_private.fiscal_year_start(fiscal_year_start text, as_of date) returns date
  language sql immutable parallel safe as
$$
  select case when s <= as_of then s else (s - interval '1 year')::date end
    from (select make_date(extract(year from as_of)::integer, substr(fiscal_year_start, 1, 2)::integer,
                           substr(fiscal_year_start, 4, 2)::integer) as s) x
$$;
grant execute on function app_private.fiscal_year_start(fiscal_year_start text, as_of date) to accounting_visitor;

-- Each account's debits minus credits up to `as_of`, revenue and expense accounts counted from the
-- fiscal year's first day only: the earlier years' earnings are the retained earnings account's
-- (a row of their own, account null, when the chart has none), so the rows still sum to zero.
create or replace function app_private.closing_balances(org uuid, as_of date)
  returns table (account_id uuid, account_name text, classification text, net_debit numeric)
  language sql stable as
$$
  with year_start as (
    select app_private.fiscal_year_start(o.fiscal_year_start, as_of) as day from app_public.organizations o where o.id = org
  ),
  sums as (
    select t.account_id,
           sum(t.debit - t.credit) as all_time,
           sum(t.debit - t.credit) filter (where t.day >= (select day from year_start)) as this_year
      from app_public.account_daily_totals t
     where t.organization_id = org and t.day <= as_of
     group by t.account_id
  ),
  accounts as (
    select a.id, a.name, a.classification, a.account_type,
           case when a.classification in ('revenue', 'expense') then coalesce(s.this_year, 0) else s.all_time end as net_debit,
           case when a.classification in ('revenue', 'expense') then s.all_time - coalesce(s.this_year, 0) else 0 end as earlier_years
      from sums s join app_public.accounts a on a.id = s.account_id
  ),
  retained as (
    select a.id from app_public.accounts a
     where a.organization_id = org and a.account_type = 'retained_earnings'
     order by a.active desc, a.created, a.id limit 1
  ),
  earlier as (select coalesce(sum(earlier_years), 0) as net_debit from accounts)
  select x.id, x.name, x.classification, sum(x.net_debit) from (
    select a.id, a.name, a.classification, a.net_debit from accounts a
    union all
    -- Earlier years' earnings close into retained earnings.
    select r.id, coalesce(a.name, 'Retained Earnings'), 'equity', e.net_debit
      from earlier e
      left join retained r on true
      left join app_public.accounts a on a.id = r.id
     where e.net_debit <> 0
  ) x
  group by x.id, x.name, x.classification
  having sum(x.net_debit) <> 0
$$;
grant execute on function app_private.closing_balances(org uuid, as_of date) to accounting_visitor;

create or replace function app_private.as_of_date(as_of text) returns date
  language sql stable as
$$ select case when as_of is null then current_date else app_private.parse_date(as_of, 'asOf must be a date in YYYY-MM-DD format.') end $$;
grant execute on function app_private.as_of_date(as_of text) to accounting_visitor;

-- Assets = liabilities + equity + current-year earnings, each line at its normal balance.
create or replace function app_public.balance_sheet(organization_id uuid, as_of text default null) returns jsonb
  language plpgsql stable as
$$
declare
  v_as_of date;
  r jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  v_as_of := app_private.as_of_date(as_of);
  with b as (
    select account_id, account_name, classification,
           case when classification = 'asset' then net_debit else -net_debit end as balance
      from app_private.closing_balances(balance_sheet.organization_id, v_as_of)
  ),
  line as (
    select classification, jsonb_agg(jsonb_build_object('accountId', account_id, 'accountName', account_name,
             'balance', app_private.money(balance)) order by lower(account_name), account_id) as lines, sum(balance) as total
      from b where classification in ('asset', 'liability', 'equity') group by classification
  )
  select jsonb_build_object('asOf', to_char(v_as_of, 'YYYY-MM-DD'),
      'fiscalYearStart', to_char(app_private.fiscal_year_start(o.fiscal_year_start, v_as_of), 'YYYY-MM-DD'),
      'assets', coalesce((select lines from line where classification = 'asset'), '[]'::jsonb),
      'liabilities', coalesce((select lines from line where classification = 'liability'), '[]'::jsonb),
      'equity', coalesce((select lines from line where classification = 'equity'), '[]'::jsonb),
      'totalAssets', app_private.money(coalesce((select total from line where classification = 'asset'), 0)),
      'totalLiabilities', app_private.money(coalesce((select total from line where classification = 'liability'), 0)),
      'totalEquity', app_private.money(coalesce((select total from line where classification = 'equity'), 0)),
      -- Revenue less expenses since the fiscal year began (credit-normal, as equity is).
      'currentYearEarnings', app_private.money(coalesce((select sum(balance) from b where classification in ('revenue', 'expense')), 0)))
    into r
    from app_public.organizations o where o.id = balance_sheet.organization_id;
  return r;
end $$;
grant execute on function app_public.balance_sheet(organization_id uuid, as_of text) to accounting_visitor;

-- Every account with a balance, on its debit or its credit side; the two totals are equal.
create or replace function app_public.trial_balance(organization_id uuid, as_of text default null) returns jsonb
  language plpgsql stable as
$$
declare
  v_as_of date;
  r jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  v_as_of := app_private.as_of_date(as_of);
  select jsonb_build_object('asOf', to_char(v_as_of, 'YYYY-MM-DD'),
      'rows', coalesce(jsonb_agg(jsonb_build_object('accountId', account_id, 'accountName', account_name,
          'classification', classification,
          'debit', app_private.money(greatest(net_debit, 0)), 'credit', app_private.money(greatest(-net_debit, 0)))
          order by array_position(array['asset', 'liability', 'equity', 'revenue', 'expense'], classification),
                   lower(account_name), account_id), '[]'::jsonb),
      'totalDebit', app_private.money(coalesce(sum(greatest(net_debit, 0)), 0)),
      'totalCredit', app_private.money(coalesce(sum(greatest(-net_debit, 0)), 0)))
    into r
    from app_private.closing_balances(trial_balance.organization_id, v_as_of);
  return r;
end $$;
grant execute on function app_public.trial_balance(organization_id uuid, as_of text) to accounting_visitor;
--! EndIncluded reports/closing-reports.sql
--! Included reporting/views.sql
-- The `reporting` schema: views over the posted journal for analysts using plain SQL, scoped by
-- the tables' row-level security (security_invoker).
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Every live line of the books: posted entries of confirmed, synced or reconciled events, and
-- both entries of a reversed one (the posting, and its reversal on a later day).
create or replace view reporting.general_ledger with (security_invoker = true) as
  select l.id, l.organization_id, l.entry_id, e.id as event_id, l.txn_date,
         date_trunc('month', l.txn_date)::date as month,
         l.account_id, a.name as account_name, a.account_type, a.classification,
         l.debit, l.credit,
         case when a.classification in ('asset', 'expense') then l.debit - l.credit else l.credit - l.debit end as amount,
         e.merchant_name, e.memo, e.event_type, e.status as event_status,
         j.reverses_entry_id
    from app_public.journal_lines l
    join app_public.journal_entries j on j.id = l.entry_id and j.voided_at is null
    join app_public.ledger_events e on e.id = j.event_id
    join app_public.accounts a on a.id = l.account_id
   where not l.voided;
grant select on reporting.general_ledger to accounting_visitor;
grant select on reporting.general_ledger to reporting_reader;

-- Revenue and expense per account and month (revenue credits - debits, expense debits - credits).
create or replace view reporting.income_statement_monthly with (security_invoker = true) as
  select t.organization_id, date_trunc('month', t.day)::date as month, a.id as account_id, a.name as account_name,
         a.classification,
         (case when a.classification = 'revenue' then sum(t.credit) - sum(t.debit) else sum(t.debit) - sum(t.credit) end)::numeric(20,2) as total
    from app_public.account_daily_totals t
    join app_public.accounts a on a.id = t.account_id
   where a.classification in ('revenue', 'expense')
   group by t.organization_id, date_trunc('month', t.day), a.id, a.name, a.classification
  having sum(t.debit) <> 0 or sum(t.credit) <> 0;
grant select on reporting.income_statement_monthly to reporting_reader;

-- Debits and credits per account over all time; the sums of both columns are equal.
create or replace view reporting.trial_balance with (security_invoker = true) as
  select a.organization_id, a.id as account_id, a.name as account_name, a.account_type, a.classification,
         coalesce(sum(t.debit), 0)::numeric(20,2) as debit, coalesce(sum(t.credit), 0)::numeric(20,2) as credit,
         (case when a.classification in ('asset', 'expense') then coalesce(sum(t.debit), 0) - coalesce(sum(t.credit), 0)
               else coalesce(sum(t.credit), 0) - coalesce(sum(t.debit), 0) end)::numeric(20,2) as balance
    from app_public.accounts a
    left join app_public.account_daily_totals t on t.account_id = a.id
   group by a.organization_id, a.id, a.name, a.account_type, a.classification;
grant select on reporting.trial_balance to reporting_reader;

-- Each reconciliation of a payment account: its statement, what it cleared and its state.
create or replace view reporting.reconciliations with (security_invoker = true) as
  select r.id, r.organization_id, r.payment_account_id, a.name as payment_account_name, r.statement_date,
         r.opening_balance, r.closing_balance,
         (case when r.status = 'open' then app_private.reconciliation_cleared_balance(r) else r.cleared_balance end)::numeric(20,2) as cleared_balance,
         (r.closing_balance - case when r.status = 'open' then app_private.reconciliation_cleared_balance(r) else r.cleared_balance end)::numeric(20,2) as difference,
         (select count(*) from app_public.reconciliation_clearings c where c.reconciliation_id = r.id) as cleared_events,
         r.status, r.created, r.completed_at, r.undone_at
    from app_public.reconciliations r
    join app_public.accounts a on a.id = r.payment_account_id;
grant select on reporting.reconciliations to reporting_reader;
--! EndIncluded reporting/views.sql
--! Included webhooks/endpoints.sql
-- Webhook endpoints (issue 13): registering, listing, changing and removing them, and the log of
-- their deliveries. createWebhookEndpoint and updateWebhookEndpoint are served by the server (it
-- checks the URL's host through the outbound guard and seals the signing secret, which SQL never
-- sees in clear); their rules are here. Owner or admin only, by JWT.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security and grants of this feature's tables.

-- app_public.webhook_endpoints: the API's role never reads the sealed secret.
drop policy if exists webhook_endpoints_tenant on app_public.webhook_endpoints;
create policy webhook_endpoints_tenant on app_public.webhook_endpoints
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
revoke all on app_public.webhook_endpoints from accounting_visitor;
grant select (id, organization_id, url, events, description, status, disabled_reason, failing_since, created, updated)
  on app_public.webhook_endpoints to accounting_visitor;
grant insert (id, organization_id, url, events, description, secret_sealed) on app_public.webhook_endpoints to accounting_visitor;
grant update (url, events, description, status, disabled_reason, failing_since, updated) on app_public.webhook_endpoints to accounting_visitor;
grant delete on app_public.webhook_endpoints to accounting_visitor;

drop trigger if exists _100_touch_updated on app_public.webhook_endpoints;
create trigger _100_touch_updated before update on app_public.webhook_endpoints
  for each row execute function app_private.tg__touch_updated();

-- app_public.webhook_events and webhook_deliveries: written by the database's own functions and
-- the worker; read by the delivery log; a redelivery puts a delivery back to pending.
drop policy if exists webhook_events_tenant on app_public.webhook_events;
create policy webhook_events_tenant on app_public.webhook_events
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select on app_public.webhook_events to accounting_visitor;

drop policy if exists webhook_deliveries_tenant on app_public.webhook_deliveries;
create policy webhook_deliveries_tenant on app_public.webhook_deliveries
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select on app_public.webhook_deliveries to accounting_visitor;

------------------------------------------------------------------------------------------------

-- The events an endpoint may subscribe to.
create or replace function app_private.webhook_event_types() returns text[]
  language sql immutable parallel safe as
$$ select array['ledger_event.created', 'ledger_event.confirmed', 'ledger_event.rejected', 'ledger_event.reversed',
                'bank_import.completed', 'processor_import.completed', 'receipt.received', 'receipt.matched',
                'receipt.unmatched', 'reconciliation.completed'] $$;
grant execute on function app_private.webhook_event_types() to accounting_visitor;

-- An endpoint as the API shows it (by id: the API's role may not read a whole row, which holds the secret).
create or replace function app_private.webhook_endpoint_json(webhook_endpoint_id uuid) returns jsonb
  language sql stable as
$$ select jsonb_build_object('id', ep.id, 'url', ep.url, 'events', to_jsonb(ep.events), 'description', ep.description,
     'status', ep.status, 'disabledReason', ep.disabled_reason, 'created', app_private.iso(ep.created))
     from app_public.webhook_endpoints ep where ep.id = webhook_endpoint_id $$;
grant execute on function app_private.webhook_endpoint_json(webhook_endpoint_id uuid) to accounting_visitor;

-- The caller (owner or admin, by JWT) and the fields of an endpoint, checked and normalised: the
-- URL's scheme, host and address are the server's to check (src/webhooks/endpoint-url.ts).
-- A null argument is a field left as it is (an update) or absent (a creation: url and events are
-- required there).
create or replace function app_private.webhook_endpoint_settings(organization_id uuid, url text, events text[], description text)
  returns jsonb
  language plpgsql stable as
$$
declare
  -- The scheme as the URL parser writes it (lower case), which the table's check expects.
  v_url text := regexp_replace(app_private.clean_text(url), '^[Hh][Tt][Tt][Pp]([Ss]?)://', 'http\1://');
  v_events text[];
  v_unknown text;
  v_description text := app_private.clean_text(description);
begin
  perform app_private.assert_org_access(organization_id, true);
  if v_url is not null and (v_url !~* '^https?://' or length(v_url) > 2048) then
    perform app_private.fail('url must be an https URL of at most 2048 characters.');
  end if;
  if events is not null then
    select array_agg(distinct btrim(e) order by btrim(e)) into v_events from unnest(events) e;
    if v_events is null then perform app_private.fail('events must name at least one event type.'); end if;
    select e into v_unknown from unnest(v_events) e where not (e = any (app_private.webhook_event_types())) limit 1;
    if v_unknown is not null then
      perform app_private.fail(format('events: unknown event type %s; known: %s.', v_unknown,
        array_to_string(app_private.webhook_event_types(), ', ')));
    end if;
  end if;
  if length(v_description) > 500 then perform app_private.fail('description must be at most 500 characters.'); end if;
  return jsonb_build_object('url', v_url, 'events', to_jsonb(v_events), 'description', v_description);
end $$;
grant execute on function app_private.webhook_endpoint_settings(organization_id uuid, url text, events text[], description text) to accounting_visitor;

-- An endpoint whose URL the server has checked, with its signing secret sealed to this id.
create or replace function app_private.create_webhook_endpoint(organization_id uuid, url text, events text[], description text,
    webhook_endpoint_id uuid, secret_sealed text) returns jsonb
  language plpgsql volatile as
$$
declare
  s jsonb := app_private.webhook_endpoint_settings(organization_id, url, events, description);
begin
  if s->>'url' is null then perform app_private.fail('url is required.'); end if;
  if s->'events' = 'null'::jsonb then perform app_private.fail('events must name at least one event type.'); end if;
  -- Creations of one organization one at a time, so that two cannot both pass the limit.
  perform pg_advisory_xact_lock(hashtext('webhook_endpoints:' || create_webhook_endpoint.organization_id));
  if (select count(*) from app_public.webhook_endpoints x where x.organization_id = create_webhook_endpoint.organization_id) >= 20 then
    perform app_private.fail('An organization may have at most 20 webhook endpoints.');
  end if;
  insert into app_public.webhook_endpoints (id, organization_id, url, events, description, secret_sealed)
    values (webhook_endpoint_id, create_webhook_endpoint.organization_id, s->>'url',
            array(select jsonb_array_elements_text(s->'events')), s->>'description', secret_sealed);
  return jsonb_build_object('success', true, 'error', null, 'webhookEndpoint', app_private.webhook_endpoint_json(webhook_endpoint_id),
    'secret', null);
end $$;
grant execute on function app_private.create_webhook_endpoint(organization_id uuid, url text, events text[], description text, webhook_endpoint_id uuid, secret_sealed text) to accounting_visitor;

-- Changes the fields given (null: unchanged). status `enabled` turns a disabled endpoint back on
-- (its failed deliveries stay failed: redeliverWebhook sends one again); `disabled` stops it, and
-- its pending deliveries fail.
create or replace function app_private.update_webhook_endpoint(organization_id uuid, webhook_endpoint_id uuid, url text,
    events text[], description text, status text) returns jsonb
  language plpgsql volatile as
$$
declare
  s jsonb := app_private.webhook_endpoint_settings(organization_id, url, events, description);
begin
  if status is not null and status not in ('enabled', 'disabled') then
    perform app_private.fail('status must be one of: enabled, disabled.');
  end if;
  update app_public.webhook_endpoints x
     set url = coalesce(s->>'url', x.url),
         events = case when s->'events' = 'null'::jsonb then x.events else array(select jsonb_array_elements_text(s->'events')) end,
         description = case when update_webhook_endpoint.description is null then x.description else s->>'description' end,
         status = coalesce(update_webhook_endpoint.status, x.status),
         disabled_reason = case when coalesce(update_webhook_endpoint.status, x.status) = 'enabled' then null
                                when update_webhook_endpoint.status = 'disabled' then null else x.disabled_reason end,
         -- Enabled again: its failures so far no longer count towards disabling it.
         failing_since = case when update_webhook_endpoint.status = 'enabled' then null else x.failing_since end
   where x.organization_id = update_webhook_endpoint.organization_id and x.id = webhook_endpoint_id;
  if not found then perform app_private.fail('Webhook endpoint not found.', 'AP404'); end if;
  if update_webhook_endpoint.status = 'disabled' then
    perform app_private.fail_pending_webhook_deliveries(webhook_endpoint_id);
  end if;
  return jsonb_build_object('success', true, 'error', null, 'webhookEndpoint', app_private.webhook_endpoint_json(webhook_endpoint_id));
end $$;
grant execute on function app_private.update_webhook_endpoint(organization_id uuid, webhook_endpoint_id uuid, url text, events text[], description text, status text) to accounting_visitor;

-- The endpoint, its deliveries and its secret go (deliveries queued for it find nothing to do).
create or replace function app_public.delete_webhook_endpoint(organization_id uuid, webhook_endpoint_id uuid) returns jsonb
  language plpgsql volatile as
$$
begin
  perform app_private.assert_org_access(organization_id, true);
  delete from app_public.webhook_endpoints x
   where x.organization_id = delete_webhook_endpoint.organization_id and x.id = webhook_endpoint_id;
  if not found then perform app_private.fail('Webhook endpoint not found.', 'AP404'); end if;
  return jsonb_build_object('success', true, 'error', null);
end $$;
grant execute on function app_public.delete_webhook_endpoint(organization_id uuid, webhook_endpoint_id uuid) to accounting_visitor;

-- The organization's endpoints, oldest first (not paginated: 20 at most).
create or replace function app_public.list_webhook_endpoints(organization_id uuid) returns jsonb
  language plpgsql stable as
$$
begin
  perform app_private.assert_org_access(organization_id, true);
  return coalesce((select jsonb_agg(app_private.webhook_endpoint_json(x.id) order by x.created, x.id)
    from app_public.webhook_endpoints x where x.organization_id = list_webhook_endpoints.organization_id), '[]'::jsonb);
end $$;
grant execute on function app_public.list_webhook_endpoints(organization_id uuid) to accounting_visitor;

-- A delivery as the log shows it.
create or replace function app_private.webhook_delivery_json(d app_public.webhook_deliveries, event_type text) returns jsonb
  language sql stable as
$$ select jsonb_build_object('id', d.id, 'webhookEndpointId', d.webhook_endpoint_id, 'eventId', d.webhook_event_id,
     'eventType', event_type, 'status', d.status, 'attempts', d.attempts, 'responseCode', d.response_code,
     'lastError', d.last_error, 'lastAttemptAt', app_private.iso(d.last_attempt_at),
     'nextAttemptAt', app_private.iso(d.next_attempt_at), 'deliveredAt', app_private.iso(d.delivered_at),
     'created', app_private.iso(d.created)) $$;
grant execute on function app_private.webhook_delivery_json(d app_public.webhook_deliveries, event_type text) to accounting_visitor;

-- An endpoint's deliveries, newest first: status pending (waiting for an attempt), succeeded or
-- failed (retries ended); attempts so far, the last answer's HTTP status or why there was none,
-- and when the next attempt is due.
create or replace function app_public.list_webhook_deliveries(organization_id uuid, webhook_endpoint_id uuid, status text default null,
    "limit" integer default null, "offset" integer default null) returns jsonb
  language plpgsql stable as
$$
declare
  lim integer := app_private.page_size("limit");
  off integer := app_private.page_offset("offset");
begin
  perform app_private.assert_org_access(organization_id, true);
  if status is not null and status not in ('pending', 'succeeded', 'failed') then
    perform app_private.fail('status must be one of: pending, succeeded, failed.');
  end if;
  if not exists (select 1 from app_public.webhook_endpoints x
                  where x.organization_id = list_webhook_deliveries.organization_id and x.id = webhook_endpoint_id) then
    perform app_private.fail('Webhook endpoint not found.', 'AP404');
  end if;
  return (
    with f as (
      select d from app_public.webhook_deliveries d
       where d.webhook_endpoint_id = list_webhook_deliveries.webhook_endpoint_id
         and (list_webhook_deliveries.status is null or d.status = list_webhook_deliveries.status)
    ), page as (
      select f.d, row_number() over (order by (f.d).seq desc) as rn
        from f order by (f.d).seq desc limit lim offset off
    )
    select jsonb_build_object(
      'items', coalesce((select jsonb_agg(app_private.webhook_delivery_json(page.d, ev.type) order by page.rn)
                           from page join app_public.webhook_events ev on ev.id = (page.d).webhook_event_id), '[]'::jsonb),
      'totalCount', (select count(*) from f), 'pageSize', lim, 'offset', off));
end $$;
grant execute on function app_public.list_webhook_deliveries(organization_id uuid, webhook_endpoint_id uuid, status text, "limit" integer, "offset" integer) to accounting_visitor;

-- Sends a delivery again now, whatever its status (a pending one sooner than its retry was due),
-- with the same event id; its earlier attempts stay counted.
create or replace function app_public.redeliver_webhook(organization_id uuid, webhook_delivery_id uuid) returns jsonb
  language plpgsql volatile as
$$
declare
  d app_public.webhook_deliveries;
  v_status text;
begin
  perform app_private.assert_org_access(organization_id, true);
  select * into d from app_public.webhook_deliveries x
   where x.organization_id = redeliver_webhook.organization_id and x.id = webhook_delivery_id;
  if not found then perform app_private.fail('Webhook delivery not found.', 'AP404'); end if;
  select ep.status into v_status from app_public.webhook_endpoints ep where ep.id = d.webhook_endpoint_id;
  if v_status <> 'enabled' then perform app_private.fail('The webhook endpoint is disabled: enable it first.'); end if;
  perform app_private.queue_webhook_attempt(d.id, now());
  select * into d from app_public.webhook_deliveries x where x.id = webhook_delivery_id;
  return jsonb_build_object('success', true, 'error', null, 'delivery', app_private.webhook_delivery_json(d,
    (select ev.type from app_public.webhook_events ev where ev.id = d.webhook_event_id)));
end $$;
grant execute on function app_public.redeliver_webhook(organization_id uuid, webhook_delivery_id uuid) to accounting_visitor;
--! EndIncluded webhooks/endpoints.sql
--! Included webhooks/events.sql
-- Webhook events (issue 13): each change an endpoint subscribed to is recorded in the transaction
-- of the change, with one delivery per subscribed endpoint and its job, so that a rolled-back
-- change sends nothing and a committed one is never without its event. The functions that own
-- the changes call record_webhook_event (ledger/events.sql, ledger/transitions.sql,
-- receipts/receipts.sql, receipts/matching.sql, imports/*.sql); an import makes one
-- `*.completed` event, not one per row.
-- Re-runnable: `create or replace`.

-- An event of `type` about `object` (or the object `object_id` names, read only when an endpoint
-- subscribed): nothing when no enabled endpoint of the organization subscribed to the type.
create or replace function app_private.record_webhook_event(org uuid, type text, object_id uuid, object jsonb default null)
  returns void
  language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as
$$
declare
  v_event uuid;
  d record;
begin
  -- Few statements: the caller may hold a lock that others wait on until it commits (the day's counts).
  -- Only for the organization the caller is in (the operator's and the worker's: any).
  perform app_private.check_job_organization(org);
  if not exists (select 1 from app_public.webhook_endpoints ep
                  where ep.organization_id = org and ep.status = 'enabled' and record_webhook_event.type = any (ep.events)) then
    return;
  end if;
  if object is null then
    object := case split_part(record_webhook_event.type, '.', 1)
      when 'ledger_event' then (select app_private.ledger_event_json_by_id(e.id) from app_public.ledger_events e
                                 where e.id = object_id and e.organization_id = org)
      when 'receipt' then (select app_private.receipt_json_by_id(r.id) from app_public.receipts r
                            where r.id = object_id and r.organization_id = org) end;
    if object is null then raise exception 'record_webhook_event: no % of organization % with id %', type, org, object_id; end if;
  end if;
  insert into app_public.webhook_events (organization_id, type, object)
    values (org, record_webhook_event.type, object)
    returning id into v_event;
  for d in
    insert into app_public.webhook_deliveries (organization_id, webhook_endpoint_id, webhook_event_id)
      select org, ep.id, v_event from app_public.webhook_endpoints ep
       where ep.organization_id = org and ep.status = 'enabled' and record_webhook_event.type = any (ep.events)
       order by ep.id
      returning id, webhook_endpoint_id, next_attempt_at
  loop
    perform app_private.add_webhook_attempt_job(org, d.id, d.webhook_endpoint_id, d.next_attempt_at);
  end loop;
end $$;
grant execute on function app_private.record_webhook_event(org uuid, type text, object_id uuid, object jsonb) to accounting_visitor;
--! EndIncluded webhooks/events.sql
