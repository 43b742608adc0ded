--! Previous: sha1:d676339f3bf7452d000c3ab3121d17e878592dd3
--! Hash: sha1:b301b2d0ec37244edf29def7d026cc7f0794626e
--! Message: Statement rows and events paired greedily by one function (transfers and pending settlements had a copy each); a rule's changes worked out once when applied

-- Reading the change once more: statement rows and events paired greedily by one function
-- (transfers and pending settlements had a copy each); a rule's changes worked out once when applied.

do $$ begin
  if to_regtype('app_private.row_event_pair') is null then
    create type app_private.row_event_pair as (row_index integer, event_id uuid);
  end if;
end $$;

--! Included imports/bank-statements.sql
-- Bank statement imports: the duplicate check and the import of a whole statement into one
-- payment account, set-based (contract: checkBankStatementDups, importBankStatement, Behavior
-- rules 6-8; docs/api.md, Bank statement imports). The operator's import_bank_csv command calls
-- the same functions.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security and grants of this feature's table.

-- app_public.import_batches
drop policy if exists import_batches_tenant on app_public.import_batches;
create policy import_batches_tenant on app_public.import_batches
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant insert, select on app_public.import_batches to accounting_visitor;
grant select on app_public.import_batches to reporting_reader;

------------------------------------------------------------------------------------------------

-- The most rows one API call may check or import. The operator's CLI imports a whole file in
-- one call (chunks would take identical rows for duplicates of each other), a file of at most
-- 100,000 rows (src/imports/bank-files/limits.ts).
create or replace function app_private.max_statement_rows() returns integer
  language sql immutable parallel safe as
$$ select 5000 $$;
grant execute on function app_private.max_statement_rows() to accounting_visitor;

-- A merchant name as duplicates compare it: runs of white space (tabs and no-break spaces too)
-- collapsed to one space, then trimmed, case ignored.
create or replace function app_private.merchant_key(merchant_name text) returns text
  language sql immutable parallel safe as
$$ select btrim(lower(regexp_replace(normalize(merchant_name, NFC), '[[:space:]' || chr(160) || ']+', ' ', 'g'))) $$;
grant execute on function app_private.merchant_key(merchant_name text) to accounting_visitor;

-- One statement row, validated; every message names the 0-based row. The sign of the amount
-- gives the direction (negative: money out of the payment account), whatever the event type.
-- `pending`: the bank has not posted it yet (pending.sql).
drop function if exists app_private.bank_statement_row(jsonb, integer);
create or replace function app_private.bank_statement_row(item jsonb, row_index integer)
  returns table (transaction_date date, amount numeric, direction text, merchant_name text, event_type text,
    memo text, reference text, pending boolean)
  language plpgsql immutable as
$$
declare
  k text;
  v_amount text;
  v_negative boolean;
begin
  if item is null or jsonb_typeof(item) <> 'object' then
    perform app_private.fail(format('Row %s must be an object.', row_index));
  end if;
  foreach k in array array['transactionDate', 'description', 'amount', 'eventType', 'memo', 'reference'] loop
    if jsonb_typeof(item -> k) not in ('string', 'null') then
      perform app_private.fail(format('Row %s: %s must be a string.', row_index, k));
    end if;
  end loop;
  transaction_date := app_private.parse_date(item ->> 'transactionDate',
    format('Row %s: transactionDate must be a date in YYYY-MM-DD format.', row_index));
  merchant_name := app_private.clean_text(item ->> 'description');
  if merchant_name is null or merchant_name = '' then
    perform app_private.fail(format('Row %s: description is required.', row_index));
  end if;
  if length(merchant_name) > 500 then
    perform app_private.fail(format('Row %s: description must be at most 500 characters.', row_index));
  end if;
  v_amount := btrim(item ->> 'amount');
  if v_amount !~ '^[-+]?[0-9]' then v_amount := 'x'; end if; -- a digit right after the sign
  v_negative := left(v_amount, 1) = '-';
  if left(v_amount, 1) in ('-', '+') then v_amount := substr(v_amount, 2); end if;
  amount := app_private.parse_amount(v_amount,
    format('Row %s: amount must be a non-zero decimal string with at most 2 decimals (negative for money out).', row_index));
  direction := case when v_negative then 'out' else 'in' end;
  event_type := item ->> 'eventType';
  if event_type is null or event_type not in ('expense', 'income', 'transfer') then
    perform app_private.fail(format('Row %s: eventType must be one of: expense, income, transfer.', row_index));
  end if;
  memo := coalesce(normalize(item ->> 'memo', NFC), '');
  if length(memo) > 5000 then perform app_private.fail(format('Row %s: memo must be at most 5000 characters.', row_index)); end if;
  reference := nullif(app_private.clean_text(item ->> 'reference'), '');
  if length(reference) > 255 then
    perform app_private.fail(format('Row %s: reference must be at most 255 characters.', row_index));
  end if;
  if jsonb_typeof(item -> 'pending') not in ('boolean', 'null') then
    perform app_private.fail(format('Row %s: pending must be true or false.', row_index));
  end if;
  pending := coalesce((item ->> 'pending')::boolean, false);
  return next;
end $$;
grant execute on function app_private.bank_statement_row(item jsonb, row_index integer) to accounting_visitor;

-- The events a statement row could duplicate by date and amount: the organization's on the
-- payment account or without one, on the given days with the given amounts. Security definer, so
-- that the index on (organization, date, amount) serves each pair: under row-level security the
-- planner may not use a numeric comparison in an index condition (numeric_eq is not leakproof)
-- and would read the organization's every event. Tenancy: the organization must be the caller's
-- (the one in scope for RLS), and it filters every row. No temporary objects, no unqualified names.
-- `waiting`: a pending event, or one set aside while pending (its posted row is not its duplicate).
drop function if exists app_private.statement_candidates(uuid, uuid, date[], numeric[]);
create or replace function app_private.statement_candidates(org uuid, payment_account uuid, days date[], amounts numeric[])
  returns table (id uuid, transaction_date date, functional_amount numeric, direction text, merchant_name text,
    reference text, created timestamptz, waiting boolean)
  language sql stable security definer set search_path = pg_catalog, app_public, pg_temp set jit = off as
$$
  select e.id, e.transaction_date, e.functional_amount, e.direction, e.merchant_name, e.reference, e.created,
         e.status = 'pending' or e.status = 'ignored' and app_private.ignored_while_pending(org, e.id)
    from app_public.ledger_events e
   where e.organization_id = org and org = app_public.current_organization_id()
     and (e.payment_account_id = payment_account or e.payment_account_id is null)
     and (e.transaction_date, e.functional_amount) in (select d, a from unnest(days, amounts) x (d, a))
$$;
grant execute on function app_private.statement_candidates(org uuid, payment_account uuid, days date[], amounts numeric[]) to accounting_visitor;

-- Pairs of statement rows and events in order of preference, taken greedily: a pair is kept when
-- neither its row nor its event is in a pair kept before it. Matching by a window (of days), not
-- an equal key, is paired this way; few rows get there.
create or replace function app_private.greedy_pairs(pairs app_private.row_event_pair[])
  returns table (row_index integer, event_id uuid)
  language plpgsql immutable as
