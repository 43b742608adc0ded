--! Previous: sha1:c091168b211a70d74d6e61f9b3563518447c7eba
--! Hash: sha1:f7ee0cddc71926c3690e77e4e9b1699c02e927a6
--! Message: A statement import returns the flags each row went by

-- The import of a statement returns the flags each row went by: the operator's preview shows
-- them, without checking the statement a second time.
--! Included imports/bank-statements.sql
-- Bank statement imports: the duplicate check and the import of a whole statement into one
-- payment account, set-based (contract: checkBankStatementDups, importBankStatement, Behavior
-- rules 6-8; decisions §8). The operator's import_bank_csv command calls the same functions.
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
-- one call, whatever its length (chunks would take identical rows for duplicates of each other).
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
create or replace function app_private.bank_statement_row(item jsonb, row_index integer)
  returns table (transaction_date date, amount numeric, direction text, merchant_name text, event_type text,
    memo text, reference text)
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
  return next;
end $$;
grant execute on function app_private.bank_statement_row(item jsonb, row_index integer) to accounting_visitor;

-- The events a statement row could duplicate by date and amount: the organization's on the
-- payment account or without one, on the given days with the given amounts. Security definer, so
-- that the index on (organization, date, amount) serves each pair: under row-level security the
-- planner may not use a numeric comparison in an index condition (numeric_eq is not leakproof)
-- and would read the organization's every event. Tenancy: the organization must be the caller's
-- (the one in scope for RLS), and it filters every row. No temporary objects, no unqualified names.
create or replace function app_private.statement_candidates(org uuid, payment_account uuid, days date[], amounts numeric[])
  returns table (id uuid, transaction_date date, functional_amount numeric, direction text, merchant_name text,
    reference text, created timestamptz)
  language sql stable security definer set search_path = pg_catalog, app_public, pg_temp set jit = off as
$$
  select e.id, e.transaction_date, e.functional_amount, e.direction, e.merchant_name, e.reference, e.created
    from app_public.ledger_events e
   where e.organization_id = org and org = app_public.current_organization_id()
     and (e.payment_account_id = payment_account or e.payment_account_id is null)
     and (e.transaction_date, e.functional_amount) in (select d, a from unnest(days, amounts) x (d, a))
$$;
grant execute on function app_private.statement_candidates(org uuid, payment_account uuid, days date[], amounts numeric[]) to accounting_visitor;

-- Each row of a statement matched against the books (decisions §8), one to one: an existing event
-- absorbs at most one row, so n identical rows are all skipped only when n identical events exist.
-- Existing events are those of the payment account or without one, ignored events included (a
-- rejected duplicate must not come back). In order of precedence:
--   1. equal references on the account: a full match, whatever else differs;
--   2. same date, amount, direction and merchant: a full match, unless both carry references
--      and they differ (then they are different transactions);
--   3. a transfer booked into this account from another (a processor payout, a card payment from
--      chequing): same amount, money moving the row's way, dated 0 to 5 days before the row;
--   4. same date, amount and direction, other merchant: a possible match (flagged, imported).
-- Identical rows and identical events pair up in order (the k-th row with the k-th event), so
-- every stage is one statement, whatever the number of rows. The rows and the candidates of
-- stages 2 and 4 sit in temporary tables of the caller's session, dropped at commit.
create or replace function app_private.bank_statement_matches(org uuid, payment_account uuid, rows jsonb)
  returns table (row_index integer, transaction_date date, amount numeric, direction text, merchant_name text,
    event_type text, memo text, reference text, is_duplicate boolean, is_possible_duplicate boolean, matching_event_id uuid)
  -- JIT is off: the plans are cheap probes that look costly over millions of rows.
  language plpgsql volatile set jit = off as
$$
declare
  v_with_reference boolean;
  v_pairs record;
  v_rows_taken integer[] := '{}';
  v_events_taken uuid[] := '{}';
