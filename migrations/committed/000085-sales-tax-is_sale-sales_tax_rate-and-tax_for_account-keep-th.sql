--! Previous: sha1:b903596ee584c901c14c2c9d810391c35eb29550
--! Hash: sha1:7df9723a4552a51130c3e64571f0f408bcbac8be
--! Message: Sales tax: is_sale, sales_tax_rate and tax_for_account keep their plans (PL/pgSQL)

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
-- PL/pgSQL, as is_sale and tax_for_account are: a SQL function with a subquery is never inlined,
-- and PostgreSQL plans its body again in every transaction that calls it (0.1 ms or more each
-- time, on every posting and classification), where PL/pgSQL keeps its plans for the session.
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
-- PL/pgSQL for its kept plan (sales_tax_rate says why).
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
-- PL/pgSQL for its kept plan (sales_tax_rate says why).
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
