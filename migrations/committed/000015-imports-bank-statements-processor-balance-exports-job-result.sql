--! Previous: sha1:bde3baac4cef4d6c0438acf9e892c8c9a626b392
--! Hash: sha1:daff70bfa10e2d884cc081ba8c3bb236689840e3
--! Message: Imports: bank statements, processor balance exports, job results; set-based audit and journal; time-ordered ids

-- Time-ordered ids for the tables imports write in bulk.
--! Included inputs/ids.sql
-- Ids of rows written in bulk (events, journal entries and lines, import batches): UUID version 7,
-- time-ordered (RFC 9562: 48 bits of Unix milliseconds, then random bits), so that an import of
-- thousands of rows appends to the end of each id index instead of touching a random page of it
-- per row. Still unguessable: 74 random bits.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

create or replace function app_private.uuid_v7() returns uuid
  language sql volatile parallel safe as
$$
  -- The random UUID's first 6 bytes replaced by the time; its version bits 0100 set to 0111.
  select encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
           placing substring(int8send((extract(epoch from clock_timestamp()) * 1000)::bigint) from 3)
           from 1 for 6), 52, 1), 53, 1), 'hex')::uuid
$$;
grant execute on function app_private.uuid_v7() to accounting_visitor;
--! EndIncluded inputs/ids.sql
--! Included inputs/values.sql
-- Values as the API takes them: amounts, dates and ids parsed and bounded in one place each
-- (the largest amount, the range of dates), and the business error every operation raises.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Raising a business error: SQLSTATE class AP is a mutation-level failure (success: false),
-- class AU an access failure (GraphQL error). The server maps the code to extensions.code.
create or replace function app_private.fail(message text, code text default 'AP400') returns void
  language plpgsql as
$$ begin raise exception using message = message, errcode = code; end $$;
grant execute on function app_private.fail(message text, code text) to accounting_visitor;

-- The field a caller's message names: "Transaction date must be ..." -> "Transaction date".
create or replace function app_private.field_of(message text, fallback text) returns text
  language sql immutable parallel safe as
$$ select coalesce(nullif(substring(message from '^(.+?) must '), ''), fallback) $$;
grant execute on function app_private.field_of(message text, fallback text) to accounting_visitor;

-- Timestamps leave the database as ISO 8601 UTC, whatever the session's time zone.
create or replace function app_private.iso(ts timestamptz) returns text
  language sql stable parallel safe as
