--! Previous: sha1:7df9723a4552a51130c3e64571f0f408bcbac8be
--! Hash: sha1:d699ed5bf64b243b38c57502a2db7cc98cb30a9c
--! Message: Helpers planned once: the request paths call no SQL function PostgreSQL cannot inline

--! Included access/identity.sql
-- Who is calling and what they may touch: the verified identity the server puts in settings, and
-- the access check every operation starts with (in the order of docs/api.md, Authentication),
-- which puts the organization in scope for row-level security.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- The access check every operation runs first: credentials, an admin operation with an API key,
-- the organization, the key's organization or the user's membership, the role; the first that
-- fails is the answer (docs/api.md, Authentication). On success the organization is in scope
-- for RLS for the rest of the transaction.
create or replace function app_private.assert_org_access(org uuid, admin boolean default false) returns void
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
declare
  key_id uuid := app_public.current_api_key_id();
  uid uuid := app_public.current_user_id();
  key_org uuid;
  member_role text;
begin
  if key_id is null and uid is null then
    perform app_private.fail('Authentication Required.', 'AU401');
  end if;
  if admin and key_id is not null then
    perform app_private.fail('API Keys Cannot Perform Admin Operations.', 'AU403');
  end if;
  if org is null or not exists (select 1 from app_public.organizations where id = org) then
    perform app_private.fail('Organization Not Found.', 'AU404');
  end if;
  if key_id is not null then
    select k.organization_id into key_org from app_public.api_keys k where k.id = key_id and k.revoked_at is null;
    if key_org is distinct from org then
      perform app_private.fail('API Key Not Authorized For This Organization.', 'AU403');
    end if;
  else
    select m.role into member_role from app_public.memberships m where m.organization_id = org and m.user_id = uid;
    if member_role is null then
      perform app_private.fail('Not A Member Of This Organization.', 'AU403');
    end if;
    if admin and member_role not in ('owner', 'admin') then
      perform app_private.fail('Must Be Owner Or Admin.', 'AU403');
    end if;
  end if;
  perform set_config('app.organization_id', org::text, true);
end $$;
grant execute on function app_private.assert_org_access(org uuid, admin boolean) to accounting_visitor;

-- A JWT session may name the organization it works in (header X-Organization-Id), so that reads
-- without an organizationId argument (the general ledger connection) are scoped for users too.
-- One statement checks the user, the organization and the membership, in that order (docs/api.md,
-- Authentication).
-- PL/pgSQL for its kept plan: every request with a JWT calls it (docs/architecture.md, SQL functions).
create or replace function app_private.authenticate_user_in(user_id uuid, org uuid) returns text
  language plpgsql stable security definer set search_path = pg_catalog, app_public as
$$
begin
  return case
    when not exists (select 1 from app_public.users u where u.id = authenticate_user_in.user_id) then 'invalid_user'
    when org is null then 'ok'
    when not exists (select 1 from app_public.organizations o where o.id = org) then 'organization_not_found'
    when not exists (select 1 from app_public.memberships m where m.organization_id = org and m.user_id = authenticate_user_in.user_id) then 'not_member'
    else 'ok'
  end;
end $$;
grant execute on function app_private.authenticate_user_in(user_id uuid, org uuid) to accounting_authenticator;

-- The caller's role in the organization in scope (null for an API key).
create or replace function app_private.caller_role(org uuid) returns text
  language sql stable security definer set search_path = pg_catalog, app_public as
$$ select m.role from app_public.memberships m where m.organization_id = org and m.user_id = app_public.current_user_id() $$;
grant execute on function app_private.caller_role(org uuid) to accounting_visitor;

create or replace function app_public.current_api_key_id() returns uuid
  language sql stable parallel safe as
$$ select nullif(current_setting('app.api_key_id', true), '')::uuid $$;
grant execute on function app_public.current_api_key_id() to accounting_visitor, reporting_reader;

-- Identity of the request, from per-request settings. `app.organization_id` is set by the server
-- for an API key (its one organization) and by app_private.assert_org_access for a JWT user after
-- checking membership; RLS policies read nothing else.
create or replace function app_public.current_organization_id() returns uuid
  language sql stable parallel safe as
$$ select nullif(current_setting('app.organization_id', true), '')::uuid $$;
grant execute on function app_public.current_organization_id() to accounting_visitor, reporting_reader;

create or replace function app_public.current_user_id() returns uuid
  language sql stable parallel safe as
$$ select nullif(current_setting('app.user_id', true), '')::uuid $$;
grant execute on function app_public.current_user_id() to accounting_visitor, reporting_reader;

-- Puts an organization in scope for a function both the API (after assert_org_access) and the
-- operator's CLI (no caller identity) call: a caller may only work in the organization it was
-- admitted to; the operator names any.
create or replace function app_private.scope_organization(org uuid) returns void
  language plpgsql as
$$
begin
  if app_public.current_api_key_id() is not null or app_public.current_user_id() is not null then
    if org is distinct from app_public.current_organization_id() then
      perform app_private.fail('Organization Not Found.', 'AU404');
    end if;
  else
    perform set_config('app.organization_id', org::text, true);
  end if;
end $$;
grant execute on function app_private.scope_organization(org uuid) to accounting_visitor;
--! EndIncluded access/identity.sql
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
-- PL/pgSQL, as is_sale and tax_for_account are, for its kept plan: a SQL function with a subquery
-- is planned again in every transaction that calls it (docs/architecture.md, SQL functions), here
-- on every posting and classification with tax.
create or replace function app_private.sales_tax_rate(code text, on_day date) returns numeric
  language plpgsql stable parallel safe as
