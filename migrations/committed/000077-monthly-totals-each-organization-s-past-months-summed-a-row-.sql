--! Previous: sha1:cc331269fbe2a53ab3baf10330269dba6ceedf2e
--! Hash: sha1:7504c4443968e3f0844c689d681d48cad8d8d2e3
--! Message: Monthly totals: each organization's past months summed a row a month by a nightly task; reports and counts read rolled months from them and the other days from the daily rows

-- Monthly totals: the per-account daily totals and per-status daily counts of an organization's
-- past months, summed a row a month by the worker's nightly task, so that a report over years
-- reads a row a month instead of a row a day scattered among the other tenants' rows.
alter table app_public.organizations add column if not exists totals_rolled_through date;
alter table app_public.organizations drop constraint if exists organizations_totals_rolled_through_check;
alter table app_public.organizations add constraint organizations_totals_rolled_through_check
  check (totals_rolled_through = date_trunc('month', totals_rolled_through::timestamp)::date);

create table if not exists app_public.account_monthly_totals (
  organization_id uuid not null references app_public.organizations on delete cascade,
  account_id uuid not null,
  month date not null,
  debit numeric(20,2) not null default 0,
  credit numeric(20,2) not null default 0,
  primary key (organization_id, account_id, month)
);
alter table app_public.account_monthly_totals enable row level security;
alter table app_public.account_monthly_totals force row level security;

create table if not exists app_public.ledger_event_monthly_counts (
  organization_id uuid not null references app_public.organizations on delete cascade,
  month date not null,
  status text not null,
  n bigint not null default 0,
  primary key (organization_id, month, status)
);
alter table app_public.ledger_event_monthly_counts enable row level security;
alter table app_public.ledger_event_monthly_counts force row level security;

--! Included ledger/monthly-totals.sql
-- Monthly totals: an organization's per-account daily totals and per-status daily counts of the
-- months before its `totals_rolled_through`, summed a row a month (docs/architecture.md, Many
-- tenants). A tenant's daily rows sit about one to a heap page among the other tenants' rows (each
-- is written with the tenant's first posting of that day), so a report over three years read
-- thousands of pages; it now reads a row a month for the rolled months and days for the rest.
-- The daily rows stay: a period that starts or ends inside a month still reads that month's days.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.
--
-- The rule that keeps them exact. Every statement that changes the journal's or the events' daily
-- rows (a posting, a void, a new status or date) holds a shared advisory lock of each organization
-- it changed (monthly_totals_key) until its transaction ends, then compares its earliest day with
-- the current month (UTC, by the clock once it holds the lock). A change with a day before the
-- current month also adds to the monthly rows what falls before `totals_rolled_through`, read
-- under the organization's row held FOR SHARE (add_monthly_account_totals,
-- add_monthly_event_counts). A rollup (roll_up_monthly_totals, read committed only) takes the
-- organization's advisory lock exclusively and its row FOR NO KEY UPDATE, both without waiting:
-- while a change of the organization is in flight it fails and changes nothing (and is tried
-- again later), and a change that starts meanwhile waits for it and then sees how far it rolled.
-- No rollup reaches the current month, so a change of the current month's days alone reads
-- nothing more: one that compared its days before the month ended held its lock until it ended.
-- A rollup waits for nothing, so it makes no deadlock, and its row lock does not conflict with the
-- FOR KEY SHARE that every insert referencing the organization takes. In a repeatable-read
-- transaction FOR SHARE of a row a rollup updated after the snapshot fails to serialize instead of
-- reading a stale date (FOR KEY SHARE would not: the update changes no key).

-- Row-level security and grants of this feature's tables.

-- app_public.account_monthly_totals
drop policy if exists account_monthly_totals_tenant on app_public.account_monthly_totals;
create policy account_monthly_totals_tenant on app_public.account_monthly_totals
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select on app_public.account_monthly_totals to accounting_visitor;
grant select on app_public.account_monthly_totals to reporting_reader;

-- app_public.ledger_event_monthly_counts
drop policy if exists ledger_event_monthly_counts_tenant on app_public.ledger_event_monthly_counts;
create policy ledger_event_monthly_counts_tenant on app_public.ledger_event_monthly_counts
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select on app_public.ledger_event_monthly_counts to accounting_visitor;

------------------------------------------------------------------------------------------------

-- The first day of the current month, UTC, by the clock (not the transaction's start): what a
-- change compares its days with, and what a rollup may reach.
create or replace function app_private.current_month_start() returns date
  language sql volatile as
$$ select date_trunc('month', clock_timestamp() at time zone 'UTC')::date $$;

-- The monthly side of a change with a day before the current month: per organization, account and
-- day, debits and credits added (or taken away: negative), the arrays parallel. Adds what falls in
-- the organization's rolled months, read under its row held FOR SHARE (the rule above). Rows of
-- an organization being deleted (whose row this transaction no longer sees) go with it.
create or replace function app_private.add_monthly_account_totals(orgs uuid[], accounts uuid[], days date[], debits numeric[], credits numeric[])
  returns void
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
begin
  perform 1 from app_public.organizations o where o.id = any (orgs) order by o.id for share;
  insert into app_public.account_monthly_totals as t (organization_id, account_id, month, debit, credit)
    select c.organization_id, c.account_id, date_trunc('month', c.day::timestamp)::date, sum(c.debit), sum(c.credit)
      from unnest(orgs, accounts, days, debits, credits) c (organization_id, account_id, day, debit, credit)
      join app_public.organizations o on o.id = c.organization_id and c.day < o.totals_rolled_through
     group by 1, 2, 3 having sum(c.debit) <> 0 or sum(c.credit) <> 0 order by 1, 2, 3
    on conflict (organization_id, account_id, month) do update
      set debit = t.debit + excluded.debit, credit = t.credit + excluded.credit;
end $$;

-- Likewise for the events: per organization, day and status, a count (negative: taken away).
create or replace function app_private.add_monthly_event_counts(orgs uuid[], days date[], statuses text[], counts bigint[])
  returns void
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
begin
  perform 1 from app_public.organizations o where o.id = any (orgs) order by o.id for share;
  insert into app_public.ledger_event_monthly_counts as t (organization_id, month, status, n)
    select c.organization_id, date_trunc('month', c.day::timestamp)::date, c.status, sum(c.n)
      from unnest(orgs, days, statuses, counts) c (organization_id, day, status, n)
      join app_public.organizations o on o.id = c.organization_id and c.day < o.totals_rolled_through
     group by 1, 2, 3 having sum(c.n) <> 0 order by 1, 2, 3
    on conflict (organization_id, month, status) do update set n = t.n + excluded.n;
end $$;

-- The key of an organization's advisory lock of its monthly totals (the rule above).
create or replace function app_private.monthly_totals_key(org uuid) returns bigint
  language sql immutable parallel safe as
$$ select hashtextextended('accounting-api:monthly-totals:' || org::text, 0) $$;

-- How a period (both ends inclusive, null for open) splits for an organization: the whole months
-- in it that are rolled up, [rolled_from, rolled_to), read from the monthly rows; the days before
-- and after, [first_day, rolled_from) and [rolled_to, last_day], from the daily rows. With no month
-- to read, rolled_from = rolled_to = first_day: the days are the whole period. Open ends are
-- infinite dates, so that each part is one index range.
create or replace function app_private.rolled_period(org uuid, first_day date, last_day date)
  returns table (first_day date, rolled_from date, rolled_to date, last_day date)
  language sql stable as
$$
  select f, case when lo < hi then lo else f end, case when lo < hi then hi else f end, l
    from (select coalesce(rolled_period.first_day, '-infinity'::date) as f,
                 coalesce(rolled_period.last_day, 'infinity'::date) as l,
                 -- The first month that starts on or after the first day.
                 case when rolled_period.first_day is null then '-infinity'::date
                      else (date_trunc('month', (rolled_period.first_day - 1)::timestamp) + interval '1 month')::date end as lo,
                 -- The end of the last month that ends on or before the last day, or of the rolled ones.
                 case when o.totals_rolled_through is null then '-infinity'::date
                      when rolled_period.last_day is null then o.totals_rolled_through
                      else least(o.totals_rolled_through, date_trunc('month', (rolled_period.last_day + 1)::timestamp)::date) end as hi
            from app_public.organizations o where o.id = org) x
$$;
grant execute on function app_private.rolled_period(org uuid, first_day date, last_day date) to accounting_visitor, reporting_reader;

-- Each account's debits and credits over a period (both ends inclusive, null for open): what every
-- report reads instead of the daily totals themselves.
create or replace function app_private.account_totals(org uuid, first_day date, last_day date)
  returns table (account_id uuid, debit numeric, credit numeric)
  language sql stable as
$$
  select x.account_id, sum(x.debit), sum(x.credit)
    from app_private.rolled_period(org, account_totals.first_day, account_totals.last_day) p
    cross join lateral (
      select m.account_id, m.debit, m.credit from app_public.account_monthly_totals m
       where m.organization_id = org and m.month >= p.rolled_from and m.month < p.rolled_to
      union all
      select t.account_id, t.debit, t.credit from app_public.account_daily_totals t
       where t.organization_id = org and t.day >= p.first_day and t.day < p.rolled_from
      union all
      select t.account_id, t.debit, t.credit from app_public.account_daily_totals t
       where t.organization_id = org and t.day >= p.rolled_to and t.day <= p.last_day
    ) x
   group by x.account_id
$$;
grant execute on function app_private.account_totals(org uuid, first_day date, last_day date) to accounting_visitor, reporting_reader;

-- How many events have one of `statuses` (null: any) over a period (both ends inclusive, null for
-- open), by transaction date.
create or replace function app_private.event_count(org uuid, statuses text[], first_day date, last_day date)
  returns bigint
  language sql stable as
$$
  select coalesce(sum(x.n), 0)::bigint
    from app_private.rolled_period(org, event_count.first_day, event_count.last_day) p
    cross join lateral (
      select m.n from app_public.ledger_event_monthly_counts m
       where m.organization_id = org and m.month >= p.rolled_from and m.month < p.rolled_to
         and (statuses is null or m.status = any (statuses))
      union all
      select c.n from app_public.ledger_event_daily_counts c
       where c.organization_id = org and c.day >= p.first_day and c.day < p.rolled_from
         and (statuses is null or c.status = any (statuses))
      union all
      select c.n from app_public.ledger_event_daily_counts c
       where c.organization_id = org and c.day >= p.rolled_to and c.day <= p.last_day
         and (statuses is null or c.status = any (statuses))
    ) x
$$;
grant execute on function app_private.event_count(org uuid, statuses text[], first_day date, last_day date) to accounting_visitor;

-- Rolls an organization's months before `through` (a month's first day, the current month's at the
-- latest) into monthly rows, those not rolled yet; returns how many account-months it wrote. Takes
-- the organization's advisory lock and row without waiting (the rule above): while a change of
-- the organization is in flight it fails (lock_not_available) and changes nothing; until it
-- commits, the organization's changes of the journal and the events wait. A monthly row already
-- there for a month not yet rolled would be counted twice: the insert fails instead.
create or replace function app_private.roll_up_monthly_totals(org uuid, through date default app_private.current_month_start())
  returns integer
  language plpgsql volatile as
