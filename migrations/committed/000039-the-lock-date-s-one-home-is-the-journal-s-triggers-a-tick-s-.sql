--! Previous: sha1:f5b6dcc5e5d0a27ee1efb18247c89602e7be6f1c
--! Hash: sha1:bcb0c17cd2058faa29077d88859ee12632d9d5ad
--! Message: The lock date's one home is the journal's triggers; a tick's refusal worked out in one place

-- The lock date has one home, the journal's triggers: the transitions no longer check it first
-- (the trigger refuses with the same message); a tick's refusal is worked out in one place.
drop function if exists app_private.check_lock_date(uuid, date);

--! Included ledger/transitions.sql
-- The transitions of an event that post, void or reverse its journal entry (contract: States and
-- transitions; docs/api.md, Closing a period).
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Posted on the event's transaction date, or on a later `posting_date` (an event dated in a locked
-- period is posted into the open one).
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
  -- Later, as when the transaction's own period is locked; never into a period before it.
  if v_date < e.transaction_date then
    perform app_private.fail(format('Posting date must not be before the transaction date (%s).', to_char(e.transaction_date, 'YYYY-MM-DD')));
  end if;
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
--! Included ledger/reconciliations.sql
-- Reconciliation of a payment account against a bank or card statement (docs/api.md, Closing a
-- period): start one, tick the events the statement shows, complete it when the difference is
-- exactly 0.00, undo the account's latest. An event is on the statement of its payment account,
-- and of its category account when that is a payment account too (a card payment from chequing,
-- a processor payout): it is cleared on each once, by the lines its entry posted to that account.
-- A reconciled event is fixed: nothing but its receipts, an undo or a reversal changes it.
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
     or new.status not in ('reconciled', 'confirmed', 'ignored')
     -- Ignored only by a reversal, which keeps the entry and adds its opposite.
     or (new.status = 'ignored' and (old.reversal_entry_id is not null or new.reversal_entry_id is null)) then
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

-- Opening balance plus what the cleared events still posted to the account: its lines' debits
-- less credits for an asset account, credits less debits for a liability (a card's balance is
-- what is owed). Money in to a bank account adds, to a card takes away.
create or replace function app_private.reconciliation_cleared_balance(r app_public.reconciliations) returns numeric
  language sql stable as
$$
  select r.opening_balance + coalesce(sum(l.debit - l.credit), 0)
           * (select case when a.classification in ('asset', 'expense') then 1 else -1 end
                from app_public.accounts a where a.id = r.payment_account_id)
    from app_public.reconciliation_clearings c
    join app_public.ledger_events e on e.id = c.event_id and e.status in ('confirmed', 'synced', 'reconciled')
    join app_public.journal_lines l on l.entry_id = e.journal_entry_id and l.account_id = r.payment_account_id and not l.voided
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

