--! Previous: sha1:e4ece932a4731c6c547ada8479a25012ed98f591
--! Hash: sha1:9c7953faebb9ecb4792c305ef99746a2e72273de
--! Message: The triggers of the change feed and of the merchants' counts run static SQL, their plans kept

-- The triggers of the change feed and of the merchants' counts run static SQL, their plans kept.

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
create or replace function app_private.tg_ledger_events__merchant_counts() returns trigger
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
begin
  if tg_op = 'INSERT' then
    insert into app_public.merchant_category_counts as t (organization_id, merchant, category_id, confirmations)
      select n.organization_id, app_private.merchant_family(n.merchant_name), n.category_id, count(*)
        from new_rows n
       where n.status in ('confirmed', 'synced', 'reconciled') and n.category_id is not null
         and app_private.merchant_family(n.merchant_name) <> ''
       group by 1, 2, 3 order by 1, 2, 3
      on conflict (organization_id, merchant, category_id) do update set confirmations = t.confirmations + excluded.confirmations;
  elsif tg_op = 'UPDATE' then
    insert into app_public.merchant_category_counts as t (organization_id, merchant, category_id, confirmations)
      select x.organization_id, app_private.merchant_family(x.merchant_name), x.category_id, sum(x.k)
        from new_rows n join old_rows o on o.id = n.id
        cross join lateral (values (n.organization_id, n.merchant_name, n.category_id, n.status, 1),
                                   (o.organization_id, o.merchant_name, o.category_id, o.status, -1))
          x (organization_id, merchant_name, category_id, status, k)
       where (n.status, n.category_id, n.merchant_name) is distinct from (o.status, o.category_id, o.merchant_name)
         and x.status in ('confirmed', 'synced', 'reconciled') and x.category_id is not null
         and app_private.merchant_family(x.merchant_name) <> ''
       group by 1, 2, 3 having sum(x.k) <> 0
       order by 1, 2, 3
      on conflict (organization_id, merchant, category_id) do update set confirmations = t.confirmations + excluded.confirmations;
  else
    insert into app_public.merchant_category_counts as t (organization_id, merchant, category_id, confirmations)
      select o.organization_id, app_private.merchant_family(o.merchant_name), o.category_id, -count(*)
        from old_rows o
       where o.status in ('confirmed', 'synced', 'reconciled') and o.category_id is not null
         and app_private.merchant_family(o.merchant_name) <> ''
         -- Rows of an organization being deleted go with it.
         and exists (select 1 from app_public.organizations g where g.id = o.organization_id)
       group by 1, 2, 3 order by 1, 2, 3
      on conflict (organization_id, merchant, category_id) do update set confirmations = t.confirmations + excluded.confirmations;
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
-- merchant's confirmations under a category one may give (active, not a control or payment
-- account: payments of invoices and bills post to Accounts Receivable and Payable), the category
-- confirmed most (the first by name of equals), its share as confidence (two decimals), their
-- number as basis; only from 3 of them, and only when the category fits the event.
-- PL/pgSQL, whose plan is kept for the session: a list calls it for each event waiting.
create or replace function app_private.suggested_category(org uuid, merchant_name text, event_type text) returns jsonb
  language plpgsql stable as