$$ select to_char(ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') $$;
grant execute on function app_private.iso(ts timestamp with time zone) to accounting_visitor, reporting_reader;

-- A field of a batch item: a string, or null when absent; anything else is the item's error.
create or replace function app_private.item_text(item jsonb, key text) returns text
  language plpgsql immutable as
$$
declare v jsonb;
begin
  if item is null or jsonb_typeof(item) <> 'object' then perform app_private.fail('Each item must be an object.'); end if;
  v := item -> key;
  if v is null or jsonb_typeof(v) = 'null' then return null; end if;
  if jsonb_typeof(v) <> 'string' then perform app_private.fail(format('%s must be a string.', key)); end if;
  return v #>> '{}';
end $$;
grant execute on function app_private.item_text(item jsonb, key text) to accounting_visitor;

create or replace function app_private.item_uuid(item jsonb, key text) returns uuid
  language sql immutable as
$$ select app_private.parse_uuid(app_private.item_text(item, key), format('%s must be a UUID.', key)) $$;
grant execute on function app_private.item_uuid(item jsonb, key text) to accounting_visitor;

-- The largest amount (event amount, tax amount, list filters). Per-account daily totals are
-- numeric(20,2): a billion events of this size on one account and day still fit.
create or replace function app_private.max_amount() returns numeric
  language sql immutable parallel safe as
$$ select 999999999.99::numeric $$;
grant execute on function app_private.max_amount() to accounting_visitor;

create or replace function app_private.max_date() returns date
  language sql immutable parallel safe as
$$ select date '2199-12-31' $$;
grant execute on function app_private.max_date() to accounting_visitor;

-- The range of every date argument (transactionDate, dateFrom, dateTo, startDate, endDate).
create or replace function app_private.min_date() returns date
  language sql immutable parallel safe as
$$ select date '1900-01-01' $$;
grant execute on function app_private.min_date() to accounting_visitor;

-- Money leaves the database as a decimal string with exactly two decimals.
create or replace function app_private.money(amount numeric) returns text
  language sql immutable parallel safe as
$$ select amount::numeric(20,2)::text $$;
grant execute on function app_private.money(amount numeric) to accounting_visitor;

-- A decimal string with at most 2 fractional digits, at most max_amount(); positive unless
-- allow_zero. Malformed input gets the caller's message; a well-formed but larger amount gets
-- "<field> must be at most 999,999,999.99." (the field taken from the caller's message).
create or replace function app_private.parse_amount(amount text, message text, allow_zero boolean default false) returns numeric
  language plpgsql immutable as
$$
declare
  s text := btrim(amount);
  whole text;
  v numeric;
begin
  if s is null or s !~ '^[0-9]+(\.[0-9]{1,2})?$' then perform app_private.fail(message); end if;
  -- Leading zeros are dropped before converting, and a number with more whole digits than the
  -- maximum is refused unconverted (a 100,000-digit string never reaches numeric).
  whole := ltrim(split_part(s, '.', 1), '0');
  if length(whole) > length(trunc(app_private.max_amount())::text) then
    perform app_private.fail(format('%s must be at most %s.', app_private.field_of(message, 'Amount'),
      to_char(app_private.max_amount(), 'FM999,999,999,999,990.00')));
  end if;
  v := (coalesce(nullif(whole, ''), '0') || coalesce('.' || nullif(split_part(s, '.', 2), ''), ''))::numeric;
  if v > app_private.max_amount() then
    perform app_private.fail(format('%s must be at most %s.', app_private.field_of(message, 'Amount'),
      to_char(app_private.max_amount(), 'FM999,999,999,999,990.00')));
  end if;
  if v = 0 and not allow_zero then perform app_private.fail(message); end if;
  return v;
end $$;
grant execute on function app_private.parse_amount(amount text, message text, allow_zero boolean) to accounting_visitor;

-- A `YYYY-MM-DD` string that names a real day from min_date() to max_date(). Malformed input
-- gets the caller's message; a real day out of range gets "<field> must be between ... and ...".
create or replace function app_private.parse_date(day text, message text) returns date
  language plpgsql immutable as
$$
declare
  y integer;
  m integer;
  d integer;
begin
  if day is null or day !~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' then perform app_private.fail(message); end if;
  -- Checked field by field rather than by catching the cast's error: an exception block is a
  -- subtransaction, and a 5,000-row statement parses 5,000 dates.
  y := substr(day, 1, 4)::integer;
  m := substr(day, 6, 2)::integer;
  d := substr(day, 9, 2)::integer;
  if y < 1 or m not between 1 and 12 or d < 1
     or d > extract(day from make_date(y, m, 1) + interval '1 month' - interval '1 day') then
    perform app_private.fail(message);
  end if;
  if make_date(y, m, d) < app_private.min_date() or make_date(y, m, d) > app_private.max_date() then
    perform app_private.fail(format('%s must be between %s and %s.', app_private.field_of(message, 'Date'),
      to_char(app_private.min_date(), 'YYYY-MM-DD'), to_char(app_private.max_date(), 'YYYY-MM-DD')));
  end if;
  return make_date(y, m, d);
end $$;
grant execute on function app_private.parse_date(day text, message text) to accounting_visitor;

-- A UUID given as text (list filters, batch items): the forms GraphQL's UUID scalar accepts.
create or replace function app_private.parse_uuid(id text, message text) returns uuid
  language plpgsql immutable as
$$
begin
  if id is null then return null; end if;
  if id !~ '^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$' then
    perform app_private.fail(message);
  end if;
  return id::uuid;
end $$;
grant execute on function app_private.parse_uuid(id text, message text) to accounting_visitor;

-- A list of UUIDs given as a JSON array (listLedgerEvents' accountIds, categoryIds, paymentAccountIds).
create or replace function app_private.uuid_list(ids jsonb, field text) returns uuid[]
  language plpgsql immutable as
$$
declare
  x jsonb;
  out uuid[] := '{}';
begin
  if ids is null then return null; end if;
  if jsonb_typeof(ids) <> 'array' then perform app_private.fail(format('%s must be a list of UUIDs.', field)); end if;
  for x in select e from jsonb_array_elements(ids) e loop
    if jsonb_typeof(x) <> 'string' then perform app_private.fail(format('%s must be a list of UUIDs.', field)); end if;
    out := out || app_private.parse_uuid(x #>> '{}', format('%s must be a list of UUIDs.', field));
  end loop;
  return out;
end $$;
grant execute on function app_private.uuid_list(ids jsonb, field text) to accounting_visitor;
--! EndIncluded inputs/values.sql
alter table app_public.ledger_events alter column id set default app_private.uuid_v7();
alter table app_public.journal_entries alter column id set default app_private.uuid_v7();
alter table app_public.journal_lines alter column id set default app_private.uuid_v7();
-- The composite key (organization, event) already ties an entry to its organization and cascades
-- its deletion: the plain key only costs a check per entry. (Lines keep theirs: deleting an
-- organization must remove them before the accounts they name.)
alter table app_public.journal_entries drop constraint journal_entries_organization_id_fkey;

-- Imports: where each event came from (a bank statement, a processor export), one row per import
-- run, and the results of operator jobs.
create table app_public.import_batches (
  id uuid primary key default app_private.uuid_v7(),
  organization_id uuid not null references app_public.organizations on delete cascade,
  source text not null check (source in ('bank_import', 'processor_import')),
  -- Bank imports: the batch id itself; processor imports: `processor:<UTC timestamp>` (decisions §10).
  batch_key text not null check (length(batch_key) between 1 and 200),
  payment_account_id uuid,
  file_name text check (length(file_name) <= 500),
  actor_api_key_id uuid,
  actor_user_id uuid,
  created timestamptz not null default now(),
  unique (organization_id, id),
  unique (organization_id, batch_key),
  foreign key (organization_id, payment_account_id) references app_public.accounts (organization_id, id)
);
alter table app_public.import_batches enable row level security;
alter table app_public.import_batches force row level security;

alter table app_public.ledger_events
  add column source text not null default 'manual' check (source in ('manual', 'bank_import', 'processor_import')),
  add column import_batch_id uuid,
  -- The source's own id of the row (a processor balance transaction id, `<id>:fee` for its fee).
  add column source_id text check (length(source_id) between 1 and 300),
  add constraint ledger_events_import_batch_fkey foreign key (organization_id, import_batch_id)
    references app_public.import_batches (organization_id, id);
-- A source row is imported once per organization, whichever batch and however many runs at once.
create unique index ledger_events_source_key on app_public.ledger_events (organization_id, source, source_id)
  where source_id is not null;
create index ledger_events_import_batch_idx on app_public.ledger_events (import_batch_id)
  where import_batch_id is not null;
-- Duplicate candidates of a statement row: same day and amount, on any payment account.
create index ledger_events_duplicate_idx on app_public.ledger_events (organization_id, transaction_date, functional_amount);
create index ledger_events_reference_idx on app_public.ledger_events (organization_id, payment_account_id, reference)
  where reference is not null;

-- Every operator job (imports now, mailbox scans later) records its outcome here.
create table app_private.job_results (
  id bigint generated always as identity primary key,
  job_name text not null,
  job_id text,
  attempt integer,
  organization_id uuid references app_public.organizations on delete cascade,
  payload jsonb not null default '{}',
  status text not null check (status in ('succeeded', 'failed')),
  result jsonb,
  error text,
  started_at timestamptz not null,
  finished_at timestamptz not null default clock_timestamp()
);
create index job_results_job_idx on app_private.job_results (job_name, finished_at);
-- Operators read it; no API role has a grant. RLS as on every table with an organization.
alter table app_private.job_results enable row level security;
alter table app_private.job_results force row level security;

-- Deleting journal entries (delete_processor_imports) has the deferred foreign key from
-- ledger_events.journal_entry_id check each one: by index, not by reading every event per entry.
create index ledger_events_journal_entry_idx on app_public.ledger_events (journal_entry_id)
  where journal_entry_id is not null;

-- The audit trail and the journal written set-based (statement-level triggers, one posting function).
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

-- Every insert, change and deletion of events: who, when, what (an insert: {field: value} of each
-- field with a value; a change or deletion: {field: {old, new}} of each field that differs, nulls
-- left out). Statement-level, from the transition tables: an import
-- of 100,000 events writes its trail in one statement, not 100,000 trigger calls. The fields are
-- listed one by one: three times cheaper than diffing whole rows as JSON, which an import of
-- 5,000 rows notices. test/audit-trail.test.ts checks that the list names every column.
create or replace function app_private.tg_ledger_events__audit() returns trigger
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
declare
  -- Each changed row as old row o and new row n; the missing one is an empty row of the same
  -- type, so that the fields are plain columns (reading them from a row value costs double).
  v_rows text := case tg_op
    -- An imported event's creation is recorded once per import run, by its import batch (who,
    -- when, which file): an import of 100,000 events writes one row, not 100,000. Nothing is lost:
    -- its later changes and its deletion record their old values here, as every event's do.
    when 'INSERT' then 'new_rows n left join (select * from new_rows limit 0) o on true where n.import_batch_id is null'
    when 'UPDATE' then 'new_rows n join old_rows o on o.id = n.id'
    -- An organization being deleted takes its events with it: nothing to record for it.
    else 'old_rows o left join (select * from old_rows limit 0) n on true
           where exists (select 1 from app_public.organizations g where g.id = o.organization_id)' end;
  -- The changes: an insert records the new row's fields that have a value ({field: value}, the
  -- cheapest form, for imports of 100,000 events); a change or a deletion each differing field.
  v_changes text := case tg_op
    when 'INSERT' then $c$jsonb_strip_nulls(to_jsonb(n)) - array['id', 'organization_id', 'created', 'updated', 'has_memo']$c$
    else format($c$jsonb_strip_nulls(jsonb_build_object(
%s))$c$, $f$
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
      'journal_entry_id', case when o.journal_entry_id is distinct from n.journal_entry_id then jsonb_build_object('old', o.journal_entry_id, 'new', n.journal_entry_id) end,
      'reference', case when o.reference is distinct from n.reference then jsonb_build_object('old', o.reference, 'new', n.reference) end,
      'backfill_id', case when o.backfill_id is distinct from n.backfill_id then jsonb_build_object('old', o.backfill_id, 'new', n.backfill_id) end,
      'source', case when o.source is distinct from n.source then jsonb_build_object('old', o.source, 'new', n.source) end,
      'import_batch_id', case when o.import_batch_id is distinct from n.import_batch_id then jsonb_build_object('old', o.import_batch_id, 'new', n.import_batch_id) end,
      'source_id', case when o.source_id is distinct from n.source_id then jsonb_build_object('old', o.source_id, 'new', n.source_id) end
$f$) end;
begin
  -- Dynamic SQL sees the transition tables too (they are registered for the whole function).
  execute format($q$
    insert into app_public.ledger_event_audit (organization_id, event_id, action, actor_api_key_id, actor_user_id, changes)
      select d.organization_id, d.id, $1, $2, $3, d.changes
        from (select coalesce(n.organization_id, o.organization_id) organization_id, coalesce(n.id, o.id) id, %s changes
                from %s) d
       where d.changes <> '{}'::jsonb
       order by d.id
  $q$, v_changes, v_rows)
  using coalesce(nullif(current_setting('app.audit_action', true), ''), lower(tg_op)),
        app_public.current_api_key_id(), app_public.current_user_id();
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
--! Included ledger/events.sql
-- Ledger events: creation, edits, the staged entry, lists and lookups, and the daily counts the
-- dashboard reads (contract: LedgerEvent; decisions §4-§6).
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
grant update (category_id, direction, event_type, functional_amount, has_document, journal_entry_id, memo, merchant_name, payment_account_id, reference, status, tax_account_id, tax_amount, tax_code, transaction_date, updated) on app_public.ledger_events to accounting_visitor;

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

-- Which way money moves relative to the payment account (decisions §6).
create or replace function app_private.direction_for(event_type text) returns text
  language sql immutable parallel safe as
$$ select case event_type when 'income' then 'in' else 'out' end $$;
grant execute on function app_private.direction_for(event_type text) to accounting_visitor;

-- Receipts of an event: none until the receipts issue replaces this function.
create or replace function app_private.event_receipts(event_id uuid) returns jsonb
  language sql stable as
$$ select '[]'::jsonb $$;
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
    sort_by text default null, sort_dir text default null) returns jsonb
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

  -- The total: from the per-day status counts when only status and dates filter, else counted.
  if has_document is null and v_min is null and v_max is null and v_accounts is null and v_categories is null
     and v_payments is null and v_pattern is null then
    select coalesce(sum(c.n), 0) into v_total from app_public.ledger_event_daily_counts c
     where c.organization_id = list_ledger_events.organization_id
       and (v_status is null or c.status = any (v_status))
       and (v_from is null or c.day >= v_from) and (v_to is null or c.day <= v_to);
  else
    execute 'select count(*) from app_public.ledger_events e where e.organization_id = $1' || v_where
      into v_total
      using organization_id, v_status, v_from, v_to, has_document, v_min, v_max, v_accounts, v_categories, v_payments, v_pattern;
  end if;

  -- The page, in one statement: ids in total order, then each event with its accounts and entry.
  execute format($q$
    with page as (
      select e.id, row_number() over () as ord from (
        select e.id from app_public.ledger_events e
         where e.organization_id = $1 %1$s
         order by %2$s %3$s, e.id %3$s
         limit $12 offset $13) e)
    select coalesce(jsonb_agg(app_private.ledger_event_json(e, c, p, t, j) order by page.ord), '[]'::jsonb)
      from page
      join app_public.ledger_events e on e.id = page.id
      left join app_public.accounts c on c.id = e.category_id
      left join app_public.accounts p on p.id = e.payment_account_id
      left join app_public.accounts t on t.id = e.tax_account_id
      left join app_public.journal_entries j on j.id = e.journal_entry_id
  $q$, v_where, v_order, v_dir)
    into v_items
    using organization_id, v_status, v_from, v_to, has_document, v_min, v_max, v_accounts, v_categories, v_payments,
          v_pattern, v_limit, v_offset;
  return jsonb_build_object('items', v_items, 'totalCount', v_total, 'pageSize', v_limit, 'offset', v_offset);
end $$;
grant execute on function app_public.list_ledger_events(organization_id uuid, status jsonb, has_document boolean, since_days integer, date_from text, date_to text, amount_min text, amount_max text, account_ids jsonb, category_ids jsonb, payment_account_ids jsonb, search text, "limit" integer, "offset" integer, sort_by text, sort_dir text) to accounting_visitor;

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

-- Classify: category, payment account and tax (decisions §6, §7). Absent arguments keep their value.
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
  if e.status in ('confirmed', 'synced', 'reconciled') then perform app_private.fail('Event is already confirmed.'); end if;
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

-- Posts the journal entries of locked, classified events (decisions §6) and marks them confirmed,
-- set-based whatever the number of events (an import posts 100,000 at once). An event may come
-- with its entry's id already set (an import inserts its events confirmed, with the id of the
-- entry posted here, and so spares itself an update of every event); the deferred foreign key
-- and the balance check hold either way at commit.
create or replace function app_private.post_journal_entries(event_ids uuid[]) returns table (event_id uuid, entry_id uuid)
  language plpgsql volatile as