$$
declare v_rate numeric;
begin
  select r.rate into v_rate from app_public.sales_tax_rates_before r
   where r.code = sales_tax_rate.code and on_day < r.before order by r.before limit 1;
  if v_rate is null then
    select s.rate into v_rate from app_public.sales_tax_codes s where s.code = sales_tax_rate.code;
  end if;
  return v_rate;
end $$;
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
-- PL/pgSQL for its kept plan (docs/architecture.md, SQL functions).
create or replace function app_private.is_sale(category uuid, event_type text) returns boolean
  language plpgsql stable as
$$
declare v_classification text;
begin
  select a.classification into v_classification from app_public.accounts a where a.id = category;
  return coalesce(v_classification = 'revenue', event_type = 'income');
end $$;
grant execute on function app_private.is_sale(category uuid, event_type text) to accounting_visitor;

drop function if exists app_private.tax_for_account(numeric, text, text, date);
-- What an event's tax account receives under a code: on a sale all the tax collected; on a
-- purchase the recoverable taxes (GST/HST, QST), since PST and RST paid are part of the expense.
-- Null for a code that does not exist.
-- PL/pgSQL for its kept plan (docs/architecture.md, SQL functions).
create or replace function app_private.tax_for_account(amount numeric, code text, sale boolean, on_day date) returns numeric
  language plpgsql stable as
$$
declare v_tax numeric;
begin
  if not exists (select 1 from app_public.sales_tax_codes s where s.code = tax_for_account.code) then return null; end if;
  select coalesce(sum(t.portion), 0) into v_tax from app_private.tax_included_parts(amount, code, on_day) t where t.recoverable or sale;
  return v_tax;
end $$;
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
-- PL/pgSQL for its kept plan (docs/architecture.md, SQL functions).
create or replace function app_private.tax_type_account(org uuid, tax_type text) returns uuid
  language plpgsql stable as
$$
begin
  return (select a.id from app_public.accounts a
           where a.organization_id = org and a.active
             and a.classification in ('liability', 'asset') and a.account_type not in ('bank', 'credit_card', 'clearing')
             and (a.sub_type = tax_type_account.tax_type
                  or (tax_type_account.tax_type = 'GST_HST' and a.account_type = 'tax_payable' and coalesce(a.sub_type, '') not in ('QST', 'PST')))
           order by a.sub_type is not distinct from tax_type_account.tax_type desc, a.created, a.id
           limit 1);
end $$;
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
grant update (category_id, contact_id, direction, event_type, functional_amount, has_document, journal_entry_id, memo, merchant_name, payment_account_id, reference, reversal_entry_id, splits, status, tax_account_id, tax_amount, tax_code, transaction_date, updated) on app_public.ledger_events to accounting_visitor;

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
  -- What a contact owes or is owed is what its documents say (contact_balances): nothing else posts there.
  if a.account_type in ('accounts_receivable', 'accounts_payable') then
    perform app_private.fail('Accounts Receivable and Payable take only invoices, bills and their payments.');
  end if;
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

-- Events as the API shows them (contract: LedgerEvent), given their ids: every list, lookup and
-- feed page builds its events here, set-based. What an event shows from other tables (accounts,
-- entries, contact, receipts, clearings, external ids) is joined once for all the ids, not looked
-- up per event: a function per event started its executor, with a plan node for each of those
-- lookups, once per event (a page of 111 events paid 11 ms; joined, 6). PL/pgSQL with its generic
-- plan kept: a SQL function's query is planned again at every call, and this join takes 4 ms to
-- plan; left to choose, the plan cache kept planning one-id calls afresh (a generic plan assumes
-- ten ids, and one looks cheaper).
create or replace function app_private.ledger_events_json(event_ids uuid[]) returns table (id uuid, event jsonb)
  language plpgsql stable set plan_cache_mode = force_generic_plan as