$$
declare
  v_from date;
  n integer;
begin
  if through is distinct from date_trunc('month', through::timestamp)::date then
    perform app_private.fail('Monthly totals are rolled up through the first day of a month.');
  end if;
  -- A repeatable-read snapshot would predate changes that committed while it tried its locks.
  if current_setting('transaction_isolation') <> 'read committed' then
    perform app_private.fail('Monthly totals are rolled up in a read committed transaction.');
  end if;
  if through > app_private.current_month_start() then
    perform app_private.fail('Monthly totals are rolled up through the current month''s first day at the latest.');
  end if;
  if not pg_try_advisory_xact_lock(app_private.monthly_totals_key(org)) then
    raise exception 'The organization''s totals are being changed; try again.' using errcode = 'lock_not_available';
  end if;
  select o.totals_rolled_through into v_from from app_public.organizations o where o.id = org for no key update nowait;
  if not found or v_from >= through then return 0; end if;
  insert into app_public.account_monthly_totals (organization_id, account_id, month, debit, credit)
    select org, t.account_id, date_trunc('month', t.day::timestamp)::date, sum(t.debit), sum(t.credit)
      from app_public.account_daily_totals t
     where t.organization_id = org and t.day >= coalesce(v_from, '-infinity'::date) and t.day < through
     group by 2, 3 having sum(t.debit) <> 0 or sum(t.credit) <> 0 order by 2, 3;
  get diagnostics n = row_count;
  insert into app_public.ledger_event_monthly_counts (organization_id, month, status, n)
    select org, date_trunc('month', c.day::timestamp)::date, c.status, sum(c.n)
      from app_public.ledger_event_daily_counts c
     where c.organization_id = org and c.day >= coalesce(v_from, '-infinity'::date) and c.day < through
     group by 2, 3 having sum(c.n) <> 0 order by 2, 3;
  update app_public.organizations o set totals_rolled_through = through where o.id = org;
  return n;
end $$;

-- Every organization's months before the current one rolled up, each organization in its own
-- transaction so that its changes wait for no other's rollup. An organization whose changes keep
-- its lock taken through ten tries a tenth of a second apart (about a second), or whose rollup
-- fails (a warning says why), is left for the next run. Returns how many organizations it rolled
-- and how many it left.
create or replace procedure app_private.roll_up_all_monthly_totals(inout rolled integer default 0, inout left_for_later integer default 0)
  language plpgsql as
$$
declare
  v_org uuid;
  v_through date := app_private.current_month_start();
begin
  if current_setting('transaction_isolation') <> 'read committed' then
    perform app_private.fail('Monthly totals are rolled up in a read committed transaction.');
  end if;
  rolled := 0;
  left_for_later := 0;
  for v_org in select o.id from app_public.organizations o
                where o.totals_rolled_through is null or o.totals_rolled_through < v_through order by o.id loop
    -- Taken between two changes of the organization: a few tries, a tenth of a second apart.
    for attempt in 1..10 loop
      begin
        perform app_private.roll_up_monthly_totals(v_org, v_through);
        rolled := rolled + 1;
        exit;
      exception
        when lock_not_available then
          if attempt = 10 then left_for_later := left_for_later + 1; else perform pg_sleep(0.1); end if;
        -- One organization's failure leaves the others to be rolled.
        when others then
          raise warning 'roll_up_monthly_totals: organization %: %', v_org, sqlerrm;
          left_for_later := left_for_later + 1;
          exit;
      end;
    end loop;
    commit;
  end loop;
end $$;
--! EndIncluded ledger/monthly-totals.sql
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
declare
  v_first date; -- the earliest day whose totals the statement changed
begin
  -- The daily rows, each organization's advisory lock held, then the monthly ones when a day is
  -- before the current month (monthly-totals.sql: only such a change takes the organization's row
  -- and reads how far its months are rolled).
  if tg_op = 'INSERT' then
    with daily as (
      insert into app_public.account_daily_totals as t (organization_id, account_id, day, debit, credit)
        select organization_id, account_id, txn_date, sum(debit), sum(credit)
          from new_rows where not voided group by 1, 2, 3 order by 1, 2, 3
        on conflict (organization_id, account_id, day) do update
          set debit = t.debit + excluded.debit, credit = t.credit + excluded.credit
        returning t.organization_id, t.day)
    select min(d.day) into v_first
      from daily d, lateral (select pg_advisory_xact_lock_shared(app_private.monthly_totals_key(d.organization_id))) l;
    if v_first < app_private.current_month_start() then
      perform app_private.add_monthly_account_totals(array_agg(organization_id), array_agg(account_id), array_agg(txn_date),
                array_agg(debit), array_agg(credit))
         from new_rows where not voided;
    end if;
  elsif tg_op = 'UPDATE' then
    with daily as (
      insert into app_public.account_daily_totals as t (organization_id, account_id, day, debit, credit)
        select organization_id, account_id, txn_date, sum(debit), sum(credit) from (
          select organization_id, account_id, txn_date, debit, credit from new_rows where not voided
          union all
          select organization_id, account_id, txn_date, -debit, -credit from old_rows where not voided) x
        group by 1, 2, 3 having sum(debit) <> 0 or sum(credit) <> 0 order by 1, 2, 3
        on conflict (organization_id, account_id, day) do update
          set debit = t.debit + excluded.debit, credit = t.credit + excluded.credit
        returning t.organization_id, t.day)
    select min(d.day) into v_first
      from daily d, lateral (select pg_advisory_xact_lock_shared(app_private.monthly_totals_key(d.organization_id))) l;
    if v_first < app_private.current_month_start() then
      perform app_private.add_monthly_account_totals(array_agg(organization_id), array_agg(account_id), array_agg(txn_date),
                array_agg(debit), array_agg(credit))
         from (select organization_id, account_id, txn_date, debit, credit from new_rows where not voided
               union all
               select organization_id, account_id, txn_date, -debit, -credit from old_rows where not voided) x;
    end if;
  else
    with daily as (
      insert into app_public.account_daily_totals as t (organization_id, account_id, day, debit, credit)
        select organization_id, account_id, txn_date, -sum(debit), -sum(credit)
          from old_rows r where not voided
           -- Rows of an organization being deleted go with it.
           and exists (select 1 from app_public.organizations o where o.id = r.organization_id)
         group by 1, 2, 3 order by 1, 2, 3
        on conflict (organization_id, account_id, day) do update
          set debit = t.debit + excluded.debit, credit = t.credit + excluded.credit
        returning t.organization_id, t.day)
    select min(d.day) into v_first
      from daily d, lateral (select pg_advisory_xact_lock_shared(app_private.monthly_totals_key(d.organization_id))) l;
    if v_first < app_private.current_month_start() then
      perform app_private.add_monthly_account_totals(array_agg(organization_id), array_agg(account_id), array_agg(txn_date),
                array_agg(-debit), array_agg(-credit))
         from old_rows where not voided;
    end if;
  end if;
  return null;
end $$;
grant execute on function app_private.tg_journal_lines__totals() to accounting_visitor;
--! EndIncluded ledger/journal.sql
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
grant update (category_id, contact_id, direction, event_type, functional_amount, has_document, journal_entry_id, memo, merchant_name, payment_account_id, reference, reversal_entry_id, splits, status, tax_account_id, tax_amount, tax_code, transaction_date, updated) on app_public.ledger_events to accounting_visitor;

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
  -- What a contact owes or is owed is what its documents say (contact_balances): nothing else posts there.
  if a.account_type in ('accounts_receivable', 'accounts_payable') then
    perform app_private.fail('Accounts Receivable and Payable take only invoices, bills and their payments.');
  end if;
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

-- Events as the API shows them (contract: LedgerEvent), given their ids: every list, lookup and
-- feed page builds its events here, set-based. What an event shows from other tables (accounts,
-- entries, contact, receipts, clearings, external ids) is joined once for all the ids, not looked
-- up per event: a function per event started its executor, with a plan node for each of those
-- lookups, once per event (a page of 111 events paid 11 ms; joined, 6). PL/pgSQL with its generic
-- plan kept: a SQL function's query is planned again at every call, and this join takes 4 ms to
-- plan; left to choose, the plan cache kept planning one-id calls afresh (a generic plan assumes
-- ten ids, and one looks cheaper).
create or replace function app_private.ledger_events_json(event_ids uuid[]) returns table (id uuid, event jsonb)
  language plpgsql stable set plan_cache_mode = force_generic_plan as
