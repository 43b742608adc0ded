--! Previous: sha1:7504c4443968e3f0844c689d681d48cad8d8d2e3
--! Hash: sha1:2a5970a5faf2d79d28ac6c42262595b28e08fb61
--! Message: Account totals and event counts in PL/pgSQL: each part planned as an index range of its own (folded into a caller's SQL, a part whose bounds came from a join was planned as a scan of the whole table)

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
-- report reads instead of the daily totals themselves. PL/pgSQL, so that each part is planned as
-- an index range of its own: folded into a caller's SQL, a part whose bounds came from a join was
-- planned as a scan of the whole table (258 ms instead of 3 for a trial balance of a tenant alone).
create or replace function app_private.account_totals(org uuid, first_day date, last_day date)
  returns table (account_id uuid, debit numeric, credit numeric)
  language plpgsql stable as
$$
#variable_conflict use_column
declare
  p record;
begin
  select * into p from app_private.rolled_period(org, account_totals.first_day, account_totals.last_day);
  return query
    select x.account_id, sum(x.debit), sum(x.credit) from (
      select m.account_id, m.debit, m.credit from app_public.account_monthly_totals m
       where m.organization_id = org and m.month >= p.rolled_from and m.month < p.rolled_to
      union all
      select t.account_id, t.debit, t.credit from app_public.account_daily_totals t
       where t.organization_id = org and t.day >= p.first_day and t.day < p.rolled_from
      union all
      select t.account_id, t.debit, t.credit from app_public.account_daily_totals t
       where t.organization_id = org and t.day >= p.rolled_to and t.day <= p.last_day
    ) x
    group by x.account_id;
end $$;
grant execute on function app_private.account_totals(org uuid, first_day date, last_day date) to accounting_visitor, reporting_reader;

-- How many events have one of `statuses` (null: any) over a period (both ends inclusive, null for
-- open), by transaction date. PL/pgSQL for the same reason.
create or replace function app_private.event_count(org uuid, statuses text[], first_day date, last_day date)
  returns bigint
  language plpgsql stable as
$$
declare
  p record;
  n bigint;
begin
  select * into p from app_private.rolled_period(org, event_count.first_day, event_count.last_day);
  select coalesce(sum(x.n), 0)::bigint into n from (
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
  ) x;
  return n;
end $$;
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
      left join app_private.account_totals(org, (select day from year_start), as_of) y on y.account_id = t.account_id
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