begin
  if org is distinct from app_public.current_organization_id() then perform app_private.fail('Organization Not Found.', 'AU404'); end if;
  if rows is null or jsonb_typeof(rows) <> 'array' then perform app_private.fail('rows must be a list of statement rows.'); end if;
  drop table if exists pg_temp.statement_rows;
  create temporary table statement_rows (
    row_index integer primary key, transaction_date date, amount numeric, direction text, merchant_name text,
    merchant_key text, event_type text, memo text, reference text,
    event_id uuid, full_match boolean not null default false) on commit drop;
  insert into pg_temp.statement_rows (row_index, transaction_date, amount, direction, merchant_name, merchant_key,
      event_type, memo, reference)
    select (r.n - 1)::integer, x.transaction_date, x.amount, x.direction, x.merchant_name,
           app_private.merchant_key(x.merchant_name), x.event_type, x.memo, x.reference
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
    select s.row_index, s.reference, row_number() over (partition by s.reference order by s.row_index) k
      from pg_temp.statement_rows s where s.reference is not null
  ), e as (
    select e.id, e.reference, row_number() over (partition by e.reference order by e.created, e.id) k
      from app_public.ledger_events e
     where e.organization_id = org and e.payment_account_id = payment_account
       and e.reference in (select s.reference from pg_temp.statement_rows s where s.reference is not null)
  )
  update pg_temp.statement_rows s set event_id = e.id, full_match = true
    from r join e on e.reference = r.reference and e.k = r.k
   where s.row_index = r.row_index;

  -- 2. Same day, amount, direction and merchant. Rows with a reference go first, to events
  -- without one (their only possible partners); rows without a reference take any event left.
  foreach v_with_reference in array array[true, false] loop
    with e as (
      select c.id, c.transaction_date, c.functional_amount, c.direction, c.merchant_key,
             row_number() over (partition by c.transaction_date, c.functional_amount, c.direction, c.merchant_key
                                order by c.created, c.id) k
        from pg_temp.statement_candidates c
       where not exists (select 1 from pg_temp.statement_rows t where t.event_id = c.id)
         and (not v_with_reference or c.reference is null)
    ), r as (
      select s.row_index, s.transaction_date, s.amount, s.direction, s.merchant_key,
             row_number() over (partition by s.transaction_date, s.amount, s.direction, s.merchant_key order by s.row_index) k
        from pg_temp.statement_rows s
       where s.event_id is null and (s.reference is not null) = v_with_reference
    )
    update pg_temp.statement_rows s set event_id = e.id, full_match = true
      from r join e on (e.transaction_date, e.functional_amount, e.direction, e.merchant_key, e.k)
                     = (r.transaction_date, r.amount, r.direction, r.merchant_key, r.k)
     where s.row_index = r.row_index;
  end loop;

  -- 3. Transfers into (or out of) this account booked on another: a date window, not an equal
  -- key, so the pairs are taken greedily, each row its nearest event. Few rows get here.
  for v_pairs in
    select s.row_index, e.id
      from pg_temp.statement_rows s
      join app_public.ledger_events e
        on e.organization_id = org and e.category_id = payment_account and e.event_type = 'transfer'
       and e.payment_account_id is distinct from payment_account
       and e.functional_amount = s.amount and e.direction <> s.direction
       and e.transaction_date between s.transaction_date - 5 and s.transaction_date
     where s.event_id is null
       and not exists (select 1 from pg_temp.statement_rows t where t.event_id = e.id)
     order by s.row_index, s.transaction_date - e.transaction_date, e.created, e.id
  loop
    if not (v_pairs.row_index = any (v_rows_taken)) and not (v_pairs.id = any (v_events_taken)) then
      v_rows_taken := v_rows_taken || v_pairs.row_index;
      v_events_taken := v_events_taken || v_pairs.id;
    end if;
  end loop;
  update pg_temp.statement_rows s set event_id = t.id, full_match = true
    from unnest(v_rows_taken, v_events_taken) t (row_index, id)
   where s.row_index = t.row_index;

  -- 4. Possible matches: same day, amount and direction, another merchant; an event not taken by
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
           s.full_match, s.event_id is not null and not s.full_match, s.event_id
      from pg_temp.statement_rows s order by s.row_index;
