--! Previous: sha1:1e6115e8d6c71005417d03d2e542c49e4326e965
--! Hash: sha1:545fe6a16feff366f38a7853c1d18ecddfd61b9c
--! Message: Confirms of one merchant no longer queue on one counter row (merchant_category_counts in 16 shards by session); the audit trail's and the sales tax totals' triggers in static SQL, planned once a session

-- A merchant's confirmation counts in up to 16 rows each, so that concurrent confirms of one
-- merchant do not queue on one row until each commits.
alter table app_public.merchant_category_counts add column if not exists shard smallint not null default 0;
do $$
begin
  if not exists (select 1 from pg_constraint c where c.conname = 'merchant_category_counts_pkey'
                    and array_length(c.conkey, 1) = 4) then
    alter table app_public.merchant_category_counts drop constraint merchant_category_counts_pkey,
      add constraint merchant_category_counts_pkey primary key (organization_id, merchant, category_id, shard);
  end if;
end $$;

--! Included rules/suggestions.sql
-- Suggestions from history (docs/api.md, Category rules): for an event waiting for review with no
-- category, the category most often confirmed for the same merchant in the organization, with its
-- share of those confirmations, from 3 of them or more. Never applied on its own.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.merchant_category_counts
drop policy if exists merchant_category_counts_tenant on app_public.merchant_category_counts;
create policy merchant_category_counts_tenant on app_public.merchant_category_counts
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select on app_public.merchant_category_counts to accounting_visitor;

------------------------------------------------------------------------------------------------

-- A merchant as suggestions compare it: case, spaces, punctuation, digits and store numbers
-- ("#123", "Store 45", "No. 7") left out: "STARBUCKS #123" and "Starbucks 456" are one merchant.
create or replace function app_private.merchant_family(merchant_name text) returns text
  language sql immutable parallel safe as
$$ select regexp_replace(regexp_replace(lower(normalize(merchant_name, NFC)),
     '(#|\m(store|no|nr|unit|loc|location)\M\.?)\s*[0-9]+', ' ', 'g'), '[^[:alpha:]]+', '', 'g') $$;
grant execute on function app_private.merchant_family(merchant_name text) to accounting_visitor;

-- The counts follow every insert, change and deletion of events: an event counts while it is
-- confirmed (or synced, or reconciled) with a category. Statement-level, from the transition
-- tables; static SQL in each branch, so that its plan is kept (a confirm pays no planning).
-- A merchant's count under a category is the sum of up to 16 rows (`shard`), each written by the
-- database sessions whose process id falls on it: confirms of one merchant in concurrent
-- transactions do not wait for each other's commit on one row (a bookkeeper's run of confirms of
-- one supplier did, one at a time).
-- The counter row this session writes: its process id's, of 16.
create or replace function app_private.counter_shard() returns smallint
  language sql volatile parallel safe as
$$ select (pg_backend_pid() % 16)::smallint $$;
grant execute on function app_private.counter_shard() to accounting_visitor;

create or replace function app_private.tg_ledger_events__merchant_counts() returns trigger
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
begin
  if tg_op = 'INSERT' then
    insert into app_public.merchant_category_counts as t (organization_id, merchant, category_id, shard, confirmations)
      select n.organization_id, app_private.merchant_family(n.merchant_name), n.category_id, app_private.counter_shard(), count(*)
        from new_rows n
       where n.status in ('confirmed', 'synced', 'reconciled') and n.category_id is not null
         and app_private.merchant_family(n.merchant_name) <> ''
       group by 1, 2, 3 order by 1, 2, 3
      on conflict (organization_id, merchant, category_id, shard) do update set confirmations = t.confirmations + excluded.confirmations;
  elsif tg_op = 'UPDATE' then
    insert into app_public.merchant_category_counts as t (organization_id, merchant, category_id, shard, confirmations)
      select x.organization_id, app_private.merchant_family(x.merchant_name), x.category_id, app_private.counter_shard(), sum(x.k)
        from new_rows n join old_rows o on o.id = n.id
        cross join lateral (values (n.organization_id, n.merchant_name, n.category_id, n.status, 1),
                                   (o.organization_id, o.merchant_name, o.category_id, o.status, -1))
          x (organization_id, merchant_name, category_id, status, k)
       where (n.status, n.category_id, n.merchant_name) is distinct from (o.status, o.category_id, o.merchant_name)
         and x.status in ('confirmed', 'synced', 'reconciled') and x.category_id is not null
         and app_private.merchant_family(x.merchant_name) <> ''
       group by 1, 2, 3 having sum(x.k) <> 0
       order by 1, 2, 3
      on conflict (organization_id, merchant, category_id, shard) do update set confirmations = t.confirmations + excluded.confirmations;
  else
    insert into app_public.merchant_category_counts as t (organization_id, merchant, category_id, shard, confirmations)
      select o.organization_id, app_private.merchant_family(o.merchant_name), o.category_id, app_private.counter_shard(), -count(*)
        from old_rows o
       where o.status in ('confirmed', 'synced', 'reconciled') and o.category_id is not null
         and app_private.merchant_family(o.merchant_name) <> ''
         -- Rows of an organization being deleted go with it.
         and exists (select 1 from app_public.organizations g where g.id = o.organization_id)
       group by 1, 2, 3 order by 1, 2, 3
      on conflict (organization_id, merchant, category_id, shard) do update set confirmations = t.confirmations + excluded.confirmations;
  end if;
  return null;
