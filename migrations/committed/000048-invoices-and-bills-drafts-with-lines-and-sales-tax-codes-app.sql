--! Previous: sha1:9cf6d9e3dd84c0b69e98ea3bf36441162fb3f02f
--! Hash: sha1:7820bde5b5fea0b6b6d354e503dbc8abecce9b55
--! Message: Invoices and bills: drafts with lines and sales tax codes, approval posting to Accounts Receivable or Payable, void by reversal, numbers unique per organization (bills per vendor), journal entries of documents, contact balances from what is still due

-- Receivables and payables, first part: invoices and bills (drafts with lines and sales tax codes,
-- approval that posts to Accounts Receivable or Payable, void by a reversing entry, numbers unique
-- per organization), journal entries that belong to a document instead of an event, and contact
-- balances from the documents still owed.

-- An entry posts an event or a document, never both.
alter table app_public.journal_entries alter column event_id drop not null;
alter table app_public.journal_entries add column if not exists document_id uuid;

create table if not exists app_public.documents (
  id uuid primary key default app_private.uuid_v7(),
  organization_id uuid not null references app_public.organizations on delete cascade,
  kind text not null check (kind in ('invoice', 'bill')),
  contact_id uuid not null,
  number text not null check (length(number) between 1 and 50 and number = btrim(number)),
  issue_date date not null,
  due_date date not null,
  memo text not null default '' check (length(memo) <= 5000),
  status text not null default 'draft' check (status in ('draft', 'open', 'partially_paid', 'paid', 'void')),
  subtotal numeric(20,2) not null,
  tax_total numeric(20,2) not null check (tax_total >= 0),
  total numeric(20,2) not null check (total > 0),
  amount_paid numeric(20,2) not null default 0 check (amount_paid >= 0 and amount_paid <= total),
  journal_entry_id uuid,
  void_entry_id uuid,
  approved_at timestamptz,
  voided_at timestamptz,
  created timestamptz not null default now(),
  updated timestamptz not null default now(),
  unique (organization_id, id),
  foreign key (organization_id, contact_id) references app_public.contacts (organization_id, id),
  foreign key (organization_id, journal_entry_id) references app_public.journal_entries (organization_id, id) deferrable initially deferred,
  foreign key (organization_id, void_entry_id) references app_public.journal_entries (organization_id, id) deferrable initially deferred,
  check (due_date >= issue_date),
  check (total = subtotal + tax_total),
  -- The status follows what is posted and paid: the database, not a caller, keeps them together.
  constraint documents_status_follows_postings check (case status
    when 'draft' then journal_entry_id is null and amount_paid = 0
    when 'void' then voided_at is not null and amount_paid = 0
    when 'open' then journal_entry_id is not null and amount_paid = 0
    when 'partially_paid' then journal_entry_id is not null and amount_paid > 0 and amount_paid < total
    else journal_entry_id is not null and amount_paid = total end)
);
-- Invoice numbers are the organization's own; a bill's number is its vendor's.
create unique index if not exists documents_invoice_number_key on app_public.documents (organization_id, lower(number)) where kind = 'invoice';
create unique index if not exists documents_bill_number_key on app_public.documents (organization_id, contact_id, lower(number)) where kind = 'bill';
create index if not exists documents_list_idx on app_public.documents (organization_id, kind, due_date, id);
create index if not exists documents_owed_idx on app_public.documents (organization_id, contact_id)
  include (total, amount_paid) where status in ('open', 'partially_paid');
alter table app_public.documents enable row level security;
alter table app_public.documents force row level security;

create table if not exists app_public.document_lines (
  organization_id uuid not null,
  document_id uuid not null,
  position smallint not null check (position between 1 and 200),
  description text not null check (length(description) between 1 and 500),
  quantity numeric(20,4) not null check (quantity > 0),
  unit_price numeric(20,4) not null check (unit_price >= 0),
  amount numeric(20,2) not null check (amount >= 0),
  category_id uuid not null,
  tax_code text references app_public.sales_tax_codes (code),
  tax_amount numeric(20,2) not null default 0 check (tax_amount >= 0),
  primary key (document_id, position),
  foreign key (organization_id, document_id) references app_public.documents (organization_id, id) on delete cascade,
  foreign key (organization_id, category_id) references app_public.accounts (organization_id, id)
);
alter table app_public.document_lines enable row level security;
alter table app_public.document_lines force row level security;

alter table app_public.journal_entries drop constraint if exists journal_entries_document_fkey;
alter table app_public.journal_entries add constraint journal_entries_document_fkey
  foreign key (organization_id, document_id) references app_public.documents (organization_id, id) on delete cascade;
alter table app_public.journal_entries drop constraint if exists journal_entries_source_check;
alter table app_public.journal_entries add constraint journal_entries_source_check check (num_nonnulls(event_id, document_id) = 1);
create unique index if not exists journal_entries_document_live_key on app_public.journal_entries (document_id)
  where document_id is not null and voided_at is null and reverses_entry_id is null;

