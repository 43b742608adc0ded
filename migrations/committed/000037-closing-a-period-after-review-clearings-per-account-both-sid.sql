--! Previous: sha1:23c970f01268d38cbf0c12409b7428e10e6483bd
--! Hash: sha1:32f9f76f22d096b69b20b1ca46013fb6cb2f38b6
--! Message: Closing a period after review: clearings per account (both sides of a transfer), locked ticks, the lock on journal entries, lockDate as JSON, key share against for update

-- After review: an event is cleared on each payment account it moves money on (both sides of a
-- transfer), once per account; voiding a journal entry in the locked period is refused too; a
-- lockDate the caller gave comes as JSON, so that no string can pass for "not given"; a posting
-- and a lock change serialize on the organization's row (key share against for update).
drop function if exists app_public.update_organization_settings(uuid, text, text, text);

alter table app_public.reconciliation_clearings add column if not exists account_id uuid;
update app_public.reconciliation_clearings c set account_id = r.payment_account_id
  from app_public.reconciliations r where r.id = c.reconciliation_id and c.account_id is null;
alter table app_public.reconciliation_clearings alter column account_id set not null;
alter table app_public.reconciliation_clearings drop constraint if exists reconciliation_clearings_pkey;
alter table app_public.reconciliation_clearings add constraint reconciliation_clearings_pkey primary key (event_id, account_id);
alter table app_public.reconciliation_clearings drop constraint if exists reconciliation_clearings_account_fkey;
alter table app_public.reconciliation_clearings add constraint reconciliation_clearings_account_fkey
  foreign key (organization_id, account_id) references app_public.accounts (organization_id, id);

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
    select i.id, e.id as found, e.status, e.transaction_date,
           r.payment_account_id in (e.payment_account_id, e.category_id) as on_account,
           exists (select 1 from app_public.reconciliation_clearings k
                    where k.event_id = e.id and k.account_id = r.payment_account_id and k.reconciliation_id <> r.id) as elsewhere
      into bad
      from unnest(v_ids) i (id)
      left join app_public.ledger_events e on e.id = i.id
     where e.id is null or not coalesce(r.payment_account_id in (e.payment_account_id, e.category_id), false)
        or e.status not in ('confirmed', 'synced', 'reconciled') or e.transaction_date > r.statement_date
        or exists (select 1 from app_public.reconciliation_clearings k
                    where k.event_id = e.id and k.account_id = r.payment_account_id and k.reconciliation_id <> r.id)
     limit 1;
    if bad.id is not null then
      perform app_private.fail(case
        when bad.found is null then 'Ledger event not found.'
        when not coalesce(bad.on_account, false) then format('Event %s is not on the account being reconciled.', bad.id)
        when bad.elsewhere then 'Event is reconciled.'
        when bad.status not in ('confirmed', 'synced', 'reconciled') then format('Event %s is not confirmed.', bad.id)
        else format('Event %s is dated after the statement date.', bad.id) end,
        case when bad.found is null then 'AP404' else 'AP400' end);
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

-- app_public.journal_entries: voiding one (its lines are voided with it by the functions, but the
-- entry's own voided_at is what the general ledger reads). Inserting one is covered by its lines
-- (an entry without lines does not commit), deleting one by its lines' cascade.
drop trigger if exists _300_locked_update on app_public.journal_entries;
create trigger _300_locked_update after update on app_public.journal_entries
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
    select coalesce(jsonb_agg(app_private.ledger_event_json(e, c, p, t, j) %4$s order by page.ord), '[]'::jsonb)
      from page
      join app_public.ledger_events e on e.id = page.id
      left join app_public.accounts c on c.id = e.category_id
      left join app_public.accounts p on p.id = e.payment_account_id
      left join app_public.accounts t on t.id = e.tax_account_id
      left join app_public.journal_entries j on j.id = e.journal_entry_id
  $q$, v_where, v_order, v_dir,
    -- In a reconciliation's list, cleared is whether this one ticked it (a transfer is on two).
    case when reconciliation_id is null then '' else $c$|| jsonb_build_object('cleared', exists (select 1
      from app_public.reconciliation_clearings k where k.event_id = e.id and k.reconciliation_id = ($14).id))$c$ end)
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
-- `lock_date` comes as JSON, so that a null the caller gave (unlock) differs from none (keep).
create or replace function app_public.update_organization_settings(organization_id uuid, date_order text default null,
    lock_date jsonb default null, fiscal_year_start text default null) returns jsonb
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
  -- FOR UPDATE, not the update's own lock: it conflicts with the key-share lock every posting
  -- holds on the row (ledger/lock-date.sql), so postings in flight commit first and later ones
  -- read the new lock date.
  perform 1 from app_public.organizations x where x.id = update_organization_settings.organization_id for update;
  update app_public.organizations x set
      date_order = coalesce(update_organization_settings.date_order, x.date_order),
      lock_date = case when update_organization_settings.lock_date is null then x.lock_date
        when jsonb_typeof(update_organization_settings.lock_date) = 'null' then null
        else app_private.parse_date(case when jsonb_typeof(update_organization_settings.lock_date) = 'string'
          then update_organization_settings.lock_date #>> '{}' end, 'lockDate must be a date in YYYY-MM-DD format.') end,
      fiscal_year_start = coalesce(update_organization_settings.fiscal_year_start, x.fiscal_year_start)
   where x.id = update_organization_settings.organization_id
   returning * into o;
  return jsonb_build_object('success', true, 'error', null, 'organization', app_private.organization_settings_json(o));
end $$;
grant execute on function app_public.update_organization_settings(organization_id uuid, date_order text, lock_date jsonb, fiscal_year_start text) to accounting_visitor;

create or replace function app_private.organization_settings_json(o app_public.organizations) returns jsonb
  language sql stable as
$$ select jsonb_build_object('id', o.id, 'name', o.name, 'functionalCurrency', o.functional_currency, 'dateOrder', o.date_order,
     'lockDate', to_char(o.lock_date, 'YYYY-MM-DD'), 'fiscalYearStart', o.fiscal_year_start) $$;
grant execute on function app_private.organization_settings_json(o app_public.organizations) to accounting_visitor;
--! EndIncluded organizations/organizations.sql
