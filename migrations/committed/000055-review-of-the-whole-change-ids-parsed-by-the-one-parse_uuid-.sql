--! Previous: sha1:87ce8f7919f091db21d651ed5baa648ef1e81f13
--! Hash: sha1:55090f6f9aecfc6a3ba5bf2beeaf6b0827d98b0c
--! Message: Review of the whole change: ids parsed by the one parse_uuid, an allocation's amounts read once, a document's total worked out once, parse_decimal beside the other value parsers

-- Review of the whole change: ids of splits, document lines and allocations parsed by the one
-- parse_uuid (a duplicate allocation written in another case is caught), an allocation's amounts
-- read once, a document's total worked out once, parse_decimal beside the other value parsers.
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

-- A decimal string of at most `places` decimals and 12 whole digits, at least 0 (or more than 0
-- when `positive`): an invoice line's quantity and unit price.
create or replace function app_private.parse_decimal(value text, places integer, positive boolean, message text) returns numeric
  language plpgsql immutable as
$$
declare v numeric;
begin
  if value is null or btrim(value) !~ ('^[0-9]{1,12}(\.[0-9]{1,' || places || '})?$') then perform app_private.fail(message); end if;
  v := btrim(value)::numeric;
  if positive and v = 0 then perform app_private.fail(message); end if;
  return v;
end $$;
grant execute on function app_private.parse_decimal(value text, places integer, positive boolean, message text) to accounting_visitor;

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
--! Included ledger/splits.sql
-- Split transactions: one event classified into several category lines, each with its own sales
-- tax code and tax (docs/api.md, Split transactions and the sales tax return). An event's splits
-- are a JSON list on the event (ledger_events.splits, null when it is one line), so that a change
-- of them is one row's change, in its audit trail like any other field.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- The total of a split event's lines, tax included: the constraint ledger_events_splits_add_up
-- holds it to the event's amount.
create or replace function app_private.splits_total(splits jsonb) returns numeric
  language sql immutable parallel safe as
$$ select sum((s->>'amount')::numeric) from jsonb_array_elements(splits) s $$;
grant execute on function app_private.splits_total(splits jsonb) to accounting_visitor;

-- One split as stored: its tax computed from its code when none was typed (tax_for_account: on a
-- purchase the recoverable taxes only), and checked against its amount.
create or replace function app_private.split_line(category uuid, amount numeric, tax_code text, typed_tax numeric,
    memo text, event_type text, on_day date) returns jsonb
  language plpgsql stable as
$$
declare v_tax numeric := typed_tax;
begin
  if tax_code is not null and not exists (select 1 from app_public.sales_tax_codes s where s.code = split_line.tax_code) then
    perform app_private.fail('Unknown tax code.');
  end if;
  if typed_tax is null and tax_code is not null then
    v_tax := app_private.tax_for_account(amount, tax_code, app_private.is_sale(category, event_type), on_day);
  end if;
  perform app_private.check_typed_tax(typed_tax, tax_code, app_private.is_sale(category, event_type), on_day);
  if coalesce(v_tax, 0) >= amount then perform app_private.fail('A split''s tax amount must be less than its amount.'); end if;
  return jsonb_build_object('category_id', category, 'amount', amount, 'tax_code', tax_code,
    'tax_amount', coalesce(v_tax, 0), 'tax_computed', typed_tax is null and tax_code is not null, 'memo', coalesce(memo, ''));
end $$;
grant execute on function app_private.split_line(category uuid, amount numeric, tax_code text, typed_tax numeric, memo text, event_type text, on_day date) to accounting_visitor;

-- The caller's splits ([{categoryId, amount, taxCode, taxAmount, memo}]) checked and as stored.
-- Each category must fit the event; the amounts, tax included, must add up to the event's amount
-- exactly.
create or replace function app_private.checked_splits(splits jsonb, event_type text, amount numeric, on_day date)
  returns jsonb
  language plpgsql stable as
$$
declare
  max_splits constant integer := 100;
  s jsonb;
  v_category uuid;
  v_memo text;
  v_lines jsonb := '[]'::jsonb;
begin
  if jsonb_typeof(splits) is distinct from 'array' or jsonb_array_length(splits) = 0 then
    perform app_private.fail('Splits must be a list of at least one line.');
  end if;
  if jsonb_array_length(splits) > max_splits then perform app_private.fail(format('At most %s splits.', max_splits)); end if;
  for s in select x from jsonb_array_elements(splits) x loop
    if jsonb_typeof(s) is distinct from 'object' or s->>'categoryId' is null or s->>'amount' is null then
      perform app_private.fail('Each split needs a categoryId and an amount.');
    end if;
    v_category := app_private.parse_uuid(s->>'categoryId', 'Category account not found.');
    perform app_private.check_split_category(v_category, event_type);
    v_memo := normalize(app_private.clean_text(s->>'memo'), NFC);
    if length(v_memo) > 1000 then perform app_private.fail('A split''s memo must be at most 1000 characters.'); end if;
    v_lines := v_lines || app_private.split_line(v_category,
      app_private.parse_amount(s->>'amount', 'A split''s amount must be a positive decimal string.'),
      nullif(s->>'taxCode', ''),
      case when s->>'taxAmount' is not null
        then app_private.parse_amount(s->>'taxAmount', 'A split''s tax amount must be a decimal string of at least 0.', true) end,
      v_memo, event_type, on_day);
  end loop;
  if app_private.splits_total(v_lines) <> amount then perform app_private.fail('Splits must add up to the amount.'); end if;
  return v_lines;
end $$;
grant execute on function app_private.checked_splits(splits jsonb, event_type text, amount numeric, on_day date) to accounting_visitor;

-- The splits on another day: a tax computed from a code follows the rate of the new day; a typed
-- one stays.
create or replace function app_private.splits_on_day(splits jsonb, event_type text, on_day date) returns jsonb
  language sql stable as