$$
declare
  p app_private.row_event_pair;
  v_rows integer[] := '{}';
  v_events uuid[] := '{}';
begin
  foreach p in array coalesce(pairs, '{}') loop
    if not (p.row_index = any (v_rows)) and not (p.event_id = any (v_events)) then
      v_rows := v_rows || p.row_index;
      v_events := v_events || p.event_id;
    end if;
  end loop;
  return query select * from unnest(v_rows, v_events);
end $$;
grant execute on function app_private.greedy_pairs(pairs app_private.row_event_pair[]) to accounting_visitor;

-- Each row of a statement matched against the books (docs/api.md, Bank statement imports), one
-- to one: an existing event absorbs at most one row, so n identical rows are all skipped only when
-- n identical events exist.
-- Existing events are those of the payment account or without one, ignored events included (a
-- rejected duplicate must not come back). A posted row is compared with posted events, a pending
-- row with pending ones (an event set aside while pending counts as pending: its posted row is new).
-- In order of precedence:
--   1. equal references on the account, money moving the same way: a full match, whatever else
--      differs;
--   2. same date, amount, direction and merchant: a full match, unless both carry references
--      and they differ (then they are different transactions);
--   3. a posted row left settles the account's pending event of it (pending_settlements);
--   4. a transfer booked into this account from another (a processor payout, a card payment from
--      chequing): same amount, money moving the row's way, dated 0 to 5 days before the row;
--   5. same date, amount and direction, other merchant: a possible match (flagged, imported).
-- Identical rows and identical events pair up in order (the k-th row with the k-th event), so
-- every stage is one statement, whatever the number of rows. The rows and the candidates of
-- stages 2 and 5 sit in temporary tables of the caller's session, dropped at commit.
drop function if exists app_private.bank_statement_matches(uuid, uuid, jsonb);
create or replace function app_private.bank_statement_matches(org uuid, payment_account uuid, rows jsonb)
  returns table (row_index integer, transaction_date date, amount numeric, direction text, merchant_name text,
    event_type text, memo text, reference text, pending boolean, is_duplicate boolean, is_possible_duplicate boolean,
    matching_event_id uuid, settles_pending boolean)
  -- JIT is off: the plans are cheap probes that look costly over millions of rows.
  language plpgsql volatile set jit = off as
$$
declare
  v_with_reference boolean;
begin
  if org is distinct from app_public.current_organization_id() then perform app_private.fail('Organization Not Found.', 'AU404'); end if;
  if rows is null or jsonb_typeof(rows) <> 'array' then perform app_private.fail('rows must be a list of statement rows.'); end if;
  drop table if exists pg_temp.statement_rows;
  create temporary table statement_rows (
    row_index integer primary key, transaction_date date, amount numeric, direction text, merchant_name text,
    merchant_key text, event_type text, memo text, reference text, pending boolean,
    event_id uuid, full_match boolean not null default false, settles boolean not null default false) on commit drop;
  insert into pg_temp.statement_rows (row_index, transaction_date, amount, direction, merchant_name, merchant_key,
      event_type, memo, reference, pending)
    select (r.n - 1)::integer, x.transaction_date, x.amount, x.direction, x.merchant_name,
           app_private.merchant_key(x.merchant_name), x.event_type, x.memo, x.reference, x.pending
      from jsonb_array_elements(rows) with ordinality r (item, n)
      cross join lateral app_private.bank_statement_row(r.item, (r.n - 1)::integer) x;
  analyze pg_temp.statement_rows;
  drop table if exists pg_temp.statement_candidates;
  create temporary table statement_candidates on commit drop as
    select c.*, app_private.merchant_key(c.merchant_name) merchant_key
      from app_private.statement_candidates(org, payment_account,
             (select array_agg(s.transaction_date) from pg_temp.statement_rows s),
             (select array_agg(s.amount) from pg_temp.statement_rows s)) c;
  analyze pg_temp.statement_candidates;


  -- 1. References: the k-th row of a reference takes the k-th event of it on this account.
  with r as (
    select s.row_index, s.reference, s.pending, s.direction,
           row_number() over (partition by s.reference, s.pending, s.direction order by s.row_index) k
      from pg_temp.statement_rows s where s.reference is not null
  ), e as (
    select e.id, e.reference, x.waiting, e.direction,
           row_number() over (partition by e.reference, x.waiting, e.direction order by e.created, e.id) k
      from app_public.ledger_events e
      cross join lateral (select e.status = 'pending' or e.status = 'ignored' and app_private.ignored_while_pending(org, e.id) waiting) x
     where e.organization_id = org and e.payment_account_id = payment_account
       and e.reference in (select s.reference from pg_temp.statement_rows s where s.reference is not null)
  )
  -- A posted row is the duplicate of a posted event, a pending row of a pending one (a pending
  -- event is settled by its posted row: step 3 below).
  update pg_temp.statement_rows s set event_id = e.id, full_match = true
    from r join e on e.reference = r.reference and e.k = r.k and e.waiting = r.pending and e.direction = r.direction
   where s.row_index = r.row_index;

  -- 2. Same day, amount, direction and merchant. Rows with a reference go first, to events
  -- without one (their only possible partners); rows without a reference take any event left.
  foreach v_with_reference in array array[true, false] loop
    with e as (
      select c.id, c.transaction_date, c.functional_amount, c.direction, c.merchant_key, c.waiting,
             row_number() over (partition by c.transaction_date, c.functional_amount, c.direction, c.merchant_key, c.waiting
                                order by c.created, c.id) k
        from pg_temp.statement_candidates c
       where not exists (select 1 from pg_temp.statement_rows t where t.event_id = c.id)
         and (not v_with_reference or c.reference is null)
    ), r as (
      select s.row_index, s.transaction_date, s.amount, s.direction, s.merchant_key, s.pending,
             row_number() over (partition by s.transaction_date, s.amount, s.direction, s.merchant_key, s.pending order by s.row_index) k
        from pg_temp.statement_rows s
       where s.event_id is null and (s.reference is not null) = v_with_reference
    )
    update pg_temp.statement_rows s set event_id = e.id, full_match = true
      from r join e on (e.transaction_date, e.functional_amount, e.direction, e.merchant_key, e.k, e.waiting)
                     = (r.transaction_date, r.amount, r.direction, r.merchant_key, r.k, r.pending)
     where s.row_index = r.row_index;
  end loop;

  -- 3. Posted rows still unmatched settle the account's pending events (pending_settlements).
  update pg_temp.statement_rows s set event_id = p.event_id, settles = true
    from app_private.pending_settlements(org, payment_account) p
   where s.row_index = p.row_index;

  -- 4. Transfers into (or out of) this account booked on another: a date window, not an equal
  -- key, so the pairs are taken greedily, each row its nearest event. Few rows get here.
  update pg_temp.statement_rows s set event_id = t.event_id, full_match = true
    from app_private.greedy_pairs((
      select array_agg(row(s.row_index, e.id)::app_private.row_event_pair
                       order by s.row_index, s.transaction_date - e.transaction_date, e.created, e.id)
        from pg_temp.statement_rows s
        join app_public.ledger_events e
          on e.organization_id = org and e.category_id = payment_account and e.event_type = 'transfer'
         and e.payment_account_id is distinct from payment_account
         and e.functional_amount = s.amount and e.direction <> s.direction
         and e.transaction_date between s.transaction_date - 5 and s.transaction_date
       where s.event_id is null
         and not exists (select 1 from pg_temp.statement_rows t where t.event_id = e.id))) t
   where s.row_index = t.row_index;

  -- 5. Possible matches: same day, amount and direction, another merchant; an event not taken by
  -- a full match first. Flagged only: the row is imported. (A further copy of a row whose events
  -- are all taken is no possible match: its merchant is the same, it is simply one more.)
  update pg_temp.statement_rows s set event_id = p.id
    from (select distinct on (r.row_index) r.row_index, c.id
            from pg_temp.statement_rows r
            join pg_temp.statement_candidates c
              on c.transaction_date = r.transaction_date and c.functional_amount = r.amount and c.direction = r.direction
             and c.merchant_key <> r.merchant_key
           where r.event_id is null
             and not (c.reference is not null and r.reference is not null and c.reference <> r.reference)
           order by r.row_index, c.id in (select t.event_id from pg_temp.statement_rows t where t.full_match), c.created, c.id) p
   where s.row_index = p.row_index;

  return query
    select s.row_index, s.transaction_date, s.amount, s.direction, s.merchant_name, s.event_type, s.memo, s.reference,
           s.pending, s.full_match, s.event_id is not null and not s.full_match and not s.settles, s.event_id, s.settles
      from pg_temp.statement_rows s order by s.row_index;
