--! Previous: sha1:6466d9359c3e0666a7aed5131bfca6e5c00c7a4b
--! Hash: sha1:c091168b211a70d74d6e61f9b3563518447c7eba
--! Message: The processor import's currency rule lives in the database

-- A processor export's rows are checked against the organization's currency by the database (the
-- staging table keeps each row's currency); the reader no longer asks for it.
drop function if exists app_private.processor_import_begin(uuid);
drop function if exists app_private.processor_import_stage(integer[], text[], text[], numeric[], numeric[], date[], text[], text[]);
--! Included imports/processor-balance.sql
-- Processor balance imports (contract: Server-side commands, CSV row mapping; decisions §10).
-- The CLI and the worker stream a CSV into a per-transaction staging table in chunks
-- (processor_import_begin, processor_import_stage), then one set-based call posts everything
-- (processor_import_post); delete_processor_imports takes a batch, or all of them, back out.
-- These are the operator's (owner connection) functions: each puts the organization it is given in
-- scope, so none is granted to the API's role. The pure helpers are.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- What a row of the export is, from its classifier: layout A's `Type` (the balance transaction
-- type, real exports' names included) or layout B's `reporting_category`. Anything else is
-- 'unsupported': counted and listed by id, never dropped silently.
create or replace function app_private.processor_row_kind(layout text, row_type text) returns text
  language sql immutable parallel safe as
$$
  select case when layout = 'A' then
      case lower(btrim(row_type))
        when 'charge' then 'charge' when 'payment' then 'charge'
        when 'refund' then 'refund' when 'payment_refund' then 'refund'
        when 'transfer' then 'transfer'
        when 'processor_fee' then 'processor_fee' when 'stripe_fee' then 'processor_fee'
        when 'payout' then 'payout'
        when 'application_fee' then 'application_fee'
        else 'unsupported' end
    else
      case lower(btrim(row_type))
        when 'charge' then 'charge'
        when 'refund' then 'refund'
        when 'transfer' then 'transfer'
        when 'fee' then 'processor_fee'
        when 'platform_earning' then 'application_fee'
        when 'payout' then 'payout'
        else 'unsupported' end
    end
$$;
grant execute on function app_private.processor_row_kind(layout text, row_type text) to accounting_visitor;

-- The event type of each kind of row (the contract's mapping table); a row's fee is an expense.
create or replace function app_private.processor_event_type(kind text) returns text
  language sql immutable parallel safe as
$$
  select case kind when 'charge' then 'income' when 'refund' then 'refund' when 'transfer' then 'expense'
    when 'processor_fee' then 'expense' when 'payout' then 'transfer' when 'fee' then 'expense' end
$$;
grant execute on function app_private.processor_event_type(kind text) to accounting_visitor;

-- The account an import books to, by role: found, else created as the starter chart has it.
-- The clearing account is any active account of type `clearing` (Processor Clearing first); the
-- others are found by name. An account that exists but cannot take the role is an error.
create or replace function app_private.processor_import_account(org uuid, role text) returns uuid
  language plpgsql volatile as
$$
declare
  spec record;
  a app_public.accounts;
begin
  select * into spec from (values
      ('clearing', 'Processor Clearing', 'clearing', 'asset', '1007'),
      ('sales', 'Sales Revenue', 'income', 'revenue', '8000'),
      ('fees', 'Bank Fees & Charges', 'expense', 'expense', '8715'),
      ('cogs', 'Cost of Goods Sold', 'cost_of_goods_sold', 'expense', '8320'),
      ('chequing', 'Chequing', 'bank', 'asset', '1002')
    ) v (role, name, account_type, classification, code)
   where v.role = processor_import_account.role;
  if not found then perform app_private.fail(format('Unknown account role %s.', role)); end if;
  if role = 'clearing' then
    select * into a from app_public.accounts x
     where x.organization_id = org and x.account_type = 'clearing' and x.active
     order by lower(x.name) = lower(spec.name) desc, x.created, x.id limit 1;
    if found then return a.id; end if;
  end if;
  -- Two imports at once create it once (the name is unique per organization).
  insert into app_public.accounts (organization_id, name, account_type, classification, tax_code_id)
    select org, spec.name, spec.account_type, spec.classification, t.id
      from app_public.tax_codes t where t.code = spec.code
    on conflict (organization_id, lower(name)) do nothing;
  select * into a from app_public.accounts x where x.organization_id = org and lower(x.name) = lower(spec.name);
  if not found then perform app_private.fail(format('Account "%s" could not be created.', spec.name)); end if;
  if not a.active then
    perform app_private.fail(format('Account "%s" is inactive; reactivate it before importing.', a.name));
  end if;
  if a.classification <> spec.classification or (role in ('clearing', 'chequing') and a.account_type <> spec.account_type) then
    perform app_private.fail(format('Account "%s" must be a%s %s account for processor imports.', a.name,
      case when role in ('clearing', 'chequing') then '' else 'n' end,
      case when role in ('clearing', 'chequing') then spec.account_type else spec.classification end));
  end if;
  return a.id;
end $$;

-- Starts an import in the caller's transaction: the organization in scope and an empty staging
-- table (dropped at the end of the transaction).
create or replace function app_private.processor_import_begin(org uuid) returns void
  language plpgsql volatile as
$$
begin
  perform set_config('app.organization_id', org::text, true);
  if not exists (select 1 from app_public.organizations o where o.id = org) then
    perform app_private.fail('Organization not found.', 'AP404');
  end if;
  if to_regclass('pg_temp.processor_import_rows') is not null then drop table pg_temp.processor_import_rows; end if;
  create temp table processor_import_rows (
    line integer not null,
    id text not null,
    row_type text not null,
    amount numeric(20,2) not null,
    fee numeric(20,2) not null,
    created date not null,
    description text not null,
    source_ref text not null,
    currency text not null
  ) on commit drop;
end $$;

-- One chunk of parsed rows (the reader checked every value's form and names the line of a bad one).
create or replace function app_private.processor_import_stage(lines integer[], ids text[], row_types text[],
    amounts numeric[], fees numeric[], dates date[], descriptions text[], sources text[], currencies text[]) returns integer
  language plpgsql volatile as
$$
begin
  insert into pg_temp.processor_import_rows (line, id, row_type, amount, fee, created, description, source_ref, currency)
    select * from unnest(lines, ids, row_types, amounts, fees, dates, descriptions, sources, currencies);
  return coalesce(cardinality(lines), 0);
end $$;

-- Posts the staged rows, set-based whatever their number (decisions §10, gross revenue method):
-- one import batch row; one insert of every event (a charge at its gross amount, a nonzero fee
-- as a second event to Bank Fees & Charges), skipping ids imported before by any batch, also by
-- an import running at the same time (the unique source index: the later insert waits for the
-- earlier transaction, then skips), already confirmed with their entries' ids unless `review`;
-- then one call that posts their journal entries. Returns the counts.
create or replace function app_private.processor_import_post(org uuid, layout text, file_name text,
    review boolean default false) returns jsonb
  language plpgsql volatile as
$$
declare
  cur text;
  v_ts timestamptz := clock_timestamp();
  v_key text;
  v_batch uuid;
  n_rows integer; n_app integer; n_unsupported integer; n_zero integer; n_eligible integer;
  v_unsupported jsonb;
  v_ids uuid[];
  n_created integer; n_rows_created integer;
  has_kind text[];
  a_clearing uuid; a_sales uuid; a_fees uuid; a_cogs uuid; a_chequing uuid;
begin
  perform set_config('app.organization_id', org::text, true);
  perform set_config('app.audit_action', 'import', true);
  -- Sorts of 100,000s of rows in memory; no JIT compilation (it costs more than it saves here).
  perform set_config('work_mem', '64MB', true);
  perform set_config('jit', 'off', true);
  if layout not in ('A', 'B') then perform app_private.fail('Layout must be A or B.'); end if;
  select o.functional_currency into cur from app_public.organizations o where o.id = org;
  if not found then perform app_private.fail('Organization not found.', 'AP404'); end if;
  -- Every row in the organization's currency: amounts are booked as they stand, never converted.
  perform app_private.fail(format('Line %s, column %s: "%s" is not the organization''s currency (%s).',
      r.line, case layout when 'A' then 'Currency' else 'currency' end, r.currency, cur))
    from (select x.line, x.currency from pg_temp.processor_import_rows x
           where upper(x.currency) <> cur order by x.line limit 1) r;

  -- What the file holds, in one pass.
  select count(*),
         count(*) filter (where k.kind = 'application_fee'),
         count(*) filter (where k.kind = 'unsupported'),
         count(*) filter (where k.kind not in ('application_fee', 'unsupported') and r.amount = 0 and r.fee = 0),
         count(*) filter (where k.kind not in ('application_fee', 'unsupported') and (r.amount <> 0 or r.fee <> 0)),
         coalesce(jsonb_agg(jsonb_build_object('line', r.line, 'id', r.id, 'type', r.row_type) order by r.line)
                    filter (where k.kind = 'unsupported'), '[]'::jsonb),
         array_agg(distinct k.kind)
    into n_rows, n_app, n_unsupported, n_zero, n_eligible, v_unsupported, has_kind
    from pg_temp.processor_import_rows r
    cross join lateral (select app_private.processor_row_kind(layout, r.row_type) as kind) k;

  -- The accounts the rows need, found or created.
  if n_eligible > 0 then
    a_clearing := app_private.processor_import_account(org, 'clearing');
    a_fees := app_private.processor_import_account(org, 'fees');
    if has_kind && array['charge', 'refund'] then a_sales := app_private.processor_import_account(org, 'sales'); end if;
    if has_kind && array['transfer'] then a_cogs := app_private.processor_import_account(org, 'cogs'); end if;
    if has_kind && array['payout'] then a_chequing := app_private.processor_import_account(org, 'chequing'); end if;
  end if;

  -- One batch per run, `processor:<UTC timestamp>`; runs in the same millisecond take the next one.
  loop
    v_key := 'processor:' || to_char(v_ts at time zone 'UTC', 'YYYYMMDD"T"HH24MISSMS"Z"');
    insert into app_public.import_batches (organization_id, source, batch_key, payment_account_id, file_name)
      values (org, 'processor_import', v_key, a_clearing, left(file_name, 500))
      on conflict (organization_id, batch_key) do nothing
      returning id into v_batch;
    exit when v_batch is not null;
    v_ts := v_ts + interval '1 millisecond';
  end loop;

  with rows as (
    -- The first line of each id; a repeated id in the same file is a duplicate.
    select distinct on (r.id) r.*, app_private.processor_row_kind(layout, r.row_type) as kind
      from pg_temp.processor_import_rows r
     order by r.id, r.line
  ),
  candidates as (
    select r.id as row_id, r.line, r.id as source_id, r.kind, r.amount as signed, r.row_type, r.description, r.source_ref, r.created
      from rows r where r.kind not in ('application_fee', 'unsupported') and r.amount <> 0
    union all
    -- A fee is an expense (direction out); a negative fee is a fee given back (direction in).
    select r.id, r.line, r.id || ':fee', 'fee', -r.fee, r.row_type, r.description, r.source_ref, r.created
      from rows r where r.kind not in ('application_fee', 'unsupported') and r.fee <> 0
  ),
  inserted as (
    insert into app_public.ledger_events (organization_id, event_type, direction, merchant_name, functional_amount,
        functional_currency, transaction_date, memo, category_id, payment_account_id, status,
        source, source_id, import_batch_id, backfill_id, journal_entry_id)
      select org, app_private.processor_event_type(c.kind), case when c.signed > 0 then 'in' else 'out' end,
             left(coalesce(case when c.kind <> 'fee' then nullif(app_private.clean_text(c.description), '') end,
                           case c.kind when 'charge' then 'Processor charge' when 'refund' then 'Processor refund'
                             when 'transfer' then 'Processor transfer' when 'payout' then 'Processor payout'
                             else 'Processor fee' end), 500),
             abs(c.signed), cur, c.created,
             left(case when c.kind = 'fee' then format('Processor fee on %s %s', c.row_type, c.row_id)
                       else format('Processor %s %s', c.row_type, c.row_id) end
                  || case when c.source_ref <> '' then format(' (%s)', c.source_ref) else '' end, 5000),
             case c.kind when 'charge' then a_sales when 'refund' then a_sales when 'transfer' then a_cogs
                         when 'payout' then a_chequing else a_fees end,
             a_clearing, case when review then 'needs_review' else 'confirmed' end,
             'processor_import', c.source_id, v_batch, v_key || ':' || c.source_id,
             -- Confirmed as they are written, with the id of the entry posted below: no update of
             -- every event afterwards (post_journal_entries takes such events).
             case when not review then app_private.uuid_v7() end
        from candidates c
       -- One global order: imports running at once wait for each other instead of deadlocking.
       order by c.source_id
      on conflict (organization_id, source, source_id) where source_id is not null do nothing
      returning id, source_id
  )
  select (select array_agg(i.id) from inserted i),
         (select count(*) from inserted),
         (select count(distinct c.row_id) from candidates c join inserted i on i.source_id = c.source_id)
    into v_ids, n_created, n_rows_created;

  if not review and n_created > 0 then
    perform app_private.post_journal_entries(v_ids);
  end if;

  return jsonb_build_object(
    'batchId', v_key,
    'layout', layout,
    'rows', n_rows,
    'created', n_created,
    'createdRows', n_rows_created,
    'skippedApplicationFee', n_app,
    'skippedDuplicate', n_eligible - n_rows_created,
    'skippedUnsupported', n_unsupported,
    'unsupported', v_unsupported,
    'skippedZeroAmount', n_zero,
    'status', case when review then 'needs_review' else 'confirmed' end);
end $$;

-- Removes processor imports of an organization: one batch (its key) or all of them, with their
-- events, journal entries and lines, in the caller's transaction; `dry_run` counts only.
create or replace function app_private.delete_processor_imports(org uuid, batch_key text default null,
    dry_run boolean default false) returns jsonb
  language plpgsql volatile as
$$
declare
  v_batches uuid[];
  v_keys jsonb;
  n_events integer; n_entries integer; n_lines integer;
begin
  perform set_config('app.organization_id', org::text, true);
  perform set_config('app.audit_action', 'delete_import', true);
  if not exists (select 1 from app_public.organizations o where o.id = org) then
    perform app_private.fail('Organization not found.', 'AP404');
  end if;
  -- Locked: a concurrent delete of the same batch waits, then finds nothing left.
  with b as (
    select x.id, x.batch_key from app_public.import_batches x
     where x.organization_id = org and x.source = 'processor_import'
       and (delete_processor_imports.batch_key is null or x.batch_key = delete_processor_imports.batch_key)
     order by x.batch_key
     for update
  )
  select coalesce(array_agg(b.id order by b.batch_key), '{}'), coalesce(jsonb_agg(b.batch_key order by b.batch_key), '[]')
    into v_batches, v_keys from b;
  if batch_key is not null and cardinality(v_batches) = 0 then
    perform app_private.fail(format('No processor import batch "%s".', batch_key), 'AP404');
  end if;

  select (select count(*) from app_public.ledger_events e
           where e.organization_id = org and e.source = 'processor_import' and e.import_batch_id = any (v_batches)),
         (select count(*) from app_public.journal_entries je join app_public.ledger_events e on e.id = je.event_id
           where e.organization_id = org and e.source = 'processor_import' and e.import_batch_id = any (v_batches)),
         (select count(*) from app_public.journal_lines l
            join app_public.journal_entries je on je.id = l.entry_id join app_public.ledger_events e on e.id = je.event_id
           where e.organization_id = org and e.source = 'processor_import' and e.import_batch_id = any (v_batches))
    into n_events, n_entries, n_lines;

  if not dry_run then
    -- Each deleted row has its foreign keys checked by a query planned from the statistics; right
    -- after a large import they may not know its rows yet, and a check would then read all of the
    -- organization's rows instead of one (minutes instead of seconds for 100,000 events).
    if n_events > 1000 then
      analyze app_public.ledger_events;
      analyze app_public.journal_entries;
      analyze app_public.journal_lines;
    end if;
    delete from app_public.journal_lines l
     using app_public.journal_entries je, app_public.ledger_events e
     where l.entry_id = je.id and je.event_id = e.id
       and e.organization_id = org and e.source = 'processor_import' and e.import_batch_id = any (v_batches);
    delete from app_public.journal_entries je
     using app_public.ledger_events e
     where je.event_id = e.id
       and e.organization_id = org and e.source = 'processor_import' and e.import_batch_id = any (v_batches);
    delete from app_public.ledger_events e
     where e.organization_id = org and e.source = 'processor_import' and e.import_batch_id = any (v_batches);
    delete from app_public.import_batches x where x.id = any (v_batches);
  end if;

  return jsonb_build_object('batches', cardinality(v_batches), 'batchIds', v_keys, 'events', n_events,
    'journalEntries', n_entries, 'journalLines', n_lines, 'dryRun', dry_run);
end $$;
--! EndIncluded imports/processor-balance.sql