end $$;
grant execute on function app_private.tg_ledger_events__merchant_counts() to accounting_visitor;

drop trigger if exists _510_merchant_counts_insert on app_public.ledger_events;
create trigger _510_merchant_counts_insert after insert on app_public.ledger_events
  referencing new table as new_rows for each statement execute function app_private.tg_ledger_events__merchant_counts();
drop trigger if exists _510_merchant_counts_update on app_public.ledger_events;
create trigger _510_merchant_counts_update after update on app_public.ledger_events
  referencing old table as old_rows new table as new_rows for each statement execute function app_private.tg_ledger_events__merchant_counts();
drop trigger if exists _510_merchant_counts_delete on app_public.ledger_events;
create trigger _510_merchant_counts_delete after delete on app_public.ledger_events
  referencing old table as old_rows for each statement execute function app_private.tg_ledger_events__merchant_counts();

-- LedgerEvent.suggestedCategory: {account {id, name}, confidence, basis}, or null. Of the
-- merchant's confirmations under a category one may give (active, not Accounts Receivable or
-- Payable, where payments of invoices and bills post), the category
-- confirmed most (the first by name of equals), its share as confidence (two decimals), their
-- number as basis; only from 3 of them, and only when the category fits the event.
-- PL/pgSQL, whose plan is kept for the session: a list calls it for each event waiting.
create or replace function app_private.suggested_category(org uuid, merchant_name text, event_type text) returns jsonb
  language plpgsql stable as
$$
begin
  return (
    with c as (
      select a.id, a.name, a.classification, sum(m.confirmations) as confirmations
        from app_public.merchant_category_counts m
        join app_public.accounts a on a.organization_id = org and a.id = m.category_id
       where m.organization_id = org and m.merchant = app_private.merchant_family(suggested_category.merchant_name)
         and a.active and a.account_type not in ('accounts_receivable', 'accounts_payable')
       group by a.id, a.name, a.classification
      having sum(m.confirmations) > 0
    ), total as (select sum(c.confirmations) n from c)
    select jsonb_build_object('account', jsonb_build_object('id', c.id, 'name', c.name),
             'confidence', round(c.confirmations::numeric / total.n, 2), 'basis', total.n)
      from c cross join total
     where total.n >= 3 and app_private.category_fits(suggested_category.event_type, c.classification)
     order by c.confirmations desc, c.name, c.id
     limit 1);
end $$;
grant execute on function app_private.suggested_category(org uuid, merchant_name text, event_type text) to accounting_visitor;
--! EndIncluded rules/suggestions.sql

-- The audit trail's and the sales tax totals' triggers in static SQL: planned once a session, not
-- on every statement that changes events or journal lines.
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

-- Every insert, change and deletion of events: who, when, what. An insert records {field: value}
-- of each field with a value; a change {field: {old, new}} of each field that differs, a deletion
-- {field: {old}} of each field that had a value (nulls left out). Statement-level, from the
-- transition tables: an import of 100,000 events writes its trail in one statement, not 100,000
-- trigger calls. A change's fields are listed one by one: three times cheaper than diffing whole
-- rows as JSON, which an import of 5,000 rows notices (test/audit-trail.test.ts checks that the
-- list names every column). Static SQL in each branch, so that its plan is kept: a confirm pays
-- no planning.
create or replace function app_private.tg_ledger_events__audit() returns trigger
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
declare
  v_action text := coalesce(nullif(current_setting('app.audit_action', true), ''), lower(tg_op));
  v_api_key uuid := app_public.current_api_key_id();
  v_user uuid := app_public.current_user_id();