end $$;
grant execute on function app_private.bank_statement_matches(org uuid, payment_account uuid, rows jsonb) to accounting_visitor;

-- One row's duplicate-check result as the contract shapes it, and whether the row settles a
-- pending event (matchingEventId).
drop function if exists app_private.duplicate_check_json(integer, boolean, boolean, uuid);
create or replace function app_private.duplicate_check_json(row_index integer, is_duplicate boolean,
    is_possible_duplicate boolean, matching_event_id uuid, settles_pending boolean) returns jsonb
  language sql immutable parallel safe as
$$ select jsonb_build_object('rowIndex', row_index, 'isDuplicate', is_duplicate,
     'isPossibleDuplicate', is_possible_duplicate, 'matchingEventId', matching_event_id, 'settlesPendingEvent', settles_pending) $$;
grant execute on function app_private.duplicate_check_json(row_index integer, is_duplicate boolean, is_possible_duplicate boolean, matching_event_id uuid, settles_pending boolean) to accounting_visitor;

-- The duplicate flags of a statement; writes nothing.
create or replace function app_private.check_bank_statement_dups(org uuid, payment_account_id uuid, rows jsonb) returns jsonb
  language plpgsql volatile as
$$
begin
  perform app_private.scope_organization(org);
  perform app_private.check_payment_account(payment_account_id);
  return (select coalesce(jsonb_agg(app_private.duplicate_check_json(m.row_index, m.is_duplicate,
             m.is_possible_duplicate, m.matching_event_id, m.settles_pending) order by m.row_index), '[]')
            from app_private.bank_statement_matches(org, payment_account_id, rows) m);
end $$;
grant execute on function app_private.check_bank_statement_dups(org uuid, payment_account_id uuid, rows jsonb) to accounting_visitor;

-- Imports a statement: one event per row that is not a full match, in needs_review on the payment
-- account, categorised by the best category rule. Imports into one account are serialised (a row
-- lock on the account), so two imports of one statement at once give the result of one after
-- the other: the second sees the first's events and skips every row.
create or replace function app_private.import_bank_statement(org uuid, payment_account_id uuid, currency text,
    rows jsonb, file_name text default null) returns jsonb
  language plpgsql volatile as
$$
declare
  v_currency text;
  v_batch uuid;
  v_imported integer;
  v_settled integer;
  v_total integer;
  v_results jsonb;