$$
begin
  return query select e.id, jsonb_build_object(
    'id', e.id, 'eventType', e.event_type, 'direction', e.direction, 'merchantName', e.merchant_name,
    'functionalAmount', app_private.money(e.functional_amount), 'functionalCurrency', e.functional_currency,
    'transactionDate', to_char(e.transaction_date, 'YYYY-MM-DD'), 'status', e.status, 'memo', e.memo,
    'hasDocument', e.has_document,
    'account', case when c.id is null then null else jsonb_build_object('id', c.id, 'name', c.name, 'accountType', c.account_type) end,
    'category', case when c.id is null then null else jsonb_build_object('id', c.id, 'name', c.name) end,
    'paymentAccount', case when p.id is null then null else jsonb_build_object('id', p.id, 'name', p.name) end,
    'taxAmount', app_private.money(e.tax_amount), 'taxCode', e.tax_code,
    'taxAccount', case when t.id is null then null else jsonb_build_object('id', t.id, 'name', t.name) end,
    'splits', case when e.splits is null then '[]'::jsonb else app_private.splits_json(e.splits) end,
    'contact', case when k.id is null then null else jsonb_build_object('id', k.id, 'displayName', k.display_name) end,
    'journalEntry', case when j.id is null then null else jsonb_build_object('id', j.id,
        'txnDate', to_char(j.txn_date, 'YYYY-MM-DD'), 'totalAmount', app_private.money(j.total_amount),
        'voidedAt', app_private.iso(j.voided_at)) end,
    'reversalEntry', case when v.id is null then null else jsonb_build_object('id', v.id,
        'txnDate', to_char(v.txn_date, 'YYYY-MM-DD'), 'totalAmount', app_private.money(v.total_amount),
        'voidedAt', app_private.iso(v.voided_at)) end,
    'cleared', cl.event_id is not null,
    'suggestedCategory', case when e.status = 'needs_review' and e.category_id is null
      then app_private.suggested_category(e.organization_id, e.merchant_name, e.event_type) end,
    'externalRefs', case when e.status in ('synced', 'reconciled') then coalesce(x.refs, '[]'::jsonb) else '[]'::jsonb end,
    -- Receipts linked to it, oldest first (contract: receipts {id, filename, objectKey, uploadedAt}).
    'receipts', coalesce(r.receipts, '[]'::jsonb),
    'source', e.source, 'importBatchId', e.import_batch_id, 'reference', e.reference,
    'created', app_private.iso(e.created), 'updated', app_private.iso(e.updated))
    from app_public.ledger_events e
    left join app_public.accounts c on c.id = e.category_id
    left join app_public.accounts p on p.id = e.payment_account_id
    left join app_public.accounts t on t.id = e.tax_account_id
    left join app_public.journal_entries j on j.id = e.journal_entry_id
    left join app_public.journal_entries v on v.id = e.reversal_entry_id
    left join app_public.contacts k on k.id = e.contact_id
    left join (select distinct q.event_id from app_public.reconciliation_clearings q where q.event_id = any (event_ids)) cl
      on cl.event_id = e.id
    left join (select q.event_id, jsonb_agg(jsonb_build_object('externalSystem', q.external_system, 'externalId', q.external_id,
                      'syncedAt', app_private.iso(q.synced_at)) order by q.external_system) refs
                 from app_public.ledger_event_external_refs q where q.event_id = any (event_ids) group by q.event_id) x
      on x.event_id = e.id
    left join (select q.event_id, jsonb_agg(jsonb_build_object('id', q.id, 'filename', q.filename, 'objectKey', q.object_key,
                      'uploadedAt', app_private.iso(q.uploaded_at), 'contentType', q.content_type, 'status', q.status)
                      order by q.uploaded_at, q.id) receipts
                 from app_public.receipts q where q.event_id = any (event_ids) group by q.event_id) r
      on r.event_id = e.id
   where e.id = any (event_ids);
end $$;
grant execute on function app_private.ledger_events_json(event_ids uuid[]) to accounting_visitor;

-- One event, or null when it is not visible.
-- PL/pgSQL for its kept plan (docs/architecture.md, SQL functions).
create or replace function app_private.ledger_event_json_by_id(event_id uuid) returns jsonb
  language plpgsql stable as
$$
begin
  return (select x.event from app_private.ledger_events_json(array[ledger_event_json_by_id.event_id]) x);
end $$;
grant execute on function app_private.ledger_event_json_by_id(event_id uuid) to accounting_visitor;

-- Each branch repeats its statements for its own transition tables (an insert has no old rows), so
-- that the common path is one statement; a helper taking the changes as arrays cost a confirm more
-- than the whole of this does (bench/README.md, Monthly totals).
create or replace function app_private.tg_ledger_events__counts() returns trigger
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
declare
  v_first date; -- the earliest day whose counts the statement changed