$$
  select jsonb_agg(case when (s.v->>'tax_computed')::boolean
      then app_private.split_line((s.v->>'category_id')::uuid, (s.v->>'amount')::numeric, s.v->>'tax_code', null, s.v->>'memo', event_type, on_day)
      else s.v end order by s.n)
    from jsonb_array_elements(splits) with ordinality s (v, n)
$$;
grant execute on function app_private.splits_on_day(splits jsonb, event_type text, on_day date) to accounting_visitor;

-- A split's category fits as an event's does (check_category), and an expense's lines may also be
-- liabilities: a loan payment is principal (the loan) and interest (an expense).
create or replace function app_private.split_category_fits(event_type text, classification text) returns boolean
  language sql immutable parallel safe as
$$ select app_private.category_fits(event_type, classification) or (event_type = 'expense' and classification = 'liability') $$;
grant execute on function app_private.split_category_fits(event_type text, classification text) to accounting_visitor;

create or replace function app_private.check_split_category(account uuid, event_type text) returns void
  language plpgsql stable as
$$
begin
  if event_type = 'expense' and exists (select 1 from app_public.accounts a where a.id = account and a.active and a.classification = 'liability'
                                           and a.account_type <> 'accounts_payable') then
    return;
  end if;
  perform app_private.check_category(account, event_type);
end $$;
grant execute on function app_private.check_split_category(account uuid, event_type text) to accounting_visitor;

-- Whether every split's category still fits the event type (an edit of the type may undo them).
create or replace function app_private.splits_fit(splits jsonb, event_type text) returns boolean
  language sql stable as
$$
  select coalesce(bool_and(app_private.split_category_fits(event_type, a.classification)), false)
    from jsonb_array_elements(splits) s
    left join app_public.accounts a on a.id = (s->>'category_id')::uuid
$$;
grant execute on function app_private.splits_fit(splits jsonb, event_type text) to accounting_visitor;

-- The splits' categories, checked again when the event is confirmed (accounts change).
create or replace function app_private.check_split_categories(splits jsonb, event_type text) returns void
  language plpgsql stable as
$$
declare s jsonb;
begin
  for s in select x from jsonb_array_elements(splits) x loop
    perform app_private.check_split_category((s->>'category_id')::uuid, event_type);
  end loop;
end $$;
grant execute on function app_private.check_split_categories(splits jsonb, event_type text) to accounting_visitor;

-- What the event shows of its splits: its category is the largest line's (the first of equals),
-- its tax the lines' tax together (null when none).
create or replace function app_private.largest_split_category(splits jsonb) returns uuid
  language sql immutable as
$$
  select (s.v->>'category_id')::uuid from jsonb_array_elements(splits) with ordinality s (v, n)
   order by (s.v->>'amount')::numeric desc, s.n limit 1
$$;
grant execute on function app_private.largest_split_category(splits jsonb) to accounting_visitor;

create or replace function app_private.splits_tax(splits jsonb) returns numeric
  language sql immutable as
$$ select nullif(sum((s->>'tax_amount')::numeric), 0) from jsonb_array_elements(splits) s $$;
grant execute on function app_private.splits_tax(splits jsonb) to accounting_visitor;

-- LedgerEvent.splits: [{category {id name}, amount, taxCode, taxAmount, memo}], in the order given;
-- an unsplit event has none.
create or replace function app_private.splits_json(splits jsonb) returns jsonb
  language sql stable as
$$
  select coalesce(jsonb_agg(jsonb_build_object('category', jsonb_build_object('id', a.id, 'name', a.name),
      'amount', app_private.money((s.v->>'amount')::numeric), 'taxCode', s.v->>'tax_code',
      'taxAmount', app_private.money((s.v->>'tax_amount')::numeric), 'memo', s.v->>'memo') order by s.n), '[]'::jsonb)
    from jsonb_array_elements(splits) with ordinality s (v, n)
    left join app_public.accounts a on a.id = (s.v->>'category_id')::uuid
$$;
grant execute on function app_private.splits_json(splits jsonb) to accounting_visitor;
--! EndIncluded ledger/splits.sql
--! Included receivables/documents.sql
-- Invoices (to customers) and bills (from vendors): drafts with lines and sales tax codes, approval
-- that posts to Accounts Receivable or Payable, void by a reversing entry (docs/api.md, Invoices,
-- bills and contact balances). One table for both: a document of kind invoice or bill.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.documents
drop policy if exists documents_tenant on app_public.documents;
create policy documents_tenant on app_public.documents
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select on app_public.documents to accounting_visitor;
grant select on app_public.documents to reporting_reader;
grant insert (organization_id, kind, contact_id, number, issue_date, due_date, memo, subtotal, tax_total, total) on app_public.documents to accounting_visitor;
grant update (status, amount_paid, journal_entry_id, void_entry_id, approved_at, voided_at, updated) on app_public.documents to accounting_visitor;

drop trigger if exists _100_touch_updated on app_public.documents;
create trigger _100_touch_updated before update on app_public.documents
  for each row execute function app_private.tg__touch_updated();

-- app_public.document_lines
drop policy if exists document_lines_tenant on app_public.document_lines;
create policy document_lines_tenant on app_public.document_lines
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select on app_public.document_lines to accounting_visitor;
grant select on app_public.document_lines to reporting_reader;
grant insert on app_public.document_lines to accounting_visitor;

------------------------------------------------------------------------------------------------

-- The control account a kind posts to: the organization's first Accounts Receivable (invoices) or
-- Payable (bills) account, made by the first approval when the chart has none (one at a time: an
-- advisory lock, so that two first approvals make one). An inactive one is refused, not replaced.
create or replace function app_private.control_account(org uuid, kind text) returns uuid
  language plpgsql volatile as
$$
declare
  v_type text := case kind when 'invoice' then 'accounts_receivable' else 'accounts_payable' end;
  v_name text := case kind when 'invoice' then 'Accounts Receivable' else 'Accounts Payable' end;
  a app_public.accounts;