$$
begin
  update app_public.ledger_events x set status = 'confirmed', journal_entry_id = app_private.uuid_v7()
   where x.id = any (event_ids) and x.journal_entry_id is null;
  return query
  with entries as (
    insert into app_public.journal_entries (id, organization_id, event_id, txn_date, total_amount)
      select e.journal_entry_id, e.organization_id, e.id, e.transaction_date, e.functional_amount
        from app_public.ledger_events e where e.id = any (event_ids) order by e.journal_entry_id
      returning journal_entries.event_id, journal_entries.id
  ),
  lines as (
    -- out: debit category (+ tax), credit payment; in: debit payment, credit category (+ tax).
    insert into app_public.journal_lines (organization_id, entry_id, account_id, txn_date, debit, credit)
      select e.organization_id, n.id, l.account_id, e.transaction_date,
             case when l.debit_side then l.amount else 0 end, case when l.debit_side then 0 else l.amount end
        from entries n
        join app_public.ledger_events e on e.id = n.event_id
        cross join lateral (values
          (e.category_id, e.functional_amount - coalesce(e.tax_amount, 0), e.direction = 'out'),
          (e.tax_account_id, coalesce(e.tax_amount, 0), e.direction = 'out'),
          (e.payment_account_id, e.functional_amount, e.direction = 'in')) l (account_id, amount, debit_side)
       where l.amount > 0
       order by n.id, l.account_id
  )
  select n.event_id, n.id from entries n;
