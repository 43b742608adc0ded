--! Previous: sha1:0a4af72cc09e595b738e986bb63889156e347c7a
--! Hash: sha1:cc331269fbe2a53ab3baf10330269dba6ceedf2e
--! Message: Pending settlements read the statement's days, not every pending event of the account

--! Included ledger/pending.sql
-- Pending bank rows (docs/api.md, Bank statement imports): a row imported with `pending: true` is a
-- `pending` event, which cannot be confirmed. Its posted row, in a later import, settles it in
-- place (bank_statement_matches finds it, import_bank_statement moves it): the posted date, the
-- posted amount, `needs_review`; no second event. One not posted within 14 days of its date is
-- set to `ignored` by the hourly task. Known limit: the settled event is a posted one, so a later
-- file that still holds the old pending row imports it as a new pending event (out of the books
-- until a posted row settles it; else it expires).
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- How long a pending row waits for its posted row, and how far apart their days may be.
create or replace function app_private.pending_expiry_days() returns integer
  language sql immutable parallel safe as
$$ select 14 $$;
grant execute on function app_private.pending_expiry_days() to accounting_visitor;

create or replace function app_private.pending_settle_days() returns integer
  language sql immutable parallel safe as
$$ select 5 $$;
grant execute on function app_private.pending_settle_days() to accounting_visitor;

-- Whether an ignored event was pending when it was set aside (expired by the hourly task, or
-- rejected): it stays a pending row's duplicate, and its late posted row is imported, not taken for
-- its duplicate.
create or replace function app_private.ignored_while_pending(org uuid, event_id uuid) returns boolean
  language sql stable as
$$ select exists (select 1 from app_public.ledger_event_audit a
                   where a.organization_id = org and a.event_id = ignored_while_pending.event_id
                     and a.changes -> 'status' ->> 'old' = 'pending' and a.changes -> 'status' ->> 'new' = 'ignored') $$;
grant execute on function app_private.ignored_while_pending(org uuid, event_id uuid) to accounting_visitor;
drop function if exists app_private.expired_pending(uuid, uuid);

-- The account's pending events a statement's posted rows (those no event matched) settle, each at
-- most once and none another row already matched: the same reference and direction first,
-- whatever the days; else the same amount, direction and merchant within 5 days; the nearest days
-- first (greedy_pairs). Two reads, one per way to match: the window reads only the pending events
-- dated from the first to the last unmatched row, 5 days either side (ledger_events_pending_idx),
-- and joins them to the rows on amount, direction and merchant, rather than comparing every
-- pending event of the account with every row, which an account with years of unsettled pending
-- events (the expiry task not run) made the slowest step of an import.
create or replace function app_private.pending_settlements(org uuid, payment_account uuid)
  returns table (row_index integer, event_id uuid)
  language plpgsql volatile as
$$
declare
  v_from date;
  v_to date;
begin
  select min(s.transaction_date) - app_private.pending_settle_days(), max(s.transaction_date) + app_private.pending_settle_days()
    into v_from, v_to from pg_temp.statement_rows s where not s.pending and s.event_id is null;
  if v_from is null then return; end if;
  return query select * from app_private.greedy_pairs((
    select array_agg(row(p.row_index, p.event_id)::app_private.row_event_pair
                     order by p.same_reference desc, p.days, p.row_index, p.created, p.event_id)
      from (
        select s.row_index, e.id event_id, true same_reference, abs(s.transaction_date - e.transaction_date) days, e.created
          from pg_temp.statement_rows s
          join app_public.ledger_events e
            on e.organization_id = org and e.payment_account_id = payment_account and e.status = 'pending'
           and e.reference = s.reference and e.direction = s.direction
         where not s.pending and s.event_id is null and s.reference is not null
        union
        select s.row_index, e.id, coalesce(e.reference = s.reference, false), abs(s.transaction_date - e.transaction_date), e.created
          from pg_temp.statement_rows s
          join app_public.ledger_events e
            on e.organization_id = org and e.payment_account_id = payment_account and e.status = 'pending'
           and e.transaction_date between v_from and v_to
           and e.direction = s.direction and e.functional_amount = s.amount
           and app_private.merchant_key(e.merchant_name) = s.merchant_key
           and abs(s.transaction_date - e.transaction_date) <= app_private.pending_settle_days()
         where not s.pending and s.event_id is null
      ) p
     where not exists (select 1 from pg_temp.statement_rows t where t.event_id = p.event_id)));
end $$;
grant execute on function app_private.pending_settlements(org uuid, payment_account uuid) to accounting_visitor;

-- Pending events past their wait are ignored (every organization's: the hourly task runs as the
-- owner). Returns how many.
create or replace function app_private.expire_pending_events() returns integer
  language plpgsql volatile as
$$
declare n integer;
begin
  perform set_config('app.audit_action', 'expire', true);
  update app_public.ledger_events e set status = 'ignored'
   where e.status = 'pending' and e.transaction_date < current_date - app_private.pending_expiry_days();
  get diagnostics n = row_count;
  return n;
end $$;
--! EndIncluded ledger/pending.sql