$$
begin
  return query select e.id, jsonb_build_object(
    'id', e.id, 'eventType', e.event_type, 'direction', e.direction, 'merchantName', e.merchant_name,
    'functionalAmount', app_private.money(e.functional_amount), 'functionalCurrency', e.functional_currency,
    'transactionDate', to_char(e.transaction_date, 'YYYY-MM-DD'), 'status', e.status, 'memo', e.memo,
    'hasDocument', e.has_document,
    'account', case when c.id is null then null else jsonb_build_object('id', c.id, 'name', c.name, 'accountType', c.account_type) end,
    'category', case when c.id is null then null else jsonb_build_object('id', c.id, 'name', c.name) end,
    'paymentAccount', case when p.id is null then null else jsonb_build_object('id', p.id, 'name', p.name) end,
    'taxAmount', app_private.money(e.tax_amount), 'taxCode', e.tax_code,
    'taxAccount', case when t.id is null then null else jsonb_build_object('id', t.id, 'name', t.name) end,
    'splits', case when e.splits is null then '[]'::jsonb else app_private.splits_json(e.splits) end,
    'contact', case when k.id is null then null else jsonb_build_object('id', k.id, 'displayName', k.display_name) end,
    'journalEntry', case when j.id is null then null else jsonb_build_object('id', j.id,
        'txnDate', to_char(j.txn_date, 'YYYY-MM-DD'), 'totalAmount', app_private.money(j.total_amount),
        'voidedAt', app_private.iso(j.voided_at)) end,
    'reversalEntry', case when v.id is null then null else jsonb_build_object('id', v.id,
        'txnDate', to_char(v.txn_date, 'YYYY-MM-DD'), 'totalAmount', app_private.money(v.total_amount),
        'voidedAt', app_private.iso(v.voided_at)) end,
    'cleared', cl.event_id is not null,
    'suggestedCategory', case when e.status = 'needs_review' and e.category_id is null
      then app_private.suggested_category(e.organization_id, e.merchant_name, e.event_type) end,
    'externalRefs', case when e.status in ('synced', 'reconciled') then coalesce(x.refs, '[]'::jsonb) else '[]'::jsonb end,
    -- Receipts linked to it, oldest first (contract: receipts {id, filename, objectKey, uploadedAt}).
    'receipts', coalesce(r.receipts, '[]'::jsonb),
    'source', e.source, 'importBatchId', e.import_batch_id, 'reference', e.reference,
    'created', app_private.iso(e.created), 'updated', app_private.iso(e.updated))
    from app_public.ledger_events e
    left join app_public.accounts c on c.id = e.category_id
    left join app_public.accounts p on p.id = e.payment_account_id
    left join app_public.accounts t on t.id = e.tax_account_id
    left join app_public.journal_entries j on j.id = e.journal_entry_id
    left join app_public.journal_entries v on v.id = e.reversal_entry_id
    left join app_public.contacts k on k.id = e.contact_id
    left join (select distinct q.event_id from app_public.reconciliation_clearings q where q.event_id = any (event_ids)) cl
      on cl.event_id = e.id
    left join (select q.event_id, jsonb_agg(jsonb_build_object('externalSystem', q.external_system, 'externalId', q.external_id,
                      'syncedAt', app_private.iso(q.synced_at)) order by q.external_system) refs
                 from app_public.ledger_event_external_refs q where q.event_id = any (event_ids) group by q.event_id) x
      on x.event_id = e.id
    left join (select q.event_id, jsonb_agg(jsonb_build_object('id', q.id, 'filename', q.filename, 'objectKey', q.object_key,
                      'uploadedAt', app_private.iso(q.uploaded_at), 'contentType', q.content_type, 'status', q.status)
                      order by q.uploaded_at, q.id) receipts
                 from app_public.receipts q where q.event_id = any (event_ids) group by q.event_id) r
      on r.event_id = e.id
   where e.id = any (event_ids);
end $$;
grant execute on function app_private.ledger_events_json(event_ids uuid[]) to accounting_visitor;

-- One event, or null when it is not visible.
create or replace function app_private.ledger_event_json_by_id(event_id uuid) returns jsonb
  language sql stable as
$$ select x.event from app_private.ledger_events_json(array[ledger_event_json_by_id.event_id]) x $$;
grant execute on function app_private.ledger_event_json_by_id(event_id uuid) to accounting_visitor;

create or replace function app_private.tg_ledger_events__counts() returns trigger
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
declare
  v_first date; -- the earliest day whose counts the statement changed
begin
  -- The daily rows, each organization's advisory lock held, then the monthly ones when a day is
  -- before the current month (monthly-totals.sql: only such a change takes the organization's row
  -- and reads how far its months are rolled).
  if tg_op = 'INSERT' then
    with daily as (
      insert into app_public.ledger_event_daily_counts as t (organization_id, day, status, n)
        select organization_id, transaction_date, status, count(*) from new_rows group by 1, 2, 3 order by 1, 2, 3
        on conflict (organization_id, day, status) do update set n = t.n + excluded.n
        returning t.organization_id, t.day)
    select min(d.day) into v_first
      from daily d, lateral (select pg_advisory_xact_lock_shared(app_private.monthly_totals_key(d.organization_id))) l;
    if v_first < app_private.current_month_start() then
      perform app_private.add_monthly_event_counts(array_agg(organization_id), array_agg(transaction_date), array_agg(status),
                array_agg(1::bigint))
         from new_rows;
    end if;
  elsif tg_op = 'UPDATE' then
    with daily as (
      insert into app_public.ledger_event_daily_counts as t (organization_id, day, status, n)
        select organization_id, d, s, sum(k) from (
          select organization_id, transaction_date d, status s, 1 k from new_rows
          union all
          select organization_id, transaction_date, status, -1 from old_rows) x
        group by 1, 2, 3 having sum(k) <> 0 order by 1, 2, 3
        on conflict (organization_id, day, status) do update set n = t.n + excluded.n
        returning t.organization_id, t.day)
    select min(d.day) into v_first
      from daily d, lateral (select pg_advisory_xact_lock_shared(app_private.monthly_totals_key(d.organization_id))) l;
    if v_first < app_private.current_month_start() then
      perform app_private.add_monthly_event_counts(array_agg(organization_id), array_agg(d), array_agg(s), array_agg(k))
         from (select organization_id, transaction_date d, status s, 1::bigint k from new_rows
               union all
               select organization_id, transaction_date, status, -1 from old_rows) x;
    end if;
  else
    with daily as (
      insert into app_public.ledger_event_daily_counts as t (organization_id, day, status, n)
        select organization_id, transaction_date, status, -count(*) from old_rows r
         -- Rows of an organization being deleted go with it.
         where exists (select 1 from app_public.organizations o where o.id = r.organization_id)
         group by 1, 2, 3 order by 1, 2, 3
        on conflict (organization_id, day, status) do update set n = t.n + excluded.n
        returning t.organization_id, t.day)
    select min(d.day) into v_first
      from daily d, lateral (select pg_advisory_xact_lock_shared(app_private.monthly_totals_key(d.organization_id))) l;
    if v_first < app_private.current_month_start() then
      perform app_private.add_monthly_event_counts(array_agg(organization_id), array_agg(transaction_date), array_agg(status),
                array_agg(-1::bigint))
         from old_rows;
    end if;
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
  v_rule record;
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
  v_id := app_private.uuid_v7();
  -- Without a category, the rule for the event (rule_classifications) classifies it. (Asked
  -- about no event when a category is given: the record still gets its fields, null.)
  select * into v_rule from app_private.rule_classifications(create_ledger_event.organization_id,
    case when v_category is null then array[row(v_id, v_merchant, app_private.direction_for(v_type), v_amount,
      payment_account_id, v_type, v_date, null)::app_private.rule_subject] else '{}' end);
  if v_rule.rule_id is not null then
    update app_public.category_rules set match_count = match_count + 1 where id = v_rule.rule_id;
  end if;
  insert into app_public.ledger_events (id, organization_id, event_type, direction, merchant_name, functional_amount,
      functional_currency, transaction_date, category_id, payment_account_id, splits, tax_amount, tax_code, tax_account_id, contact_id)
    select v_id, create_ledger_event.organization_id, v_type, app_private.direction_for(v_type), v_merchant, v_amount,
      o.functional_currency, v_date, coalesce(v_category, v_rule.category_id), payment_account_id, v_rule.splits,
      v_rule.tax_amount, v_rule.tax_code, v_rule.tax_account_id, v_rule.contact_id
      from app_public.organizations o where o.id = create_ledger_event.organization_id;
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