begin
  select * into a from app_public.accounts x
   where x.organization_id = org and x.account_type = v_type order by x.active desc, x.created, x.id limit 1;
  if not found then
    perform pg_advisory_xact_lock(hashtextextended('control_account:' || org || ':' || kind, 0));
    select * into a from app_public.accounts x
     where x.organization_id = org and x.account_type = v_type order by x.active desc, x.created, x.id limit 1;
  end if;
  if not found then
    begin
      insert into app_public.accounts (organization_id, name, account_type, classification, tax_code_id)
        select org, v_name, v_type, case kind when 'invoice' then 'asset' else 'liability' end, t.id
          from app_public.tax_codes t where t.code = case kind when 'invoice' then '1060' else '2620' end
        returning * into a;
    exception when unique_violation then
      perform app_private.fail(format('An account named %s is not of type %s: rename it, so that %s can be made.', v_name, v_type, v_name));
    end;
  end if;
  if not a.active then perform app_private.fail(format('%s is inactive: reactivate it.', a.name)); end if;
  return a.id;
end $$;
grant execute on function app_private.control_account(org uuid, kind text) to accounting_visitor;

create or replace function app_private.document_json(d app_public.documents) returns jsonb
  language sql stable as
$$
  select jsonb_build_object('id', d.id, 'kind', d.kind,
    'contact', (select jsonb_build_object('id', c.id, 'displayName', c.display_name) from app_public.contacts c where c.id = d.contact_id),
    'number', d.number, 'issueDate', to_char(d.issue_date, 'YYYY-MM-DD'), 'dueDate', to_char(d.due_date, 'YYYY-MM-DD'),
    'memo', d.memo, 'status', d.status, 'subtotal', app_private.money(d.subtotal), 'taxTotal', app_private.money(d.tax_total),
    'total', app_private.money(d.total), 'amountPaid', app_private.money(d.amount_paid),
    'amountDue', app_private.money(case when d.status in ('draft', 'void') then 0 else d.total - d.amount_paid end),
    'lines', (select coalesce(jsonb_agg(jsonb_build_object('description', l.description,
        'quantity', trim_scale(l.quantity)::text, 'unitPrice', trim_scale(l.unit_price)::text, 'amount', app_private.money(l.amount),
        'category', jsonb_build_object('id', a.id, 'name', a.name), 'taxCode', l.tax_code, 'taxAmount', app_private.money(l.tax_amount))
        order by l.position), '[]'::jsonb)
      from app_public.document_lines l join app_public.accounts a on a.id = l.category_id where l.document_id = d.id),
    'journalEntryId', d.journal_entry_id, 'voidEntryId', d.void_entry_id,
    'approvedAt', app_private.iso(d.approved_at), 'voidedAt', app_private.iso(d.voided_at),
    'created', app_private.iso(d.created), 'updated', app_private.iso(d.updated))
$$;
grant execute on function app_private.document_json(d app_public.documents) to accounting_visitor;