begin
  -- The daily rows, each organization's advisory lock held, then the monthly ones when a day is
  -- before the current month (monthly-totals.sql: only such a change takes the organization's row
  -- and reads how far its months are rolled).
  if tg_op = 'INSERT' then
    with daily as (
      insert into app_public.ledger_event_daily_counts as t (organization_id, day, status, n)
        select organization_id, transaction_date, status, count(*) from new_rows group by 1, 2, 3 order by 1, 2, 3
        on conflict (organization_id, day, status) do update set n = t.n + excluded.n
        returning t.organization_id, t.day)
    select min(d.day) into v_first
      from daily d, lateral (select pg_advisory_xact_lock_shared(app_private.monthly_totals_key(d.organization_id))) l;
    if v_first < app_private.current_month_start() then
      perform app_private.add_monthly_event_counts(array_agg(organization_id), array_agg(transaction_date), array_agg(status),
                array_agg(1::bigint))
         from new_rows;
    end if;
  elsif tg_op = 'UPDATE' then
    with daily as (
      insert into app_public.ledger_event_daily_counts as t (organization_id, day, status, n)
        select organization_id, d, s, sum(k) from (
          select organization_id, transaction_date d, status s, 1 k from new_rows
          union all
          select organization_id, transaction_date, status, -1 from old_rows) x
        group by 1, 2, 3 having sum(k) <> 0 order by 1, 2, 3
        on conflict (organization_id, day, status) do update set n = t.n + excluded.n
        returning t.organization_id, t.day)
    select min(d.day) into v_first
      from daily d, lateral (select pg_advisory_xact_lock_shared(app_private.monthly_totals_key(d.organization_id))) l;
    if v_first < app_private.current_month_start() then
      perform app_private.add_monthly_event_counts(array_agg(organization_id), array_agg(d), array_agg(s), array_agg(k))
         from (select organization_id, transaction_date d, status s, 1::bigint k from new_rows
               union all
               select organization_id, transaction_date, status, -1 from old_rows) x;
    end if;
  else
    with daily as (
      insert into app_public.ledger_event_daily_counts as t (organization_id, day, status, n)
        select organization_id, transaction_date, status, -count(*) from old_rows r
         -- Rows of an organization being deleted go with it.
         where exists (select 1 from app_public.organizations o where o.id = r.organization_id)
         group by 1, 2, 3 order by 1, 2, 3
        on conflict (organization_id, day, status) do update set n = t.n + excluded.n
        returning t.organization_id, t.day)
    select min(d.day) into v_first
      from daily d, lateral (select pg_advisory_xact_lock_shared(app_private.monthly_totals_key(d.organization_id))) l;
    if v_first < app_private.current_month_start() then
      perform app_private.add_monthly_event_counts(array_agg(organization_id), array_agg(transaction_date), array_agg(status),
                array_agg(-1::bigint))
         from old_rows;
    end if;
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
  v_rule record;
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
  v_id := app_private.uuid_v7();
  -- Without a category, the rule for the event (rule_classifications) classifies it. (Asked
  -- about no event when a category is given: the record still gets its fields, null.)
  select * into v_rule from app_private.rule_classifications(create_ledger_event.organization_id,
    case when v_category is null then array[row(v_id, v_merchant, app_private.direction_for(v_type), v_amount,
      payment_account_id, v_type, v_date, null)::app_private.rule_subject] else '{}' end);
  if v_rule.rule_id is not null then
    update app_public.category_rules set match_count = match_count + 1 where id = v_rule.rule_id;
  end if;
  insert into app_public.ledger_events (id, organization_id, event_type, direction, merchant_name, functional_amount,
      functional_currency, transaction_date, category_id, payment_account_id, splits, tax_amount, tax_code, tax_account_id, contact_id)
    select v_id, create_ledger_event.organization_id, v_type, app_private.direction_for(v_type), v_merchant, v_amount,
      o.functional_currency, v_date, coalesce(v_category, v_rule.category_id), payment_account_id, v_rule.splits,
      v_rule.tax_amount, v_rule.tax_code, v_rule.tax_account_id, v_rule.contact_id
      from app_public.organizations o where o.id = create_ledger_event.organization_id;
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

drop function if exists app_public.list_ledger_events(uuid, jsonb, boolean, integer, text, text, text, text, jsonb, jsonb, jsonb, text, integer, integer, text, text, uuid);
-- Planned for the tenant asking, every call (docs/architecture.md, Many tenants).
create or replace function app_public.list_ledger_events(organization_id uuid, status jsonb default null,
    has_document boolean default null, since_days integer default null, date_from text default null,
    date_to text default null, amount_min text default null, amount_max text default null,
    account_ids jsonb default null, category_ids jsonb default null, payment_account_ids jsonb default null,
    search text default null, "limit" integer default null, "offset" integer default null,
    sort_by text default null, sort_dir text default null, reconciliation_id uuid default null,
    contact_ids jsonb default null) returns jsonb
  language plpgsql stable set plan_cache_mode = force_custom_plan as
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
  v_contacts uuid[];
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
  if contact_ids is not null then
    v_contacts := app_private.uuid_list(contact_ids, 'contactIds');
    v_where := v_where || ' and e.contact_id = any ($15)';
  end if;
  if search is not null and search <> '' then
    -- ILIKE as PostgreSQL does it (lower() of both sides, then LIKE), the pattern lowered once
    -- rather than on every row.
    v_pattern := lower(app_private.like_pattern(search));
    -- The merchant from the date index (merchant_name and has_memo are in it); the memos from the
    -- events that have one in the same dates (ledger_events_memo_idx), read once for the whole
    -- statement: a memo of up to 5,000 characters cannot ride in an index.
    v_where := v_where || ' and (lower(e.merchant_name) like $11 or (e.has_memo and e.id in (select m.id from app_public.ledger_events m
        where m.organization_id = $1 and m.has_memo' || case when v_from is not null then ' and m.transaction_date >= $3' else '' end
      || case when v_to is not null then ' and m.transaction_date <= $4' else '' end || ' and lower(m.memo) like $11)))';
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

  -- The total: from the status counts by month and day when only status and dates filter, else counted.
  if reconciliation_id is null and has_document is null and v_min is null and v_max is null and v_accounts is null and v_categories is null
     and v_payments is null and v_contacts is null and v_pattern is null then
    v_total := app_private.event_count(list_ledger_events.organization_id, v_status, v_from, v_to);
  else
    execute 'select count(*) from app_public.ledger_events e where e.organization_id = $1' || v_where
      into v_total
      using organization_id, v_status, v_from, v_to, has_document, v_min, v_max, v_accounts, v_categories, v_payments, v_pattern,
            null::integer, null::integer, v_reconciliation, v_contacts;
  end if;

  -- The page, in one statement: ids in total order, then each event with its accounts and entry.
  execute format($q$
    with page as (
      select e.id, row_number() over () as ord from (
        select e.id from app_public.ledger_events e
         where e.organization_id = $1 %1$s
         order by %2$s %3$s, e.id %3$s
         limit $12 offset $13) e)
    select coalesce(jsonb_agg(e.event %4$s order by page.ord), '[]'::jsonb)
      from page
      join app_private.ledger_events_json(array(select page.id from page)) e on e.id = page.id
  $q$, v_where, v_order, v_dir,
    -- In a reconciliation's list, cleared is whether this one ticked it (a transfer is on two).
    case when reconciliation_id is null then '' else $c$|| jsonb_build_object('cleared', exists (select 1
      from app_public.reconciliation_clearings k where k.event_id = e.id and k.reconciliation_id = ($14).id))$c$ end)
    into v_items
    using organization_id, v_status, v_from, v_to, has_document, v_min, v_max, v_accounts, v_categories, v_payments,
          v_pattern, v_limit, v_offset, v_reconciliation, v_contacts;
  return jsonb_build_object('items', v_items, 'totalCount', v_total, 'pageSize', v_limit, 'offset', v_offset);