begin
  if tg_op = 'INSERT' then
    -- An imported event's creation is recorded once per import run, by its import batch (who,
    -- when, which file): an import of 100,000 events writes one row, not 100,000. Nothing is lost:
    -- its later changes and its deletion record their old values here, as every event's do.
    insert into app_public.ledger_event_audit (organization_id, event_id, action, actor_api_key_id, actor_user_id, changes)
      select d.organization_id, d.id, v_action, v_api_key, v_user, d.changes
        from (select n.organization_id, n.id,
                     jsonb_strip_nulls(to_jsonb(n)) - array['id', 'organization_id', 'created', 'updated', 'has_memo'] changes
                from new_rows n where n.import_batch_id is null) d
       where d.changes <> '{}'::jsonb
       order by d.id;
  elsif tg_op = 'UPDATE' then
    insert into app_public.ledger_event_audit (organization_id, event_id, action, actor_api_key_id, actor_user_id, changes)
      select d.organization_id, d.id, v_action, v_api_key, v_user, d.changes
        from (select n.organization_id, n.id, jsonb_strip_nulls(jsonb_build_object(
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
          'splits', case when o.splits is distinct from n.splits then jsonb_build_object('old', o.splits, 'new', n.splits) end,
          'contact_id', case when o.contact_id is distinct from n.contact_id then jsonb_build_object('old', o.contact_id, 'new', n.contact_id) end,
          'journal_entry_id', case when o.journal_entry_id is distinct from n.journal_entry_id then jsonb_build_object('old', o.journal_entry_id, 'new', n.journal_entry_id) end,
          'reversal_entry_id', case when o.reversal_entry_id is distinct from n.reversal_entry_id then jsonb_build_object('old', o.reversal_entry_id, 'new', n.reversal_entry_id) end,
          'reference', case when o.reference is distinct from n.reference then jsonb_build_object('old', o.reference, 'new', n.reference) end,
          'backfill_id', case when o.backfill_id is distinct from n.backfill_id then jsonb_build_object('old', o.backfill_id, 'new', n.backfill_id) end,
          'source', case when o.source is distinct from n.source then jsonb_build_object('old', o.source, 'new', n.source) end,
          'import_batch_id', case when o.import_batch_id is distinct from n.import_batch_id then jsonb_build_object('old', o.import_batch_id, 'new', n.import_batch_id) end,
          'source_id', case when o.source_id is distinct from n.source_id then jsonb_build_object('old', o.source_id, 'new', n.source_id) end
                     )) changes
                from new_rows n join old_rows o on o.id = n.id) d
       where d.changes <> '{}'::jsonb
       order by d.id;
  else
    insert into app_public.ledger_event_audit (organization_id, event_id, action, actor_api_key_id, actor_user_id, changes)
      select d.organization_id, d.id, v_action, v_api_key, v_user, d.changes
        from (select o.organization_id, o.id,
                     (select coalesce(jsonb_object_agg(f.key, jsonb_build_object('old', f.value)), '{}'::jsonb)
                        from jsonb_each(jsonb_strip_nulls(to_jsonb(o)) - array['id', 'organization_id', 'created', 'updated', 'has_memo']) f) changes
                from old_rows o
               -- An organization being deleted takes its events with it: nothing to record for it.
               where exists (select 1 from app_public.organizations g where g.id = o.organization_id)) d
       where d.changes <> '{}'::jsonb
       order by d.id;
  end if;
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
            from app_public.account_daily_totals t join app_public.accounts a on a.id = t.account_id
           where t.organization_id = org and t.day >= lower(period) and t.day < upper(period) and a.classification = 'revenue'),
         coalesce(sum(s.collected), 0), coalesce(sum(s.input_tax_credits), 0), coalesce(sum(s.events), 0)
    from app_public.sales_tax_daily_totals s
   where s.organization_id = org and s.day >= lower(period) and s.day < upper(period)
     and s.tax_type = sales_tax_return_lines.tax_type
$$;
grant execute on function app_private.sales_tax_return_lines(org uuid, period daterange, tax_type text) to accounting_visitor;

create or replace function app_public.sales_tax_return(organization_id uuid, start_date text, end_date text, tax_type text)
  returns jsonb
  language plpgsql stable as
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