begin
  perform app_private.scope_organization(org);
  perform set_config('app.audit_action', 'import', true);
  perform app_private.check_payment_account(payment_account_id);
  select o.functional_currency into v_currency from app_public.organizations o where o.id = org;
  if currency is not null and upper(btrim(currency)) <> v_currency then
    perform app_private.fail(format('currency must be the organization''s currency (%s).', v_currency));
  end if;
  -- Later statements of this function see what a concurrent import committed before the lock
  -- (each statement takes a new snapshot at READ COMMITTED, not at a stricter level).
  if current_setting('transaction_isolation') <> 'read committed' then
    perform app_private.fail('A bank statement import must run at the READ COMMITTED isolation level.');
  end if;
  perform 1 from app_public.accounts a where a.id = payment_account_id for no key update;

  v_batch := app_private.uuid_v7();
  insert into app_public.import_batches (id, organization_id, source, batch_key, payment_account_id, file_name,
      actor_api_key_id, actor_user_id)
    values (v_batch, org, 'bank_import', 'bank:' || v_batch, payment_account_id, file_name,
      app_public.current_api_key_id(), app_public.current_user_id());

  with m as (
    select * from app_private.bank_statement_matches(org, payment_account_id, rows)
  ), fresh as (
    select m.*, app_private.uuid_v7() id from m where not m.is_duplicate and not m.settles_pending
  ), settled as (
    -- The posted row's day and amount; a new amount leaves the classification to be done again.
    update app_public.ledger_events e set status = 'needs_review', transaction_date = m.transaction_date,
        functional_amount = m.amount, reference = coalesce(m.reference, e.reference),
        category_id = case when e.functional_amount = m.amount then e.category_id end,
        splits = case when e.functional_amount = m.amount then e.splits end,
        tax_amount = case when e.functional_amount = m.amount then e.tax_amount end,
        tax_code = case when e.functional_amount = m.amount then e.tax_code end,
        tax_account_id = case when e.functional_amount = m.amount then e.tax_account_id end
      from m where m.settles_pending and e.id = m.matching_event_id and e.status = 'pending'
      returning 1
  ), ruled as (
    -- Behavior rule 10: the rule for each new event (rule_classifications), as createLedgerEvent applies it.
    select * from app_private.rule_classifications(org, array(
      select row(f.id, f.merchant_name, f.direction, f.amount, payment_account_id, f.event_type, f.transaction_date, null)::app_private.rule_subject
        from fresh f))
  ), inserted as (
    insert into app_public.ledger_events (id, organization_id, event_type, direction, merchant_name, functional_amount,
        functional_currency, transaction_date, memo, reference, category_id, payment_account_id, source, import_batch_id,
        splits, tax_amount, tax_code, tax_account_id, contact_id, status)
      select f.id, org, f.event_type, f.direction, f.merchant_name, f.amount, v_currency, f.transaction_date, f.memo,
             f.reference, r.category_id, payment_account_id, 'bank_import', v_batch,
             r.splits, r.tax_amount, r.tax_code, r.tax_account_id, r.contact_id,
             case when f.pending then 'pending' else 'needs_review' end
        from fresh f left join ruled r on r.event_id = f.id order by f.row_index
      returning 1
  ), counted as (
    update app_public.category_rules r set match_count = r.match_count + c.n
      from (select x.rule_id, count(*) n from ruled x group by x.rule_id) c
     where r.id = c.rule_id
  )
  select (select count(*) from inserted), (select count(*) from settled), (select count(*) from m),
         (select coalesce(jsonb_agg(app_private.duplicate_check_json(m.row_index, m.is_duplicate, m.is_possible_duplicate,
                  m.matching_event_id, m.settles_pending) order by m.row_index), '[]') from m)
    into v_imported, v_settled, v_total, v_results;
  -- Each settling row settled its event: one changed meanwhile (expired, rejected) fails the import,
  -- which is then made again, rather than leave the row neither imported nor settled.
  if v_settled <> (select count(*) from jsonb_array_elements(v_results) r where (r->>'settlesPendingEvent')::boolean) then
    perform app_private.fail('A pending event changed during the import: import the statement again.');
  end if;

  perform app_private.record_webhook_event(org, 'bank_import.completed', v_batch, jsonb_build_object('batchId', v_batch,
    'paymentAccountId', payment_account_id, 'fileName', file_name, 'importedCount', v_imported,
    'skippedCount', v_total - v_imported - v_settled, 'settledCount', v_settled));
  -- The flags each row was imported or skipped by (the operator's preview shows them).
  return jsonb_build_object('importedCount', v_imported, 'skippedCount', v_total - v_imported - v_settled,
    'settledCount', v_settled, 'batchId', v_batch, 'results', v_results);
end $$;
grant execute on function app_private.import_bank_statement(org uuid, payment_account_id uuid, currency text, rows jsonb, file_name text) to accounting_visitor;

create or replace function app_private.check_statement_size(rows jsonb) returns void
  language plpgsql immutable as
$$
begin
  if rows is not null and jsonb_typeof(rows) = 'array' and jsonb_array_length(rows) > app_private.max_statement_rows() then
    perform app_private.fail(format('At most %s rows per call.', to_char(app_private.max_statement_rows(), 'FM9,999')));
  end if;
end $$;
grant execute on function app_private.check_statement_size(rows jsonb) to accounting_visitor;

create or replace function app_public.check_bank_statement_dups(organization_id uuid, payment_account_id uuid, rows jsonb) returns jsonb
  language plpgsql volatile as
$$
begin
  perform app_private.assert_org_access(organization_id, false);
  perform app_private.check_statement_size(rows);
  return jsonb_build_object('success', true, 'error', null,
    'results', app_private.check_bank_statement_dups(organization_id, payment_account_id, rows));
end $$;
grant execute on function app_public.check_bank_statement_dups(organization_id uuid, payment_account_id uuid, rows jsonb) to accounting_visitor;

create or replace function app_public.import_bank_statement(organization_id uuid, payment_account_id uuid, rows jsonb,
    currency text default null) returns jsonb
  language plpgsql volatile as
$$
declare r jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  perform app_private.check_statement_size(rows);
  r := app_private.import_bank_statement(organization_id, payment_account_id, currency, rows);
  return jsonb_build_object('success', true, 'error', null, 'importedCount', r -> 'importedCount',
    'skippedCount', r -> 'skippedCount', 'settledCount', r -> 'settledCount', 'batchId', r -> 'batchId');
end $$;
grant execute on function app_public.import_bank_statement(organization_id uuid, payment_account_id uuid, rows jsonb, currency text) to accounting_visitor;
--! EndIncluded imports/bank-statements.sql
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
-- first (greedy_pairs).
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
    select array_agg(row(s.row_index, e.id)::app_private.row_event_pair
                     order by (s.reference is not null and e.reference = s.reference) desc,
                              abs(s.transaction_date - e.transaction_date), s.row_index, e.created, e.id)
      from pg_temp.statement_rows s
      join app_public.ledger_events e
        on e.organization_id = org and e.payment_account_id = payment_account and e.status = 'pending'
       and e.direction = s.direction
       and ((s.reference is not null and e.reference = s.reference)
            or (e.transaction_date between v_from and v_to and e.functional_amount = s.amount
                and app_private.merchant_key(e.merchant_name) = s.merchant_key
                and abs(s.transaction_date - e.transaction_date) <= app_private.pending_settle_days()))
     where not s.pending and s.event_id is null
       and not exists (select 1 from pg_temp.statement_rows t where t.event_id = e.id)));
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
--! Included rules/category-rules.sql
-- Category rules (docs/api.md, Category rules): a pattern on merchant names, conditions (direction,
-- an amount range, a payment account) and what the rule sets (a category or percentage splits, a
-- contact, a sales tax code). The first rule whose every condition holds applies, by priority
-- (lower first), then the longest pattern, then the oldest. One function decides it,
-- rule_classifications, for creation, imports, a new rule and applyCategoryRule alike; rules never
-- touch confirmed events.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.category_rules
drop policy if exists category_rules_tenant on app_public.category_rules;
create policy category_rules_tenant on app_public.category_rules
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant delete, select on app_public.category_rules to accounting_visitor;
grant insert (account_id, organization_id, vendor_pattern, priority, direction, amount_min, amount_max, payment_account_id,
  contact_id, tax_code, splits) on app_public.category_rules to accounting_visitor;
grant update (account_id, match_count, updated, vendor_pattern, priority, direction, amount_min, amount_max, payment_account_id,
  contact_id, tax_code, splits) on app_public.category_rules to accounting_visitor;

drop trigger if exists _100_touch_updated on app_public.category_rules;
create trigger _100_touch_updated before update on app_public.category_rules
  for each row execute function app_private.tg__touch_updated();

------------------------------------------------------------------------------------------------