end $$;
grant execute on function app_public.list_ledger_events(organization_id uuid, status jsonb, has_document boolean, since_days integer, date_from text, date_to text, amount_min text, amount_max text, account_ids jsonb, category_ids jsonb, payment_account_ids jsonb, search text, "limit" integer, "offset" integer, sort_by text, sort_dir text, reconciliation_id uuid, contact_ids jsonb) to accounting_visitor;

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
  v_date date;
  v_sale boolean;
  v_tax_account uuid;
  v_memo text := normalize(memo, NFC);
  v_splits jsonb;
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
  -- A tax portion computed from a sales tax code follows the amount, the side (sale or purchase)
  -- and the date; an edit of anything else leaves it as it is.
  v_tax := e.tax_amount;
  v_tax_account := e.tax_account_id;
  v_date := case when update_ledger_event.transaction_date is null then e.transaction_date
                 else app_private.parse_date(update_ledger_event.transaction_date, 'Transaction date must be a date in YYYY-MM-DD format.') end;
  v_splits := e.splits;
  if v_splits is not null then
    -- Split: the lines must still add up, and still fit the type (else the event is classified
    -- again, as one whose category no longer fits); a computed tax follows the date.
    if v_amount <> e.functional_amount then perform app_private.fail('Splits must add up to the amount.'); end if;
    if not app_private.splits_fit(v_splits, v_type) then
      v_splits := null; v_category := null; v_tax := null; v_tax_account := null;
      e.tax_code := null;
    else
      v_category := app_private.largest_split_category(v_splits);
      if v_date <> e.transaction_date then
        v_splits := app_private.splits_on_day(v_splits, v_type, v_date);
        v_tax := app_private.splits_tax(v_splits);
      end if;
    end if;
  elsif e.tax_code is not null then
    v_sale := app_private.is_sale(v_category, v_type);
    if v_amount <> e.functional_amount or v_date <> e.transaction_date or v_sale is distinct from app_private.is_sale(e.category_id, e.event_type) then
      v_tax := app_private.tax_for_account(v_amount, e.tax_code, v_sale, v_date);
      v_tax_account := app_private.tax_account_or_default(e.organization_id, v_tax, v_tax_account);
    end if;
  end if;
  if v_tax is not null and v_tax >= v_amount then
    perform app_private.fail('Tax amount must be less than the amount.');
  end if;
  update app_public.ledger_events x set
      transaction_date = v_date,
      memo = coalesce(v_memo, x.memo),
      functional_amount = v_amount,
      event_type = v_type,
      -- Only a change of type recomputes the direction: an imported event's comes from the sign.
      direction = case when update_ledger_event.event_type is null then x.direction else app_private.direction_for(v_type) end,
      category_id = v_category,
      tax_amount = v_tax,
      tax_account_id = v_tax_account,
      tax_code = e.tax_code,
      splits = v_splits
    where x.id = e.id;
  return jsonb_build_object('success', true, 'error', null, 'event', app_private.ledger_event_json_by_id(e.id));
end $$;
grant execute on function app_public.update_ledger_event(organization_id uuid, event_id uuid, transaction_date text, memo text, amount text, event_type text) to accounting_visitor;