end $$;
grant execute on function app_private.post_journal_entries(event_ids uuid[]) to accounting_visitor;

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
  if (new.organization_id, new.entry_id, new.account_id, new.txn_date, new.debit, new.credit)
     is distinct from (old.organization_id, old.entry_id, old.account_id, old.txn_date, old.debit, old.credit)
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
begin
  if tg_op = 'INSERT' then
    insert into app_public.account_daily_totals as t (organization_id, account_id, day, debit, credit)
      select organization_id, account_id, txn_date, sum(debit), sum(credit)
        from new_rows where not voided group by 1, 2, 3 order by 1, 2, 3
      on conflict (organization_id, account_id, day) do update
        set debit = t.debit + excluded.debit, credit = t.credit + excluded.credit;
  elsif tg_op = 'UPDATE' then
    insert into app_public.account_daily_totals as t (organization_id, account_id, day, debit, credit)
      select organization_id, account_id, txn_date, sum(debit), sum(credit) from (
        select organization_id, account_id, txn_date, debit, credit from new_rows where not voided
        union all
        select organization_id, account_id, txn_date, -debit, -credit from old_rows where not voided) x
      group by 1, 2, 3 having sum(debit) <> 0 or sum(credit) <> 0 order by 1, 2, 3
      on conflict (organization_id, account_id, day) do update
        set debit = t.debit + excluded.debit, credit = t.credit + excluded.credit;
  else
    insert into app_public.account_daily_totals as t (organization_id, account_id, day, debit, credit)
      select organization_id, account_id, txn_date, -sum(debit), -sum(credit)
        from old_rows r where not voided
         -- Rows of an organization being deleted go with it.
         and exists (select 1 from app_public.organizations o where o.id = r.organization_id)
       group by 1, 2, 3 order by 1, 2, 3
      on conflict (organization_id, account_id, day) do update
        set debit = t.debit + excluded.debit, credit = t.credit + excluded.credit;
  end if;
  return null;