drop function if exists app_public.list_ledger_events(uuid, jsonb, boolean, integer, text, text, text, text, jsonb, jsonb, jsonb, text, integer, integer, text, text, uuid);
-- Planned for the tenant asking, every call (docs/architecture.md, Many tenants).
create or replace function app_public.list_ledger_events(organization_id uuid, status jsonb default null,
    has_document boolean default null, since_days integer default null, date_from text default null,
    date_to text default null, amount_min text default null, amount_max text default null,
    account_ids jsonb default null, category_ids jsonb default null, payment_account_ids jsonb default null,
    search text default null, "limit" integer default null, "offset" integer default null,
    sort_by text default null, sort_dir text default null, reconciliation_id uuid default null,
    contact_ids jsonb default null) returns jsonb
  language plpgsql stable set plan_cache_mode = force_custom_plan as
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
  v_contacts uuid[];
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
  if contact_ids is not null then
    v_contacts := app_private.uuid_list(contact_ids, 'contactIds');
    v_where := v_where || ' and e.contact_id = any ($15)';
  end if;
  if search is not null and search <> '' then
    -- ILIKE as PostgreSQL does it (lower() of both sides, then LIKE), the pattern lowered once
    -- rather than on every row.
    v_pattern := lower(app_private.like_pattern(search));
    -- The merchant from the date index (merchant_name and has_memo are in it); the memos from the
    -- events that have one in the same dates (ledger_events_memo_idx), read once for the whole
    -- statement: a memo of up to 5,000 characters cannot ride in an index.
    v_where := v_where || ' and (lower(e.merchant_name) like $11 or (e.has_memo and e.id in (select m.id from app_public.ledger_events m
        where m.organization_id = $1 and m.has_memo' || case when v_from is not null then ' and m.transaction_date >= $3' else '' end
      || case when v_to is not null then ' and m.transaction_date <= $4' else '' end || ' and lower(m.memo) like $11)))';
  end if;

  if reconciliation_id is not null then
    select * into v_reconciliation from app_public.reconciliations r where r.id = list_ledger_events.reconciliation_id;
    if not found then perform app_private.fail('Reconciliation not found.', 'AP404'); end if;
    -- An open one: the events on the account (its payment account, or the other side of a
    -- transfer) up to the statement date that no other reconciliation of the account cleared, and
    -- those it ticked; a completed one: those it cleared (docs/api.md, Closing a period).
    v_where := v_where || case when v_reconciliation.status = 'open' then
      ' and (e.payment_account_id = ($14).payment_account_id or e.category_id = ($14).payment_account_id)
        and e.transaction_date <= ($14).statement_date
        and (exists (select 1 from app_public.reconciliation_clearings k where k.event_id = e.id and k.reconciliation_id = ($14).id)
             or (e.status in (''confirmed'', ''synced'', ''reconciled'')
                 and not exists (select 1 from app_public.reconciliation_clearings k
                                  where k.event_id = e.id and k.account_id = ($14).payment_account_id)))'
      else ' and exists (select 1 from app_public.reconciliation_clearings k where k.event_id = e.id and k.reconciliation_id = ($14).id)' end;
  end if;

  -- The total: from the status counts by month and day when only status and dates filter, else counted.
  if reconciliation_id is null and has_document is null and v_min is null and v_max is null and v_accounts is null and v_categories is null
     and v_payments is null and v_contacts is null and v_pattern is null then
    v_total := app_private.event_count(list_ledger_events.organization_id, v_status, v_from, v_to);
  else
    execute 'select count(*) from app_public.ledger_events e where e.organization_id = $1' || v_where
      into v_total
      using organization_id, v_status, v_from, v_to, has_document, v_min, v_max, v_accounts, v_categories, v_payments, v_pattern,
            null::integer, null::integer, v_reconciliation, v_contacts;
  end if;

  -- The page, in one statement: ids in total order, then each event with its accounts and entry.
  execute format($q$
    with page as (
      select e.id, row_number() over () as ord from (
        select e.id from app_public.ledger_events e
         where e.organization_id = $1 %1$s
         order by %2$s %3$s, e.id %3$s
         limit $12 offset $13) e)
    select coalesce(jsonb_agg(e.event %4$s order by page.ord), '[]'::jsonb)
      from page
      join app_private.ledger_events_json(array(select page.id from page)) e on e.id = page.id
  $q$, v_where, v_order, v_dir,
    -- In a reconciliation's list, cleared is whether this one ticked it (a transfer is on two).
    case when reconciliation_id is null then '' else $c$|| jsonb_build_object('cleared', exists (select 1
      from app_public.reconciliation_clearings k where k.event_id = e.id and k.reconciliation_id = ($14).id))$c$ end)
    into v_items
    using organization_id, v_status, v_from, v_to, has_document, v_min, v_max, v_accounts, v_categories, v_payments,
          v_pattern, v_limit, v_offset, v_reconciliation, v_contacts;
  return jsonb_build_object('items', v_items, 'totalCount', v_total, 'pageSize', v_limit, 'offset', v_offset);
end $$;
grant execute on function app_public.list_ledger_events(organization_id uuid, status jsonb, has_document boolean, since_days integer, date_from text, date_to text, amount_min text, amount_max text, account_ids jsonb, category_ids jsonb, payment_account_ids jsonb, search text, "limit" integer, "offset" integer, sort_by text, sort_dir text, reconciliation_id uuid, contact_ids jsonb) to accounting_visitor;

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
  v_date date;
  v_sale boolean;
  v_tax_account uuid;
  v_memo text := normalize(memo, NFC);
  v_splits jsonb;
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
  -- A tax portion computed from a sales tax code follows the amount, the side (sale or purchase)
  -- and the date; an edit of anything else leaves it as it is.
  v_tax := e.tax_amount;
  v_tax_account := e.tax_account_id;
  v_date := case when update_ledger_event.transaction_date is null then e.transaction_date
                 else app_private.parse_date(update_ledger_event.transaction_date, 'Transaction date must be a date in YYYY-MM-DD format.') end;
  v_splits := e.splits;
  if v_splits is not null then
    -- Split: the lines must still add up, and still fit the type (else the event is classified
    -- again, as one whose category no longer fits); a computed tax follows the date.
    if v_amount <> e.functional_amount then perform app_private.fail('Splits must add up to the amount.'); end if;
    if not app_private.splits_fit(v_splits, v_type) then
      v_splits := null; v_category := null; v_tax := null; v_tax_account := null;
      e.tax_code := null;
    else
      v_category := app_private.largest_split_category(v_splits);
      if v_date <> e.transaction_date then
        v_splits := app_private.splits_on_day(v_splits, v_type, v_date);
        v_tax := app_private.splits_tax(v_splits);
      end if;
    end if;
  elsif e.tax_code is not null then
    v_sale := app_private.is_sale(v_category, v_type);
    if v_amount <> e.functional_amount or v_date <> e.transaction_date or v_sale is distinct from app_private.is_sale(e.category_id, e.event_type) then
      v_tax := app_private.tax_for_account(v_amount, e.tax_code, v_sale, v_date);
      v_tax_account := app_private.tax_account_or_default(e.organization_id, v_tax, v_tax_account);
    end if;
  end if;
  if v_tax is not null and v_tax >= v_amount then
    perform app_private.fail('Tax amount must be less than the amount.');
  end if;
  update app_public.ledger_events x set
      transaction_date = v_date,
      memo = coalesce(v_memo, x.memo),
      functional_amount = v_amount,
      event_type = v_type,
      -- Only a change of type recomputes the direction: an imported event's comes from the sign.
      direction = case when update_ledger_event.event_type is null then x.direction else app_private.direction_for(v_type) end,
      category_id = v_category,
      tax_amount = v_tax,
      tax_account_id = v_tax_account,
      tax_code = e.tax_code,
      splits = v_splits
    where x.id = e.id;
  return jsonb_build_object('success', true, 'error', null, 'event', app_private.ledger_event_json_by_id(e.id));
end $$;
grant execute on function app_public.update_ledger_event(organization_id uuid, event_id uuid, transaction_date text, memo text, amount text, event_type text) to accounting_visitor;

-- Classify: category, payment account and tax (docs/api.md, Money and the ledger; a tax code
-- without an amount takes what the code's taxes put in the tax account: tax_for_account). Absent
-- arguments keep their value. `splits` classifies the event into several lines instead
-- (docs/api.md, Split transactions and the sales tax return); a categoryId makes it one line again.
drop function if exists app_public.update_staged_entry(uuid, uuid, uuid, uuid, text, uuid, text);
drop function if exists app_public.update_staged_entry(uuid, uuid, uuid, uuid, text, uuid, text, jsonb);
create or replace function app_public.update_staged_entry(organization_id uuid, event_id uuid, category_id uuid default null,
    payment_id uuid default null, tax_amount text default null, tax_account_id uuid default null,
    tax_code text default null, splits jsonb default null, contact_id uuid default null) returns jsonb
  language plpgsql volatile as
$$
declare
  e app_public.ledger_events;
  v_category uuid;
  v_payment uuid;
  v_tax numeric;
  v_tax_account uuid;
  v_tax_code text;
  v_splits jsonb;
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
  if splits is not null and (category_id is not null or tax_amount is not null or tax_code is not null) then
    perform app_private.fail('Give splits, or categoryId with taxAmount and taxCode, not both: each split has its own tax.');
  end if;
  if e.splits is not null and splits is null and category_id is null and (tax_amount is not null or tax_code is not null) then
    perform app_private.fail('The tax of a split event is on its splits: give splits, or a categoryId to make it one line.');
  end if;
  v_payment := coalesce(payment_id, e.payment_account_id);
  if payment_id is not null then perform app_private.check_payment_account(payment_id); end if;

  v_tax := e.tax_amount;
  v_tax_code := e.tax_code;
  v_splits := e.splits;
  if splits is not null then
    v_splits := app_private.checked_splits(splits, e.event_type, e.functional_amount, e.transaction_date);
  elsif category_id is not null and e.splits is not null then
    -- One line again: the splits' tax goes with them.
    v_splits := null; v_tax := null; v_tax_code := null;
  end if;

  if v_splits is not null then
    v_category := app_private.largest_split_category(v_splits);
    v_tax := app_private.splits_tax(v_splits);
    v_tax_code := null;
    if v_payment in (select (s->>'category_id')::uuid from jsonb_array_elements(v_splits) s) then
      perform app_private.fail('Category and payment account must differ.');
    end if;
  else
    v_category := coalesce(category_id, e.category_id);
    if category_id is not null then perform app_private.check_category(category_id, e.event_type); end if;
    if v_category = v_payment then perform app_private.fail('Category and payment account must differ.'); end if;
    if tax_code is not null then
      v_tax_code := tax_code;
      v_tax := app_private.tax_for_account(e.functional_amount, update_staged_entry.tax_code,
        app_private.is_sale(v_category, e.event_type), e.transaction_date);
      if v_tax is null then perform app_private.fail('Unknown tax code.'); end if;
    end if;
    if tax_amount is not null then
      v_tax := app_private.parse_amount(tax_amount, 'Tax amount must be a decimal string of at least 0.', true);
      if tax_code is null then v_tax_code := null; end if; -- an explicit amount replaces a computed one
      perform app_private.check_typed_tax(v_tax, v_tax_code, app_private.is_sale(v_category, e.event_type), e.transaction_date);
    end if;
    if v_tax is not null and v_tax >= e.functional_amount then
      perform app_private.fail('Tax amount must be less than the amount.');
    end if;
  end if;
  v_tax_account := coalesce(tax_account_id, e.tax_account_id);
  if tax_account_id is not null then perform app_private.check_tax_account(tax_account_id); end if;
  v_tax_account := app_private.tax_account_or_default(e.organization_id, v_tax, v_tax_account);
  if v_tax_account is not null and (v_tax_account in (v_category, v_payment)
     or v_tax_account in (select (s->>'category_id')::uuid from jsonb_array_elements(v_splits) s)) then
    perform app_private.fail('The tax account must differ from the category and payment accounts.');
  end if;

  if contact_id is not null and not exists (select 1 from app_public.contacts k where k.id = contact_id) then
    perform app_private.fail('Contact not found.');
  end if;
  update app_public.ledger_events x set category_id = v_category, payment_account_id = v_payment,
      tax_amount = v_tax, tax_account_id = v_tax_account, tax_code = v_tax_code, splits = v_splits,
      contact_id = coalesce(update_staged_entry.contact_id, x.contact_id)
    where x.id = e.id;
  return jsonb_build_object('success', true, 'error', null, 'event', app_private.ledger_event_json_by_id(e.id));
end $$;
grant execute on function app_public.update_staged_entry(organization_id uuid, event_id uuid, category_id uuid, payment_id uuid, tax_amount text, tax_account_id uuid, tax_code text, splits jsonb, contact_id uuid) to accounting_visitor;
--! EndIncluded ledger/events.sql
--! Included ledger/daily-totals.sql
-- Rebuilding an organization's daily totals (per account and day, and per sales tax and day, kept
-- by the journal's triggers), daily counts (per status and day, kept by the events' triggers) and
-- the monthly totals and counts of its rolled months (monthly-totals.sql) from the journal lines
-- and the events themselves, for the operator (`enqueue rebuild_daily_totals`): it says whether what
-- the triggers kept was right, and puts right what was not.
-- Re-runnable: `create or replace`.