-- Classify: category, payment account and tax (docs/api.md, Money and the ledger; a tax code
-- without an amount takes what the code's taxes put in the tax account: tax_for_account). Absent
-- arguments keep their value. `splits` classifies the event into several lines instead
-- (docs/api.md, Split transactions and the sales tax return); a categoryId makes it one line again.
drop function if exists app_public.update_staged_entry(uuid, uuid, uuid, uuid, text, uuid, text);
drop function if exists app_public.update_staged_entry(uuid, uuid, uuid, uuid, text, uuid, text, jsonb);
create or replace function app_public.update_staged_entry(organization_id uuid, event_id uuid, category_id uuid default null,
    payment_id uuid default null, tax_amount text default null, tax_account_id uuid default null,
    tax_code text default null, splits jsonb default null, contact_id uuid default null) returns jsonb
  language plpgsql volatile as
$$
declare
  e app_public.ledger_events;
  v_category uuid;
  v_payment uuid;
  v_tax numeric;
  v_tax_account uuid;
  v_tax_code text;
  v_splits jsonb;
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
  if splits is not null and (category_id is not null or tax_amount is not null or tax_code is not null) then
    perform app_private.fail('Give splits, or categoryId with taxAmount and taxCode, not both: each split has its own tax.');
  end if;
  if e.splits is not null and splits is null and category_id is null and (tax_amount is not null or tax_code is not null) then
    perform app_private.fail('The tax of a split event is on its splits: give splits, or a categoryId to make it one line.');
  end if;
  v_payment := coalesce(payment_id, e.payment_account_id);
  if payment_id is not null then perform app_private.check_payment_account(payment_id); end if;

  v_tax := e.tax_amount;
  v_tax_code := e.tax_code;
  v_splits := e.splits;
  if splits is not null then
    v_splits := app_private.checked_splits(splits, e.event_type, e.functional_amount, e.transaction_date);
  elsif category_id is not null and e.splits is not null then
    -- One line again: the splits' tax goes with them.
    v_splits := null; v_tax := null; v_tax_code := null;
  end if;

  if v_splits is not null then
    v_category := app_private.largest_split_category(v_splits);
    v_tax := app_private.splits_tax(v_splits);
    v_tax_code := null;
    if v_payment in (select (s->>'category_id')::uuid from jsonb_array_elements(v_splits) s) then
      perform app_private.fail('Category and payment account must differ.');
    end if;
  else
    v_category := coalesce(category_id, e.category_id);
    if category_id is not null then perform app_private.check_category(category_id, e.event_type); end if;
    if v_category = v_payment then perform app_private.fail('Category and payment account must differ.'); end if;
    if tax_code is not null then
      v_tax_code := tax_code;
      v_tax := app_private.tax_for_account(e.functional_amount, update_staged_entry.tax_code,
        app_private.is_sale(v_category, e.event_type), e.transaction_date);
      if v_tax is null then perform app_private.fail('Unknown tax code.'); end if;
    end if;
    if tax_amount is not null then
      v_tax := app_private.parse_amount(tax_amount, 'Tax amount must be a decimal string of at least 0.', true);
      if tax_code is null then v_tax_code := null; end if; -- an explicit amount replaces a computed one
      perform app_private.check_typed_tax(v_tax, v_tax_code, app_private.is_sale(v_category, e.event_type), e.transaction_date);
    end if;
    if v_tax is not null and v_tax >= e.functional_amount then
      perform app_private.fail('Tax amount must be less than the amount.');
    end if;
  end if;
  v_tax_account := coalesce(tax_account_id, e.tax_account_id);
  if tax_account_id is not null then perform app_private.check_tax_account(tax_account_id); end if;
  v_tax_account := app_private.tax_account_or_default(e.organization_id, v_tax, v_tax_account);
  if v_tax_account is not null and (v_tax_account in (v_category, v_payment)
     or v_tax_account in (select (s->>'category_id')::uuid from jsonb_array_elements(v_splits) s)) then
    perform app_private.fail('The tax account must differ from the category and payment accounts.');
  end if;

  if contact_id is not null and not exists (select 1 from app_public.contacts k where k.id = contact_id) then
    perform app_private.fail('Contact not found.');
  end if;
  update app_public.ledger_events x set category_id = v_category, payment_account_id = v_payment,
      tax_amount = v_tax, tax_account_id = v_tax_account, tax_code = v_tax_code, splits = v_splits,
      contact_id = coalesce(update_staged_entry.contact_id, x.contact_id)
    where x.id = e.id;
  return jsonb_build_object('success', true, 'error', null, 'event', app_private.ledger_event_json_by_id(e.id));
end $$;
grant execute on function app_public.update_staged_entry(organization_id uuid, event_id uuid, category_id uuid, payment_id uuid, tax_amount text, tax_account_id uuid, tax_code text, splits jsonb, contact_id uuid) to accounting_visitor;
--! EndIncluded ledger/events.sql
--! Included reports/closing-reports.sql
-- The reports a period is closed with: the balance sheet and the trial balance as of a day, from
-- the per-account daily totals (docs/api.md, Closing a period).
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- The first day of the fiscal year `as_of` falls in, from the organization's `MM-DD` (never
-- `02-29`): this year's, or last year's when `as_of` comes before it in the year. One expression,
-- which PostgreSQL inlines: with a FROM it was a function call, its body planned on each report.
create or replace function app_private.fiscal_year_start(fiscal_year_start text, as_of date) returns date
  language sql immutable parallel safe as
$$
  select make_date(extract(year from as_of)::integer
                     - (extract(month from as_of) * 100 + extract(day from as_of)
                        < substr(fiscal_year_start, 1, 2)::integer * 100 + substr(fiscal_year_start, 4, 2)::integer)::integer,
                   substr(fiscal_year_start, 1, 2)::integer, substr(fiscal_year_start, 4, 2)::integer)
$$;
grant execute on function app_private.fiscal_year_start(fiscal_year_start text, as_of date) to accounting_visitor;

-- Each account's debits minus credits up to `as_of`, revenue and expense accounts counted from the
-- fiscal year's first day only: the earlier years' earnings are the retained earnings account's
-- (a row of their own, account null, when the chart has none), so the rows still sum to zero.
create or replace function app_private.closing_balances(org uuid, as_of date)
  returns table (account_id uuid, account_name text, classification text, net_debit numeric)
  language sql stable as
