--! Previous: sha1:cca1490032b19e5e3524e6df3675795d73173823
--! Hash: sha1:9cf6d9e3dd84c0b69e98ea3bf36441162fb3f02f
--! Message: After review of split transactions: a typed tax only where its code puts tax in a tax account; each tax's account found within the organization; liability lines in an expense's splits; reconciled splits kept; the rebuild job checks the sales tax totals; tax lines posted before named by their event's code

-- After review of split transactions and the return: a typed tax only where its code puts tax in a
-- tax account; each tax's account found within the organization (the worker posts as the owner);
-- an expense's splits may have liability lines (a loan's principal); a reconciled event's splits
-- stay as they were; the rebuild job checks the sales tax totals too.
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
    if (s->>'categoryId') !~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then
      perform app_private.fail('Category account not found.');
    end if;
    v_category := (s->>'categoryId')::uuid;
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
  if event_type = 'expense' and exists (select 1 from app_public.accounts a where a.id = account and a.active and a.classification = 'liability') then
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

-- Posts the journal entries of locked, classified events (docs/api.md, Money and the ledger) and
-- marks them confirmed, set-based whatever the number of events (an import posts 100,000 at once).
-- An event may come with its entry's id already set (an import inserts its events confirmed, with
-- the id of the entry posted here, and so spares itself an update of every event); the deferred
-- foreign key and the balance check hold either way at commit. The entry is dated `posting_date`
-- when given, else on its event's transaction date (docs/api.md, Closing a period).
-- Lines: the payment account's for the whole amount; the category's (an unsplit event) or one per
-- split category, net of tax; one per tax account and tax type, tagged with the type and whether
-- it was collected on a sale (the sales tax return adds them up).
create or replace function app_private.post_journal_entries(event_ids uuid[], posting_date date default null)
  returns table (event_id uuid, entry_id uuid)
  language plpgsql volatile as
$$
begin
  update app_public.ledger_events x set status = 'confirmed', journal_entry_id = app_private.uuid_v7()
   where x.id = any (event_ids) and x.journal_entry_id is null;
  return query
  with entries as (
    insert into app_public.journal_entries (id, organization_id, event_id, txn_date, total_amount)
      select e.journal_entry_id, e.organization_id, e.id, coalesce(posting_date, e.transaction_date), e.functional_amount
        from app_public.ledger_events e where e.id = any (event_ids) order by e.journal_entry_id
      returning journal_entries.event_id, journal_entries.id, journal_entries.txn_date
  ),
  posted as materialized (
    select n.id as entry, n.txn_date, e.organization_id, e.event_type, e.transaction_date, e.category_id,
           e.payment_account_id, e.functional_amount, e.tax_amount, e.tax_code, e.tax_account_id, e.splits,
           e.direction = 'out' as out
      from entries n join app_public.ledger_events e on e.id = n.event_id
  ),
  -- Each part of an amount that has tax: the event (unsplit) or each of its splits.
  taxed as (
    select p.entry, p.txn_date, p.organization_id, p.out, p.tax_account_id, p.transaction_date,
           p.functional_amount as amount, p.tax_amount as tax, p.tax_code as code, app_private.is_sale(p.category_id, p.event_type) as sale
      from posted p where p.splits is null and p.tax_amount > 0
    union all
    select p.entry, p.txn_date, p.organization_id, p.out, p.tax_account_id, p.transaction_date,
           s.amount, s.tax_amount, s.tax_code, app_private.is_sale(s.category_id, p.event_type)
      from posted p cross join lateral jsonb_to_recordset(p.splits) s (category_id uuid, amount numeric, tax_code text, tax_amount numeric)
     where p.splits is not null and s.tax_amount > 0
  ),
  lines as (
    -- out: debit category (+ tax), credit payment; in: debit payment, credit category (+ tax).
    insert into app_public.journal_lines (organization_id, entry_id, account_id, txn_date, debit, credit, tax_type, tax_on_sale)
      select l.organization_id, l.entry, l.account_id, l.txn_date,
             case when l.debit_side then l.amount else 0 end, case when l.debit_side then 0 else l.amount end,
             l.tax_type, l.tax_on_sale
        from (
          select p.entry, p.txn_date, p.organization_id, c.account_id, c.amount, c.debit_side, null::text as tax_type, null::boolean as tax_on_sale
            from posted p
            cross join lateral (values
              (p.category_id, p.functional_amount - coalesce(p.tax_amount, 0), p.out, p.splits is null),
              (p.payment_account_id, p.functional_amount, not p.out, true)) c (account_id, amount, debit_side, kept)
           where c.kept
          union all
          select p.entry, p.txn_date, p.organization_id, s.category_id, sum(s.amount - s.tax_amount), p.out, null, null
            from posted p cross join lateral jsonb_to_recordset(p.splits) s (category_id uuid, amount numeric, tax_amount numeric)
           where p.splits is not null
           group by p.entry, p.txn_date, p.organization_id, s.category_id, p.out
          union all
          select t.entry, t.txn_date, t.organization_id, app_private.tax_leg_account(t.organization_id, g.tax_type, t.tax_account_id),
                 sum(g.portion), t.out, g.tax_type, t.sale
            from taxed t cross join lateral app_private.tax_legs(t.amount, t.tax, t.code, t.sale, t.transaction_date) g
           group by 1, 2, 3, 4, 6, 7, 8
        ) l
       where l.amount > 0
       order by l.entry, l.account_id
  )
  select n.event_id, n.id from entries n;