-- The accounts a rule sets (its category, or each split's) and the event types all of them fit;
-- none when one of them is inactive.
create or replace function app_private.rule_reach(r app_public.category_rules)
  returns table (account_ids uuid[], fits text[])
  language sql stable as
$$
  with acct as (
    select a.id, a.active, a.classification
      from app_public.accounts a
     where a.organization_id = r.organization_id
       and a.id in (select r.account_id union all select (s->>'category_id')::uuid from jsonb_array_elements(coalesce(r.splits, '[]')) s)
  )
  select (select array_agg(a.id) from acct a),
         coalesce((select array_agg(t.t) from unnest(array['expense', 'income', 'transfer', 'refund']) t (t)
                    where not exists (select 1 from acct a
                                       where not a.active or not case when r.splits is null then app_private.category_fits(t.t, a.classification)
                                                                      else app_private.split_category_fits(t.t, a.classification) end)), '{}')
$$;
grant execute on function app_private.rule_reach(r app_public.category_rules) to accounting_visitor;

-- A rule's percentage splits as lines of an event's amount, adding up to it exactly: each line its
-- share rounded down to the cent, the cents left over one each to the lines with the largest
-- remainders (the first of equals); a line of 0.00 is left out. Each line's tax from its code
-- (split_line).
create or replace function app_private.rule_split_lines(splits jsonb, event_type text, amount numeric, on_day date) returns jsonb
  language sql stable as
$$
  with s as (
    select x.v, x.n, floor(amount * (x.v->>'percent')::numeric) / 100 share,
           amount * (x.v->>'percent')::numeric - floor(amount * (x.v->>'percent')::numeric) remainder
      from jsonb_array_elements(splits) with ordinality x (v, n)
  ), lines as (
    select s.v, s.n, round(s.share + case when row_number() over (order by s.remainder desc, s.n)
                                               <= round((amount - sum(s.share) over ()) * 100) then 0.01 else 0 end, 2) line_amount
      from s
  )
  select jsonb_agg(app_private.split_line((l.v->>'category_id')::uuid, l.line_amount, l.v->>'tax_code', null,
           l.v->>'memo', event_type, on_day) order by l.n)
    from lines l where l.line_amount > 0
$$;
grant execute on function app_private.rule_split_lines(splits jsonb, event_type text, amount numeric, on_day date) to accounting_visitor;

-- What a rule sets on an event: its category (or splits, whose largest line is the category),
-- the tax its code puts in the tax account, the organization's GST/HST account for it (confirming
-- asks for one when there is none, as for any taxed event; an import is never refused for it), its
-- contact (else the event's).
create or replace function app_private.rule_outcome(r app_public.category_rules, event_type text, amount numeric,
    on_day date, contact uuid)
  returns table (category_id uuid, splits jsonb, tax_amount numeric, tax_code text, tax_account_id uuid, contact_id uuid)
  language plpgsql stable as
$$
begin
  contact_id := coalesce(r.contact_id, contact);
  if r.splits is not null then
    splits := app_private.rule_split_lines(r.splits, event_type, amount, on_day);
    category_id := app_private.largest_split_category(splits);
    tax_amount := app_private.splits_tax(splits);
  else
    category_id := r.account_id;
    if r.tax_code is not null then
      tax_code := r.tax_code;
      tax_amount := app_private.tax_for_account(amount, r.tax_code, app_private.is_sale(r.account_id, event_type), on_day);
    end if;
  end if;
  if coalesce(tax_amount, 0) > 0 then tax_account_id := app_private.tax_type_account(r.organization_id, 'GST_HST'); end if;
  return next;
end $$;
grant execute on function app_private.rule_outcome(r app_public.category_rules, event_type text, amount numeric, on_day date, contact uuid) to accounting_visitor;

-- The rule for each event and what it sets: among the organization's rules (with `candidate` in
-- place of the rule of its id, or added: a preview), the first whose every condition holds and
-- whose accounts fit the event. Set-based: a pattern is tried once per distinct name (a statement
-- repeats its merchants), the conditions then per event. Names and patterns compared in NFC, case
-- ignored.
create or replace function app_private.rule_classifications(org uuid, subjects app_private.rule_subject[],
    candidate app_public.category_rules default null)
  returns table (event_id uuid, rule_id uuid, category_id uuid, splits jsonb, tax_amount numeric, tax_code text,
    tax_account_id uuid, contact_id uuid)
  language sql stable as
$$
  with rule as materialized (
    select c.x, lower(normalize((c.x).vendor_pattern, NFC)) lpattern
      from (select r from app_public.category_rules r where r.organization_id = org and r.id is distinct from (candidate).id
            union all
            select candidate where (candidate).id is not null) c (x)
  ), subject as materialized (
    select s.*, lower(normalize(s.merchant_name, NFC)) lname from unnest(subjects) s
  ), named as materialized (
    select n.lname, r.x, (r.x).id rule_id from (select distinct s.lname from subject s) n join rule r on n.lname like r.lpattern
  ), reach as materialized (
    -- The accounts of the rules that matched a name, and the event types they fit: only those.
    select m.rule_id, u.account_ids, u.fits
      from (select distinct on (n.rule_id) n.rule_id, n.x from named n) m cross join lateral app_private.rule_reach(m.x) u
     where u.fits <> '{}'
  ), candidate as materialized (
    -- Each name's usable rules, with the fields the conditions read as plain columns (read from
    -- the rule record once, not once per event).
    select n.lname, n.x, r.account_ids, r.fits, (n.x).direction direction, (n.x).amount_min amount_min,
           (n.x).amount_max amount_max, (n.x).payment_account_id payment_account_id, (n.x).priority priority,
           length((n.x).vendor_pattern) pattern_length, (n.x).created created, n.rule_id
      from named n join reach r on r.rule_id = n.rule_id
  ), chosen as (
    select distinct on (s.id) s.id, s.event_type, s.amount, s.transaction_date, s.contact_id, c.x
      from subject s join candidate c on c.lname = s.lname
     where s.event_type = any (c.fits)
       and (c.direction is null or c.direction = s.direction)
       and (s.amount >= c.amount_min or c.amount_min is null)
       and (s.amount <= c.amount_max or c.amount_max is null)
       and (c.payment_account_id is null or c.payment_account_id = s.payment_account_id)
       and coalesce(s.payment_account_id <> all (c.account_ids), true)
     order by s.id, c.priority, c.pattern_length desc, c.created, c.rule_id
  )
  select c.id, (c.x).id, o.category_id, o.splits, o.tax_amount, o.tax_code, o.tax_account_id, o.contact_id
    from chosen c cross join lateral app_private.rule_outcome(c.x, c.event_type, c.amount, c.transaction_date, c.contact_id) o
$$;
grant execute on function app_private.rule_classifications(org uuid, subjects app_private.rule_subject[], candidate app_public.category_rules) to accounting_visitor;

-- The events waiting for review that a rule would change, and how: those it is the rule for
-- (rule_classifications) whose classification would differ; only the unclassified ones when a
-- new rule classifies what waits. A preview and applyCategoryRule read the same rows.
create or replace function app_private.rule_changes(r app_public.category_rules, only_unclassified boolean)
  returns table (event_id uuid, category_id uuid, splits jsonb, tax_amount numeric, tax_code text, tax_account_id uuid,
    contact_id uuid)
  language sql stable as
$$
  select c.event_id, c.category_id, c.splits, c.tax_amount, c.tax_code, c.tax_account_id, c.contact_id
    from app_private.rule_classifications(r.organization_id, array(
           select row(e.id, e.merchant_name, e.direction, e.functional_amount, e.payment_account_id, e.event_type,
                      e.transaction_date, e.contact_id)::app_private.rule_subject
             from app_public.ledger_events e
            where e.organization_id = r.organization_id and e.status = 'needs_review'
              and (not only_unclassified or e.category_id is null)
              and lower(normalize(e.merchant_name, NFC)) like lower(normalize(r.vendor_pattern, NFC))), r) c
    join app_public.ledger_events e on e.id = c.event_id
   where c.rule_id = r.id
     and (e.category_id, e.splits, e.tax_amount, e.tax_code, e.tax_account_id, e.contact_id)
         is distinct from (c.category_id, c.splits, c.tax_amount, c.tax_code, c.tax_account_id, c.contact_id)