$$
  with year_start as (
    select app_private.fiscal_year_start(o.fiscal_year_start, as_of) as day from app_public.organizations o where o.id = org
  ),
  sums as (
    select t.account_id, t.debit - t.credit as all_time, y.debit - y.credit as this_year
      from app_private.account_totals(org, null, as_of) t
      left join app_private.account_totals(org, (select day from year_start), as_of) y on y.account_id = t.account_id
  ),
  accounts as (
    select a.id, a.name, a.classification, a.account_type,
           case when a.classification in ('revenue', 'expense') then coalesce(s.this_year, 0) else s.all_time end as net_debit,
           case when a.classification in ('revenue', 'expense') then s.all_time - coalesce(s.this_year, 0) else 0 end as earlier_years
      from sums s join app_public.accounts a on a.id = s.account_id
  ),
  retained as (
    select a.id from app_public.accounts a
     where a.organization_id = org and a.account_type = 'retained_earnings'
     order by a.active desc, a.created, a.id limit 1
  ),
  earlier as (select coalesce(sum(earlier_years), 0) as net_debit from accounts)
  select x.id, x.name, x.classification, sum(x.net_debit) from (
    select a.id, a.name, a.classification, a.net_debit from accounts a
    union all
    -- Earlier years' earnings close into retained earnings.
    select r.id, coalesce(a.name, 'Retained Earnings'), 'equity', e.net_debit
      from earlier e
      left join retained r on true
      left join app_public.accounts a on a.id = r.id
     where e.net_debit <> 0
  ) x
  group by x.id, x.name, x.classification
  having sum(x.net_debit) <> 0
$$;
grant execute on function app_private.closing_balances(org uuid, as_of date) to accounting_visitor;

create or replace function app_private.as_of_date(as_of text) returns date
  language sql stable as
$$ select case when as_of is null then current_date else app_private.parse_date(as_of, 'asOf must be a date in YYYY-MM-DD format.') end $$;
grant execute on function app_private.as_of_date(as_of text) to accounting_visitor;

-- Assets = liabilities + equity + current-year earnings, each line at its normal balance.
-- Planned for the tenant asking, every call (docs/architecture.md, Many tenants).
create or replace function app_public.balance_sheet(organization_id uuid, as_of text default null) returns jsonb
  language plpgsql stable set plan_cache_mode = force_custom_plan as
$$
declare
  v_as_of date;
  r jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  v_as_of := app_private.as_of_date(as_of);
  with b as (
    select account_id, account_name, classification,
           case when classification = 'asset' then net_debit else -net_debit end as balance
      from app_private.closing_balances(balance_sheet.organization_id, v_as_of)
  ),
  line as (
    select classification, jsonb_agg(jsonb_build_object('accountId', account_id, 'accountName', account_name,
             'balance', app_private.money(balance)) order by lower(account_name), account_id) as lines, sum(balance) as total
      from b where classification in ('asset', 'liability', 'equity') group by classification
  )
  select jsonb_build_object('asOf', to_char(v_as_of, 'YYYY-MM-DD'),
      'fiscalYearStart', to_char(app_private.fiscal_year_start(o.fiscal_year_start, v_as_of), 'YYYY-MM-DD'),
      'assets', coalesce((select lines from line where classification = 'asset'), '[]'::jsonb),
      'liabilities', coalesce((select lines from line where classification = 'liability'), '[]'::jsonb),
      'equity', coalesce((select lines from line where classification = 'equity'), '[]'::jsonb),
      'totalAssets', app_private.money(coalesce((select total from line where classification = 'asset'), 0)),
      'totalLiabilities', app_private.money(coalesce((select total from line where classification = 'liability'), 0)),
      'totalEquity', app_private.money(coalesce((select total from line where classification = 'equity'), 0)),
      -- Revenue less expenses since the fiscal year began (credit-normal, as equity is).
      'currentYearEarnings', app_private.money(coalesce((select sum(balance) from b where classification in ('revenue', 'expense')), 0)))
    into r
    from app_public.organizations o where o.id = balance_sheet.organization_id;
  return r;
end $$;
grant execute on function app_public.balance_sheet(organization_id uuid, as_of text) to accounting_visitor;

-- Every account with a balance, on its debit or its credit side; the two totals are equal.
-- Planned for the tenant asking, every call (docs/architecture.md, Many tenants).
create or replace function app_public.trial_balance(organization_id uuid, as_of text default null) returns jsonb
  language plpgsql stable set plan_cache_mode = force_custom_plan as
$$
declare
  v_as_of date;
  r jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  v_as_of := app_private.as_of_date(as_of);
  select jsonb_build_object('asOf', to_char(v_as_of, 'YYYY-MM-DD'),
      'rows', coalesce(jsonb_agg(jsonb_build_object('accountId', account_id, 'accountName', account_name,
          'classification', classification,
          'debit', app_private.money(greatest(net_debit, 0)), 'credit', app_private.money(greatest(-net_debit, 0)))
          order by array_position(array['asset', 'liability', 'equity', 'revenue', 'expense'], classification),
                   lower(account_name), account_id), '[]'::jsonb),
      'totalDebit', app_private.money(coalesce(sum(greatest(net_debit, 0)), 0)),
      'totalCredit', app_private.money(coalesce(sum(greatest(-net_debit, 0)), 0)))
    into r
    from app_private.closing_balances(trial_balance.organization_id, v_as_of);
  return r;
end $$;
grant execute on function app_public.trial_balance(organization_id uuid, as_of text) to accounting_visitor;
--! EndIncluded reports/closing-reports.sql
--! Included reports/reports.sql
-- Reports from per-account daily totals: the dashboard, the income statement, account balances.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Revenue and expense totals per account over a period (monthly-totals.sql: by month and day).
create or replace function app_private.period_totals(org uuid, period daterange)
  returns table (account_id uuid, account_name text, classification text, total numeric)
  language sql stable as