end $$;
grant execute on function app_private.tg_journal_lines__totals() to accounting_visitor;
--! EndIncluded ledger/journal.sql
--! Included ledger/transitions.sql
-- The transitions of an event that post or void its journal entry (contract: States and
-- transitions).
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

create or replace function app_public.confirm_ledger_event(organization_id uuid, event_id uuid) returns jsonb
  language plpgsql volatile as
$$
declare
  e app_public.ledger_events;
  v_entry uuid;
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
  select p.entry_id into v_entry from app_private.post_journal_entries(array[e.id]) p;
  return jsonb_build_object('success', true, 'error', null, 'eventId', e.id, 'journalEntryId', v_entry);
end $$;
grant execute on function app_public.confirm_ledger_event(organization_id uuid, event_id uuid) to accounting_visitor;

create or replace function app_public.reject_ledger_event(organization_id uuid, event_id uuid) returns jsonb
  language plpgsql volatile as
$$
declare e app_public.ledger_events;
begin
  perform app_private.assert_org_access(organization_id, false);
  perform set_config('app.audit_action', 'reject', true);
  select * into e from app_public.ledger_events x where x.id = event_id for update;
  if not found then perform app_private.fail('Ledger event not found.', 'AP404'); end if;
  if e.status = 'ignored' then perform app_private.fail('Event is already rejected.'); end if;
  -- A posted entry is voided: kept for audit, out of every report.
  if e.journal_entry_id is not null then
    update app_public.journal_lines l set voided = true where l.entry_id = e.journal_entry_id and not l.voided;
    update app_public.journal_entries j set voided_at = now() where j.id = e.journal_entry_id and j.voided_at is null;
  end if;
  update app_public.ledger_events x set status = 'ignored' where x.id = e.id;
  return jsonb_build_object('success', true, 'error', null, 'eventId', e.id);
