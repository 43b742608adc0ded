--! Previous: sha1:b301b2d0ec37244edf29def7d026cc7f0794626e
--! Hash: sha1:b810745a358210b8195a9bff12b10081599eeed4
--! Message: A rule's required fields and default priority checked in one place

-- A rule's required fields and default priority checked in one place (checked_rule).

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
  -- A new rule (r is a blank record) must be given these two; its priority defaults to 100.
  if r.vendor_pattern is null then perform app_private.fail('Vendor pattern is required.'); end if;
  if r.account_id is null then perform app_private.fail('categoryId or splits is required.'); end if;
  r.priority := coalesce(r.priority, 100);
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
    r.id := gen_random_uuid();
    r.organization_id := preview_category_rule.organization_id;
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