-- In one repeatable-read transaction (the worker's), so that the journal and the totals are read
-- from one snapshot while postings go on; a posting of the organization that commits meanwhile
-- makes a repair fail to serialize, and the job is retried, as does a rollup of its months (the
-- organization's row is held FOR SHARE, which a rollup's update conflicts with). A total of zero
-- and no row are the same; a monthly row that should be zero, or that is of a month not rolled,
-- is removed (a later rollup inserts it).
create or replace function app_private.rebuild_daily_totals(org uuid) returns jsonb
  language plpgsql volatile as
$$
declare
  started timestamptz := clock_timestamp();
  v_totals_kept bigint;
  v_counts_kept bigint;
  v_totals_wrong bigint;
  v_counts_wrong bigint;
  v_tax_kept bigint;
  v_tax_wrong bigint;
  v_month_totals_kept bigint;
  v_month_totals_wrong bigint;
  v_month_counts_kept bigint;
  v_month_counts_wrong bigint;
  v_through date;
begin
  if current_setting('transaction_isolation') not in ('repeatable read', 'serializable') then
    perform app_private.fail('rebuild_daily_totals must run in a repeatable read transaction.');
  end if;
  -- A posting waits for no repair longer than this; the repair gives up first and the job is
  -- retried (postings take the totals and the counts in different orders, so no order of ours
  -- avoids a deadlock, but then the job, not a user's request, is the one that fails).
  perform set_config('lock_timeout', '200ms', true);
  select o.totals_rolled_through into v_through from app_public.organizations o where o.id = org for share;
  if not found then
    perform app_private.fail('Organization Not Found.', 'AP404');
  end if;
  drop table if exists pg_temp.rebuilt_totals, pg_temp.wrong_totals, pg_temp.rebuilt_counts, pg_temp.wrong_counts,
    pg_temp.rebuilt_tax, pg_temp.wrong_tax, pg_temp.rebuilt_month_totals, pg_temp.wrong_month_totals,
    pg_temp.rebuilt_month_counts, pg_temp.wrong_month_counts;

  create temporary table rebuilt_totals on commit drop as
    select l.account_id, l.txn_date as day, sum(l.debit) as debit, sum(l.credit) as credit
      from app_public.journal_lines l where l.organization_id = org and not l.voided group by 1, 2;
  create temporary table wrong_totals on commit drop as
    select coalesce(r.account_id, t.account_id) as account_id, coalesce(r.day, t.day) as day,
           coalesce(r.debit, 0) as debit, coalesce(r.credit, 0) as credit
      from rebuilt_totals r
      full join (select * from app_public.account_daily_totals k where k.organization_id = org) t
        on t.account_id = r.account_id and t.day = r.day
     where coalesce(r.debit, 0) <> coalesce(t.debit, 0) or coalesce(r.credit, 0) <> coalesce(t.credit, 0);
  create temporary table rebuilt_counts on commit drop as
    select e.transaction_date as day, e.status, count(*) as n
      from app_public.ledger_events e where e.organization_id = org group by 1, 2;
  create temporary table wrong_counts on commit drop as
    select coalesce(r.day, c.day) as day, coalesce(r.status, c.status) as status, coalesce(r.n, 0) as n
      from rebuilt_counts r
      full join (select * from app_public.ledger_event_daily_counts k where k.organization_id = org) c
        on c.day = r.day and c.status = r.status
     where coalesce(r.n, 0) <> coalesce(c.n, 0);

  -- The rolled months: what their days sum to.
  create temporary table rebuilt_month_totals on commit drop as
    select r.account_id, date_trunc('month', r.day::timestamp)::date as month, sum(r.debit) as debit, sum(r.credit) as credit
      from rebuilt_totals r where r.day < v_through group by 1, 2;
  create temporary table wrong_month_totals on commit drop as
    select coalesce(r.account_id, t.account_id) as account_id, coalesce(r.month, t.month) as month,
           coalesce(r.debit, 0) as debit, coalesce(r.credit, 0) as credit
      from rebuilt_month_totals r
      full join (select * from app_public.account_monthly_totals k where k.organization_id = org) t
        on t.account_id = r.account_id and t.month = r.month
     where coalesce(r.debit, 0) <> coalesce(t.debit, 0) or coalesce(r.credit, 0) <> coalesce(t.credit, 0);
  create temporary table rebuilt_month_counts on commit drop as
    select date_trunc('month', r.day::timestamp)::date as month, r.status, sum(r.n) as n
      from rebuilt_counts r where r.day < v_through group by 1, 2;
  create temporary table wrong_month_counts on commit drop as
    select coalesce(r.month, c.month) as month, coalesce(r.status, c.status) as status, coalesce(r.n, 0) as n
      from rebuilt_month_counts r
      full join (select * from app_public.ledger_event_monthly_counts k where k.organization_id = org) c
        on c.month = r.month and c.status = r.status
     where coalesce(r.n, 0) <> coalesce(c.n, 0);

  -- As tg_journal_lines__sales_tax keeps them: an entry counts once per tax type, a reversal -1.
  create temporary table rebuilt_tax on commit drop as
    select x.txn_date as day, x.tax_type, sum(x.collected) as collected, sum(x.itcs) as itcs,
           sum(case when j.reverses_entry_id is null then 1 else -1 end) as events
      from (select l.entry_id, l.txn_date, l.tax_type,
                   sum(case when l.tax_on_sale then l.credit - l.debit else 0 end) as collected,
                   sum(case when l.tax_on_sale then 0 else l.debit - l.credit end) as itcs
              from app_public.journal_lines l
             where l.organization_id = org and l.tax_type is not null and not l.voided group by 1, 2, 3) x
      join app_public.journal_entries j on j.id = x.entry_id
     group by 1, 2;
  create temporary table wrong_tax on commit drop as
    select coalesce(r.day, k.day) as day, coalesce(r.tax_type, k.tax_type) as tax_type, coalesce(r.collected, 0) as collected,
           coalesce(r.itcs, 0) as itcs, coalesce(r.events, 0) as events
      from rebuilt_tax r
      full join (select * from app_public.sales_tax_daily_totals k where k.organization_id = org) k
        on k.day = r.day and k.tax_type = r.tax_type
     where coalesce(r.collected, 0) <> coalesce(k.collected, 0) or coalesce(r.itcs, 0) <> coalesce(k.input_tax_credits, 0)
        or coalesce(r.events, 0) <> coalesce(k.events, 0);

  -- All worked out before any is written: rows are locked only for the writes.
  insert into app_public.account_daily_totals as t (organization_id, account_id, day, debit, credit)
    select org, w.account_id, w.day, w.debit, w.credit from wrong_totals w order by 2, 3
    on conflict (organization_id, account_id, day) do update set debit = excluded.debit, credit = excluded.credit;
  insert into app_public.ledger_event_daily_counts as t (organization_id, day, status, n)
    select org, w.day, w.status, w.n from wrong_counts w order by 2, 3
    on conflict (organization_id, day, status) do update set n = excluded.n;
  insert into app_public.sales_tax_daily_totals as t (organization_id, day, tax_type, collected, input_tax_credits, events)
    select org, w.day, w.tax_type, w.collected, w.itcs, w.events from wrong_tax w order by 2, 3
    on conflict (organization_id, day, tax_type) do update
      set collected = excluded.collected, input_tax_credits = excluded.input_tax_credits, events = excluded.events;
  delete from app_public.account_monthly_totals t using wrong_month_totals w
   where t.organization_id = org and t.account_id = w.account_id and t.month = w.month and w.debit = 0 and w.credit = 0;
  insert into app_public.account_monthly_totals as t (organization_id, account_id, month, debit, credit)
    select org, w.account_id, w.month, w.debit, w.credit from wrong_month_totals w where w.debit <> 0 or w.credit <> 0 order by 2, 3
    on conflict (organization_id, account_id, month) do update set debit = excluded.debit, credit = excluded.credit;
  delete from app_public.ledger_event_monthly_counts t using wrong_month_counts w
   where t.organization_id = org and t.month = w.month and t.status = w.status and w.n = 0;
  insert into app_public.ledger_event_monthly_counts as t (organization_id, month, status, n)
    select org, w.month, w.status, w.n from wrong_month_counts w where w.n <> 0 order by 2, 3
    on conflict (organization_id, month, status) do update set n = excluded.n;
  select count(*) into v_totals_kept from rebuilt_totals;
  select count(*) into v_totals_wrong from wrong_totals;
  select count(*) into v_counts_kept from rebuilt_counts;
  select count(*) into v_counts_wrong from wrong_counts;
  select count(*) into v_tax_kept from rebuilt_tax;
  select count(*) into v_tax_wrong from wrong_tax;
  select count(*) into v_month_totals_kept from rebuilt_month_totals;
  select count(*) into v_month_totals_wrong from wrong_month_totals;
  select count(*) into v_month_counts_kept from rebuilt_month_counts;
  select count(*) into v_month_counts_wrong from wrong_month_counts;

  return jsonb_build_object(
    'organizationId', org,
    'equal', v_totals_wrong = 0 and v_counts_wrong = 0 and v_tax_wrong = 0 and v_month_totals_wrong = 0 and v_month_counts_wrong = 0,
    'accountDays', v_totals_kept, 'accountDaysRepaired', v_totals_wrong,
    'statusDays', v_counts_kept, 'statusDaysRepaired', v_counts_wrong,
    'salesTaxDays', v_tax_kept, 'salesTaxDaysRepaired', v_tax_wrong,
    'accountMonths', v_month_totals_kept, 'accountMonthsRepaired', v_month_totals_wrong,
    'statusMonths', v_month_counts_kept, 'statusMonthsRepaired', v_month_counts_wrong,
    'ms', round(extract(epoch from clock_timestamp() - started) * 1000));
end $$;
--! EndIncluded ledger/daily-totals.sql
--! Included chart/accounts.sql
-- The chart of accounts: accounts tied to GIFI codes, sub-accounts, the starter chart, balances.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.accounts
drop policy if exists accounts_tenant on app_public.accounts;
create policy accounts_tenant on app_public.accounts
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select on app_public.accounts to accounting_visitor;
grant select on app_public.accounts to reporting_reader;
grant insert (account_type, active, classification, last_four, name, organization_id, parent_id, sub_type, tax_code_id) on app_public.accounts to accounting_visitor;
grant update (active, last_four, name, parent_id, sub_type, tax_code_id, updated) on app_public.accounts to accounting_visitor;

drop trigger if exists _100_touch_updated on app_public.accounts;
create trigger _100_touch_updated before update on app_public.accounts
  for each row execute function app_private.tg__touch_updated();

drop trigger if exists _200_no_cycle on app_public.accounts;
create trigger _200_no_cycle before update of parent_id on app_public.accounts
  for each row when (new.parent_id is not null and new.parent_id is distinct from old.parent_id)
  execute function app_private.tg_accounts__no_cycle();

------------------------------------------------------------------------------------------------

-- Balances as of a day: debit-normal accounts (asset, expense) debits - credits, others credits - debits.
create or replace function app_private.account_balances(org uuid, as_of date default current_date)
  returns table (account_id uuid, balance numeric)
  language sql stable as
$$
  select t.account_id,
         case when a.classification in ('asset', 'expense') then t.debit - t.credit else t.credit - t.debit end
    from app_private.account_totals(org, null, as_of) t
    join app_public.accounts a on a.id = t.account_id
$$;
grant execute on function app_private.account_balances(org uuid, as_of date) to accounting_visitor, reporting_reader;

create or replace function app_private.account_by_id(org uuid, account uuid) returns jsonb
  language sql stable as
$$ select app_private.account_json(a, (select b.balance from app_private.account_balances(org) b where b.account_id = a.id))
     from app_public.accounts a where a.organization_id = org and a.id = account $$;
grant execute on function app_private.account_by_id(org uuid, account uuid) to accounting_visitor;

-- currentBalance is a JSON number (contract); the balance stays numeric until here.
create or replace function app_private.account_json(a app_public.accounts, balance numeric) returns jsonb
  language sql stable as
$$ select jsonb_build_object('id', a.id, 'name', a.name, 'accountType', a.account_type,
     'classification', a.classification, 'subType', a.sub_type, 'lastFour', a.last_four, 'parentId', a.parent_id,
     'currentBalance', coalesce(balance, 0), 'active', a.active,
     'taxCode', (select app_private.tax_code_json(t) from app_public.tax_codes t where t.id = a.tax_code_id),
     'created', app_private.iso(a.created), 'updated', app_private.iso(a.updated)) $$;
grant execute on function app_private.account_json(a app_public.accounts, balance numeric) to accounting_visitor;

-- Allowed account types: the GIFI suggestions except `total`, plus credit_card and clearing.
create or replace function app_private.check_account_type(account_type text) returns void
  language plpgsql stable as
$$
begin
  if account_type in ('credit_card', 'clearing')
     or (account_type <> 'total' and exists (select 1 from app_public.tax_codes t where t.account_type = check_account_type.account_type)) then
    return;
  end if;
  perform app_private.fail(format('Account type %s is not allowed. Allowed types: %s.', coalesce('"' || account_type || '"', '(none)'),
    (select string_agg(x, ', ' order by x) from (
       select distinct t.account_type as x from app_public.tax_codes t where t.account_type <> 'total'
       union select 'credit_card' union select 'clearing') s)));
end $$;
grant execute on function app_private.check_account_type(account_type text) to accounting_visitor;

create or replace function app_private.create_starter_chart(org uuid) returns void
  language plpgsql volatile as
$$
begin
  insert into app_public.accounts (organization_id, name, account_type, classification, tax_code_id)
  select org, v.name, v.account_type, v.classification, t.id
    from (values
      (1, 'Chequing', 'bank', 'asset', '1002'),
      (2, 'Processor Clearing', 'clearing', 'asset', '1007'),
      (3, 'GST/HST Payable', 'tax_payable', 'liability', '2680'),
      (4, 'Owner''s Equity', 'equity', 'equity', '3540'),
      (5, 'Retained Earnings', 'retained_earnings', 'equity', '3600'),
      (6, 'Sales Revenue', 'income', 'revenue', '8000'),
      (7, 'Cost of Goods Sold', 'cost_of_goods_sold', 'expense', '8320'),
      (8, 'Bank Fees & Charges', 'expense', 'expense', '8715')
    ) v (ord, name, account_type, classification, code)
    join app_public.tax_codes t on t.code = v.code
   order by v.ord;
end $$;
grant execute on function app_private.create_starter_chart(org uuid) to accounting_visitor;

create or replace function app_private.insert_account(org uuid, name text, tax_code_id uuid, account_type text,
    classification text, sub_type text, last_four text, parent_id uuid) returns app_public.accounts
  language plpgsql volatile as
$$
declare
  t app_public.tax_codes;
  r app_public.accounts;
  nm text := app_private.clean_text(name);
  st text := coalesce(app_private.clean_text(sub_type), '');
  typ text := nullif(lower(btrim(account_type)), '');
  cls text := nullif(lower(btrim(classification)), '');
  four text := nullif(btrim(last_four), '');
begin
  if nm is null or nm = '' then perform app_private.fail('Name is required.'); end if;
  if length(nm) > 200 then perform app_private.fail('Name must be at most 200 characters.'); end if;
  if insert_account.tax_code_id is not null then
    select * into t from app_public.tax_codes c where c.id = insert_account.tax_code_id;
    if not found then perform app_private.fail('Tax code not found.'); end if;
    if t.account_type = 'total' then
      perform app_private.fail(format('Tax code %s is a computed total and cannot be used for an account.', t.code));
    end if;
    typ := coalesce(typ, t.account_type);
    cls := coalesce(cls, t.classification);
  elsif typ is null or cls is null then
    perform app_private.fail('Give either taxCodeId, or accountType and classification.');
  end if;
  if cls not in ('asset', 'liability', 'equity', 'revenue', 'expense') then
    perform app_private.fail('Classification must be one of: asset, liability, equity, revenue, expense.');
  end if;
  perform app_private.check_account_type(typ);
  if t.id is not null and t.classification <> cls then
    perform app_private.fail(format('Tax code %s is for %s accounts, not %s.', t.code, t.classification, cls));
  end if;
  if four is not null and four !~ '^[0-9]{4}$' then perform app_private.fail('lastFour must be exactly 4 digits.'); end if;
  if length(st) > 100 then perform app_private.fail('subType must be at most 100 characters.'); end if;
  insert into app_public.accounts (organization_id, name, account_type, classification, sub_type, last_four, parent_id, tax_code_id)
    values (org, nm, typ, cls, st, four, app_private.resolve_parent(org, insert_account.parent_id, cls), t.id)
    returning * into r;
  return r;
end $$;
grant execute on function app_private.insert_account(org uuid, name text, tax_code_id uuid, account_type text, classification text, sub_type text, last_four text, parent_id uuid) to accounting_visitor;

-- The parent of a (sub-)account: of this organization and of the same classification.
create or replace function app_private.resolve_parent(org uuid, parent uuid, classification text) returns uuid
  language plpgsql stable as
$$
declare p app_public.accounts;
begin
  if parent is null then return null; end if;
  select * into p from app_public.accounts a where a.organization_id = org and a.id = parent;
  if not found then perform app_private.fail('Parent account not found.'); end if;
  if p.classification <> resolve_parent.classification then
    perform app_private.fail(format('A sub-account must have the classification of its parent (%s).', p.classification));
  end if;
  return p.id;
end $$;
grant execute on function app_private.resolve_parent(org uuid, parent uuid, classification text) to accounting_visitor;

-- No cycles in parent_id. Changes of parent serialize per organization (advisory lock), and each
-- check runs on a fresh snapshot after the lock, so two concurrent moves cannot close a loop.
-- A new row cannot close one (nothing points at it yet), so only updates are checked.
create or replace function app_private.tg_accounts__no_cycle() returns trigger
  language plpgsql as
$$
begin
  perform pg_advisory_xact_lock(hashtext('app_public.accounts.parent_id'), hashtext(new.organization_id::text));
  if exists (
    with recursive up (id, parent_id) as (
      select a.id, a.parent_id from app_public.accounts a
       where a.organization_id = new.organization_id and a.id = new.parent_id
      union
      select a.id, a.parent_id from app_public.accounts a join up on a.id = up.parent_id
       where a.organization_id = new.organization_id
    )
    select 1 from up where up.id = new.id
  ) then
    perform app_private.fail('An account cannot be placed under itself or one of its own sub-accounts.');
  end if;
  return new;
end $$;
grant execute on function app_private.tg_accounts__no_cycle() to accounting_visitor;

-- Each item in its own savepoint (the exception block); failures are listed by 0-based index.
-- An item that is not an object, or a field of the wrong JSON type, is that item's failure.
create or replace function app_public.batch_create_accounts(organization_id uuid, items jsonb) returns jsonb
  language plpgsql volatile as
$$
declare
  item jsonb;
  idx integer := 0;
  n_created integer := 0;
  errs jsonb := '[]'::jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  if items is null or jsonb_typeof(items) <> 'array' then perform app_private.fail('items must be a list.'); end if;
  if jsonb_array_length(items) > 500 then
    perform app_private.fail(format('A batch holds at most 500 items (got %s); nothing was created.', jsonb_array_length(items)));
  end if;
  for item in select e.value from jsonb_array_elements(items) with ordinality e (value, ordinality) order by e.ordinality loop
    begin
      perform app_private.insert_account(batch_create_accounts.organization_id, app_private.item_text(item, 'name'),
        app_private.item_uuid(item, 'taxCodeId'), app_private.item_text(item, 'accountType'),
        app_private.item_text(item, 'classification'), app_private.item_text(item, 'subType'),
        app_private.item_text(item, 'lastFour'), app_private.item_uuid(item, 'parentId'));
      n_created := n_created + 1;
    exception
      when unique_violation then
        errs := errs || jsonb_build_array(jsonb_build_object('index', idx, 'error', 'Account with this name already exists.'));
      when others then
        if sqlstate like 'AP%' then
          errs := errs || jsonb_build_array(jsonb_build_object('index', idx, 'error', sqlerrm));
        else
          raise;
        end if;
    end;
    idx := idx + 1;
  end loop;
  return jsonb_build_object('created', n_created, 'errors', errs);
end $$;
grant execute on function app_public.batch_create_accounts(organization_id uuid, items jsonb) to accounting_visitor;

create or replace function app_public.create_account(organization_id uuid, name text, tax_code_id uuid default null,
    account_type text default null, classification text default null, sub_type text default null,
    last_four text default null, parent_id uuid default null) returns jsonb
  language plpgsql volatile as
$$
declare r app_public.accounts;
begin
  perform app_private.assert_org_access(organization_id, false);
  begin
    r := app_private.insert_account(create_account.organization_id, create_account.name, create_account.tax_code_id,
      create_account.account_type, create_account.classification, create_account.sub_type, create_account.last_four,
      create_account.parent_id);
  exception when unique_violation then
    perform app_private.fail('Account with this name already exists.');
  end;
  return jsonb_build_object('success', true, 'error', null, 'account', app_private.account_by_id(r.organization_id, r.id));
end $$;
grant execute on function app_public.create_account(organization_id uuid, name text, tax_code_id uuid, account_type text, classification text, sub_type text, last_four text, parent_id uuid) to accounting_visitor;

-- Accounts are never deleted; deactivating hides them from new use (category rules pointing at
-- them stop matching). The ledger adds: an account with posted lines keeps them.
create or replace function app_public.deactivate_account(organization_id uuid, account_id uuid) returns jsonb
  language plpgsql volatile as
$$
begin
  perform app_private.assert_org_access(organization_id, false);
  update app_public.accounts x set active = false
   where x.organization_id = deactivate_account.organization_id and x.id = deactivate_account.account_id;
  if not found then perform app_private.fail('Account not found.', 'AP404'); end if;
  return jsonb_build_object('success', true, 'error', null,
    'account', app_private.account_by_id(deactivate_account.organization_id, deactivate_account.account_id));
end $$;
grant execute on function app_public.deactivate_account(organization_id uuid, account_id uuid) to accounting_visitor;

create or replace function app_public.list_accounts(organization_id uuid, "limit" integer default null, "offset" integer default null,
    search text default null, sort_by text default null, sort_dir text default null, active boolean default null,
    classification text default null) returns jsonb
  language plpgsql stable as
$$
declare
  lim integer;
  off integer;
  dir text;
  key text;
  result jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  lim := app_private.page_size("limit");
  off := app_private.page_offset("offset");
  dir := app_private.sort_dir(sort_dir, 'asc');
  perform app_private.check_sort_by(sort_by, array['name', 'accountType', 'classification', 'subType', 'currentBalance', 'active', 'created', 'updated']);
  -- Whitelisted above; ties by name, then id, in the same direction, so the order is total.
  key := case coalesce(sort_by, 'name')
    when 'name' then 'f.lname' when 'accountType' then '(f.a).account_type' when 'classification' then '(f.a).classification'
    when 'subType' then 'lower((f.a).sub_type)' when 'currentBalance' then 'f.balance' when 'active' then '(f.a).active'
    when 'created' then '(f.a).created' when 'updated' then '(f.a).updated' end;
  execute format($q$
    with f as (
      select a, lower(a.name) as lname, coalesce(b.balance, 0) as balance
        from app_public.accounts a
        left join app_private.account_balances($1) b on b.account_id = a.id
       where a.organization_id = $1
         and ($2::text is null or a.name ilike app_private.like_pattern($2))
         and ($3::boolean is null or a.active = $3)
         and ($4::text is null or a.classification = $4)
    ), page as (
      select f.a, f.balance, row_number() over (order by %1$s %2$s, f.lname %2$s, (f.a).id %2$s) as rn
        from f order by rn limit $5 offset $6
    )
    select jsonb_build_object(
      'items', coalesce((select jsonb_agg(app_private.account_json(page.a, page.balance) order by page.rn) from page), '[]'::jsonb),
      'totalCount', (select count(*) from f), 'pageSize', $5, 'offset', $6)
  $q$, key, dir) into result using organization_id, search, active, classification, lim, off;
  return result;
end $$;
grant execute on function app_public.list_accounts(organization_id uuid, "limit" integer, "offset" integer, search text, sort_by text, sort_dir text, active boolean, classification text) to accounting_visitor;

create or replace function app_public.reactivate_account(organization_id uuid, account_id uuid) returns jsonb
  language plpgsql volatile as
$$
begin
  perform app_private.assert_org_access(organization_id, false);
  update app_public.accounts x set active = true
   where x.organization_id = reactivate_account.organization_id and x.id = reactivate_account.account_id;
  if not found then perform app_private.fail('Account not found.', 'AP404'); end if;
  return jsonb_build_object('success', true, 'error', null,
    'account', app_private.account_by_id(reactivate_account.organization_id, reactivate_account.account_id));
end $$;
grant execute on function app_public.reactivate_account(organization_id uuid, account_id uuid) to accounting_visitor;

create or replace function app_public.update_account(organization_id uuid, account_id uuid, name text default null,
    last_four text default null, parent_id uuid default null, clear_parent boolean default null,
    tax_code_id uuid default null, sub_type text default null) returns jsonb
  language plpgsql volatile as
$$
declare
  a app_public.accounts;
  t app_public.tax_codes;
  nm text := app_private.clean_text(name);
  st text := app_private.clean_text(sub_type);
  four text := btrim(last_four);
begin
  perform app_private.assert_org_access(organization_id, false);
  -- A parent change takes the organization's parent lock before any row lock (the trigger takes it
  -- too), and rows are locked "no key" so concurrent foreign-key checks on them do not wait.
  if update_account.parent_id is not null then
    perform pg_advisory_xact_lock(hashtext('app_public.accounts.parent_id'), hashtext(update_account.organization_id::text));
  end if;
  select * into a from app_public.accounts x
   where x.organization_id = update_account.organization_id and x.id = update_account.account_id for no key update;
  if not found then perform app_private.fail('Account not found.', 'AP404'); end if;
  if nm is not null then
    if nm = '' then perform app_private.fail('Name is required.'); end if;
    if length(nm) > 200 then perform app_private.fail('Name must be at most 200 characters.'); end if;
    a.name := nm;
  end if;
  if four is not null then
    if four <> '' and four !~ '^[0-9]{4}$' then perform app_private.fail('lastFour must be exactly 4 digits.'); end if;
    a.last_four := nullif(four, '');
  end if;
  if coalesce(clear_parent, false) then
    if update_account.parent_id is not null then perform app_private.fail('Give parentId or clearParent, not both.'); end if;
    a.parent_id := null;
  elsif update_account.parent_id is not null then
    if update_account.parent_id = a.id then
      perform app_private.fail('An account cannot be placed under itself or one of its own sub-accounts.');
    end if;
    a.parent_id := app_private.resolve_parent(a.organization_id, update_account.parent_id, a.classification);
  end if;
  if update_account.tax_code_id is not null then
    select * into t from app_public.tax_codes c where c.id = update_account.tax_code_id;
    if not found then perform app_private.fail('Tax code not found.'); end if;
    if t.account_type = 'total' then
      perform app_private.fail(format('Tax code %s is a computed total and cannot be used for an account.', t.code));
    end if;
    if t.classification <> a.classification then
      perform app_private.fail(format('Tax code %s is for %s accounts, not %s.', t.code, t.classification, a.classification));
    end if;
    a.tax_code_id := t.id;
  end if;
  if st is not null then
    if length(st) > 100 then perform app_private.fail('subType must be at most 100 characters.'); end if;
    a.sub_type := st;
  end if;
  begin
    update app_public.accounts x set name = a.name, last_four = a.last_four, parent_id = a.parent_id,
        tax_code_id = a.tax_code_id, sub_type = a.sub_type
     where x.organization_id = a.organization_id and x.id = a.id;
  exception when unique_violation then
    perform app_private.fail('Account with this name already exists.');
  end;
  return jsonb_build_object('success', true, 'error', null, 'account', app_private.account_by_id(a.organization_id, a.id));
end $$;
grant execute on function app_public.update_account(organization_id uuid, account_id uuid, name text, last_four text, parent_id uuid, clear_parent boolean, tax_code_id uuid, sub_type text) to accounting_visitor;

-- The operator names a payment account (CLI --payment-account): an active bank, credit card or
-- clearing account of the organization, case-insensitively in NFC.
create or replace function app_private.payment_account_by_name(org uuid, name text) returns uuid
  language plpgsql stable as
$$
declare v_id uuid;
begin
  select a.id into v_id from app_public.accounts a
   where a.organization_id = org and lower(a.name) = lower(app_private.clean_text(payment_account_by_name.name))
     and a.active and a.account_type in ('bank', 'credit_card', 'clearing')
   order by a.created, a.id limit 1;
  if v_id is null then
    perform app_private.fail(format('No active bank, credit card or clearing account named "%s".', btrim(payment_account_by_name.name)), 'AP404');
  end if;
  return v_id;
end $$;
grant execute on function app_private.payment_account_by_name(org uuid, name text) to accounting_visitor;
--! EndIncluded chart/accounts.sql
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
    select t.account_id, t.debit - t.credit as all_time, y.debit - y.credit as this_year
      from app_private.account_totals(org, null, as_of) t
      left join (select y.* from year_start s cross join lateral app_private.account_totals(org, s.day, as_of) y) y
        on y.account_id = t.account_id
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
-- Planned for the tenant asking, every call (docs/architecture.md, Many tenants).
create or replace function app_public.balance_sheet(organization_id uuid, as_of text default null) returns jsonb
  language plpgsql stable set plan_cache_mode = force_custom_plan as
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
-- Planned for the tenant asking, every call (docs/architecture.md, Many tenants).
create or replace function app_public.trial_balance(organization_id uuid, as_of text default null) returns jsonb
  language plpgsql stable set plan_cache_mode = force_custom_plan as
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
--! Included reports/reports.sql
-- Reports from per-account daily totals: the dashboard, the income statement, account balances.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Revenue and expense totals per account over a period (monthly-totals.sql: by month and day).
create or replace function app_private.period_totals(org uuid, period daterange)
  returns table (account_id uuid, account_name text, classification text, total numeric)
  language sql stable as
$$
  select a.id, a.name, a.classification,
         case when a.classification = 'revenue' then t.credit - t.debit else t.debit - t.credit end
    from app_private.account_totals(org, lower(period), upper(period) - 1) t
    join app_public.accounts a on a.id = t.account_id
   where a.classification in ('revenue', 'expense') and (t.debit <> 0 or t.credit <> 0) and not isempty(period)
$$;
grant execute on function app_private.period_totals(org uuid, period daterange) to accounting_visitor;

-- Receipts that arrived (uploaded or received) in the period, by UTC day, rejected ones excluded
-- (docs/api.md, Reports).
create or replace function app_private.receipt_count(org uuid, period daterange) returns integer
  language sql stable as
$$ select count(*)::integer from app_public.receipts r
    where r.organization_id = org and r.status <> 'rejected'
      and r.uploaded_at >= (lower(period)::timestamp at time zone 'UTC')
      and r.uploaded_at < (upper(period)::timestamp at time zone 'UTC') $$;
grant execute on function app_private.receipt_count(org uuid, period daterange) to accounting_visitor;

-- A report period: null means the default; both ends inclusive.
create or replace function app_private.report_period(start_date text, end_date text, default_start date) returns daterange
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
grant execute on function app_private.report_period(start_date text, end_date text, default_start date) to accounting_visitor;

-- Planned for the tenant asking, every call (docs/architecture.md, Many tenants).
create or replace function app_public.account_balances(organization_id uuid) returns jsonb
  language plpgsql stable set plan_cache_mode = force_custom_plan as
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
grant execute on function app_public.account_balances(organization_id uuid) to accounting_visitor;

-- Planned for the tenant asking, every call (docs/architecture.md, Many tenants).
create or replace function app_public.dashboard_summary(organization_id uuid, start_date text default null, end_date text default null)
  returns jsonb
  language plpgsql stable set plan_cache_mode = force_custom_plan as
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
  unreviewed := app_private.event_count(organization_id, array['needs_review'], null, null);
  return jsonb_build_object('totalRevenue', app_private.money(revenue), 'totalExpenses', app_private.money(expenses),
    'netIncome', app_private.money(revenue - expenses),
    'receiptCount', app_private.receipt_count(organization_id, period),
    'unreviewedCount', unreviewed);
end $$;
grant execute on function app_public.dashboard_summary(organization_id uuid, start_date text, end_date text) to accounting_visitor;

-- Planned for the tenant asking, every call (docs/architecture.md, Many tenants).
create or replace function app_public.income_statement(organization_id uuid, start_date text default null, end_date text default null)
  returns jsonb
  language plpgsql stable set plan_cache_mode = force_custom_plan as
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
grant execute on function app_public.income_statement(organization_id uuid, start_date text, end_date text) to accounting_visitor;
--! EndIncluded reports/reports.sql
--! Included reports/sales-tax-return.sql
-- The GST/HST and QST return (docs/api.md, Split transactions and the sales tax return): the lines
-- a filer types in, from the posted journal, out of per-day totals that the posting keeps.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.sales_tax_daily_totals
drop policy if exists sales_tax_daily_totals_tenant on app_public.sales_tax_daily_totals;
create policy sales_tax_daily_totals_tenant on app_public.sales_tax_daily_totals
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select on app_public.sales_tax_daily_totals to accounting_visitor;
grant select on app_public.sales_tax_daily_totals to reporting_reader;

------------------------------------------------------------------------------------------------

-- Per organization, day and tax type: the tax collected on sales (credits less debits of the tax
-- lines of sales), the input tax credits (debits less credits of those of purchases), and the
-- events counted (+1 for each entry that posts such lines, -1 for each that reverses one; an
-- entry voided by a rejection takes its own back). Live lines only: `lines` written (sign 1) or
-- taken away (sign -1). PL/pgSQL with static SQL: its plan is kept for the session (a confirm
-- pays no planning).
create or replace function app_private.add_sales_tax_totals(lines app_public.journal_lines[], sign integer) returns void
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
begin
  insert into app_public.sales_tax_daily_totals as t (organization_id, day, tax_type, collected, input_tax_credits, events)
    select x.organization_id, x.txn_date, x.tax_type, sum(x.collected), sum(x.itcs),
           sum(sign * case when j.reverses_entry_id is null then 1 else -1 end)
      from (select l.organization_id, l.txn_date, l.tax_type, l.entry_id,
                   sign * sum(case when l.tax_on_sale then l.credit - l.debit else 0 end) as collected,
                   sign * sum(case when l.tax_on_sale then 0 else l.debit - l.credit end) as itcs
              from unnest(lines) l
             where l.tax_type is not null and not l.voided
               -- Rows of an organization being deleted go with it.
               and exists (select 1 from app_public.organizations o where o.id = l.organization_id)
             group by 1, 2, 3, 4) x
      left join app_public.journal_entries j on j.id = x.entry_id
     group by 1, 2, 3
     order by 1, 2, 3
    on conflict (organization_id, day, tax_type) do update
      set collected = t.collected + excluded.collected, input_tax_credits = t.input_tax_credits + excluded.input_tax_credits,
          events = t.events + excluded.events;
end $$;

-- The totals follow the journal's tax lines as each statement writes, changes or deletes them
-- (an update: its old lines out, its new ones in). A transition table's rows are records: cast.
create or replace function app_private.tg_journal_lines__sales_tax() returns trigger
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
begin
  if tg_op in ('UPDATE', 'DELETE') then
    perform app_private.add_sales_tax_totals(array(select o::app_public.journal_lines from old_rows o where o.tax_type is not null), -1);
  end if;
  if tg_op in ('UPDATE', 'INSERT') then
    perform app_private.add_sales_tax_totals(array(select n::app_public.journal_lines from new_rows n where n.tax_type is not null), 1);
  end if;
  return null;
end $$;
grant execute on function app_private.tg_journal_lines__sales_tax() to accounting_visitor;

-- app_public.journal_lines: its tax lines kept in the totals by the statement that writes them
-- (after the function, which a fresh database does not have yet).
drop trigger if exists _510_sales_tax_insert on app_public.journal_lines;
create trigger _510_sales_tax_insert after insert on app_public.journal_lines
  referencing new table as new_rows for each statement execute function app_private.tg_journal_lines__sales_tax();

drop trigger if exists _510_sales_tax_update on app_public.journal_lines;
create trigger _510_sales_tax_update after update on app_public.journal_lines
  referencing old table as old_rows new table as new_rows for each statement execute function app_private.tg_journal_lines__sales_tax();

drop trigger if exists _510_sales_tax_delete on app_public.journal_lines;
create trigger _510_sales_tax_delete after delete on app_public.journal_lines
  referencing old table as old_rows for each statement execute function app_private.tg_journal_lines__sales_tax();


-- The return's lines for a period (both ends inclusive) by the journal's dates: line 101 sales and
-- other revenue (revenue accounts' credits less debits, tax excluded); 103 tax collected; 104
-- adjustments (none are recorded: 0.00); 105 = 103 + 104; 106 input tax credits; 108 = 106 (no
-- other ITC adjustments); 109 = 105 - 108, negative for a refund.
create or replace function app_private.sales_tax_return_lines(org uuid, period daterange, tax_type text)
  returns table (sales numeric, collected numeric, itcs numeric, events bigint)
  language sql stable as
$$
  select (select coalesce(sum(t.credit) - sum(t.debit), 0)
            from app_private.account_totals(org, lower(period), upper(period) - 1) t join app_public.accounts a on a.id = t.account_id
           where a.classification = 'revenue' and not isempty(period)),
         coalesce(sum(s.collected), 0), coalesce(sum(s.input_tax_credits), 0), coalesce(sum(s.events), 0)
    from app_public.sales_tax_daily_totals s
   where s.organization_id = org and s.day >= lower(period) and s.day < upper(period)
     and s.tax_type = sales_tax_return_lines.tax_type
$$;
grant execute on function app_private.sales_tax_return_lines(org uuid, period daterange, tax_type text) to accounting_visitor;

-- Planned for the tenant asking, every call (docs/architecture.md, Many tenants).
create or replace function app_public.sales_tax_return(organization_id uuid, start_date text, end_date text, tax_type text)
  returns jsonb
  language plpgsql stable set plan_cache_mode = force_custom_plan as
$$
declare
  v_period daterange;
  r record;
begin
  perform app_private.assert_org_access(organization_id, false);
  if tax_type is null or tax_type not in ('GST_HST', 'QST') then
    perform app_private.fail('taxType must be one of: GST_HST, QST.');
  end if;
  if start_date is null then perform app_private.fail('startDate must be a date in YYYY-MM-DD format.'); end if;
  if end_date is null then perform app_private.fail('endDate must be a date in YYYY-MM-DD format.'); end if;
  v_period := app_private.report_period(start_date, end_date, null);
  select * into r from app_private.sales_tax_return_lines(organization_id, v_period, tax_type);
  return jsonb_build_object('taxType', tax_type,
    'startDate', to_char(lower(v_period), 'YYYY-MM-DD'), 'endDate', to_char(upper(v_period) - 1, 'YYYY-MM-DD'),
    'salesAndRevenue', app_private.money(r.sales), 'taxCollected', app_private.money(r.collected),
    'adjustments', app_private.money(0), 'totalTaxCollected', app_private.money(r.collected),
    'inputTaxCredits', app_private.money(r.itcs), 'totalItcs', app_private.money(r.itcs),
    'netTax', app_private.money(r.collected - r.itcs), 'events', r.events);
end $$;
grant execute on function app_public.sales_tax_return(organization_id uuid, start_date text, end_date text, tax_type text) to accounting_visitor;
--! EndIncluded reports/sales-tax-return.sql