end $$;
grant execute on function app_private.post_journal_entries(event_ids uuid[], posting_date date) to accounting_visitor;

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
  if (new.organization_id, new.entry_id, new.account_id, new.txn_date, new.debit, new.credit, new.tax_type, new.tax_on_sale)
     is distinct from (old.organization_id, old.entry_id, old.account_id, old.txn_date, old.debit, old.credit, old.tax_type, old.tax_on_sale)
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
grant update (category_id, direction, event_type, functional_amount, has_document, journal_entry_id, memo, merchant_name, payment_account_id, reference, reversal_entry_id, splits, status, tax_account_id, tax_amount, tax_code, transaction_date, updated) on app_public.ledger_events to accounting_visitor;

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
    'splits', case when e.splits is null then '[]'::jsonb else app_private.splits_json(e.splits) end,
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
create or replace function app_public.update_staged_entry(organization_id uuid, event_id uuid, category_id uuid default null,
    payment_id uuid default null, tax_amount text default null, tax_account_id uuid default null,
    tax_code text default null, splits jsonb default null) returns jsonb
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

  update app_public.ledger_events x set category_id = v_category, payment_account_id = v_payment,
      tax_amount = v_tax, tax_account_id = v_tax_account, tax_code = v_tax_code, splits = v_splits
    where x.id = e.id;
  return jsonb_build_object('success', true, 'error', null, 'event', app_private.ledger_event_json_by_id(e.id));
end $$;
grant execute on function app_public.update_staged_entry(organization_id uuid, event_id uuid, category_id uuid, payment_id uuid, tax_amount text, tax_account_id uuid, tax_code text, splits jsonb) to accounting_visitor;
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
  if e.splits is null then perform app_private.check_category(e.category_id, e.event_type);
  else perform app_private.check_split_categories(e.splits, e.event_type);
  end if;
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
  insert into app_public.journal_lines (organization_id, entry_id, account_id, txn_date, debit, credit, tax_type, tax_on_sale)
    select l.organization_id, v_entry, l.account_id, v_date, l.credit, l.debit, l.tax_type, l.tax_on_sale
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
      new.tax_code, new.journal_entry_id, new.reference, new.splits)
     is distinct from
     (old.organization_id, old.event_type, old.direction, old.merchant_name, old.functional_amount, old.functional_currency,
      old.transaction_date, old.memo, old.category_id, old.payment_account_id, old.tax_amount, old.tax_account_id,
      old.tax_code, old.journal_entry_id, old.reference, old.splits)
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
--! Included ledger/daily-totals.sql
-- Rebuilding an organization's daily totals (per account and day, and per sales tax and day, kept
-- by the journal's triggers) and daily counts (per status and day, kept by the events' triggers)
-- from the journal lines and the events themselves, for the operator (`enqueue rebuild_daily_totals`): it says whether what
-- the triggers kept was right, and puts right what was not.
-- Re-runnable: `create or replace`.