$$;
grant execute on function app_private.rule_changes(r app_public.category_rules, only_unclassified boolean) to accounting_visitor;

-- Applies a rule's changes and counts them on the rule.
create or replace function app_private.apply_rule(r app_public.category_rules, only_unclassified boolean) returns integer
  language plpgsql volatile as
$$
declare n integer;
begin
  perform set_config('app.audit_action', 'rule', true);
  -- The changes worked out once; their events locked in id order, as every writer of several
  -- events locks them; an event no longer waiting by then is left as it is.
  with c as materialized (
    select * from app_private.rule_changes(r, only_unclassified)
  ), locked as (
    select e.id from app_public.ledger_events e where e.id in (select c.event_id from c) order by e.id for no key update
  )
  update app_public.ledger_events e set category_id = c.category_id, splits = c.splits, tax_amount = c.tax_amount,
      tax_code = c.tax_code, tax_account_id = c.tax_account_id, contact_id = c.contact_id
    from c
   where e.id = c.event_id and e.id in (select l.id from locked l) and e.status = 'needs_review';
  get diagnostics n = row_count;
  if n > 0 then
    update app_public.category_rules x set match_count = x.match_count + n where x.id = r.id;
  end if;
  return n;
end $$;
grant execute on function app_private.apply_rule(r app_public.category_rules, only_unclassified boolean) to accounting_visitor;

-- A new rule classifies the events waiting for review that have no category yet.
create or replace function app_private.tg_category_rules__classify() returns trigger
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
begin
  perform app_private.apply_rule(new, true);
  return null;
end $$;
grant execute on function app_private.tg_category_rules__classify() to accounting_visitor;

drop trigger if exists _600_classify_needs_review on app_public.category_rules;
create trigger _600_classify_needs_review after insert on app_public.category_rules
  for each row execute function app_private.tg_category_rules__classify();

drop function if exists app_private.best_category_rule(uuid, text);
drop function if exists app_private.best_category_rules(uuid, text[]);

create or replace function app_private.category_rule_json(r app_public.category_rules) returns jsonb
  language sql stable as
$$ select jsonb_build_object('id', r.id, 'vendorPattern', r.vendor_pattern,
     'account', (select jsonb_build_object('id', a.id, 'name', a.name, 'accountType', a.account_type, 'active', a.active)
                   from app_public.accounts a where a.organization_id = r.organization_id and a.id = r.account_id),
     'priority', r.priority, 'direction', r.direction,
     'amountMin', app_private.money(r.amount_min), 'amountMax', app_private.money(r.amount_max),
     'paymentAccount', (select jsonb_build_object('id', a.id, 'name', a.name)
                          from app_public.accounts a where a.organization_id = r.organization_id and a.id = r.payment_account_id),
     'contact', (select jsonb_build_object('id', k.id, 'displayName', k.display_name)
                   from app_public.contacts k where k.organization_id = r.organization_id and k.id = r.contact_id),
     'taxCode', r.tax_code,
     'splits', coalesce((select jsonb_agg(jsonb_build_object('category', jsonb_build_object('id', a.id, 'name', a.name),
                   'percent', (s.v->>'percent')::numeric::text, 'taxCode', s.v->>'tax_code', 'memo', s.v->>'memo') order by s.n)
                   from jsonb_array_elements(r.splits) with ordinality s (v, n)
                   left join app_public.accounts a on a.organization_id = r.organization_id and a.id = (s.v->>'category_id')::uuid), '[]'),
     'matchCount', r.match_count, 'created', app_private.iso(r.created), 'updated', app_private.iso(r.updated)) $$;
grant execute on function app_private.category_rule_json(r app_public.category_rules) to accounting_visitor;

-- A usable ILIKE pattern: not blank, at most 200 characters (in NFC), no dangling escape.
create or replace function app_private.check_vendor_pattern(pattern text) returns text
  language plpgsql immutable as
$$
declare p text := app_private.clean_text(pattern);
begin
  if p is null or p = '' then perform app_private.fail('Vendor pattern is required.'); end if;
  if length(p) > 200 then perform app_private.fail('Vendor pattern must be at most 200 characters.'); end if;
  -- An odd number of trailing backslashes leaves the escape character dangling.
  if p ~ '(^|[^\\])(\\\\)*\\$' then perform app_private.fail('Vendor pattern is not a valid ILIKE pattern.'); end if;
  return p;
end $$;
grant execute on function app_private.check_vendor_pattern(pattern text) to accounting_visitor;

-- The target of a rule: an active account of this organization.
create or replace function app_private.rule_account(org uuid, account uuid) returns uuid
  language plpgsql stable as
$$
declare a app_public.accounts;
begin
  select * into a from app_public.accounts x where x.organization_id = org and x.id = account;
  if not found then perform app_private.fail('Category account not found.'); end if;
  if not a.active then perform app_private.fail('Category account is inactive.'); end if;
  if a.account_type in ('accounts_receivable', 'accounts_payable') then
    perform app_private.fail('Accounts Receivable and Payable take only invoices, bills and their payments.');
  end if;
  return a.id;
end $$;
grant execute on function app_private.rule_account(org uuid, account uuid) to accounting_visitor;

-- A rule's splits as given ([{categoryId, percent, taxCode, memo}]) checked and as stored: each
-- percent a decimal from 0.01 to 100 with at most 2 places, together exactly 100.
create or replace function app_private.checked_rule_splits(org uuid, splits jsonb) returns jsonb
  language plpgsql stable as
$$
declare
  max_splits constant integer := 100;
  s jsonb;
  v_percent numeric;
  v_lines jsonb := '[]';
  v_memo text;
begin
  if jsonb_typeof(splits) is distinct from 'array' or jsonb_array_length(splits) = 0 then
    perform app_private.fail('Splits must be a list of at least one line.');
  end if;
  if jsonb_array_length(splits) > max_splits then perform app_private.fail(format('At most %s splits.', max_splits)); end if;
  for s in select x from jsonb_array_elements(splits) x loop
    if jsonb_typeof(s) is distinct from 'object' or s->>'categoryId' is null or s->>'percent' is null then
      perform app_private.fail('Each split needs a categoryId and a percent.');
    end if;
    v_percent := app_private.parse_amount(s->>'percent', 'A split''s percent must be a decimal from 0.01 to 100.');
    if v_percent > 100 then perform app_private.fail('A split''s percent must be a decimal from 0.01 to 100.'); end if;
    if nullif(s->>'taxCode', '') is not null and not exists (select 1 from app_public.sales_tax_codes c where c.code = s->>'taxCode') then
      perform app_private.fail('Unknown tax code.');
    end if;
    v_memo := normalize(app_private.clean_text(s->>'memo'), NFC);
    if length(v_memo) > 1000 then perform app_private.fail('A split''s memo must be at most 1000 characters.'); end if;
    v_lines := v_lines || jsonb_build_object('category_id',
      app_private.rule_account(org, app_private.parse_uuid(s->>'categoryId', 'Category account not found.')),
      'percent', v_percent, 'tax_code', nullif(s->>'taxCode', ''), 'memo', coalesce(v_memo, ''));
  end loop;
  if (select sum((l->>'percent')::numeric) from jsonb_array_elements(v_lines) l) <> 100 then
    perform app_private.fail('Split percentages must add up to 100.');
  end if;
  return v_lines;