end $$;
grant execute on function app_public.reject_ledger_event(organization_id uuid, event_id uuid) to accounting_visitor;
--! EndIncluded ledger/transitions.sql
drop function if exists app_private.tg_ledger_events__audit_delete();
drop function if exists app_private.post_journal_entry(uuid);
drop function if exists app_private.field_changes(jsonb, jsonb);

-- Imports.
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
         case when a.classification in ('asset', 'expense') then sum(t.debit) - sum(t.credit)
              else sum(t.credit) - sum(t.debit) end
    from app_public.account_daily_totals t
    join app_public.accounts a on a.id = t.account_id
   where t.organization_id = org and t.day <= as_of
   group by t.account_id, a.classification
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
--! Included rules/category-rules.sql
-- Category rules: ILIKE patterns on merchant names; the longest matching pattern wins, then the
-- oldest; a new rule classifies the events waiting for review.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.category_rules
drop policy if exists category_rules_tenant on app_public.category_rules;
create policy category_rules_tenant on app_public.category_rules
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant delete, select on app_public.category_rules to accounting_visitor;
grant insert (account_id, organization_id, vendor_pattern) on app_public.category_rules to accounting_visitor;
grant update (account_id, match_count, updated, vendor_pattern) on app_public.category_rules to accounting_visitor;

drop trigger if exists _100_touch_updated on app_public.category_rules;
create trigger _100_touch_updated before update on app_public.category_rules
  for each row execute function app_private.tg__touch_updated();

drop trigger if exists _600_classify_needs_review on app_public.category_rules;
create trigger _600_classify_needs_review after insert on app_public.category_rules
  for each row execute function app_private.tg_category_rules__classify();

------------------------------------------------------------------------------------------------