-- In one repeatable-read transaction (the worker's), so that the journal and the totals are read
-- from one snapshot while postings go on; a posting of the organization that commits meanwhile
-- makes a repair fail to serialize, and the job is retried. A total of zero and no row are the same.
create or replace function app_private.rebuild_daily_totals(org uuid) returns jsonb
  language plpgsql volatile as
$$
declare
  started timestamptz := clock_timestamp();
  v_totals_kept bigint;
  v_counts_kept bigint;
  v_totals_wrong bigint;
  v_counts_wrong bigint;
  v_tax_kept bigint;
  v_tax_wrong bigint;
begin
  if current_setting('transaction_isolation') not in ('repeatable read', 'serializable') then
    perform app_private.fail('rebuild_daily_totals must run in a repeatable read transaction.');
  end if;
  if not exists (select 1 from app_public.organizations o where o.id = org) then
    perform app_private.fail('Organization Not Found.', 'AP404');
  end if;

  -- A posting waits for no repair longer than this; the repair gives up first and the job is
  -- retried (postings take the totals and the counts in different orders, so no order of ours
  -- avoids a deadlock, but then the job, not a user's request, is the one that fails).
  perform set_config('lock_timeout', '200ms', true);
  drop table if exists pg_temp.rebuilt_totals, pg_temp.wrong_totals, pg_temp.rebuilt_counts, pg_temp.wrong_counts,
    pg_temp.rebuilt_tax, pg_temp.wrong_tax;

  create temporary table rebuilt_totals on commit drop as
    select l.account_id, l.txn_date as day, sum(l.debit) as debit, sum(l.credit) as credit
      from app_public.journal_lines l where l.organization_id = org and not l.voided group by 1, 2;
  create temporary table wrong_totals on commit drop as
    select coalesce(r.account_id, t.account_id) as account_id, coalesce(r.day, t.day) as day,
           coalesce(r.debit, 0) as debit, coalesce(r.credit, 0) as credit
      from rebuilt_totals r
      full join (select * from app_public.account_daily_totals k where k.organization_id = org) t
        on t.account_id = r.account_id and t.day = r.day
     where coalesce(r.debit, 0) <> coalesce(t.debit, 0) or coalesce(r.credit, 0) <> coalesce(t.credit, 0);
  create temporary table rebuilt_counts on commit drop as
    select e.transaction_date as day, e.status, count(*) as n
      from app_public.ledger_events e where e.organization_id = org group by 1, 2;
  create temporary table wrong_counts on commit drop as
    select coalesce(r.day, c.day) as day, coalesce(r.status, c.status) as status, coalesce(r.n, 0) as n
      from rebuilt_counts r
      full join (select * from app_public.ledger_event_daily_counts k where k.organization_id = org) c
        on c.day = r.day and c.status = r.status
     where coalesce(r.n, 0) <> coalesce(c.n, 0);

  -- As tg_journal_lines__sales_tax keeps them: an entry counts once per tax type, a reversal -1.
  create temporary table rebuilt_tax on commit drop as
    select x.txn_date as day, x.tax_type, sum(x.collected) as collected, sum(x.itcs) as itcs,
           sum(case when j.reverses_entry_id is null then 1 else -1 end) as events
      from (select l.entry_id, l.txn_date, l.tax_type,
                   sum(case when l.tax_on_sale then l.credit - l.debit else 0 end) as collected,
                   sum(case when l.tax_on_sale then 0 else l.debit - l.credit end) as itcs
              from app_public.journal_lines l
             where l.organization_id = org and l.tax_type is not null and not l.voided group by 1, 2, 3) x
      join app_public.journal_entries j on j.id = x.entry_id
     group by 1, 2;
  create temporary table wrong_tax on commit drop as
    select coalesce(r.day, k.day) as day, coalesce(r.tax_type, k.tax_type) as tax_type, coalesce(r.collected, 0) as collected,
           coalesce(r.itcs, 0) as itcs, coalesce(r.events, 0) as events
      from rebuilt_tax r
      full join (select * from app_public.sales_tax_daily_totals k where k.organization_id = org) k
        on k.day = r.day and k.tax_type = r.tax_type
     where coalesce(r.collected, 0) <> coalesce(k.collected, 0) or coalesce(r.itcs, 0) <> coalesce(k.input_tax_credits, 0)
        or coalesce(r.events, 0) <> coalesce(k.events, 0);

  -- All worked out before any is written: rows are locked only for the writes.
  insert into app_public.account_daily_totals as t (organization_id, account_id, day, debit, credit)
    select org, w.account_id, w.day, w.debit, w.credit from wrong_totals w order by 2, 3
    on conflict (organization_id, account_id, day) do update set debit = excluded.debit, credit = excluded.credit;
  insert into app_public.ledger_event_daily_counts as t (organization_id, day, status, n)
    select org, w.day, w.status, w.n from wrong_counts w order by 2, 3
    on conflict (organization_id, day, status) do update set n = excluded.n;
  insert into app_public.sales_tax_daily_totals as t (organization_id, day, tax_type, collected, input_tax_credits, events)
    select org, w.day, w.tax_type, w.collected, w.itcs, w.events from wrong_tax w order by 2, 3
    on conflict (organization_id, day, tax_type) do update
      set collected = excluded.collected, input_tax_credits = excluded.input_tax_credits, events = excluded.events;
  select count(*) into v_totals_kept from rebuilt_totals;
  select count(*) into v_totals_wrong from wrong_totals;
  select count(*) into v_counts_kept from rebuilt_counts;
  select count(*) into v_counts_wrong from wrong_counts;
  select count(*) into v_tax_kept from rebuilt_tax;
  select count(*) into v_tax_wrong from wrong_tax;

  return jsonb_build_object(
    'organizationId', org,
    'equal', v_totals_wrong = 0 and v_counts_wrong = 0 and v_tax_wrong = 0,
    'accountDays', v_totals_kept, 'accountDaysRepaired', v_totals_wrong,
    'statusDays', v_counts_kept, 'statusDaysRepaired', v_counts_wrong,
    'salesTaxDays', v_tax_kept, 'salesTaxDaysRepaired', v_tax_wrong,
    'ms', round(extract(epoch from clock_timestamp() - started) * 1000));
end $$;
--! EndIncluded ledger/daily-totals.sql

-- Tax lines posted before lines named their tax: the line of each entry on its event's tax account
-- (never its category's or payment account's), named by the event's code when the code puts one
-- tax type there, else GST/HST when the event has no code; a combined code's line (GST and QST in
-- one line) cannot be divided and stays unnamed. Their sales tax totals follow from the update
-- (tg_journal_lines__sales_tax), and their amounts do not change.
alter table app_public.journal_lines disable trigger _100_immutable;
update app_public.journal_lines l
   set tax_type = x.tax_type, tax_on_sale = x.sale
  from (select j.id as entry_id, e.tax_account_id, s.sale,
               case when e.tax_code is null then 'GST_HST'
                    else (select min(t.tax_type) from app_private.tax_included_parts(100, e.tax_code, e.transaction_date) t
                           where t.recoverable or s.sale having count(distinct t.tax_type) = 1) end as tax_type
          from app_public.journal_entries j
          join app_public.ledger_events e on e.id = j.event_id
          cross join lateral (select app_private.is_sale(e.category_id, e.event_type) as sale) s
         where e.tax_amount > 0 and e.splits is null) x
 where l.entry_id = x.entry_id and l.account_id = x.tax_account_id and l.tax_type is null and x.tax_type is not null;
alter table app_public.journal_lines enable trigger _100_immutable;