--! Included chart/tax-codes.sql
-- GIFI tax codes and sales tax codes (reference data, read-only for the API).
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.sales_tax_codes
grant select on app_public.sales_tax_codes to accounting_visitor;
grant select on app_public.sales_tax_codes to reporting_reader;

-- app_public.sales_tax_code_parts, app_public.sales_tax_rates_before
grant select on app_public.sales_tax_code_parts to accounting_visitor;
grant select on app_public.sales_tax_code_parts to reporting_reader;
grant select on app_public.sales_tax_rates_before to accounting_visitor;
grant select on app_public.sales_tax_rates_before to reporting_reader;

-- app_public.tax_codes
grant select on app_public.tax_codes to accounting_visitor;
grant select on app_public.tax_codes to reporting_reader;

------------------------------------------------------------------------------------------------

create or replace function app_private.tax_code_json(t app_public.tax_codes) returns jsonb
  language sql immutable as
$$ select case when t.id is null then null else jsonb_build_object('id', t.id, 'code', t.code, 'name', t.name,
     'classification', t.classification, 'accountType', t.account_type) end $$;
grant execute on function app_private.tax_code_json(t app_public.tax_codes) to accounting_visitor;

-- The rate is a percentage as a decimal string with 3 decimals ("9.975").
create or replace function app_public.list_sales_tax_codes(organization_id uuid) returns jsonb
  language plpgsql stable as
$$
begin
  perform app_private.assert_org_access(organization_id, false);
  return coalesce((select jsonb_agg(jsonb_build_object('code', s.code, 'name', s.name, 'rate', s.rate::text,
      'jurisdiction', s.jurisdiction, 'recoverable', s.recoverable) order by s.jurisdiction <> 'CA', s.jurisdiction, s.code)
    from app_public.sales_tax_codes s), '[]'::jsonb);
end $$;
grant execute on function app_public.list_sales_tax_codes(organization_id uuid) to accounting_visitor;

-- Access before argument checks: a caller who may not look learns nothing from a bad argument
-- (docs/api.md, Authentication).
create or replace function app_public.list_tax_codes(organization_id uuid, search text default null,
    "limit" integer default null, "offset" integer default null, classification text default null,
    account_type text default null) returns jsonb
  language plpgsql stable as
$$
declare
  lim integer;
  off integer;
begin
  perform app_private.assert_org_access(organization_id, false);
  lim := app_private.page_size("limit");
  off := app_private.page_offset("offset");
  return (
    with f as (
      select t from app_public.tax_codes t
       where (search is null or t.code ilike app_private.like_pattern(search) or t.name ilike app_private.like_pattern(search))
         and (list_tax_codes.classification is null or t.classification = list_tax_codes.classification)
         and (list_tax_codes.account_type is null or t.account_type = list_tax_codes.account_type)
    ), page as (
      select f.t from f order by (f.t).code limit lim offset off
    )
    select jsonb_build_object(
      'items', coalesce((select jsonb_agg(app_private.tax_code_json(page.t) order by (page.t).code) from page), '[]'::jsonb),
      'totalCount', (select count(*) from f), 'pageSize', lim, 'offset', off));
end $$;
grant execute on function app_public.list_tax_codes(organization_id uuid, search text, "limit" integer, "offset" integer, classification text, account_type text) to accounting_visitor;

------------------------------------------------------------------------------------------------

-- To the cent, half to even (a portion of exactly half a cent goes to the even cent): PostgreSQL's
-- round() goes half away from zero, which over many lines drifts one way.
create or replace function app_private.round_half_even(value numeric) returns numeric
  language sql immutable parallel safe as
$$
  select (case when abs(value * 100 - trunc(value * 100)) = 0.5
               then trunc(value * 100) + case when trunc(value * 100) % 2 = 0 then 0 else sign(value) end
               else round(value * 100) end / 100)::numeric(20,2)
$$;
grant execute on function app_private.round_half_even(value numeric) to accounting_visitor;

-- A single tax's rate on a day: the rate that held before a later change, else today's.
create or replace function app_private.sales_tax_rate(code text, on_day date) returns numeric
  language sql stable parallel safe as
$$
  select coalesce(
    (select r.rate from app_public.sales_tax_rates_before r
      where r.code = sales_tax_rate.code and on_day < r.before order by r.before limit 1),
    (select s.rate from app_public.sales_tax_codes s where s.code = sales_tax_rate.code))
$$;
grant execute on function app_private.sales_tax_rate(code text, on_day date) to accounting_visitor;