-- Ticks (or unticks) events: confirmed events on the reconciliation's account dated on or before
-- its statement date, not cleared on the account by another reconciliation.
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
    -- Locked before they are checked: a reject or a reversal in flight commits first (and the
    -- check sees it), or waits for this tick.
    perform 1 from app_public.ledger_events e where e.id = any (v_ids) order by e.id for share;
    -- Each event's problem, the first one refused.
    select p.problem, p.missing into bad from (
      select case
          when e.id is null then 'Ledger event not found.'
          when not coalesce(r.payment_account_id in (e.payment_account_id, e.category_id), false)
            then format('Event %s is not on the account being reconciled.', i.id)
          when exists (select 1 from app_public.reconciliation_clearings k
                        where k.event_id = e.id and k.account_id = r.payment_account_id and k.reconciliation_id <> r.id)
            then 'Event is reconciled.'
          when e.status not in ('confirmed', 'synced', 'reconciled') then format('Event %s is not confirmed.', i.id)
          when e.transaction_date > r.statement_date then format('Event %s is dated after the statement date.', i.id)
        end as problem, e.id is null as missing
        from unnest(v_ids) i (id)
        left join app_public.ledger_events e on e.id = i.id) p
     where p.problem is not null
     limit 1;
    if bad.problem is not null then
      perform app_private.fail(bad.problem, case when bad.missing then 'AP404' else 'AP400' end);
    end if;
    insert into app_public.reconciliation_clearings (event_id, account_id, organization_id, reconciliation_id)
      select distinct i, r.payment_account_id, r.organization_id, r.id from unnest(v_ids) i order by 1
      on conflict (event_id, account_id) do nothing;
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
  -- The ticked events, locked before the sum: a reject or a reversal of one of them in flight
  -- commits first (and its tick no longer counts), or waits for this to complete.
  perform 1 from app_public.ledger_events e join app_public.reconciliation_clearings c on c.event_id = e.id
   where c.reconciliation_id = r.id order by e.id for no key update of e;
  v_cleared := app_private.reconciliation_cleared_balance(r);
  if v_cleared <> r.closing_balance then
    perform app_private.fail(format('The difference must be 0.00 to complete the reconciliation; it is %s.',
      app_private.money(r.closing_balance - v_cleared)));
  end if;
  -- Ticks of events rejected or reversed since are not part of it.
  delete from app_public.reconciliation_clearings c
   using app_public.ledger_events e
   where c.reconciliation_id = r.id and e.id = c.event_id and e.status not in ('confirmed', 'synced', 'reconciled');
  update app_public.ledger_events e set status = 'reconciled'
    from app_public.reconciliation_clearings c
   where c.reconciliation_id = r.id and e.id = c.event_id and e.status in ('confirmed', 'synced');
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
  -- In id order, as every writer of several events locks them.
  perform 1 from app_public.ledger_events e join app_public.reconciliation_clearings c on c.event_id = e.id
   where c.reconciliation_id = r.id order by e.id for no key update of e;
  -- Back to confirmed unless the other side of a transfer stays reconciled.
  update app_public.ledger_events e set status = 'confirmed'
    from app_public.reconciliation_clearings c
   where c.reconciliation_id = r.id and e.id = c.event_id and e.status = 'reconciled'
     and not exists (select 1 from app_public.reconciliation_clearings k join app_public.reconciliations o on o.id = k.reconciliation_id
                      where k.event_id = e.id and o.id <> r.id and o.status = 'completed');
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
--! Included ledger/lock-date.sql
-- The lock date (docs/api.md, Closing a period): no journal line or entry dated on or before an
-- organization's lock date is added, voided or removed, whoever writes it (a request, the CLI's
-- imports, the worker, an operator's job), because the journal's own triggers refuse it.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.


-- Statement-level: an import of 100,000 lines is one check. The organizations' rows are locked
-- FOR KEY SHARE, the lock the lines' foreign key to their organization takes anyway, and a change
-- of the lock date takes FOR UPDATE, which conflicts with it (organizations/organizations.sql):
-- the change waits for the postings in flight, and a posting waits for a change in flight, then
-- reads the new date. A posting racing a lock either lands before it or is refused. The rows of
-- an organization being deleted (not visible any more) go with it.
-- Lines and entries alike: both have organization_id and txn_date (an entry's lines have its date).
create or replace function app_private.tg_journal_lines__locked() returns trigger
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
declare
  v_lock date;
begin
  perform 1 from app_public.organizations o where o.id in (select distinct l.organization_id from changed_rows l)
   order by o.id for key share;
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

-- app_public.journal_entries: voiding one (its lines are voided with it by the functions, but the
-- entry's own voided_at is what the general ledger reads). Inserting one is covered by its lines
-- (an entry without lines does not commit), deleting one by its lines' cascade.
drop trigger if exists _300_locked_update on app_public.journal_entries;
create trigger _300_locked_update after update on app_public.journal_entries
  referencing old table as changed_rows for each statement execute function app_private.tg_journal_lines__locked();
--! EndIncluded ledger/lock-date.sql