-- The rule for each merchant name (compared in NFC, as patterns are stored): among rules whose
-- pattern matches and whose account is active, the longest pattern wins, then the oldest rule.
-- Set-based, for an import's thousands of names at once.
create or replace function app_private.best_category_rules(org uuid, merchant_names text[])
  returns table (merchant_name text, rule_id uuid)
  language sql stable as
$$
  select distinct on (n.name) n.name, r.id
    from (select distinct x as name from unnest(merchant_names) x) n
    join app_public.category_rules r on r.organization_id = org and normalize(n.name, NFC) ilike r.vendor_pattern
    join app_public.accounts a on a.organization_id = r.organization_id and a.id = r.account_id
   where a.active
   order by n.name, length(r.vendor_pattern) desc, r.created, r.id
$$;
grant execute on function app_private.best_category_rules(org uuid, merchant_names text[]) to accounting_visitor;

-- The rule for one merchant name.
create or replace function app_private.best_category_rule(org uuid, merchant_name text) returns uuid
  language sql stable as
$$ select b.rule_id from app_private.best_category_rules(org, array[merchant_name]) b $$;
grant execute on function app_private.best_category_rule(org uuid, merchant_name text) to accounting_visitor;

create or replace function app_private.category_rule_json(r app_public.category_rules) returns jsonb
  language sql stable as