end $$;
grant execute on function app_private.checked_rule_splits(org uuid, splits jsonb) to accounting_visitor;

-- A rule as given, checked: absent fields keep the values of `r` (an edit) or their defaults (a
-- new rule). Writes nothing. An empty string removes direction, an amount bound or the tax code;
-- clear_payment_account and clear_contact remove those.
drop function if exists app_private.checked_rule(app_public.category_rules, text, uuid, integer, text, text, text, uuid, uuid, text, jsonb);
create or replace function app_private.checked_rule(r app_public.category_rules, vendor_pattern text, category_id uuid,
    priority integer, direction text, amount_min text, amount_max text, payment_account_id uuid, contact_id uuid,
    tax_code text, splits jsonb, clear_payment_account boolean default false, clear_contact boolean default false)
  returns app_public.category_rules
  language plpgsql stable as
$$
begin
  if vendor_pattern is not null then r.vendor_pattern := app_private.check_vendor_pattern(vendor_pattern); end if;
  if splits is not null and category_id is not null then
    perform app_private.fail('Give categoryId or splits, not both.');
  end if;
  if category_id is not null then
    r.account_id := app_private.rule_account(r.organization_id, category_id);
    r.splits := null;
  end if;
  if splits is not null then
    r.splits := app_private.checked_rule_splits(r.organization_id, splits);
    -- Shown as the rule's account: the largest share (the first of equals).
    r.account_id := (select (l.v->>'category_id')::uuid from jsonb_array_elements(r.splits) with ordinality l (v, n)
                      order by (l.v->>'percent')::numeric desc, l.n limit 1);
    r.tax_code := null;
  end if;
  if r.account_id is null then perform app_private.fail('categoryId or splits is required.'); end if;
  if priority is not null then
    if priority not between 0 and 1000000 then perform app_private.fail('priority must be between 0 and 1000000.'); end if;
    r.priority := priority;
  end if;
  if direction is not null then
    if direction not in ('in', 'out', '') then perform app_private.fail('direction must be in or out.'); end if;
    r.direction := nullif(direction, '');
  end if;
  if amount_min is not null then
    r.amount_min := case when amount_min = '' then null else app_private.parse_amount(amount_min, 'amountMin must be a decimal string of at least 0.', true) end;
  end if;
  if amount_max is not null then
    r.amount_max := case when amount_max = '' then null else app_private.parse_amount(amount_max, 'amountMax must be a decimal string of at least 0.', true) end;
  end if;
  if r.amount_min > r.amount_max then perform app_private.fail('amountMin must not be above amountMax.'); end if;
  if payment_account_id is not null and clear_payment_account then
    perform app_private.fail('Give paymentAccountId or clearPaymentAccount, not both.');
  end if;
  if payment_account_id is not null then
    perform app_private.check_payment_account(payment_account_id);
    r.payment_account_id := payment_account_id;
  end if;
  if clear_payment_account then r.payment_account_id := null; end if;
  if r.payment_account_id = r.account_id or r.payment_account_id in (select (l->>'category_id')::uuid from jsonb_array_elements(r.splits) l) then
    perform app_private.fail('Category and payment account must differ.');
  end if;
  if clear_contact then r.contact_id := null; end if;
  if contact_id is not null then
    if not exists (select 1 from app_public.contacts k where k.organization_id = r.organization_id and k.id = contact_id) then
      perform app_private.fail('Contact not found.');
    end if;
    r.contact_id := contact_id;
  end if;
  if tax_code is not null then
    if tax_code <> '' and not exists (select 1 from app_public.sales_tax_codes c where c.code = tax_code) then
      perform app_private.fail('Unknown tax code.');
    end if;
    r.tax_code := nullif(tax_code, '');
  end if;
  if r.splits is not null and r.tax_code is not null then
    perform app_private.fail('The tax of a split rule is on its splits: give each split its taxCode.');
  end if;
  return r;
end $$;
grant execute on function app_private.checked_rule(r app_public.category_rules, vendor_pattern text, category_id uuid, priority integer, direction text, amount_min text, amount_max text, payment_account_id uuid, contact_id uuid, tax_code text, splits jsonb, clear_payment_account boolean, clear_contact boolean) to accounting_visitor;

drop function if exists app_public.create_category_rule(uuid, text, uuid);
create or replace function app_public.create_category_rule(organization_id uuid, vendor_pattern text, category_id uuid default null,
    priority integer default null, direction text default null, amount_min text default null, amount_max text default null,
    payment_account_id uuid default null, contact_id uuid default null, tax_code text default null, splits jsonb default null)
  returns jsonb
  language plpgsql volatile as
$$
declare r app_public.category_rules;
begin
  perform app_private.assert_org_access(organization_id, false);
  r.organization_id := create_category_rule.organization_id;
  r.priority := 100;
  if vendor_pattern is null then perform app_private.fail('Vendor pattern is required.'); end if;
  r := app_private.checked_rule(r, vendor_pattern, category_id, priority, direction, amount_min, amount_max,
    payment_account_id, contact_id, tax_code, splits);
  begin
    insert into app_public.category_rules (organization_id, vendor_pattern, account_id, priority, direction, amount_min,
        amount_max, payment_account_id, contact_id, tax_code, splits)
      values (r.organization_id, r.vendor_pattern, r.account_id, r.priority, r.direction, r.amount_min, r.amount_max,
        r.payment_account_id, r.contact_id, r.tax_code, r.splits)
      returning * into r;
  exception when unique_violation then
    perform app_private.fail('A category rule with this pattern and these conditions already exists.');
  end;
  -- Read again: the insert trigger has just classified matching events and counted them.
  select * into r from app_public.category_rules x where x.id = r.id;
  return jsonb_build_object('success', true, 'error', null, 'categoryRule', app_private.category_rule_json(r));
end $$;
grant execute on function app_public.create_category_rule(organization_id uuid, vendor_pattern text, category_id uuid, priority integer, direction text, amount_min text, amount_max text, payment_account_id uuid, contact_id uuid, tax_code text, splits jsonb) to accounting_visitor;

create or replace function app_public.delete_category_rule(organization_id uuid, category_rule_id uuid) returns jsonb
  language plpgsql volatile as
$$
begin
  perform app_private.assert_org_access(organization_id, false);
  delete from app_public.category_rules x
   where x.organization_id = delete_category_rule.organization_id and x.id = category_rule_id;
  if not found then perform app_private.fail('Category rule not found.', 'AP404'); end if;
  return jsonb_build_object('success', true, 'error', null);
end $$;
grant execute on function app_public.delete_category_rule(organization_id uuid, category_rule_id uuid) to accounting_visitor;