-- A draft: its lines checked, each line's amount quantity × unit price (half to even) and its tax
-- added on top (tax_excluded_parts; a bill's taxes all count, PST too: the vendor charged them).
create or replace function app_private.create_document(org uuid, kind text, contact uuid, number text, issue_date text,
    due_date text, lines jsonb, memo text) returns jsonb
  language plpgsql volatile as
$$
declare
  max_lines constant integer := 200;
  noun text := case kind when 'invoice' then 'An invoice' else 'A bill' end;
  c app_public.contacts;
  v_number text := app_private.clean_text(number);
  v_issue date;
  v_due date;
  v_memo text := coalesce(normalize(memo, NFC), '');
  v_id uuid;
  l jsonb;
  n integer := 0;
  v_qty numeric;
  v_price numeric;
  v_amount numeric;
  v_category uuid;
  v_code text;
  v_tax numeric;
  v_lines jsonb := '[]'::jsonb;
  v_total numeric;
begin
  perform app_private.assert_org_access(org, false);
  select * into c from app_public.contacts x where x.id = contact;
  if not found then perform app_private.fail('Contact not found.'); end if;
  if c.contact_type <> (case kind when 'invoice' then 'customer' else 'vendor' end) then
    perform app_private.fail(case kind when 'invoice' then 'An invoice is to a customer.' else 'A bill is from a vendor.' end);
  end if;
  if v_number is null or v_number = '' then perform app_private.fail('Number is required.'); end if;
  if length(v_number) > 50 then perform app_private.fail('Number must be at most 50 characters.'); end if;
  v_issue := app_private.parse_date(issue_date, 'issueDate must be a date in YYYY-MM-DD format.');
  v_due := app_private.parse_date(due_date, 'dueDate must be a date in YYYY-MM-DD format.');
  if v_due < v_issue then perform app_private.fail('dueDate must not be before issueDate.'); end if;
  if length(v_memo) > 5000 then perform app_private.fail('Memo must be at most 5000 characters.'); end if;
  if jsonb_typeof(lines) is distinct from 'array' or jsonb_array_length(lines) = 0 then
    perform app_private.fail(noun || ' needs at least one line.');
  end if;
  if jsonb_array_length(lines) > max_lines then perform app_private.fail(format('At most %s lines.', max_lines)); end if;
  for l in select x from jsonb_array_elements(lines) x loop
    n := n + 1;
    if nullif(app_private.clean_text(l->>'description'), '') is null then perform app_private.fail('Each line needs a description.'); end if;
    if length(app_private.clean_text(l->>'description')) > 500 then perform app_private.fail('A line''s description must be at most 500 characters.'); end if;
    v_qty := app_private.parse_decimal(l->>'quantity', 4, true, 'A line''s quantity must be a positive decimal string with at most 4 decimals.');
    v_price := app_private.parse_decimal(l->>'unitPrice', 4, false, 'A line''s unitPrice must be a decimal string of at least 0 with at most 4 decimals.');
    v_amount := app_private.round_half_even(v_qty * v_price);
    if v_amount > app_private.max_amount() then perform app_private.fail('A line''s amount must be at most 999,999,999.99.'); end if;
    v_category := app_private.parse_uuid(l->>'categoryId', 'Category account not found.');
    perform app_private.check_category(v_category, case kind when 'invoice' then 'income' else 'expense' end);
    v_code := nullif(l->>'taxCode', '');
    if v_code is not null and not exists (select 1 from app_public.sales_tax_codes s where s.code = v_code) then
      perform app_private.fail('Unknown tax code.');
    end if;
    v_tax := coalesce((select sum(t.portion) from app_private.tax_excluded_parts(v_amount, v_code, v_issue) t), 0);
    v_lines := v_lines || jsonb_build_object('position', n, 'description', app_private.clean_text(l->>'description'),
      'quantity', v_qty, 'unit_price', v_price, 'amount', v_amount, 'category_id', v_category, 'tax_code', v_code, 'tax_amount', v_tax);
  end loop;
  v_total := (select sum((x->>'amount')::numeric + (x->>'tax_amount')::numeric) from jsonb_array_elements(v_lines) x);
  if v_total <= 0 then perform app_private.fail(noun || ' must total more than 0.00.'); end if;
  if v_total > app_private.max_amount() then
    perform app_private.fail(noun || '''s total must be at most 999,999,999.99.');
  end if;
  begin
    insert into app_public.documents (organization_id, kind, contact_id, number, issue_date, due_date, memo, subtotal, tax_total, total)
      select org, kind, c.id, v_number, v_issue, v_due, v_memo, sum(x.amount), sum(x.tax_amount), sum(x.amount) + sum(x.tax_amount)
        from jsonb_to_recordset(v_lines) x (amount numeric, tax_amount numeric)
      returning id into v_id;
  exception when unique_violation then
    perform app_private.fail(case kind when 'invoice' then 'Invoice number already exists.' else 'Bill number already exists for this vendor.' end);
  end;
  insert into app_public.document_lines (organization_id, document_id, position, description, quantity, unit_price, amount,
      category_id, tax_code, tax_amount)
    select org, v_id, x.position, x.description, x.quantity, x.unit_price, x.amount, x.category_id, x.tax_code, x.tax_amount
      from jsonb_to_recordset(v_lines) x (position smallint, description text, quantity numeric, unit_price numeric, amount numeric,
           category_id uuid, tax_code text, tax_amount numeric);
  return jsonb_build_object('success', true, 'error', null,
    'document', (select app_private.document_json(d) from app_public.documents d where d.id = v_id));
end $$;
grant execute on function app_private.create_document(org uuid, kind text, contact uuid, number text, issue_date text, due_date text, lines jsonb, memo text) to accounting_visitor;

create or replace function app_public.create_invoice(organization_id uuid, contact_id uuid, number text, issue_date text,
    due_date text, lines jsonb, memo text default null) returns jsonb
  language sql volatile as
$$ select app_private.create_document(organization_id, 'invoice', contact_id, number, issue_date, due_date, lines, memo) $$;
grant execute on function app_public.create_invoice(organization_id uuid, contact_id uuid, number text, issue_date text, due_date text, lines jsonb, memo text) to accounting_visitor;

create or replace function app_public.create_bill(organization_id uuid, contact_id uuid, number text, issue_date text,
    due_date text, lines jsonb, memo text default null) returns jsonb
  language sql volatile as
$$ select app_private.create_document(organization_id, 'bill', contact_id, number, issue_date, due_date, lines, memo) $$;
grant execute on function app_public.create_bill(organization_id uuid, contact_id uuid, number text, issue_date text, due_date text, lines jsonb, memo text) to accounting_visitor;

-- The document of a kind, locked for its transition.
create or replace function app_private.document_for_update(kind text, id uuid) returns app_public.documents
  language plpgsql volatile as
$$
declare d app_public.documents;
begin
  select * into d from app_public.documents x where x.id = document_for_update.id and x.kind = document_for_update.kind for update;
  if not found then perform app_private.fail(case kind when 'invoice' then 'Invoice not found.' else 'Bill not found.' end, 'AP404'); end if;
  return d;
end $$;
grant execute on function app_private.document_for_update(kind text, id uuid) to accounting_visitor;

-- Approval posts on the issue date (refused in a locked period by the journal's triggers):
--   invoice: debit Accounts Receivable the total; credit each revenue category its lines' amounts
--            and each tax account the tax collected (tagged as on a sale);
--   bill:    debit each category its lines' amounts with the taxes not recoverable (PST, RST), and
--            each tax account the recoverable tax (tagged as paid); credit Accounts Payable the total.
create or replace function app_private.approve_document(org uuid, kind text, id uuid) returns jsonb
  language plpgsql volatile as
$$
declare
  d app_public.documents;
  v_entry uuid := app_private.uuid_v7();
  v_control uuid;
  v_tax_account uuid;
  sale boolean := kind = 'invoice';
begin
  perform app_private.assert_org_access(org, false);
  d := app_private.document_for_update(kind, id);
  if d.status <> 'draft' then perform app_private.fail('Only a draft can be approved.'); end if;
  perform app_private.check_category(l.category_id, case kind when 'invoice' then 'income' else 'expense' end)
     from app_public.document_lines l where l.document_id = d.id;
  v_control := app_private.control_account(org, kind);
  v_tax_account := app_private.tax_account_or_default(org, (select sum(t.portion) from app_public.document_lines l
    cross join lateral app_private.tax_excluded_parts(l.amount, l.tax_code, d.issue_date) t
     where l.document_id = d.id and (sale or t.recoverable)), null);
  insert into app_public.journal_entries (id, organization_id, document_id, txn_date, total_amount)
    values (v_entry, org, d.id, d.issue_date, d.total);
  insert into app_public.journal_lines (organization_id, entry_id, account_id, txn_date, debit, credit, tax_type, tax_on_sale)
    select org, v_entry, x.account_id, d.issue_date, case when x.debit_side then x.amount else 0 end,
           case when x.debit_side then 0 else x.amount end, x.tax_type, x.on_sale
      from (
        select v_control as account_id, d.total as amount, sale as debit_side, null::text as tax_type, null::boolean as on_sale
        union all
        select l.category_id, sum(l.amount + coalesce(kept.tax, 0)), not sale, null, null
          from app_public.document_lines l
          left join lateral (select sum(t.portion) as tax from app_private.tax_excluded_parts(l.amount, l.tax_code, d.issue_date) t
                              where not sale and not t.recoverable) kept on true
         where l.document_id = d.id
         group by l.category_id
        union all
        select app_private.tax_leg_account(org, t.tax_type, v_tax_account), sum(t.portion), not sale, t.tax_type, sale
          from app_public.document_lines l
          cross join lateral app_private.tax_excluded_parts(l.amount, l.tax_code, d.issue_date) t
         where l.document_id = d.id and (sale or t.recoverable)
         group by 1, t.tax_type
      ) x
     where x.amount > 0
     order by x.account_id;
  update app_public.documents x set status = 'open', journal_entry_id = v_entry, approved_at = now() where x.id = d.id;
  perform app_private.record_webhook_event(org, kind || '.approved', d.id,
    (select app_private.document_json(x) from app_public.documents x where x.id = d.id));
  return jsonb_build_object('success', true, 'error', null,
    'document', (select app_private.document_json(x) from app_public.documents x where x.id = d.id));
end $$;
grant execute on function app_private.approve_document(org uuid, kind text, id uuid) to accounting_visitor;

create or replace function app_public.approve_invoice(organization_id uuid, invoice_id uuid) returns jsonb
  language sql volatile as $$ select app_private.approve_document(organization_id, 'invoice', invoice_id) $$;
grant execute on function app_public.approve_invoice(organization_id uuid, invoice_id uuid) to accounting_visitor;

create or replace function app_public.approve_bill(organization_id uuid, bill_id uuid) returns jsonb
  language sql volatile as $$ select app_private.approve_document(organization_id, 'bill', bill_id) $$;
grant execute on function app_public.approve_bill(organization_id uuid, bill_id uuid) to accounting_visitor;

-- Void: a draft simply; an approved document without payments by a reversing entry (every line
-- of its posting, debit and credit swapped) dated `posting_date` (today when not given), so that
-- the period it was posted in keeps it. Its number stays taken.
create or replace function app_private.void_document(org uuid, kind text, id uuid, posting_date text) returns jsonb
  language plpgsql volatile as
$$
declare
  d app_public.documents;
  j app_public.journal_entries;
  v_date date;
  v_entry uuid;
begin
  perform app_private.assert_org_access(org, false);
  d := app_private.document_for_update(kind, id);
  if d.status = 'void' then perform app_private.fail('Already void.'); end if;
  if d.amount_paid > 0 then perform app_private.fail('A document with payments cannot be voided.'); end if;
  if d.journal_entry_id is not null then
    select * into j from app_public.journal_entries x where x.id = d.journal_entry_id;
    v_date := case when posting_date is null then greatest(current_date, j.txn_date)
                   else app_private.parse_date(posting_date, 'Posting date must be a date in YYYY-MM-DD format.') end;
    if v_date < j.txn_date then
      perform app_private.fail(format('Posting date must not be before the entry it reverses (%s).', to_char(j.txn_date, 'YYYY-MM-DD')));
    end if;
    v_entry := app_private.uuid_v7();
    insert into app_public.journal_entries (id, organization_id, document_id, txn_date, total_amount, reverses_entry_id)
      values (v_entry, org, d.id, v_date, j.total_amount, j.id);
    insert into app_public.journal_lines (organization_id, entry_id, account_id, txn_date, debit, credit, tax_type, tax_on_sale)
      select l.organization_id, v_entry, l.account_id, v_date, l.credit, l.debit, l.tax_type, l.tax_on_sale
        from app_public.journal_lines l where l.entry_id = j.id and not l.voided order by l.id;
  end if;
  update app_public.documents x set status = 'void', void_entry_id = v_entry, voided_at = now() where x.id = d.id;
  return jsonb_build_object('success', true, 'error', null,
    'document', (select app_private.document_json(x) from app_public.documents x where x.id = d.id));
end $$;
grant execute on function app_private.void_document(org uuid, kind text, id uuid, posting_date text) to accounting_visitor;

create or replace function app_public.void_invoice(organization_id uuid, invoice_id uuid, posting_date text default null) returns jsonb
  language sql volatile as $$ select app_private.void_document(organization_id, 'invoice', invoice_id, posting_date) $$;
grant execute on function app_public.void_invoice(organization_id uuid, invoice_id uuid, posting_date text) to accounting_visitor;

create or replace function app_public.void_bill(organization_id uuid, bill_id uuid, posting_date text default null) returns jsonb
  language sql volatile as $$ select app_private.void_document(organization_id, 'bill', bill_id, posting_date) $$;
grant execute on function app_public.void_bill(organization_id uuid, bill_id uuid, posting_date text) to accounting_visitor;

-- The documents of the organization in scope whose number or contact's name matches a search
-- pattern. A definer, so that the pattern reaches the trigram indexes under RLS (ILIKE is not
-- leakproof, and RLS keeps a non-leakproof condition out of an index scan); it reads only the
-- organization in scope, which the caller's access was checked for.
create or replace function app_private.documents_matching(kind text, pattern text) returns setof uuid
  language sql stable security definer set search_path = pg_catalog, app_public, pg_temp as
$$
  select x.id from app_public.documents x
   where x.organization_id = app_public.current_organization_id() and x.kind = documents_matching.kind and x.number ilike pattern
  union
  select x.id from app_public.contacts c
    join app_public.documents x on x.organization_id = c.organization_id and x.contact_id = c.id and x.kind = documents_matching.kind
   where c.organization_id = app_public.current_organization_id() and c.display_name ilike pattern
$$;
grant execute on function app_private.documents_matching(kind text, pattern text) to accounting_visitor;

-- A page of a kind's documents, the latest issued first; filters: status, contact, due before a
-- day, search on the number and the contact's name. Dynamic SQL, planned for the filters given:
-- the page reads the (organization, kind, issue date) index backwards and stops at its rows; the
-- total counts the matching rows alone.
create or replace function app_private.list_documents(org uuid, kind text, status jsonb, contact_id uuid, due_before text,
    search text, "limit" integer, "offset" integer) returns jsonb
  language plpgsql stable as
$$
declare
  statuses constant text[] := array['draft', 'open', 'partially_paid', 'paid', 'void'];
  v_limit integer;
  v_offset integer;
  v_status text[];
  v_due date;
  v_pattern text;
  v_where text := '';
  v_from text := 'app_public.documents d';
  v_total bigint;
  v_items jsonb;
begin
  perform app_private.assert_org_access(org, false);
  v_limit := app_private.page_size("limit");
  v_offset := app_private.page_offset("offset");
  if status is not null then
    if jsonb_typeof(status) <> 'array' then perform app_private.fail(format('status must be any of: %s.', array_to_string(statuses, ', '))); end if;
    select coalesce(array_agg(s), '{}') into v_status from jsonb_array_elements_text(status) s;
    if not (v_status <@ statuses) then perform app_private.fail(format('status must be any of: %s.', array_to_string(statuses, ', '))); end if;
    v_where := v_where || ' and d.status = any ($3)';
  end if;
  if contact_id is not null then v_where := v_where || ' and d.contact_id = $4'; end if;
  if due_before is not null then
    v_due := app_private.parse_date(due_before, 'dueBefore must be a date in YYYY-MM-DD format.');
    v_where := v_where || ' and d.due_date < $5';
  end if;
  if search is not null and search <> '' then
    v_pattern := app_private.like_pattern(search);
    -- Two index searches (numbers and contact names by trigram), their ids joined: an OR of the two
    -- would read every document.
    v_from := v_from || ' join app_private.documents_matching($2, $6) m (id) on m.id = d.id';
  end if;
  execute 'select count(*) from ' || v_from || ' where d.organization_id = $1 and d.kind = $2' || v_where
    into v_total using org, kind, v_status, contact_id, v_due, v_pattern;
  execute 'select coalesce(jsonb_agg(app_private.document_json(p) order by p.issue_date desc, p.id desc), ''[]''::jsonb)
      from (select d.* from ' || v_from || ' where d.organization_id = $1 and d.kind = $2' || v_where || '
             order by d.issue_date desc, d.id desc limit $7 offset $8) p'
    into v_items using org, kind, v_status, contact_id, v_due, v_pattern, v_limit, v_offset;
  return jsonb_build_object('items', v_items, 'totalCount', v_total, 'pageSize', v_limit, 'offset', v_offset);
end $$;
grant execute on function app_private.list_documents(org uuid, kind text, status jsonb, contact_id uuid, due_before text, search text, "limit" integer, "offset" integer) to accounting_visitor;

create or replace function app_public.list_invoices(organization_id uuid, status jsonb default null, contact_id uuid default null,
    due_before text default null, search text default null, "limit" integer default null, "offset" integer default null) returns jsonb
  language sql stable as
$$ select app_private.list_documents(organization_id, 'invoice', status, contact_id, due_before, search, "limit", "offset") $$;
grant execute on function app_public.list_invoices(organization_id uuid, status jsonb, contact_id uuid, due_before text, search text, "limit" integer, "offset" integer) to accounting_visitor;

create or replace function app_public.list_bills(organization_id uuid, status jsonb default null, contact_id uuid default null,
    due_before text default null, search text default null, "limit" integer default null, "offset" integer default null) returns jsonb
  language sql stable as
$$ select app_private.list_documents(organization_id, 'bill', status, contact_id, due_before, search, "limit", "offset") $$;
grant execute on function app_public.list_bills(organization_id uuid, status jsonb, contact_id uuid, due_before text, search text, "limit" integer, "offset" integer) to accounting_visitor;
--! EndIncluded receivables/documents.sql
--! Included receivables/payments.sql
-- Payments of invoices and bills (docs/api.md, Invoices, bills and contact balances): a payment is
-- a ledger event between the payment account and Accounts Receivable or Payable, whose
-- allocations say what it pays of each document; recorded directly or applied to a bank line
-- already imported. The documents' amounts paid and statuses follow in the same transaction.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.payment_allocations
drop policy if exists payment_allocations_tenant on app_public.payment_allocations;
create policy payment_allocations_tenant on app_public.payment_allocations
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select, insert, delete on app_public.payment_allocations to accounting_visitor;
grant select on app_public.payment_allocations to reporting_reader;

------------------------------------------------------------------------------------------------

-- A document's status from what is paid of it.
create or replace function app_private.paid_status(amount_paid numeric, total numeric) returns text
  language sql immutable parallel safe as
$$ select case when amount_paid = 0 then 'open' when amount_paid < total then 'partially_paid' else 'paid' end $$;
grant execute on function app_private.paid_status(amount_paid numeric, total numeric) to accounting_visitor;

-- The documents a payment's allocations name, locked in id order before anything else of the
-- payment is written: every path that changes what is paid of a document (recording, applying,
-- giving back) takes the documents first, so that two of them never wait on each other.
create or replace function app_private.lock_allocated_documents(allocations jsonb) returns void
  language plpgsql volatile as
$$
begin
  -- PERFORM reads every row (a SQL function would stop at the first, locking only it).
  perform 1 from app_public.documents d
   where d.id in (select app_private.parse_uuid(x->>'documentId', 'Each allocation needs a documentId.')
                    from jsonb_array_elements(case when jsonb_typeof(allocations) = 'array' then allocations end) x)
   order by d.id for update;
end $$;
grant execute on function app_private.lock_allocated_documents(allocations jsonb) to accounting_visitor;

-- Allocates payment event `e` to the documents of `allocations` ([{documentId, amount}]): each
-- document of the payment's contact and kind, open or partly paid, and never more than is due on
-- it; together exactly the payment's amount. The documents are locked in id order, so that two
-- payments of one document's last dollar run one after the other and the second is refused.
create or replace function app_private.allocate_payment(e app_public.ledger_events, kind text, allocations jsonb) returns void
  language plpgsql volatile as
$$
declare
  max_allocations constant integer := 100;
  a record;
  d app_public.documents;
  noun text := case kind when 'invoice' then 'invoice' else 'bill' end;
  v_total numeric := 0;
begin
  if jsonb_typeof(allocations) is distinct from 'array' or jsonb_array_length(allocations) = 0 then
    perform app_private.fail('Allocations must be a list of at least one document.');
  end if;
  if jsonb_array_length(allocations) > max_allocations then perform app_private.fail(format('At most %s allocations.', max_allocations)); end if;
  if exists (select 1 from jsonb_array_elements(allocations) x where x->>'documentId' is null) then
    perform app_private.fail('Each allocation needs a documentId.');
  end if;
  if (select count(distinct app_private.parse_uuid(x->>'documentId', 'Each allocation needs a documentId.')) from jsonb_array_elements(allocations) x)
     < jsonb_array_length(allocations) then
    perform app_private.fail('Each document at most once in allocations.');
  end if;
  for a in
    select app_private.parse_uuid(x->>'documentId', 'Each allocation needs a documentId.') as document_id,
           app_private.parse_amount(x->>'amount', 'An allocation''s amount must be a positive decimal string.') as amount
      from jsonb_array_elements(allocations) x
     order by 1
  loop
    v_total := v_total + a.amount;
    select * into d from app_public.documents x where x.id = a.document_id for update;
    if not found then perform app_private.fail(format('No %s %s.', noun, a.document_id)); end if;
    if d.kind <> allocate_payment.kind then
      perform app_private.fail(format('%s is %s: money %s pays %ss.', d.number, case d.kind when 'invoice' then 'an invoice' else 'a bill' end,
        case kind when 'invoice' then 'in' else 'out' end, noun));
    end if;
    if e.contact_id is not null and d.contact_id <> e.contact_id then
      perform app_private.fail(format('%s is another contact''s %s: a payment is from one contact.', d.number, noun));
    end if;
    e.contact_id := d.contact_id;
    if d.status not in ('open', 'partially_paid') then
      perform app_private.fail(format('%s is %s: only an open %s takes a payment.', d.number, replace(d.status, '_', ' '), noun));
    end if;
    if a.amount > d.total - d.amount_paid then
      perform app_private.fail(format('%s exceeds the %s due on %s.', app_private.money(a.amount), app_private.money(d.total - d.amount_paid), d.number));
    end if;
    insert into app_public.payment_allocations (organization_id, event_id, document_id, amount, paid_on, kind, contact_id,
        issue_date, due_date)
      values (e.organization_id, e.id, d.id, a.amount, e.transaction_date, d.kind, d.contact_id, d.issue_date, d.due_date);
    update app_public.documents x set amount_paid = x.amount_paid + a.amount, status = app_private.paid_status(x.amount_paid + a.amount, x.total)
     where x.id = d.id;
    if d.amount_paid + a.amount = d.total then
      perform app_private.record_webhook_event(e.organization_id, kind || '.paid', d.id,
        (select app_private.document_json(x) from app_public.documents x where x.id = d.id));
    end if;
  end loop;
  if v_total <> e.functional_amount then
    perform app_private.fail('Allocations must add up to the amount.');
  end if;
  update app_public.ledger_events x set contact_id = e.contact_id where x.id = e.id and x.contact_id is distinct from e.contact_id;
end $$;
grant execute on function app_private.allocate_payment(e app_public.ledger_events, kind text, allocations jsonb) to accounting_visitor;

-- What a payment paid, given back when its entry is voided (rejected) or reversed: its documents
-- are owed again.
create or replace function app_private.release_allocations(event_id uuid) returns void
  language plpgsql volatile as
$$
begin
  perform 1 from app_public.documents d
   where d.id in (select p.document_id from app_public.payment_allocations p where p.event_id = release_allocations.event_id)
   order by d.id for update;
  with released as (
    delete from app_public.payment_allocations p where p.event_id = release_allocations.event_id
    returning p.document_id, p.amount
  )
  update app_public.documents d set amount_paid = d.amount_paid - r.amount, status = app_private.paid_status(d.amount_paid - r.amount, d.total)
    from released r where r.document_id = d.id;
end $$;
grant execute on function app_private.release_allocations(event_id uuid) to accounting_visitor;

create or replace function app_private.payment_result(event_id uuid) returns jsonb
  language sql stable as
$$
  select jsonb_build_object('success', true, 'error', null, 'eventId', e.id, 'journalEntryId', e.journal_entry_id,
    'documents', coalesce((select jsonb_agg(app_private.document_json(d) order by d.number, d.id)
      from app_public.payment_allocations p join app_public.documents d on d.id = p.document_id where p.event_id = e.id), '[]'::jsonb))
    from app_public.ledger_events e where e.id = payment_result.event_id
$$;
grant execute on function app_private.payment_result(event_id uuid) to accounting_visitor;

-- A customer's payment in (it credits Accounts Receivable) or a payment to a vendor out (it debits
-- Accounts Payable), booked and confirmed at once: a ledger event of type transfer between the
-- payment account and the control account, carrying the contact.
create or replace function app_public.record_payment(organization_id uuid, contact_id uuid, payment_account_id uuid,
    amount text, date text, allocations jsonb) returns jsonb
  language plpgsql volatile as
$$
declare
  c app_public.contacts;
  v_kind text;
  v_amount numeric;
  v_date date;
  e app_public.ledger_events;
begin
  perform app_private.assert_org_access(organization_id, false);
  perform set_config('app.audit_action', 'create', true);
  select * into c from app_public.contacts x where x.id = record_payment.contact_id;
  if not found then perform app_private.fail('Contact not found.'); end if;
  v_kind := case c.contact_type when 'customer' then 'invoice' else 'bill' end;
  perform app_private.check_payment_account(payment_account_id);
  v_amount := app_private.parse_amount(amount, 'Amount must be a positive decimal string.');
  v_date := app_private.parse_date(date, 'Date must be a date in YYYY-MM-DD format.');
  perform app_private.lock_allocated_documents(allocations);
  insert into app_public.ledger_events (organization_id, event_type, direction, merchant_name, functional_amount,
      functional_currency, transaction_date, category_id, payment_account_id, contact_id)
    select record_payment.organization_id, 'transfer', case v_kind when 'invoice' then 'in' else 'out' end, c.display_name, v_amount,
           o.functional_currency, v_date, app_private.control_account(record_payment.organization_id, v_kind), payment_account_id, c.id
      from app_public.organizations o where o.id = record_payment.organization_id
    returning * into e;
  perform app_private.allocate_payment(e, v_kind, allocations);
  perform app_private.post_journal_entries(array[e.id]);
  perform app_private.record_webhook_event(organization_id, 'ledger_event.created', e.id);
  perform app_private.record_webhook_event(organization_id, 'ledger_event.confirmed', e.id);
  return app_private.payment_result(e.id);
end $$;
grant execute on function app_public.record_payment(organization_id uuid, contact_id uuid, payment_account_id uuid, amount text, date text, allocations jsonb) to accounting_visitor;

-- A bank line already imported pays documents: money in pays invoices, money out bills. Its type
-- becomes transfer and its category Accounts Receivable or Payable (its splits and tax go), its
-- contact the documents', and it is confirmed.
create or replace function app_public.apply_ledger_event_to_documents(organization_id uuid, event_id uuid, allocations jsonb)
  returns jsonb
  language plpgsql volatile as
$$
declare
  e app_public.ledger_events;
  v_kind text;
begin
  perform app_private.assert_org_access(organization_id, false);
  perform set_config('app.audit_action', 'classify', true);
  perform app_private.lock_allocated_documents(allocations);
  select * into e from app_public.ledger_events x where x.id = event_id for update;
  if not found then perform app_private.fail('Ledger event not found.', 'AP404'); end if;
  if e.status not in ('needs_review', 'pending') then
    perform app_private.fail('Only an event in needs_review or pending can pay documents.');
  end if;
  if e.payment_account_id is null then perform app_private.fail('A payment account is required.'); end if;
  perform app_private.check_payment_account(e.payment_account_id);
  v_kind := case e.direction when 'in' then 'invoice' else 'bill' end;
  update app_public.ledger_events x set event_type = 'transfer', category_id = app_private.control_account(e.organization_id, v_kind),
      splits = null, tax_amount = null, tax_code = null
    where x.id = e.id
    returning * into e;
  perform app_private.allocate_payment(e, v_kind, allocations);
  perform app_private.post_journal_entries(array[e.id]);
  perform app_private.record_webhook_event(organization_id, 'ledger_event.confirmed', e.id);
  return app_private.payment_result(e.id);
end $$;
grant execute on function app_public.apply_ledger_event_to_documents(organization_id uuid, event_id uuid, allocations jsonb) to accounting_visitor;

-- The open documents a bank line might pay: of the kind its direction pays (in: invoices; out:
-- bills), whose number is in its description or reference, then those whose amount due equals its
-- amount, the earliest due first; at most 10.
create or replace function app_public.document_match_suggestions(organization_id uuid, event_id uuid) returns jsonb
  language plpgsql stable as
$$
declare e app_public.ledger_events;
begin
  perform app_private.assert_org_access(organization_id, false);
  select * into e from app_public.ledger_events x where x.id = event_id;
  if not found then perform app_private.fail('Ledger event not found.', 'AP404'); end if;
  -- A booked event pays nothing more.
  if e.status not in ('needs_review', 'pending') then return '[]'::jsonb; end if;
  return coalesce((
    select jsonb_agg(jsonb_build_object('document', app_private.document_json(s.d), 'reason', s.reason) order by s.rank, (s.d).due_date, (s.d).id)
      from (
        select d, case when by_number then 'number' else 'amount' end as reason, case when by_number then 0 else 1 end as rank
          -- A number of fewer than 3 characters is in too many descriptions to say anything.
          -- As a word: INV-1 is not in INV-10.
          from (select d, (length(d.number) >= 3
                           and (e.merchant_name || ' ' || coalesce(e.reference, '') || ' ' || e.memo)
                               ~* ('(^|[^[:alnum:]])' || regexp_replace(d.number, '([^[:alnum:]])', '\\\1', 'g') || '($|[^[:alnum:]])')) as by_number
                  from app_public.documents d
                 where d.organization_id = e.organization_id and d.kind = case e.direction when 'in' then 'invoice' else 'bill' end
                   and d.status in ('open', 'partially_paid')) m
         where by_number or (d).total - (d).amount_paid = e.functional_amount
         order by 3, (d).due_date, (d).id
         limit 10) s), '[]'::jsonb);
end $$;
grant execute on function app_public.document_match_suggestions(organization_id uuid, event_id uuid) to accounting_visitor;
--! EndIncluded receivables/payments.sql