$$
begin
  return (
    with c as (
      select a.id, a.name, a.classification, m.confirmations
        from app_public.merchant_category_counts m
        join app_public.accounts a on a.organization_id = org and a.id = m.category_id
       where m.organization_id = org and m.merchant = app_private.merchant_family(suggested_category.merchant_name) and m.confirmations > 0
         and a.active and a.account_type not in ('accounts_receivable', 'accounts_payable', 'bank', 'credit_card', 'clearing')
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
--! Included ledger/changes.sql
-- The change feed (docs/api.md, The change feed): every change to an organization's events, for
-- integrators who poll instead of taking webhooks. A change is written by the statement that
-- makes it, in its transaction, with that transaction's id. A page reads only the changes of
-- transactions older than every transaction still running (the snapshot's xmin), in (transaction,
-- change) order: a change committed late can therefore never fall behind a cursor already handed
-- out, as it could with a timestamp or a plain sequence. Kept 30 days.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.ledger_change_feed
drop policy if exists ledger_change_feed_tenant on app_public.ledger_change_feed;
create policy ledger_change_feed_tenant on app_public.ledger_change_feed
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select, insert on app_public.ledger_change_feed to accounting_visitor;

------------------------------------------------------------------------------------------------

-- How long a cursor stays valid: the changes are kept this long.
create or replace function app_private.ledger_changes_retention() returns interval
  language sql immutable parallel safe as
$$ select interval '30 days' $$;
grant execute on function app_private.ledger_changes_retention() to accounting_visitor;

-- The kind of one change of an event: a move to another status names it (a reversal's too),
-- else a change of its classification, else of its other fields; none when nothing a reader
-- sees changed.
create or replace function app_private.change_kind(o app_public.ledger_events, n app_public.ledger_events) returns text
  language sql immutable parallel safe as
$$
  select case
    when o.id is null then 'created'
    when n.id is null then 'deleted'
    when n.reversal_entry_id is not null and o.reversal_entry_id is null then 'reversed'
    when n.status is distinct from o.status then case n.status
      when 'confirmed' then 'confirmed' when 'synced' then 'synced' when 'reconciled' then 'reconciled'
      when 'ignored' then 'ignored' else 'updated' end
    when (n.category_id, n.splits, n.tax_amount, n.tax_code, n.tax_account_id, n.contact_id, n.payment_account_id)
         is distinct from (o.category_id, o.splits, o.tax_amount, o.tax_code, o.tax_account_id, o.contact_id, o.payment_account_id)
      then 'classified'
    when (n.merchant_name, n.functional_amount, n.transaction_date, n.memo, n.event_type, n.direction, n.has_document, n.reference)
         is distinct from (o.merchant_name, o.functional_amount, o.transaction_date, o.memo, o.event_type, o.direction, o.has_document, o.reference)
      then 'updated'
  end
$$;
grant execute on function app_private.change_kind(o app_public.ledger_events, n app_public.ledger_events) to accounting_visitor;

-- One row per changed event per statement, from the transition tables; static SQL in each branch,
-- so that its plan is kept (a confirm pays no planning).
create or replace function app_private.tg_ledger_events__changes() returns trigger
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
begin
  if tg_op = 'INSERT' then
    insert into app_public.ledger_change_feed (organization_id, event_id, kind)
      select n.organization_id, n.id, 'created' from new_rows n order by n.id;
  elsif tg_op = 'UPDATE' then
    insert into app_public.ledger_change_feed (organization_id, event_id, kind)
      select d.organization_id, d.id, d.kind
        from (select n.organization_id, n.id, app_private.change_kind(o, n) kind from new_rows n join old_rows o on o.id = n.id) d
       where d.kind is not null
       order by d.id;
  else
    insert into app_public.ledger_change_feed (organization_id, event_id, kind)
      select o.organization_id, o.id, 'deleted' from old_rows o
       -- An organization being deleted takes its feed with it.
       where exists (select 1 from app_public.organizations g where g.id = o.organization_id)
       order by o.id;
  end if;
  return null;
end $$;
grant execute on function app_private.tg_ledger_events__changes() to accounting_visitor;

drop trigger if exists _820_changes_insert on app_public.ledger_events;
create trigger _820_changes_insert after insert on app_public.ledger_events
  referencing new table as new_rows for each statement execute function app_private.tg_ledger_events__changes();
drop trigger if exists _820_changes_update on app_public.ledger_events;
create trigger _820_changes_update after update on app_public.ledger_events
  referencing old table as old_rows new table as new_rows for each statement execute function app_private.tg_ledger_events__changes();
drop trigger if exists _820_changes_delete on app_public.ledger_events;
create trigger _820_changes_delete after delete on app_public.ledger_events
  referencing old table as old_rows for each statement execute function app_private.tg_ledger_events__changes();

-- A cursor is "<transaction>.<change>" of the last change read.
drop function if exists app_private.change_cursor(xid8, bigint);
create or replace function app_private.change_cursor(txid bigint, id bigint) returns text
  language sql immutable parallel safe as
$$ select txid::text || '.' || id::text $$;
grant execute on function app_private.change_cursor(txid bigint, id bigint) to accounting_visitor;

-- ledgerChanges(organizationId, after, limit): {changes: [{cursor, eventId, kind, at, event}],
-- nextCursor, hasMore}. `event` is the event as it is now (null once deleted). Without `after`,
-- from the oldest change kept. An unknown or expired cursor is refused naming the oldest valid one.
create or replace function app_public.ledger_changes(organization_id uuid, after text default null, "limit" integer default null)
  returns jsonb
  language plpgsql stable as
$$
declare
  v_limit integer := app_private.page_size("limit");
  v_txid bigint := 0;
  v_id bigint := 0;
  v_horizon bigint := pg_snapshot_xmin(pg_current_snapshot())::text::bigint;
  v_oldest text;
  v_page jsonb;
  v_count integer;
begin
  perform app_private.assert_org_access(organization_id, false);
  if after is not null then
    if after ~ '^[0-9]{1,18}\.[0-9]{1,18}$' then
      v_txid := split_part(after, '.', 1)::bigint;
      v_id := split_part(after, '.', 2)::numeric;
    end if;
    if not exists (select 1 from app_public.ledger_change_feed c
                    where c.organization_id = ledger_changes.organization_id and c.txid = v_txid and c.id = v_id
                      and c.at >= now() - app_private.ledger_changes_retention()) then
      select app_private.change_cursor(c.txid, c.id) into v_oldest from app_public.ledger_change_feed c
       where c.organization_id = ledger_changes.organization_id and c.at >= now() - app_private.ledger_changes_retention()
       order by c.txid, c.id limit 1;
      perform app_private.fail(case when v_oldest is null
        then 'The cursor is unknown or has expired (changes are kept 30 days), and no change is kept: read again without after.'
        else format('The cursor is unknown or has expired (changes are kept 30 days). The oldest valid cursor is %s; read again without after to start from the oldest change kept.', v_oldest) end);
    end if;
  end if;
  with page as (
    select c.txid, c.id, c.event_id, c.kind, c.at, row_number() over (order by c.txid, c.id) rn
      from (select c.* from app_public.ledger_change_feed c
             where c.organization_id = ledger_changes.organization_id and (c.txid, c.id) > (v_txid, v_id) and c.txid < v_horizon
               and c.at >= now() - app_private.ledger_changes_retention()
             order by c.txid, c.id
             limit v_limit + 1) c
  ), events as materialized (
    -- Each event of the page once (its creation and confirmation are often on one page), built
    -- with its accounts and entry joined, as a list builds them.
    select e.id, app_private.ledger_event_json(e, c, p, t, j) event
      from (select distinct x.event_id from page x where x.rn <= v_limit) x
      join app_public.ledger_events e on e.id = x.event_id
      left join app_public.accounts c on c.id = e.category_id
      left join app_public.accounts p on p.id = e.payment_account_id
      left join app_public.accounts t on t.id = e.tax_account_id
      left join app_public.journal_entries j on j.id = e.journal_entry_id
  )
  select coalesce(jsonb_agg(jsonb_build_object('cursor', app_private.change_cursor(n.txid, n.id), 'eventId', n.event_id,
           'kind', n.kind, 'at', app_private.iso(n.at), 'event', v.event) order by n.rn) filter (where n.rn <= v_limit), '[]'),
         count(*)
    into v_page, v_count
    from page n left join events v on v.id = n.event_id;
  return jsonb_build_object('changes', v_page,
    'nextCursor', coalesce(v_page -> -1 ->> 'cursor', after),
    'hasMore', v_count > v_limit);
end $$;
grant execute on function app_public.ledger_changes(organization_id uuid, after text, "limit" integer) to accounting_visitor;

-- Changes older than the retention go (the hourly purge).
create or replace function app_private.purge_ledger_changes() returns void
  language sql as
$$ delete from app_public.ledger_change_feed c where c.at < now() - app_private.ledger_changes_retention() $$;
--! EndIncluded ledger/changes.sql