end $$;
grant execute on function app_private.bank_statement_matches(org uuid, payment_account uuid, rows jsonb) to accounting_visitor;

-- One row's duplicate-check result as the contract shapes it.
create or replace function app_private.duplicate_check_json(row_index integer, is_duplicate boolean,
    is_possible_duplicate boolean, matching_event_id uuid) returns jsonb
  language sql immutable parallel safe as
$$ select jsonb_build_object('rowIndex', row_index, 'isDuplicate', is_duplicate,
     'isPossibleDuplicate', is_possible_duplicate, 'matchingEventId', matching_event_id) $$;
grant execute on function app_private.duplicate_check_json(row_index integer, is_duplicate boolean, is_possible_duplicate boolean, matching_event_id uuid) to accounting_visitor;

-- The duplicate flags of a statement; writes nothing.
create or replace function app_private.check_bank_statement_dups(org uuid, payment_account_id uuid, rows jsonb) returns jsonb
  language plpgsql volatile as
$$
begin
  perform app_private.scope_organization(org);
  perform app_private.check_payment_account(payment_account_id);
  return (select coalesce(jsonb_agg(app_private.duplicate_check_json(m.row_index, m.is_duplicate,
             m.is_possible_duplicate, m.matching_event_id) order by m.row_index), '[]')
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
  ), rules as (
    select b.merchant_name, r.id, r.account_id, a.classification
      from app_private.best_category_rules(org, (select array_agg(m.merchant_name) from m where not m.is_duplicate)) b
      join app_public.category_rules r on r.id = b.rule_id
      join app_public.accounts a on a.id = r.account_id
  ), picked as (
    -- The best rule's account, when it is usable for the event (as createLedgerEvent applies it).
    select m.*, r.id rule_id, r.account_id rule_account
      from m
      left join rules r on r.merchant_name = m.merchant_name
       and app_private.category_fits(m.event_type, r.classification) and r.account_id <> payment_account_id
     where not m.is_duplicate
  ), inserted as (
    insert into app_public.ledger_events (organization_id, event_type, direction, merchant_name, functional_amount,
        functional_currency, transaction_date, memo, reference, category_id, payment_account_id, source, import_batch_id)
      select org, p.event_type, p.direction, p.merchant_name, p.amount, v_currency, p.transaction_date, p.memo,
             p.reference, p.rule_account, payment_account_id, 'bank_import', v_batch
        from picked p order by p.row_index
      returning 1
  ), counted as (
    update app_public.category_rules r set match_count = r.match_count + c.n
      from (select p.rule_id, count(*) n from picked p where p.rule_id is not null group by p.rule_id) c
     where r.id = c.rule_id
  )
  select (select count(*) from inserted), (select count(*) from m),
         (select coalesce(jsonb_agg(app_private.duplicate_check_json(m.row_index, m.is_duplicate, m.is_possible_duplicate,
                  m.matching_event_id) order by m.row_index), '[]') from m)
    into v_imported, v_total, v_results;

  -- The flags each row was imported or skipped by (the operator's preview shows them).
  return jsonb_build_object('importedCount', v_imported, 'skippedCount', v_total - v_imported, 'batchId', v_batch,
    'results', v_results);
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
    'skippedCount', r -> 'skippedCount', 'batchId', r -> 'batchId');
end $$;
grant execute on function app_public.import_bank_statement(organization_id uuid, payment_account_id uuid, rows jsonb, currency text) to accounting_visitor;
--! EndIncluded imports/bank-statements.sql