$$
  select a.id, a.name, a.classification,
         case when a.classification = 'revenue' then t.credit - t.debit else t.debit - t.credit end
    from app_private.account_totals(org, lower(period), upper(period) - 1) t
    join app_public.accounts a on a.id = t.account_id
   where a.classification in ('revenue', 'expense') and (t.debit <> 0 or t.credit <> 0) and not isempty(period)
$$;
grant execute on function app_private.period_totals(org uuid, period daterange) to accounting_visitor;

-- Receipts that arrived (uploaded or received) in the period, by UTC day, rejected ones excluded
-- (docs/api.md, Reports).
-- PL/pgSQL for its kept plan (docs/architecture.md, SQL functions).
create or replace function app_private.receipt_count(org uuid, period daterange) returns integer
  language plpgsql stable as
$$
begin
  return (select count(*)::integer from app_public.receipts r
           where r.organization_id = org and r.status <> 'rejected'
             and r.uploaded_at >= (lower(period)::timestamp at time zone 'UTC')
             and r.uploaded_at < (upper(period)::timestamp at time zone 'UTC'));
end $$;
grant execute on function app_private.receipt_count(org uuid, period daterange) to accounting_visitor;

-- A report period: null means the default; both ends inclusive.
create or replace function app_private.report_period(start_date text, end_date text, default_start date) returns daterange
  language plpgsql stable as
$$
declare
  s date := default_start;
  e date := current_date;
begin
  if start_date is not null then s := app_private.parse_date(start_date, 'startDate must be a date in YYYY-MM-DD format.'); end if;
  if end_date is not null then e := app_private.parse_date(end_date, 'endDate must be a date in YYYY-MM-DD format.'); end if;
  if s > e then perform app_private.fail('startDate must not be after endDate.'); end if;
  return daterange(s, e, '[]');
end $$;
grant execute on function app_private.report_period(start_date text, end_date text, default_start date) to accounting_visitor;

-- Planned for the tenant asking, every call (docs/architecture.md, Many tenants).
create or replace function app_public.account_balances(organization_id uuid) returns jsonb
  language plpgsql stable set plan_cache_mode = force_custom_plan as
$$
begin
  perform app_private.assert_org_access(organization_id, false);
  return coalesce((
    select jsonb_agg(jsonb_build_object('accountId', a.id, 'accountName', a.name, 'accountType', a.account_type,
        'classification', a.classification, 'balance', app_private.money(coalesce(b.balance, 0)))
        order by lower(a.name), a.id)
      from app_public.accounts a
      left join app_private.account_balances(account_balances.organization_id) b on b.account_id = a.id
     where a.organization_id = account_balances.organization_id and a.active), '[]'::jsonb);
end $$;
grant execute on function app_public.account_balances(organization_id uuid) to accounting_visitor;

-- Planned for the tenant asking, every call (docs/architecture.md, Many tenants).
create or replace function app_public.dashboard_summary(organization_id uuid, start_date text default null, end_date text default null)
  returns jsonb
  language plpgsql stable set plan_cache_mode = force_custom_plan as
$$
declare
  period daterange;
  revenue numeric;
  expenses numeric;
  unreviewed bigint;
begin
  perform app_private.assert_org_access(organization_id, false);
  period := app_private.report_period(start_date, end_date, date_trunc('month', current_date)::date);
  select coalesce(sum(total) filter (where classification = 'revenue'), 0),
         coalesce(sum(total) filter (where classification = 'expense'), 0)
    into revenue, expenses from app_private.period_totals(organization_id, period);
  unreviewed := app_private.event_count(organization_id, array['needs_review'], null, null);
  return jsonb_build_object('totalRevenue', app_private.money(revenue), 'totalExpenses', app_private.money(expenses),
    'netIncome', app_private.money(revenue - expenses),
    'receiptCount', app_private.receipt_count(organization_id, period),
    'unreviewedCount', unreviewed);
end $$;
grant execute on function app_public.dashboard_summary(organization_id uuid, start_date text, end_date text) to accounting_visitor;

-- Planned for the tenant asking, every call (docs/architecture.md, Many tenants).
create or replace function app_public.income_statement(organization_id uuid, start_date text default null, end_date text default null)
  returns jsonb
  language plpgsql stable set plan_cache_mode = force_custom_plan as
$$
declare
  period daterange;
  r jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  period := app_private.report_period(start_date, end_date, date_trunc('year', current_date)::date);
  select jsonb_build_object(
      'incomeAccounts', coalesce(jsonb_agg(jsonb_build_object('accountId', account_id, 'accountName', account_name,
          'total', app_private.money(total)) order by lower(account_name), account_id) filter (where classification = 'revenue'), '[]'::jsonb),
      'expenseAccounts', coalesce(jsonb_agg(jsonb_build_object('accountId', account_id, 'accountName', account_name,
          'total', app_private.money(total)) order by lower(account_name), account_id) filter (where classification = 'expense'), '[]'::jsonb),
      'totalIncome', app_private.money(coalesce(sum(total) filter (where classification = 'revenue'), 0)),
      'totalExpenses', app_private.money(coalesce(sum(total) filter (where classification = 'expense'), 0)),
      'netIncome', app_private.money(coalesce(sum(total) filter (where classification = 'revenue'), 0)
                                     - coalesce(sum(total) filter (where classification = 'expense'), 0)))
    into r
    from app_private.period_totals(organization_id, period);
  return r;
end $$;
grant execute on function app_public.income_statement(organization_id uuid, start_date text, end_date text) to accounting_visitor;
--! EndIncluded reports/reports.sql