$$ select jsonb_build_object('id', r.id, 'vendorPattern', r.vendor_pattern,
     'account', (select jsonb_build_object('id', a.id, 'name', a.name, 'accountType', a.account_type, 'active', a.active)
                   from app_public.accounts a where a.organization_id = r.organization_id and a.id = r.account_id),
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
  return a.id;
end $$;
grant execute on function app_private.rule_account(org uuid, account uuid) to accounting_visitor;

-- the best rule for, and counts them.
create or replace function app_private.tg_category_rules__classify() returns trigger
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
declare n integer;
begin
  perform set_config('app.audit_action', 'rule', true);
  update app_public.ledger_events e set category_id = new.account_id
    from app_public.accounts a
   where a.id = new.account_id and a.active
     and e.organization_id = new.organization_id and e.status = 'needs_review' and e.category_id is null
     and e.merchant_name ilike new.vendor_pattern
     and app_private.category_fits(e.event_type, a.classification)
     and e.payment_account_id is distinct from a.id
     and app_private.best_category_rule(new.organization_id, e.merchant_name) = new.id;
  get diagnostics n = row_count;
  if n > 0 then
    update app_public.category_rules r set match_count = r.match_count + n where r.id = new.id;
  end if;
  return null;
end $$;
grant execute on function app_private.tg_category_rules__classify() to accounting_visitor;

create or replace function app_public.create_category_rule(organization_id uuid, vendor_pattern text, category_id uuid) returns jsonb
  language plpgsql volatile as
$$
declare r app_public.category_rules;
begin
  perform app_private.assert_org_access(organization_id, false);
  begin
    insert into app_public.category_rules (organization_id, vendor_pattern, account_id)
      values (create_category_rule.organization_id, app_private.check_vendor_pattern(vendor_pattern),
              app_private.rule_account(create_category_rule.organization_id, category_id))
      returning * into r;
  exception when unique_violation then
    perform app_private.fail('A category rule with this pattern already exists.');
  end;
  -- Read again: the insert trigger has just classified matching events and counted them.
  select * into r from app_public.category_rules x where x.id = r.id;
  return jsonb_build_object('success', true, 'error', null, 'categoryRule', app_private.category_rule_json(r));
end $$;
grant execute on function app_public.create_category_rule(organization_id uuid, vendor_pattern text, category_id uuid) to accounting_visitor;

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
  perform app_private.check_sort_by(sort_by, array['vendorPattern', 'matchCount', 'created', 'updated']);
  key := case coalesce(sort_by, 'vendorPattern')
    when 'vendorPattern' then 'f.lpattern' when 'matchCount' then '(f.r).match_count'
    when 'created' then '(f.r).created' when 'updated' then '(f.r).updated' end;
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

create or replace function app_public.update_category_rule(organization_id uuid, category_rule_id uuid, vendor_pattern text default null,
    category_id uuid default null) returns jsonb
  language plpgsql volatile as
$$
declare r app_public.category_rules;
begin
  perform app_private.assert_org_access(organization_id, false);
  select * into r from app_public.category_rules x
   where x.organization_id = update_category_rule.organization_id and x.id = category_rule_id for no key update;
  if not found then perform app_private.fail('Category rule not found.', 'AP404'); end if;
  if vendor_pattern is not null then r.vendor_pattern := app_private.check_vendor_pattern(vendor_pattern); end if;
  if category_id is not null then r.account_id := app_private.rule_account(r.organization_id, category_id); end if;
  begin
    update app_public.category_rules x set vendor_pattern = r.vendor_pattern, account_id = r.account_id
     where x.organization_id = r.organization_id and x.id = r.id
     returning * into r;
  exception when unique_violation then
    perform app_private.fail('A category rule with this pattern already exists.');
  end;
  return jsonb_build_object('success', true, 'error', null, 'categoryRule', app_private.category_rule_json(r));
end $$;
grant execute on function app_public.update_category_rule(organization_id uuid, category_rule_id uuid, vendor_pattern text, category_id uuid) to accounting_visitor;
--! EndIncluded rules/category-rules.sql
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
  -- a full match first. Flagged only: the row is imported.
  update pg_temp.statement_rows s set event_id = p.id
    from (select distinct on (r.row_index) r.row_index, c.id
            from pg_temp.statement_rows r
            join pg_temp.statement_candidates c
              on c.transaction_date = r.transaction_date and c.functional_amount = r.amount and c.direction = r.direction
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

-- The duplicate flags of a statement; writes nothing.
create or replace function app_private.check_bank_statement_dups(org uuid, payment_account_id uuid, rows jsonb) returns jsonb
  language plpgsql volatile as
$$
begin
  perform set_config('app.organization_id', org::text, true);
  perform app_private.check_payment_account(payment_account_id);
  return (select coalesce(jsonb_agg(jsonb_build_object('rowIndex', m.row_index, 'isDuplicate', m.is_duplicate,
             'isPossibleDuplicate', m.is_possible_duplicate, 'matchingEventId', m.matching_event_id) order by m.row_index), '[]')
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
begin
  perform set_config('app.organization_id', org::text, true);
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
  select (select count(*) from inserted), (select count(*) from m) into v_imported, v_total;

  return jsonb_build_object('importedCount', v_imported, 'skippedCount', v_total - v_imported, 'batchId', v_batch);
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

-- Starts an import in the caller's transaction: the organization in scope, an empty staging
-- table (dropped at the end of the transaction) and the currency every row must be in.
create or replace function app_private.processor_import_begin(org uuid) returns text
  language plpgsql volatile as
$$
declare cur text;
begin
  perform set_config('app.organization_id', org::text, true);
  select o.functional_currency into cur from app_public.organizations o where o.id = org;
  if not found then perform app_private.fail('Organization not found.', 'AP404'); end if;
  if to_regclass('pg_temp.processor_import_rows') is not null then drop table pg_temp.processor_import_rows; end if;
  create temp table processor_import_rows (
    line integer not null,
    id text not null,
    row_type text not null,
    amount numeric(20,2) not null,
    fee numeric(20,2) not null,
    created date not null,
    description text not null,
    source_ref text not null
  ) on commit drop;
  return cur;
end $$;

-- One chunk of validated rows (the reader checked every value and names the line of a bad one).
create or replace function app_private.processor_import_stage(lines integer[], ids text[], row_types text[],
    amounts numeric[], fees numeric[], dates date[], descriptions text[], sources text[]) returns integer
  language plpgsql volatile as
$$
begin
  insert into pg_temp.processor_import_rows (line, id, row_type, amount, fee, created, description, source_ref)
    select * from unnest(lines, ids, row_types, amounts, fees, dates, descriptions, sources);
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
--! Included jobs/job-results.sql
-- The outcome of every operator job (imports now, mailbox scans later), in app_private.job_results:
-- one row per attempt, written by the worker when the attempt ends (worker/job-results.ts).
-- The operator's and the worker's (owner connection) only: no grant to the API's role.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

create or replace function app_private.record_job_result(job_name text, job_id text, attempt integer,
    organization_id uuid, payload jsonb, status text, result jsonb, error text, started_at timestamptz)
  returns bigint
  language plpgsql volatile as
$$
declare v_id bigint;
begin
  if status not in ('succeeded', 'failed') then perform app_private.fail('Status must be succeeded or failed.'); end if;
  insert into app_private.job_results (job_name, job_id, attempt, organization_id, payload, status, result, error, started_at)
    values (job_name, job_id, attempt,
            -- A job naming an organization that no longer exists is still recorded.
            (select o.id from app_public.organizations o where o.id = record_job_result.organization_id),
            coalesce(payload, '{}'::jsonb), status, result, left(error, 10000), started_at)
    returning id into v_id;
  return v_id;
end $$;
--! EndIncluded jobs/job-results.sql