-- The taxes inside a tax-included amount under a code, one row per tax it charges (GST_QST: GST and
-- QST), each amount × rate ÷ (100 + the code's total rate) rounded half to even. Zero-rated and
-- exempt codes charge none: no rows.
create or replace function app_private.tax_included_parts(amount numeric, code text, on_day date)
  returns table (part text, tax_type text, recoverable boolean, portion numeric)
  language sql stable as
$$
  with parts as (
    select s.code, s.tax_type, s.recoverable = 'yes' as recoverable, app_private.sales_tax_rate(s.code, on_day) as rate
      from app_public.sales_tax_code_parts p join app_public.sales_tax_codes s on s.code = p.part
     where p.code = tax_included_parts.code
  )
  select p.code, p.tax_type, p.recoverable, app_private.round_half_even(amount * p.rate / (100 + t.total))
    from parts p cross join (select sum(rate) as total from parts) t
   where p.rate > 0
   order by p.code
$$;
grant execute on function app_private.tax_included_parts(amount numeric, code text, on_day date) to accounting_visitor;

-- The taxes on a tax-excluded amount under a code (an invoice's or a bill's line, quantity × unit
-- price), one row per tax it charges, each amount × rate ÷ 100 rounded half to even.
create or replace function app_private.tax_excluded_parts(amount numeric, code text, on_day date)
  returns table (part text, tax_type text, recoverable boolean, portion numeric)
  language sql stable as
$$
  select x.code, x.tax_type, x.recoverable, app_private.round_half_even(amount * x.rate / 100)
    from (select s.code, s.tax_type, s.recoverable = 'yes' as recoverable, app_private.sales_tax_rate(s.code, on_day) as rate
            from app_public.sales_tax_code_parts p join app_public.sales_tax_codes s on s.code = p.part
           where p.code = tax_excluded_parts.code) x
   where x.rate > 0
   order by x.code
$$;
grant execute on function app_private.tax_excluded_parts(amount numeric, code text, on_day date) to accounting_visitor;

-- Whether an event is a sale (its tax collected) or a purchase (its tax paid): by its category's
-- classification, revenue or not, and without a category by its type. The direction the money
-- moved says neither: a supplier's refund comes in, a refund to a customer goes out.
create or replace function app_private.is_sale(category uuid, event_type text) returns boolean
  language sql stable as
$$ select coalesce((select a.classification = 'revenue' from app_public.accounts a where a.id = category), event_type = 'income') $$;
grant execute on function app_private.is_sale(category uuid, event_type text) to accounting_visitor;

drop function if exists app_private.tax_for_account(numeric, text, text, date);
-- What an event's tax account receives under a code: on a sale all the tax collected; on a
-- purchase the recoverable taxes (GST/HST, QST), since PST and RST paid are part of the expense.
-- Null for a code that does not exist.
create or replace function app_private.tax_for_account(amount numeric, code text, sale boolean, on_day date) returns numeric
  language sql stable as
$$
  select case when exists (select 1 from app_public.sales_tax_codes s where s.code = tax_for_account.code)
    then coalesce((select sum(t.portion) from app_private.tax_included_parts(amount, code, on_day) t
                    where t.recoverable or sale), 0) end
$$;
grant execute on function app_private.tax_for_account(amount numeric, code text, sale boolean, on_day date) to accounting_visitor;

-- The account an event's tax goes to: the one given, else, when there is tax, the organization's
-- GST/HST account (tax_type_account). Each tax's own account is chosen when the entry is posted
-- (tax_leg_account).
drop function if exists app_private.tax_account_or_default(numeric, uuid);
create or replace function app_private.tax_account_or_default(org uuid, tax numeric, account uuid) returns uuid
  language plpgsql stable as
$$
begin
  if account is not null or coalesce(tax, 0) = 0 then return account; end if;
  account := app_private.tax_type_account(org, 'GST_HST');
  if account is null then perform app_private.fail('A tax account is required for a tax amount.'); end if;
  return account;
end $$;
grant execute on function app_private.tax_account_or_default(org uuid, tax numeric, account uuid) to accounting_visitor;

-- An organization's account for a tax type: its active liability or asset account (not a payment
-- account) whose subType names the type (GST_HST, QST or PST), else for GST/HST its first active
-- tax payable account not marked for another tax (the starter chart's GST/HST Payable). Null when
-- there is none. By organization, not by row-level security alone: the worker posts as the owner.
drop function if exists app_private.tax_type_account(text);
create or replace function app_private.tax_type_account(org uuid, tax_type text) returns uuid
  language sql stable as
$$
  select a.id from app_public.accounts a
   where a.organization_id = org and a.active
     and a.classification in ('liability', 'asset') and a.account_type not in ('bank', 'credit_card', 'clearing')
     and (a.sub_type = tax_type_account.tax_type
          or (tax_type_account.tax_type = 'GST_HST' and a.account_type = 'tax_payable' and coalesce(a.sub_type, '') not in ('QST', 'PST')))
   order by a.sub_type is not distinct from tax_type_account.tax_type desc, a.created, a.id
   limit 1
$$;
grant execute on function app_private.tax_type_account(org uuid, tax_type text) to accounting_visitor;

-- Where a posted tax goes: GST/HST to the event's tax account; QST and PST to their own account
-- (tax_type_account), or with the GST/HST when the chart has none.
drop function if exists app_private.tax_leg_account(text, uuid);
create or replace function app_private.tax_leg_account(org uuid, tax_type text, event_tax_account uuid) returns uuid
  language sql stable as
$$
  select case when tax_type = 'GST_HST' then event_tax_account
              else coalesce(app_private.tax_type_account(org, tax_type), event_tax_account) end
$$;
grant execute on function app_private.tax_leg_account(org uuid, tax_type text, event_tax_account uuid) to accounting_visitor;

-- A typed tax is what the tax accounts receive, as a computed one is: under a code, only what that
-- code puts in a tax account on this side (on a purchase its recoverable taxes). A code that puts
-- nothing there (PST_BC on a purchase, ZERO, EXEMPT) takes no typed tax: its tax, if any, is part
-- of the expense.
create or replace function app_private.check_typed_tax(tax numeric, code text, sale boolean, on_day date) returns void
  language plpgsql stable as
$$
begin
  if code is not null and coalesce(tax, 0) > 0
     and not exists (select 1 from app_private.tax_included_parts(100, code, on_day) t where t.recoverable or sale) then
    perform app_private.fail(format('Tax code %s puts no tax in a tax account on a %s: leave taxAmount out, or give it without the code.',
      code, case when sale then 'sale' else 'purchase' end));
  end if;
end $$;
grant execute on function app_private.check_typed_tax(tax numeric, code text, sale boolean, on_day date) to accounting_visitor;

-- The taxes of one line by type, as posted: `tax` (what the line's tax accounts receive) split
-- among the types the code puts there (sale: all; purchase: the recoverable ones). A computed tax
-- is exactly its parts; a typed one is shared in proportion to them, half to even, the last type
-- taking the rounding cent so that the parts add up to `tax`. Without a code the tax is GST/HST
-- (check_typed_tax keeps a typed tax from a code that puts none in a tax account).
create or replace function app_private.tax_legs(amount numeric, tax numeric, code text, sale boolean, on_day date)
  returns table (tax_type text, portion numeric)
  language sql stable as
$$
  with parts as (
    select t.tax_type, sum(t.portion) as portion
      from app_private.tax_included_parts(amount, code, on_day) t
     where (t.recoverable or sale) and code is not null
     group by t.tax_type
  ), shared as (
    select p.tax_type, p.portion, sum(p.portion) over () as total,
           row_number() over (order by p.tax_type) as n, count(*) over () as k
      from parts p
  ), shares as (
    select s.tax_type, s.n, s.k,
           case when s.total = tax then s.portion else app_private.round_half_even(tax * s.portion / s.total) end as portion
      from shared s where s.total > 0
  )
  select x.tax_type, x.portion from (
    select s.tax_type,
           case when s.n = s.k then tax - coalesce(sum(s.portion) over (order by s.n rows between unbounded preceding and 1 preceding), 0)
                else s.portion end as portion
      from shares s
    union all
    select 'GST_HST', tax where not exists (select 1 from shares)
  ) x
  where coalesce(tax, 0) > 0 and x.portion <> 0
$$;
grant execute on function app_private.tax_legs(amount numeric, tax numeric, code text, sale boolean, on_day date) to accounting_visitor;
--! EndIncluded chart/tax-codes.sql
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
grant update (status, journal_entry_id, void_entry_id, approved_at, voided_at, updated) on app_public.documents to accounting_visitor;

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

-- The control account a kind posts to: the organization's first active Accounts Receivable
-- (invoices) or Payable (bills) account, made by the first approval when the chart has none.
create or replace function app_private.control_account(org uuid, kind text) returns uuid
  language plpgsql volatile as
$$
declare
  v_type text := case kind when 'invoice' then 'accounts_receivable' else 'accounts_payable' end;
  v_id uuid;
begin
  select a.id into v_id from app_public.accounts a
   where a.organization_id = org and a.account_type = v_type and a.active order by a.created, a.id limit 1;
  if v_id is null then
    insert into app_public.accounts (organization_id, name, account_type, classification, tax_code_id)
      select org, case kind when 'invoice' then 'Accounts Receivable' else 'Accounts Payable' end, v_type,
             case kind when 'invoice' then 'asset' else 'liability' end, t.id
        from app_public.tax_codes t where t.code = case kind when 'invoice' then '1060' else '2620' end
      returning id into v_id;
  end if;
  return v_id;
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

-- A decimal string of at most `places` decimals, at least 0 (or more than 0 when `positive`).
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
    if (l->>'categoryId') !~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then
      perform app_private.fail('Category account not found.');
    end if;
    v_category := (l->>'categoryId')::uuid;
    perform app_private.check_category(v_category, case kind when 'invoice' then 'income' else 'expense' end);
    v_code := nullif(l->>'taxCode', '');
    if v_code is not null and not exists (select 1 from app_public.sales_tax_codes s where s.code = v_code) then
      perform app_private.fail('Unknown tax code.');
    end if;
    v_tax := coalesce((select sum(t.portion) from app_private.tax_excluded_parts(v_amount, v_code, v_issue) t), 0);
    v_lines := v_lines || jsonb_build_object('position', n, 'description', app_private.clean_text(l->>'description'),
      'quantity', v_qty, 'unit_price', v_price, 'amount', v_amount, 'category_id', v_category, 'tax_code', v_code, 'tax_amount', v_tax);
  end loop;
  if (select sum((x->>'amount')::numeric + (x->>'tax_amount')::numeric) from jsonb_array_elements(v_lines) x) <= 0 then
    perform app_private.fail(noun || ' must total more than 0.00.');
  end if;
  if (select sum((x->>'amount')::numeric + (x->>'tax_amount')::numeric) from jsonb_array_elements(v_lines) x) > app_private.max_amount() then
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
  v_tax_account := app_private.tax_account_or_default(org, d.tax_total, null);
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

-- A page of a kind's documents, the latest issued first; filters: status, contact, due before a
-- day, search on the number and the contact's name.
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
begin
  perform app_private.assert_org_access(org, false);
  v_limit := app_private.page_size("limit");
  v_offset := app_private.page_offset("offset");
  if status is not null then
    if jsonb_typeof(status) <> 'array' then perform app_private.fail(format('status must be any of: %s.', array_to_string(statuses, ', '))); end if;
    select coalesce(array_agg(s), '{}') into v_status from jsonb_array_elements_text(status) s;
    if not (v_status <@ statuses) then perform app_private.fail(format('status must be any of: %s.', array_to_string(statuses, ', '))); end if;
  end if;
  if due_before is not null then v_due := app_private.parse_date(due_before, 'dueBefore must be a date in YYYY-MM-DD format.'); end if;
  if search is not null and search <> '' then v_pattern := app_private.like_pattern(search); end if;
  return (
    with f as (
      select d from app_public.documents d
       where d.organization_id = org and d.kind = list_documents.kind
         and (v_status is null or d.status = any (v_status))
         and (list_documents.contact_id is null or d.contact_id = list_documents.contact_id)
         and (v_due is null or d.due_date < v_due)
         and (v_pattern is null or d.number ilike v_pattern
              or exists (select 1 from app_public.contacts c where c.id = d.contact_id and c.display_name ilike v_pattern))
    ), page as (
      select f.d, row_number() over (order by (f.d).issue_date desc, (f.d).id desc) as rn from f
       order by (f.d).issue_date desc, (f.d).id desc limit v_limit offset v_offset
    )
    select jsonb_build_object(
      'items', coalesce((select jsonb_agg(app_private.document_json(page.d) order by page.rn) from page), '[]'::jsonb),
      'totalCount', (select count(*) from f), 'pageSize', v_limit, 'offset', v_offset));
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
--! Included contacts/contacts.sql
-- Contacts: vendors and customers, unique by name per organization and type.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.contacts
drop policy if exists contacts_tenant on app_public.contacts;
create policy contacts_tenant on app_public.contacts
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select on app_public.contacts to accounting_visitor;
grant insert (active, contact_type, display_name, email, organization_id, phone) on app_public.contacts to accounting_visitor;
grant update (active, contact_type, display_name, email, phone, updated) on app_public.contacts to accounting_visitor;

drop trigger if exists _100_touch_updated on app_public.contacts;
create trigger _100_touch_updated before update on app_public.contacts
  for each row execute function app_private.tg__touch_updated();

------------------------------------------------------------------------------------------------

-- What each contact owes (a customer) or is owed (a vendor): what is still due on its approved
-- invoices or bills (docs/api.md, Invoices, bills and contact balances). The same amounts as its
-- share of Accounts Receivable or Payable, whose lines only documents and their payments post.
create or replace function app_private.contact_balances(org uuid)
  returns table (contact_id uuid, balance numeric)
  language sql stable as
$$
  select d.contact_id, sum(d.total - d.amount_paid) from app_public.documents d
   where d.organization_id = org and d.status in ('open', 'partially_paid')
   group by d.contact_id
$$;
grant execute on function app_private.contact_balances(org uuid) to accounting_visitor, reporting_reader;

create or replace function app_private.contact_by_id(org uuid, contact uuid) returns jsonb
  language sql stable as
$$ select app_private.contact_json(c, (select b.balance from app_private.contact_balances(org) b where b.contact_id = c.id))
     from app_public.contacts c where c.organization_id = org and c.id = contact $$;
grant execute on function app_private.contact_by_id(org uuid, contact uuid) to accounting_visitor;

-- email and phone are "" when absent; balance is a JSON number (contract).
create or replace function app_private.contact_json(c app_public.contacts, balance numeric) returns jsonb
  language sql stable as
$$ select jsonb_build_object('id', c.id, 'contactType', c.contact_type, 'displayName', c.display_name,
     'email', coalesce(c.email, ''), 'phone', coalesce(c.phone, ''), 'balance', coalesce(balance, 0),
     'active', c.active, 'created', app_private.iso(c.created), 'updated', app_private.iso(c.updated)) $$;
grant execute on function app_private.contact_json(c app_public.contacts, balance numeric) to accounting_visitor;

create or replace function app_private.insert_contact(org uuid, contact_type text, display_name text, email text, phone text)
  returns app_public.contacts
  language plpgsql volatile as
$$
declare
  r app_public.contacts;
  typ text := lower(btrim(contact_type));
  nm text := app_private.clean_text(display_name);
begin
  if typ is null or typ not in ('vendor', 'customer') then perform app_private.fail('Contact type must be vendor or customer.'); end if;
  if nm is null or nm = '' then perform app_private.fail('Display name is required.'); end if;
  if length(nm) > 200 then perform app_private.fail('Display name must be at most 200 characters.'); end if;
  insert into app_public.contacts (organization_id, contact_type, display_name, email, phone)
    values (org, typ, nm, app_private.clean_email(email), app_private.clean_phone(phone))
    returning * into r;
  return r;
end $$;
grant execute on function app_private.insert_contact(org uuid, contact_type text, display_name text, email text, phone text) to accounting_visitor;

create or replace function app_public.batch_create_contacts(organization_id uuid, items jsonb) returns jsonb
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
      perform app_private.insert_contact(batch_create_contacts.organization_id, app_private.item_text(item, 'contactType'),
        app_private.item_text(item, 'displayName'), app_private.item_text(item, 'email'), app_private.item_text(item, 'phone'));
      n_created := n_created + 1;
    exception
      when unique_violation then
        errs := errs || jsonb_build_array(jsonb_build_object('index', idx, 'error', 'Contact with this name already exists.'));
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
grant execute on function app_public.batch_create_contacts(organization_id uuid, items jsonb) to accounting_visitor;

create or replace function app_public.create_contact(organization_id uuid, contact_type text, display_name text,
    email text default null, phone text default null) returns jsonb
  language plpgsql volatile as
$$
declare r app_public.contacts;
begin
  perform app_private.assert_org_access(organization_id, false);
  begin
    r := app_private.insert_contact(create_contact.organization_id, create_contact.contact_type, create_contact.display_name,
      create_contact.email, create_contact.phone);
  exception when unique_violation then
    perform app_private.fail('Contact with this name already exists.');
  end;
  return jsonb_build_object('success', true, 'error', null, 'contact', app_private.contact_by_id(r.organization_id, r.id));
end $$;
grant execute on function app_public.create_contact(organization_id uuid, contact_type text, display_name text, email text, phone text) to accounting_visitor;

create or replace function app_public.deactivate_contact(organization_id uuid, contact_id uuid) returns jsonb
  language plpgsql volatile as
$$
begin
  perform app_private.assert_org_access(organization_id, false);
  update app_public.contacts x set active = false
   where x.organization_id = deactivate_contact.organization_id and x.id = deactivate_contact.contact_id;
  if not found then perform app_private.fail('Contact not found.', 'AP404'); end if;
  return jsonb_build_object('success', true, 'error', null,
    'contact', app_private.contact_by_id(deactivate_contact.organization_id, deactivate_contact.contact_id));
end $$;
grant execute on function app_public.deactivate_contact(organization_id uuid, contact_id uuid) to accounting_visitor;

create or replace function app_public.list_contacts(organization_id uuid, "limit" integer default null, "offset" integer default null,
    search text default null, sort_by text default null, sort_dir text default null, contact_type text default null,
    active boolean default null) returns jsonb
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
  perform app_private.check_sort_by(sort_by, array['displayName', 'contactType', 'email', 'balance', 'created', 'updated']);
  if contact_type is not null and contact_type not in ('vendor', 'customer') then
    perform app_private.fail('Contact type must be vendor or customer.');
  end if;
  key := case coalesce(sort_by, 'displayName')
    when 'displayName' then 'f.lname' when 'contactType' then '(f.c).contact_type' when 'email' then 'lower((f.c).email)'
    when 'balance' then 'f.balance' when 'created' then '(f.c).created' when 'updated' then '(f.c).updated' end;
  execute format($q$
    with f as (
      select c, lower(c.display_name) as lname, coalesce(b.balance, 0) as balance
        from app_public.contacts c
        left join app_private.contact_balances($1) b on b.contact_id = c.id
       where c.organization_id = $1
         and ($2::text is null or c.display_name ilike app_private.like_pattern($2) or c.email ilike app_private.like_pattern($2))
         and ($3::text is null or c.contact_type = $3)
         and ($4::boolean is null or c.active = $4)
    ), page as (
      select f.c, f.balance, row_number() over (order by %1$s %2$s nulls last, f.lname %2$s, (f.c).id %2$s) as rn
        from f order by rn limit $5 offset $6
    )
    select jsonb_build_object(
      'items', coalesce((select jsonb_agg(app_private.contact_json(page.c, page.balance) order by page.rn) from page), '[]'::jsonb),
      'totalCount', (select count(*) from f), 'pageSize', $5, 'offset', $6)
  $q$, key, dir) into result using organization_id, search, contact_type, active, lim, off;
  return result;
end $$;
grant execute on function app_public.list_contacts(organization_id uuid, "limit" integer, "offset" integer, search text, sort_by text, sort_dir text, contact_type text, active boolean) to accounting_visitor;

create or replace function app_public.reactivate_contact(organization_id uuid, contact_id uuid) returns jsonb
  language plpgsql volatile as
$$
begin
  perform app_private.assert_org_access(organization_id, false);
  update app_public.contacts x set active = true
   where x.organization_id = reactivate_contact.organization_id and x.id = reactivate_contact.contact_id;
  if not found then perform app_private.fail('Contact not found.', 'AP404'); end if;
  return jsonb_build_object('success', true, 'error', null,
    'contact', app_private.contact_by_id(reactivate_contact.organization_id, reactivate_contact.contact_id));
end $$;
grant execute on function app_public.reactivate_contact(organization_id uuid, contact_id uuid) to accounting_visitor;

-- Null arguments leave a field unchanged; email or phone "" clears it.
create or replace function app_public.update_contact(organization_id uuid, contact_id uuid, contact_type text default null,
    display_name text default null, email text default null, phone text default null) returns jsonb
  language plpgsql volatile as
$$
declare
  c app_public.contacts;
  nm text := app_private.clean_text(display_name);
begin
  perform app_private.assert_org_access(organization_id, false);
  select * into c from app_public.contacts x
   where x.organization_id = update_contact.organization_id and x.id = update_contact.contact_id for no key update;
  if not found then perform app_private.fail('Contact not found.', 'AP404'); end if;
  if contact_type is not null then
    if lower(btrim(contact_type)) not in ('vendor', 'customer') then perform app_private.fail('Contact type must be vendor or customer.'); end if;
    c.contact_type := lower(btrim(contact_type));
  end if;
  if nm is not null then
    if nm = '' then perform app_private.fail('Display name is required.'); end if;
    if length(nm) > 200 then perform app_private.fail('Display name must be at most 200 characters.'); end if;
    c.display_name := nm;
  end if;
  if email is not null then c.email := app_private.clean_email(email); end if;
  if phone is not null then c.phone := app_private.clean_phone(phone); end if;
  begin
    update app_public.contacts x set contact_type = c.contact_type, display_name = c.display_name, email = c.email, phone = c.phone
     where x.organization_id = c.organization_id and x.id = c.id;
  exception when unique_violation then
    perform app_private.fail('Contact with this name already exists.');
  end;
  return jsonb_build_object('success', true, 'error', null, 'contact', app_private.contact_by_id(c.organization_id, c.id));
end $$;
grant execute on function app_public.update_contact(organization_id uuid, contact_id uuid, contact_type text, display_name text, email text, phone text) to accounting_visitor;
--! EndIncluded contacts/contacts.sql
--! Included reporting/views.sql
-- The `reporting` schema: views over the posted journal for analysts using plain SQL, scoped by
-- the tables' row-level security (security_invoker).
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Every live line of the books: posted entries of confirmed, synced or reconciled events and of
-- approved invoices and bills, and both entries of a reversed event or a voided document (the
-- posting, and its reversal on a later day).
create or replace view reporting.general_ledger with (security_invoker = true) as
  select l.id, l.organization_id, l.entry_id, e.id as event_id, l.txn_date,
         date_trunc('month', l.txn_date)::date as month,
         l.account_id, a.name as account_name, a.account_type, a.classification,
         l.debit, l.credit,
         case when a.classification in ('asset', 'expense') then l.debit - l.credit else l.credit - l.debit end as amount,
         e.merchant_name, e.memo, e.event_type, e.status as event_status,
         j.reverses_entry_id,
         -- The sales tax a tax line carries (GST_HST, QST or PST), and whether collected on a sale.
         l.tax_type, l.tax_on_sale,
         -- The invoice or bill an entry posts (then event_id and the event's columns are null).
         j.document_id
    from app_public.journal_lines l
    join app_public.journal_entries j on j.id = l.entry_id and j.voided_at is null
    left join app_public.ledger_events e on e.id = j.event_id
    join app_public.accounts a on a.id = l.account_id
   where not l.voided;
grant select on reporting.general_ledger to accounting_visitor;
grant select on reporting.general_ledger to reporting_reader;

-- The lines of split events, one row per split, in the order given: the category, the amount
-- with tax, the tax code and the tax to the tax accounts.
create or replace view reporting.ledger_event_splits with (security_invoker = true) as
  select e.organization_id, e.id as event_id, s.n as position, e.transaction_date, e.status as event_status,
         e.merchant_name, (s.v->>'category_id')::uuid as category_id, a.name as category_name,
         (s.v->>'amount')::numeric(20,2) as amount, s.v->>'tax_code' as tax_code,
         (s.v->>'tax_amount')::numeric(20,2) as tax_amount, s.v->>'memo' as memo
    from app_public.ledger_events e
    cross join lateral jsonb_array_elements(e.splits) with ordinality s (v, n)
    left join app_public.accounts a on a.id = (s.v->>'category_id')::uuid
   where e.splits is not null;
grant select on reporting.ledger_event_splits to reporting_reader;

-- The GST/HST and QST return's lines by month (sum the months of a quarter): sales and other
-- revenue (line 101), tax collected (103), input tax credits (106), net tax (109) and the events
-- counted, as salesTaxReturn gives them.
create or replace view reporting.sales_tax_return_monthly with (security_invoker = true) as
  with sales as (
    select t.organization_id, date_trunc('month', t.day)::date as month, sum(t.credit) - sum(t.debit) as sales
      from app_public.account_daily_totals t join app_public.accounts a on a.id = t.account_id
     where a.classification = 'revenue' group by 1, 2
  ), taxes as (
    select t.organization_id, date_trunc('month', t.day)::date as month, t.tax_type, sum(t.collected) as collected,
           sum(t.input_tax_credits) as itcs, sum(t.events) as events
      from app_public.sales_tax_daily_totals t where t.tax_type in ('GST_HST', 'QST') group by 1, 2, 3
  ), months as (
    select organization_id, month from sales union select organization_id, month from taxes
  )
  select m.organization_id, m.month, x.tax_type, coalesce(s.sales, 0)::numeric(20,2) as sales_and_revenue,
         coalesce(t.collected, 0)::numeric(20,2) as tax_collected, coalesce(t.itcs, 0)::numeric(20,2) as input_tax_credits,
         (coalesce(t.collected, 0) - coalesce(t.itcs, 0))::numeric(20,2) as net_tax, coalesce(t.events, 0)::bigint as events
    from months m
    cross join (values ('GST_HST'), ('QST')) x (tax_type)
    left join sales s on s.organization_id = m.organization_id and s.month = m.month
    left join taxes t on t.organization_id = m.organization_id and t.month = m.month and t.tax_type = x.tax_type;
grant select on reporting.sales_tax_return_monthly to reporting_reader;

-- Revenue and expense per account and month (revenue credits - debits, expense debits - credits).
create or replace view reporting.income_statement_monthly with (security_invoker = true) as
  select t.organization_id, date_trunc('month', t.day)::date as month, a.id as account_id, a.name as account_name,
         a.classification,
         (case when a.classification = 'revenue' then sum(t.credit) - sum(t.debit) else sum(t.debit) - sum(t.credit) end)::numeric(20,2) as total
    from app_public.account_daily_totals t
    join app_public.accounts a on a.id = t.account_id
   where a.classification in ('revenue', 'expense')
   group by t.organization_id, date_trunc('month', t.day), a.id, a.name, a.classification
  having sum(t.debit) <> 0 or sum(t.credit) <> 0;
grant select on reporting.income_statement_monthly to reporting_reader;

-- Debits and credits per account over all time; the sums of both columns are equal.
create or replace view reporting.trial_balance with (security_invoker = true) as
  select a.organization_id, a.id as account_id, a.name as account_name, a.account_type, a.classification,
         coalesce(sum(t.debit), 0)::numeric(20,2) as debit, coalesce(sum(t.credit), 0)::numeric(20,2) as credit,
         (case when a.classification in ('asset', 'expense') then coalesce(sum(t.debit), 0) - coalesce(sum(t.credit), 0)
               else coalesce(sum(t.credit), 0) - coalesce(sum(t.debit), 0) end)::numeric(20,2) as balance
    from app_public.accounts a
    left join app_public.account_daily_totals t on t.account_id = a.id
   group by a.organization_id, a.id, a.name, a.account_type, a.classification;
grant select on reporting.trial_balance to reporting_reader;

-- Each reconciliation of a payment account: its statement, what it cleared and its state.
create or replace view reporting.reconciliations with (security_invoker = true) as
  select r.id, r.organization_id, r.payment_account_id, a.name as payment_account_name, r.statement_date,
         r.opening_balance, r.closing_balance,
         (case when r.status = 'open' then app_private.reconciliation_cleared_balance(r) else r.cleared_balance end)::numeric(20,2) as cleared_balance,
         (r.closing_balance - case when r.status = 'open' then app_private.reconciliation_cleared_balance(r) else r.cleared_balance end)::numeric(20,2) as difference,
         (select count(*) from app_public.reconciliation_clearings c where c.reconciliation_id = r.id) as cleared_events,
         r.status, r.created, r.completed_at, r.undone_at
    from app_public.reconciliations r
    join app_public.accounts a on a.id = r.payment_account_id;
grant select on reporting.reconciliations to reporting_reader;
--! EndIncluded reporting/views.sql