create or replace function app_public.list_category_rules(organization_id uuid, "limit" integer default null, "offset" integer default null,
    search text default null, sort_by text default null, sort_dir text default null) returns jsonb
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
  perform app_private.check_sort_by(sort_by, array['vendorPattern', 'matchCount', 'created', 'updated', 'priority']);
  key := case coalesce(sort_by, 'vendorPattern')
    when 'vendorPattern' then 'f.lpattern' when 'matchCount' then '(f.r).match_count'
    when 'created' then '(f.r).created' when 'updated' then '(f.r).updated' when 'priority' then '(f.r).priority' end;
  execute format($q$
    with f as (
      select r, lower(r.vendor_pattern) as lpattern
        from app_public.category_rules r
       where r.organization_id = $1 and ($2::text is null or r.vendor_pattern ilike app_private.like_pattern($2))
    ), page as (
      select f.r, row_number() over (order by %1$s %2$s, f.lpattern %2$s, (f.r).id %2$s) as rn
        from f order by rn limit $3 offset $4
    )
    select jsonb_build_object(
      'items', coalesce((select jsonb_agg(app_private.category_rule_json(page.r) order by page.rn) from page), '[]'::jsonb),
      'totalCount', (select count(*) from f), 'pageSize', $3, 'offset', $4)
  $q$, key, dir) into result using organization_id, search, lim, off;
  return result;
end $$;
grant execute on function app_public.list_category_rules(organization_id uuid, "limit" integer, "offset" integer, search text, sort_by text, sort_dir text) to accounting_visitor;

drop function if exists app_public.update_category_rule(uuid, uuid, text, uuid);
drop function if exists app_public.update_category_rule(uuid, uuid, text, uuid, integer, text, text, text, uuid, uuid, text, jsonb);
create or replace function app_public.update_category_rule(organization_id uuid, category_rule_id uuid, vendor_pattern text default null,
    category_id uuid default null, priority integer default null, direction text default null, amount_min text default null,
    amount_max text default null, payment_account_id uuid default null, contact_id uuid default null, tax_code text default null,
    splits jsonb default null, clear_payment_account boolean default null, clear_contact boolean default null) returns jsonb
  language plpgsql volatile as
$$
declare r app_public.category_rules;
begin
  perform app_private.assert_org_access(organization_id, false);
  select * into r from app_public.category_rules x
   where x.organization_id = update_category_rule.organization_id and x.id = category_rule_id for no key update;
  if not found then perform app_private.fail('Category rule not found.', 'AP404'); end if;
  r := app_private.checked_rule(r, vendor_pattern, category_id, priority, direction, amount_min, amount_max,
    payment_account_id, contact_id, tax_code, splits, coalesce(clear_payment_account, false), coalesce(clear_contact, false));
  begin
    update app_public.category_rules x set vendor_pattern = r.vendor_pattern, account_id = r.account_id, priority = r.priority,
        direction = r.direction, amount_min = r.amount_min, amount_max = r.amount_max, payment_account_id = r.payment_account_id,
        contact_id = r.contact_id, tax_code = r.tax_code, splits = r.splits
     where x.organization_id = r.organization_id and x.id = r.id
     returning * into r;
  exception when unique_violation then
    perform app_private.fail('A category rule with this pattern and these conditions already exists.');
  end;
  return jsonb_build_object('success', true, 'error', null, 'categoryRule', app_private.category_rule_json(r));
end $$;
grant execute on function app_public.update_category_rule(organization_id uuid, category_rule_id uuid, vendor_pattern text, category_id uuid, priority integer, direction text, amount_min text, amount_max text, payment_account_id uuid, contact_id uuid, tax_code text, splits jsonb, clear_payment_account boolean, clear_contact boolean) to accounting_visitor;

-- What a rule would change among the events waiting for review, writing nothing: a new rule
-- (no categoryRuleId) among the others, or an existing one with the fields given changed.
create or replace function app_public.preview_category_rule(organization_id uuid, category_rule_id uuid default null,
    vendor_pattern text default null, category_id uuid default null, priority integer default null, direction text default null,
    amount_min text default null, amount_max text default null, payment_account_id uuid default null, contact_id uuid default null,
    tax_code text default null, splits jsonb default null, "limit" integer default null) returns jsonb
  language plpgsql stable as
$$
declare
  r app_public.category_rules;
  v_limit integer := app_private.page_size("limit");
begin
  perform app_private.assert_org_access(organization_id, false);
  if category_rule_id is not null then
    select * into r from app_public.category_rules x
     where x.organization_id = preview_category_rule.organization_id and x.id = category_rule_id;
    if not found then perform app_private.fail('Category rule not found.', 'AP404'); end if;
  else
    if vendor_pattern is null then perform app_private.fail('Vendor pattern is required.'); end if;
    r.id := gen_random_uuid();
    r.organization_id := preview_category_rule.organization_id;
    r.priority := 100;
    r.created := now();
  end if;
  r := app_private.checked_rule(r, vendor_pattern, category_id, priority, direction, amount_min, amount_max,
    payment_account_id, contact_id, tax_code, splits);
  return (
    with c as (select * from app_private.rule_changes(r, false))
    select jsonb_build_object('totalCount', (select count(*) from c), 'changes', coalesce((
      select jsonb_agg(x.change order by x.transaction_date desc, x.id desc) from (
        select e.transaction_date, e.id, jsonb_build_object('event', app_private.ledger_event_json_by_id(e.id),
            'after', jsonb_build_object(
              'category', (select jsonb_build_object('id', a.id, 'name', a.name) from app_public.accounts a where a.id = c.category_id),
              'splits', case when c.splits is null then '[]'::jsonb else app_private.splits_json(c.splits) end,
              'taxCode', c.tax_code, 'taxAmount', app_private.money(c.tax_amount),
              'contact', (select jsonb_build_object('id', k.id, 'displayName', k.display_name) from app_public.contacts k where k.id = c.contact_id))) change
          from c join app_public.ledger_events e on e.id = c.event_id
         order by e.transaction_date desc, e.id desc limit v_limit) x), '[]')));
end $$;
grant execute on function app_public.preview_category_rule(organization_id uuid, category_rule_id uuid, vendor_pattern text, category_id uuid, priority integer, direction text, amount_min text, amount_max text, payment_account_id uuid, contact_id uuid, tax_code text, splits jsonb, "limit" integer) to accounting_visitor;

-- Applies a rule to the events waiting for review now: those it is the rule for, whatever their
-- classification; confirmed events are never touched.
create or replace function app_public.apply_category_rule(organization_id uuid, category_rule_id uuid) returns jsonb
  language plpgsql volatile as
$$
declare
  r app_public.category_rules;
  n integer;
begin
  perform app_private.assert_org_access(organization_id, false);
  select * into r from app_public.category_rules x
   where x.organization_id = apply_category_rule.organization_id and x.id = category_rule_id for no key update;
  if not found then perform app_private.fail('Category rule not found.', 'AP404'); end if;
  n := app_private.apply_rule(r, false);
  select * into r from app_public.category_rules x where x.id = r.id;
  return jsonb_build_object('success', true, 'error', null, 'appliedCount', n, 'categoryRule', app_private.category_rule_json(r));
end $$;
grant execute on function app_public.apply_category_rule(organization_id uuid, category_rule_id uuid) to accounting_visitor;
--! EndIncluded rules/category-rules.sql
