--! Previous: sha1:fbeb7db97cadc7a6cf9dbfa5e29d185c940ac716
--! Hash: sha1:0a4af72cc09e595b738e986bb63889156e347c7a
--! Message: Indexes for the foreign keys from journal entries to documents and from receipts to intake messages (the live-entry index cannot serve the first); the posting function's comment says how far its kept plans reach

-- Two more foreign keys whose lookups read every row of the organization: a document deleted
-- (with its organization: one lookup per document) looked up its journal entries, whose only index
-- on document_id holds live entries alone; an intake message deleted looked up its receipts.
create index if not exists journal_entries_document_idx on app_public.journal_entries (document_id)
  where document_id is not null;
create index if not exists receipts_intake_message_idx on app_public.receipts (intake_message_id)
  where intake_message_id is not null;

-- The posting function's comment: how far its kept plans reach.
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
-- Lines: the payment account's for the whole amount; the category's (an unsplit event) or one per
-- split category, net of tax; one per tax account and tax type, tagged with the type and whether
-- it was collected on a sale (the sales tax return adds them up).
-- The plans are kept for the session (`force_generic_plan`): left to choose, the plan cache
-- planned these statements afresh on every call (a generic plan assumes ten ids, and one looks
-- cheaper), which was more than half of a confirm's time in PostgreSQL (bench/README.md, "A
-- confirm planned once"). The plans do not depend on the organization: each reads the given
-- events by id. The setting holds while the triggers these statements fire run (not the checks
-- deferred to commit): a trigger statement with parameters that reads by organization would be
-- planned generically here too; today's read by id (add_sales_tax_totals) or take none.
create or replace function app_private.post_journal_entries(event_ids uuid[], posting_date date default null)
  returns table (event_id uuid, entry_id uuid)
  language plpgsql volatile set plan_cache_mode = force_generic_plan as
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
  posted as materialized (
    select n.id as entry, n.txn_date, e.organization_id, e.event_type, e.transaction_date, e.category_id,
           e.payment_account_id, e.functional_amount, e.tax_amount, e.tax_code, e.tax_account_id, e.splits,
           e.direction = 'out' as out
      from entries n join app_public.ledger_events e on e.id = n.event_id
  ),
  -- Each part of an amount that has tax: the event (unsplit) or each of its splits.
  taxed as (
    select p.entry, p.txn_date, p.organization_id, p.out, p.tax_account_id, p.transaction_date,
           p.functional_amount as amount, p.tax_amount as tax, p.tax_code as code, app_private.is_sale(p.category_id, p.event_type) as sale
      from posted p where p.splits is null and p.tax_amount > 0
    union all
    select p.entry, p.txn_date, p.organization_id, p.out, p.tax_account_id, p.transaction_date,
           s.amount, s.tax_amount, s.tax_code, app_private.is_sale(s.category_id, p.event_type)
      from posted p cross join lateral jsonb_to_recordset(p.splits) s (category_id uuid, amount numeric, tax_code text, tax_amount numeric)
     where p.splits is not null and s.tax_amount > 0
  ),
  lines as (
    -- out: debit category (+ tax), credit payment; in: debit payment, credit category (+ tax).
    insert into app_public.journal_lines (organization_id, entry_id, account_id, txn_date, debit, credit, tax_type, tax_on_sale)
      select l.organization_id, l.entry, l.account_id, l.txn_date,
             case when l.debit_side then l.amount else 0 end, case when l.debit_side then 0 else l.amount end,
             l.tax_type, l.tax_on_sale
        from (
          select p.entry, p.txn_date, p.organization_id, c.account_id, c.amount, c.debit_side, null::text as tax_type, null::boolean as tax_on_sale
            from posted p
            cross join lateral (values
              (p.category_id, p.functional_amount - coalesce(p.tax_amount, 0), p.out, p.splits is null),
              (p.payment_account_id, p.functional_amount, not p.out, true)) c (account_id, amount, debit_side, kept)
           where c.kept
          union all
          select p.entry, p.txn_date, p.organization_id, s.category_id, sum(s.amount - s.tax_amount), p.out, null, null
            from posted p cross join lateral jsonb_to_recordset(p.splits) s (category_id uuid, amount numeric, tax_amount numeric)
           where p.splits is not null
           group by p.entry, p.txn_date, p.organization_id, s.category_id, p.out
          union all
          select t.entry, t.txn_date, t.organization_id, app_private.tax_leg_account(t.organization_id, g.tax_type, t.tax_account_id),
                 sum(g.portion), t.out, g.tax_type, t.sale
            from taxed t cross join lateral app_private.tax_legs(t.amount, t.tax, t.code, t.sale, t.transaction_date) g
           group by 1, 2, 3, 4, 6, 7, 8
        ) l
       where l.amount > 0
       order by l.entry, l.account_id
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
  if (new.organization_id, new.entry_id, new.account_id, new.txn_date, new.debit, new.credit, new.tax_type, new.tax_on_sale)
     is distinct from (old.organization_id, old.entry_id, old.account_id, old.txn_date, old.debit, old.credit, old.tax_type, old.tax_on_sale)
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
