--! Previous: sha1:55090f6f9aecfc6a3ba5bf2beeaf6b0827d98b0c
--! Hash: sha1:1ef936960dea2a38d6cce141278137165652b167
--! Message: Category rules with conditions, outcomes and a priority, chosen by one function; suggestions from confirmed history; the change feed, events marked synced, pending bank rows

-- Category rules with conditions, outcomes and an order; suggestions from confirmed history; the
-- change feed, events marked synced with their external ids, and pending bank rows.

alter table app_public.category_rules add column if not exists priority integer not null default 100;
alter table app_public.category_rules add column if not exists direction text;
alter table app_public.category_rules add column if not exists amount_min numeric(20,2);
alter table app_public.category_rules add column if not exists amount_max numeric(20,2);
alter table app_public.category_rules add column if not exists payment_account_id uuid;
alter table app_public.category_rules add column if not exists contact_id uuid;
alter table app_public.category_rules add column if not exists tax_code text;
alter table app_public.category_rules add column if not exists splits jsonb;
alter table app_public.category_rules drop constraint if exists category_rules_priority_check;
alter table app_public.category_rules add constraint category_rules_priority_check check (priority between 0 and 1000000);
alter table app_public.category_rules drop constraint if exists category_rules_direction_check;
alter table app_public.category_rules add constraint category_rules_direction_check check (direction in ('in', 'out'));
alter table app_public.category_rules drop constraint if exists category_rules_amount_range;
alter table app_public.category_rules add constraint category_rules_amount_range
  check (amount_min >= 0 and amount_max >= 0 and amount_min <= amount_max); -- each null-tolerant, so either bound may be absent
alter table app_public.category_rules drop constraint if exists category_rules_splits_check;
alter table app_public.category_rules add constraint category_rules_splits_check
  check (splits is null or jsonb_typeof(splits) = 'array' and tax_code is null);
alter table app_public.category_rules drop constraint if exists category_rules_payment_account_fkey;
alter table app_public.category_rules add constraint category_rules_payment_account_fkey
  foreign key (organization_id, payment_account_id) references app_public.accounts (organization_id, id);
alter table app_public.category_rules drop constraint if exists category_rules_contact_fkey;
alter table app_public.category_rules add constraint category_rules_contact_fkey
  foreign key (organization_id, contact_id) references app_public.contacts (organization_id, id);
alter table app_public.category_rules drop constraint if exists category_rules_tax_code_fkey;
alter table app_public.category_rules add constraint category_rules_tax_code_fkey
  foreign key (tax_code) references app_public.sales_tax_codes (code);
-- Two rules may share a pattern when their conditions differ.
drop index if exists app_public.category_rules_pattern_key;
create unique index if not exists category_rules_conditions_key on app_public.category_rules
  (organization_id, lower(vendor_pattern), direction, amount_min, amount_max, payment_account_id) nulls not distinct;
create index if not exists category_rules_contact_idx on app_public.category_rules (organization_id, contact_id) where contact_id is not null;

-- What one rule is asked about an event: set-based choice over many events at once.
do $$ begin
  if to_regtype('app_private.rule_subject') is null then
    create type app_private.rule_subject as (id uuid, merchant_name text, direction text, amount numeric,
      payment_account_id uuid, event_type text, transaction_date date, contact_id uuid);
  end if;
end $$;

-- How often each category was confirmed for a merchant (its name with case, spaces, digits and
-- store numbers left out), kept by a trigger on the events.
create table if not exists app_public.merchant_category_counts (
  organization_id uuid not null references app_public.organizations (id) on delete cascade,
  merchant text not null,
  category_id uuid not null,
  -- No check that it stays at 0 or more: a decrement arrives as an insert of -1 that meets the row.
  confirmations integer not null,
  primary key (organization_id, merchant, category_id)
);
alter table app_public.merchant_category_counts drop constraint if exists merchant_category_counts_confirmations_check;
alter table app_public.merchant_category_counts enable row level security;
alter table app_public.merchant_category_counts force row level security;

-- The change feed: one row per change of an event, kept 30 days.
create table if not exists app_public.ledger_change_feed (
  organization_id uuid not null references app_public.organizations (id) on delete cascade,
  -- The writing transaction's id (xid8 as bigint, which PostGraphile reads).
  txid bigint not null default pg_current_xact_id()::text::bigint,
  id bigint generated always as identity,
  event_id uuid not null,
  kind text not null check (kind in ('created', 'updated', 'classified', 'confirmed', 'reconciled', 'ignored',
    'reversed', 'synced', 'deleted')),
  at timestamptz not null default now(),
  primary key (organization_id, txid, id)
);
create index if not exists ledger_change_feed_at_idx on app_public.ledger_change_feed using brin (at);
alter table app_public.ledger_change_feed enable row level security;
alter table app_public.ledger_change_feed force row level security;

-- The ids an event has in the systems it was exported to.
create table if not exists app_public.ledger_event_external_refs (
  organization_id uuid not null,
  event_id uuid not null,
  external_system text not null check (length(external_system) between 1 and 100),
  external_id text not null check (length(external_id) between 1 and 255),
  synced_at timestamptz not null default now(),
  primary key (organization_id, event_id, external_system),
  foreign key (organization_id, event_id) references app_public.ledger_events (organization_id, id) on delete cascade
);
create unique index if not exists ledger_event_external_refs_external_key
  on app_public.ledger_event_external_refs (organization_id, external_system, external_id);
alter table app_public.ledger_event_external_refs enable row level security;
alter table app_public.ledger_event_external_refs force row level security;

-- Pending bank rows waiting for their posted row, found by account and day.
create index if not exists ledger_events_pending_idx on app_public.ledger_events (organization_id, payment_account_id, transaction_date)
  where status = 'pending';

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

-- A rule's percentage splits as lines of an event's amount: each line its share rounded to the
-- cent, the largest line taking what rounding leaves, a line of 0.00 left out; each line's tax
-- from its code (split_line).
create or replace function app_private.rule_split_lines(splits jsonb, event_type text, amount numeric, on_day date) returns jsonb
  language sql stable as
$$
  with s as (
    select x.v, x.n, round(amount * (x.v->>'percent')::numeric / 100, 2) share,
           row_number() over (order by (x.v->>'percent')::numeric desc, x.n) = 1 largest
      from jsonb_array_elements(splits) with ordinality x (v, n)
  ), lines as (
    select s.v, s.n, s.share + case when s.largest then amount - (select sum(share) from s) else 0 end line_amount from s
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
    select c.x, u.account_ids, u.fits, lower(normalize((c.x).vendor_pattern, NFC)) lpattern
      from (select r from app_public.category_rules r where r.organization_id = org and r.id is distinct from (candidate).id
            union all
            select candidate where (candidate).id is not null) c (x)
      cross join lateral app_private.rule_reach(c.x) u
     where u.fits <> '{}'
  ), subject as materialized (
    select s.*, lower(normalize(s.merchant_name, NFC)) lname from unnest(subjects) s
  ), named as (
    select n.lname, r.x, r.account_ids, r.fits
      from (select distinct s.lname from subject s) n join rule r on n.lname like r.lpattern
  ), chosen as (
    select distinct on (s.id) s.id, s.event_type, s.amount, s.transaction_date, s.contact_id, n.x
      from subject s join named n on n.lname = s.lname
     where s.event_type = any (n.fits)
       and ((n.x).direction is null or (n.x).direction = s.direction)
       and (s.amount >= (n.x).amount_min or (n.x).amount_min is null)
       and (s.amount <= (n.x).amount_max or (n.x).amount_max is null)
       and ((n.x).payment_account_id is null or (n.x).payment_account_id = s.payment_account_id)
       and coalesce(s.payment_account_id <> all (n.account_ids), true)
     order by s.id, (n.x).priority, length((n.x).vendor_pattern) desc, (n.x).created, (n.x).id
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
  -- In id order, as every writer of several events locks them.
  perform 1 from app_public.ledger_events e
   where e.id in (select c.event_id from app_private.rule_changes(r, only_unclassified) c) order by e.id for no key update;
  update app_public.ledger_events e set category_id = c.category_id, splits = c.splits, tax_amount = c.tax_amount,
      tax_code = c.tax_code, tax_account_id = c.tax_account_id, contact_id = c.contact_id
    from app_private.rule_changes(r, only_unclassified) c
   where e.id = c.event_id and e.status = 'needs_review';
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
-- new rule). Writes nothing. An amount bound or a condition is removed by an empty string.
create or replace function app_private.checked_rule(r app_public.category_rules, vendor_pattern text, category_id uuid,
    priority integer, direction text, amount_min text, amount_max text, payment_account_id uuid, contact_id uuid,
    tax_code text, splits jsonb) returns app_public.category_rules
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
    r.account_id := app_private.largest_split_category(r.splits);
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
    r.amount_min := case when amount_min = '' then null else app_private.parse_amount(amount_min, 'amountMin must be a decimal string.', true) end;
  end if;
  if amount_max is not null then
    r.amount_max := case when amount_max = '' then null else app_private.parse_amount(amount_max, 'amountMax must be a decimal string.', true) end;
  end if;
  if r.amount_min > r.amount_max then perform app_private.fail('amountMin must not be above amountMax.'); end if;
  if payment_account_id is not null then
    perform app_private.check_payment_account(payment_account_id);
    r.payment_account_id := payment_account_id;
  end if;
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
grant execute on function app_private.checked_rule(r app_public.category_rules, vendor_pattern text, category_id uuid, priority integer, direction text, amount_min text, amount_max text, payment_account_id uuid, contact_id uuid, tax_code text, splits jsonb) to accounting_visitor;

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
create or replace function app_public.update_category_rule(organization_id uuid, category_rule_id uuid, vendor_pattern text default null,
    category_id uuid default null, priority integer default null, direction text default null, amount_min text default null,
    amount_max text default null, payment_account_id uuid default null, contact_id uuid default null, tax_code text default null,
    splits jsonb default null) returns jsonb
  language plpgsql volatile as
$$
declare r app_public.category_rules;
begin
  perform app_private.assert_org_access(organization_id, false);
  select * into r from app_public.category_rules x
   where x.organization_id = update_category_rule.organization_id and x.id = category_rule_id for no key update;
  if not found then perform app_private.fail('Category rule not found.', 'AP404'); end if;
  r := app_private.checked_rule(r, vendor_pattern, category_id, priority, direction, amount_min, amount_max,
    payment_account_id, contact_id, tax_code, splits);
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
grant execute on function app_public.update_category_rule(organization_id uuid, category_rule_id uuid, vendor_pattern text, category_id uuid, priority integer, direction text, amount_min text, amount_max text, payment_account_id uuid, contact_id uuid, tax_code text, splits jsonb) to accounting_visitor;

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
--! Included rules/suggestions.sql
-- Suggestions from history (docs/api.md, Category rules): for an event waiting for review with no
-- category, the category most often confirmed for the same merchant in the organization, with its
-- share of those confirmations, from 3 of them or more. Never applied on its own.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.merchant_category_counts
drop policy if exists merchant_category_counts_tenant on app_public.merchant_category_counts;
create policy merchant_category_counts_tenant on app_public.merchant_category_counts
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select on app_public.merchant_category_counts to accounting_visitor;

------------------------------------------------------------------------------------------------

-- A merchant as suggestions compare it: case, spaces, punctuation, digits and store numbers
-- ("#123", "Store 45", "No. 7") left out: "STARBUCKS #123" and "Starbucks 456" are one merchant.
create or replace function app_private.merchant_family(merchant_name text) returns text
  language sql immutable parallel safe as
$$ select regexp_replace(regexp_replace(lower(normalize(merchant_name, NFC)),
     '(#|\m(store|no|nr|unit|loc|location)\M\.?)\s*[0-9]+', ' ', 'g'), '[^[:alpha:]]+', '', 'g') $$;
grant execute on function app_private.merchant_family(merchant_name text) to accounting_visitor;

-- The counts follow every insert, change and deletion of events: an event counts while it is
-- confirmed (or synced, or reconciled) with a category. Statement-level, from the transition
-- tables (dynamic SQL sees them too), as the daily counts are kept.
create or replace function app_private.tg_ledger_events__merchant_counts() returns trigger
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
declare
  v_rows text := case tg_op
    when 'INSERT' then 'select n.*, 1 k from new_rows n'
    when 'UPDATE' then 'select n.*, 1 k from new_rows n union all select o.*, -1 from old_rows o'
    -- Rows of an organization being deleted go with it.
    else 'select o.*, -1 k from old_rows o where exists (select 1 from app_public.organizations g where g.id = o.organization_id)' end;
begin
  execute format($q$
    insert into app_public.merchant_category_counts as t (organization_id, merchant, category_id, confirmations)
      select x.organization_id, app_private.merchant_family(x.merchant_name), x.category_id, sum(x.k)
        from (%s) x
       where x.status in ('confirmed', 'synced', 'reconciled') and x.category_id is not null
         and app_private.merchant_family(x.merchant_name) <> ''
       group by 1, 2, 3 having sum(x.k) <> 0
       order by 1, 2, 3
      on conflict (organization_id, merchant, category_id) do update set confirmations = t.confirmations + excluded.confirmations
  $q$, v_rows);
  return null;
end $$;
grant execute on function app_private.tg_ledger_events__merchant_counts() to accounting_visitor;

drop trigger if exists _510_merchant_counts_insert on app_public.ledger_events;
create trigger _510_merchant_counts_insert after insert on app_public.ledger_events
  referencing new table as new_rows for each statement execute function app_private.tg_ledger_events__merchant_counts();
drop trigger if exists _510_merchant_counts_update on app_public.ledger_events;
create trigger _510_merchant_counts_update after update on app_public.ledger_events
  referencing old table as old_rows new table as new_rows for each statement execute function app_private.tg_ledger_events__merchant_counts();
drop trigger if exists _510_merchant_counts_delete on app_public.ledger_events;
create trigger _510_merchant_counts_delete after delete on app_public.ledger_events
  referencing old table as old_rows for each statement execute function app_private.tg_ledger_events__merchant_counts();

-- LedgerEvent.suggestedCategory: {account {id, name}, confidence, basis}, or null. The category
-- most confirmed for the merchant (the first by name of equals), its share of the merchant's
-- confirmations as confidence (two decimals), basis their number; only from 3 confirmations, and
-- only a category that is active and fits the event.
create or replace function app_private.suggested_category(org uuid, merchant_name text, event_type text) returns jsonb
  language sql stable as
$$
  with c as (
    select m.category_id, m.confirmations from app_public.merchant_category_counts m
     where m.organization_id = org and m.merchant = app_private.merchant_family(merchant_name) and m.confirmations > 0
  ), total as (select sum(c.confirmations) n from c)
  select jsonb_build_object('account', jsonb_build_object('id', a.id, 'name', a.name),
           'confidence', round(c.confirmations::numeric / total.n, 2), 'basis', total.n)
    from c cross join total join app_public.accounts a on a.organization_id = org and a.id = c.category_id
   where total.n >= 3 and a.active and app_private.category_fits(event_type, a.classification)
   order by c.confirmations desc, a.name, a.id
   limit 1
$$;
grant execute on function app_private.suggested_category(org uuid, merchant_name text, event_type text) to accounting_visitor;
--! EndIncluded rules/suggestions.sql
--! Included ledger/changes.sql
-- The change feed (docs/api.md, The change feed): every change to an organization's events, for
-- integrators who poll instead of taking webhooks. A change is written by the statement that
-- makes it, in its transaction, with that transaction's id. A page reads only the changes of
-- transactions older than every transaction still running (the snapshot's xmin), in (transaction,
-- change) order: a change committed late can therefore never fall behind a cursor already handed
-- out, as it could with a timestamp or a plain sequence. Kept 30 days.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.ledger_change_feed
drop policy if exists ledger_change_feed_tenant on app_public.ledger_change_feed;
create policy ledger_change_feed_tenant on app_public.ledger_change_feed
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select, insert on app_public.ledger_change_feed to accounting_visitor;

------------------------------------------------------------------------------------------------

-- How long a cursor stays valid: the changes are kept this long.
create or replace function app_private.ledger_changes_retention() returns interval
  language sql immutable parallel safe as
$$ select interval '30 days' $$;
grant execute on function app_private.ledger_changes_retention() to accounting_visitor;

-- The kind of one change of an event: a move to another status names it (a reversal's too),
-- else a change of its classification, else of its other fields; none when nothing a reader
-- sees changed.
create or replace function app_private.change_kind(o app_public.ledger_events, n app_public.ledger_events) returns text
  language sql immutable parallel safe as
$$
  select case
    when o.id is null then 'created'
    when n.id is null then 'deleted'
    when n.reversal_entry_id is not null and o.reversal_entry_id is null then 'reversed'
    when n.status is distinct from o.status then case n.status
      when 'confirmed' then 'confirmed' when 'synced' then 'synced' when 'reconciled' then 'reconciled'
      when 'ignored' then 'ignored' else 'updated' end
    when (n.category_id, n.splits, n.tax_amount, n.tax_code, n.tax_account_id, n.contact_id, n.payment_account_id)
         is distinct from (o.category_id, o.splits, o.tax_amount, o.tax_code, o.tax_account_id, o.contact_id, o.payment_account_id)
      then 'classified'
    when (n.merchant_name, n.functional_amount, n.transaction_date, n.memo, n.event_type, n.direction, n.has_document, n.reference)
         is distinct from (o.merchant_name, o.functional_amount, o.transaction_date, o.memo, o.event_type, o.direction, o.has_document, o.reference)
      then 'updated'
  end
$$;
grant execute on function app_private.change_kind(o app_public.ledger_events, n app_public.ledger_events) to accounting_visitor;

-- One row per changed event per statement, from the transition tables (dynamic SQL sees them).
create or replace function app_private.tg_ledger_events__changes() returns trigger
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
declare
  v_rows text := case tg_op
    when 'INSERT' then 'new_rows n left join (select * from new_rows limit 0) o on true'
    when 'UPDATE' then 'new_rows n join old_rows o on o.id = n.id'
    -- An organization being deleted takes its feed with it.
    else 'old_rows o left join (select * from old_rows limit 0) n on true
           where exists (select 1 from app_public.organizations g where g.id = o.organization_id)' end;
begin
  execute format($q$
    insert into app_public.ledger_change_feed (organization_id, event_id, kind)
      select d.organization_id, d.id, d.kind
        from (select coalesce(n.organization_id, o.organization_id) organization_id, coalesce(n.id, o.id) id,
                     app_private.change_kind(o, n) kind
                from %s) d
       where d.kind is not null
       order by d.id
  $q$, v_rows);
  return null;
end $$;
grant execute on function app_private.tg_ledger_events__changes() to accounting_visitor;

drop trigger if exists _820_changes_insert on app_public.ledger_events;
create trigger _820_changes_insert after insert on app_public.ledger_events
  referencing new table as new_rows for each statement execute function app_private.tg_ledger_events__changes();
drop trigger if exists _820_changes_update on app_public.ledger_events;
create trigger _820_changes_update after update on app_public.ledger_events
  referencing old table as old_rows new table as new_rows for each statement execute function app_private.tg_ledger_events__changes();
drop trigger if exists _820_changes_delete on app_public.ledger_events;
create trigger _820_changes_delete after delete on app_public.ledger_events
  referencing old table as old_rows for each statement execute function app_private.tg_ledger_events__changes();

-- A cursor is "<transaction>.<change>" of the last change read.
drop function if exists app_private.change_cursor(xid8, bigint);
create or replace function app_private.change_cursor(txid bigint, id bigint) returns text
  language sql immutable parallel safe as
$$ select txid::text || '.' || id::text $$;
grant execute on function app_private.change_cursor(txid bigint, id bigint) to accounting_visitor;

-- ledgerChanges(organizationId, after, limit): {changes: [{cursor, eventId, kind, at, event}],
-- nextCursor, hasMore}. `event` is the event as it is now (null once deleted). Without `after`,
-- from the oldest change kept. An unknown or expired cursor is refused naming the oldest valid one.
create or replace function app_public.ledger_changes(organization_id uuid, after text default null, "limit" integer default null)
  returns jsonb
  language plpgsql stable as
$$
declare
  v_limit integer := app_private.page_size("limit");
  v_txid bigint := 0;
  v_id bigint := 0;
  v_horizon bigint := pg_snapshot_xmin(pg_current_snapshot())::text::bigint;
  v_oldest text;
  v_page jsonb;
  v_count integer;
begin
  perform app_private.assert_org_access(organization_id, false);
  if after is not null then
    if after ~ '^[0-9]{1,18}\.[0-9]{1,18}$' then
      v_txid := split_part(after, '.', 1)::bigint;
      v_id := split_part(after, '.', 2)::numeric;
    end if;
    if not exists (select 1 from app_public.ledger_change_feed c
                    where c.organization_id = ledger_changes.organization_id and c.txid = v_txid and c.id = v_id
                      and c.at >= now() - app_private.ledger_changes_retention()) then
      select app_private.change_cursor(c.txid, c.id) into v_oldest from app_public.ledger_change_feed c
       where c.organization_id = ledger_changes.organization_id and c.at >= now() - app_private.ledger_changes_retention()
       order by c.txid, c.id limit 1;
      perform app_private.fail(case when v_oldest is null
        then 'The cursor is unknown or has expired (changes are kept 30 days), and no change is kept: read again without after.'
        else format('The cursor is unknown or has expired (changes are kept 30 days). The oldest valid cursor is %s; read again without after to start from the oldest change kept.', v_oldest) end);
    end if;
  end if;
  with page as (
    select c.txid, c.id, c.event_id, c.kind, c.at
      from app_public.ledger_change_feed c
     where c.organization_id = ledger_changes.organization_id and (c.txid, c.id) > (v_txid, v_id) and c.txid < v_horizon
       and c.at >= now() - app_private.ledger_changes_retention()
     order by c.txid, c.id
     limit v_limit + 1
  ), numbered as (
    select p.*, row_number() over (order by p.txid, p.id) rn from page p
  )
  select coalesce(jsonb_agg(jsonb_build_object('cursor', app_private.change_cursor(n.txid, n.id), 'eventId', n.event_id,
           'kind', n.kind, 'at', app_private.iso(n.at), 'event', app_private.ledger_event_json_by_id(n.event_id)) order by n.rn)
           filter (where n.rn <= v_limit), '[]'),
         count(*)
    into v_page, v_count
    from numbered n;
  return jsonb_build_object('changes', v_page,
    'nextCursor', coalesce(v_page -> -1 ->> 'cursor', after),
    'hasMore', v_count > v_limit);
end $$;
grant execute on function app_public.ledger_changes(organization_id uuid, after text, "limit" integer) to accounting_visitor;

-- Changes older than the retention go (the hourly purge).
create or replace function app_private.purge_ledger_changes() returns void
  language sql as
$$ delete from app_public.ledger_change_feed c where c.at < now() - app_private.ledger_changes_retention() $$;
--! EndIncluded ledger/changes.sql
--! Included ledger/external-refs.sql
-- Events exported to another system (docs/api.md, The change feed): markLedgerEventsSynced moves
-- confirmed events to `synced` and keeps each one's id in that system (LedgerEvent.externalRefs).
-- A synced event counts in the books as a confirmed one and is changed only by a reversal.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.ledger_event_external_refs
drop policy if exists ledger_event_external_refs_tenant on app_public.ledger_event_external_refs;
create policy ledger_event_external_refs_tenant on app_public.ledger_event_external_refs
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select, insert, update on app_public.ledger_event_external_refs to accounting_visitor;
grant select on app_public.ledger_event_external_refs to reporting_reader;

------------------------------------------------------------------------------------------------

-- LedgerEvent.externalRefs: [{externalSystem, externalId, syncedAt}], by system.
create or replace function app_private.external_refs_json(event_id uuid) returns jsonb
  language sql stable as
$$ select coalesce(jsonb_agg(jsonb_build_object('externalSystem', x.external_system, 'externalId', x.external_id,
     'syncedAt', app_private.iso(x.synced_at)) order by x.external_system), '[]')
     from app_public.ledger_event_external_refs x where x.event_id = external_refs_json.event_id $$;
grant execute on function app_private.external_refs_json(event_id uuid) to accounting_visitor;

-- markLedgerEventsSynced(organizationId, eventIds, externalSystem, externalIds): the i-th event
-- has the i-th id in the system. Every event must be confirmed (or already synced or reconciled:
-- its id in this system is then replaced); all are marked or none. At most 500 per call.
create or replace function app_public.mark_ledger_events_synced(organization_id uuid, event_ids jsonb, external_system text,
    external_ids jsonb) returns jsonb
  language plpgsql volatile as
$$
declare
  max_events constant integer := 500;
  v_ids uuid[];
  v_refs text[];
  v_system text := app_private.clean_text(external_system);
  v_problem text;
  v_already uuid[];
begin
  perform app_private.assert_org_access(organization_id, false);
  perform set_config('app.audit_action', 'sync', true);
  v_ids := app_private.uuid_list(event_ids, 'eventIds');
  if jsonb_typeof(external_ids) is distinct from 'array'
     or exists (select 1 from jsonb_array_elements(external_ids) x where jsonb_typeof(x) <> 'string') then
    perform app_private.fail('externalIds must be a list of strings.');
  end if;
  select array_agg(app_private.clean_text(x #>> '{}') order by i) into v_refs from jsonb_array_elements(external_ids) with ordinality t (x, i);
  if coalesce(array_length(v_ids, 1), 0) = 0 then perform app_private.fail('eventIds must list at least one event.'); end if;
  if array_length(v_ids, 1) > max_events then perform app_private.fail(format('At most %s events per call.', max_events)); end if;
  if array_length(v_ids, 1) is distinct from array_length(v_refs, 1) then
    perform app_private.fail('eventIds and externalIds must have the same length: the i-th id is the i-th event''s.');
  end if;
  if v_system is null or length(v_system) not between 1 and 100 then
    perform app_private.fail('externalSystem must be 1 to 100 characters.');
  end if;
  if exists (select 1 from unnest(v_refs) r where r is null or length(r) not between 1 and 255) then
    perform app_private.fail('Each external id must be 1 to 255 characters.');
  end if;
  if (select count(distinct i) from unnest(v_ids) i) <> array_length(v_ids, 1) then
    perform app_private.fail('Each event at most once in eventIds.');
  end if;
  if (select count(distinct r) from unnest(v_refs) r) <> array_length(v_refs, 1) then
    perform app_private.fail('Each external id at most once in externalIds.');
  end if;
  -- In id order, as every writer of several events locks them.
  perform 1 from app_public.ledger_events e where e.id = any (v_ids) order by e.id for no key update;
  select format(case when e.id is null then 'Ledger event %s not found.' else 'Event %s is %s: only confirmed events can be marked synced.' end,
                i.id, replace(e.status, '_', ' '))
    into v_problem
    from unnest(v_ids) with ordinality i (id, n)
    left join app_public.ledger_events e on e.id = i.id
   where e.id is null or e.status not in ('confirmed', 'synced', 'reconciled')
   order by i.n limit 1;
  if v_problem is not null then perform app_private.fail(v_problem); end if;
  select format('External id %s of %s is already on event %s.', x.external_id, v_system, x.event_id) into v_problem
    from unnest(v_ids, v_refs) t (id, ref)
    join app_public.ledger_event_external_refs x
      on x.organization_id = mark_ledger_events_synced.organization_id and x.external_system = v_system
     and x.external_id = t.ref and x.event_id <> t.id
   limit 1;
  if v_problem is not null then perform app_private.fail(v_problem); end if;

  select coalesce(array_agg(e.id), '{}') into v_already from app_public.ledger_events e
   where e.id = any (v_ids) and e.status in ('synced', 'reconciled');
  insert into app_public.ledger_event_external_refs as x (organization_id, event_id, external_system, external_id)
    select mark_ledger_events_synced.organization_id, t.id, v_system, t.ref from unnest(v_ids, v_refs) t (id, ref) order by t.id
    on conflict on constraint ledger_event_external_refs_pkey do update set external_id = excluded.external_id, synced_at = now();
  update app_public.ledger_events e set status = 'synced' where e.id = any (v_ids) and e.status = 'confirmed';
  -- An event already synced or reconciled changes no field of its own: its new id is still a change.
  insert into app_public.ledger_change_feed (organization_id, event_id, kind)
    select mark_ledger_events_synced.organization_id, a.id, 'synced' from unnest(v_already) a (id) order by a.id;
  return jsonb_build_object('success', true, 'error', null, 'syncedCount', array_length(v_ids, 1),
    'events', (select jsonb_agg(app_private.ledger_event_json_by_id(i) order by o) from unnest(v_ids) with ordinality t (i, o)));
end $$;
grant execute on function app_public.mark_ledger_events_synced(organization_id uuid, event_ids jsonb, external_system text, external_ids jsonb) to accounting_visitor;
--! EndIncluded ledger/external-refs.sql
--! Included ledger/pending.sql
-- Pending bank rows (docs/api.md, Bank statement imports): a row imported with `pending: true` is a
-- `pending` event, which cannot be confirmed. Its posted row, in a later import, settles it in
-- place (bank_statement_matches finds it, import_bank_statement moves it): the posted date, the
-- posted amount, `needs_review`; no second event. One not posted within 14 days of its date is
-- set to `ignored` by the hourly task.
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

-- The account's pending events a statement's posted rows may settle, each at most once: the same
-- reference first, else the same amount, direction and merchant within 5 days, the nearest day
-- first. Greedy, as few rows get here; every row and event of the pairing is taken once.
create or replace function app_private.pending_settlements(org uuid, payment_account uuid)
  returns table (row_index integer, event_id uuid)
  language plpgsql volatile as
$$
declare
  v_pair record;
  v_rows integer[] := '{}';
  v_events uuid[] := '{}';
  v_from date;
  v_to date;
begin
  select min(s.transaction_date) - app_private.pending_settle_days(), max(s.transaction_date) + app_private.pending_settle_days()
    into v_from, v_to from pg_temp.statement_rows s where not s.pending;
  for v_pair in
    select s.row_index, e.id
      from pg_temp.statement_rows s
      join app_public.ledger_events e
        on e.organization_id = org and e.payment_account_id = payment_account and e.status = 'pending'
       and e.transaction_date between v_from and v_to
       and ((s.reference is not null and e.reference = s.reference)
            or (e.functional_amount = s.amount and e.direction = s.direction
                and app_private.merchant_key(e.merchant_name) = s.merchant_key
                and abs(s.transaction_date - e.transaction_date) <= app_private.pending_settle_days()))
     where not s.pending
     order by s.row_index, (s.reference is not null and e.reference = s.reference) desc,
              abs(s.transaction_date - e.transaction_date), e.created, e.id
  loop
    if not (v_pair.row_index = any (v_rows)) and not (v_pair.id = any (v_events)) then
      v_rows := v_rows || v_pair.row_index;
      v_events := v_events || v_pair.id;
    end if;
  end loop;
  return query select * from unnest(v_rows, v_events);
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
    'contact', case when e.contact_id is not null then (select jsonb_build_object('id', k.id, 'displayName', k.display_name)
        from app_public.contacts k where k.id = e.contact_id) end,
    'journalEntry', case when j.id is null then null else jsonb_build_object('id', j.id,
        'txnDate', to_char(j.txn_date, 'YYYY-MM-DD'), 'totalAmount', app_private.money(j.total_amount),
        'voidedAt', app_private.iso(j.voided_at)) end,
    'reversalEntry', (select jsonb_build_object('id', r.id, 'txnDate', to_char(r.txn_date, 'YYYY-MM-DD'),
        'totalAmount', app_private.money(r.total_amount), 'voidedAt', app_private.iso(r.voided_at))
        from app_public.journal_entries r where r.id = e.reversal_entry_id),
    'cleared', exists (select 1 from app_public.reconciliation_clearings k where k.event_id = e.id),
    'suggestedCategory', case when e.status = 'needs_review' and e.category_id is null
      then app_private.suggested_category(e.organization_id, e.merchant_name, e.event_type) end,
    'externalRefs', case when e.status in ('synced', 'reconciled') then app_private.external_refs_json(e.id) else '[]'::jsonb end,
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
  -- Behavior rule 10: without a category, the rule for the event (rule_classifications) classifies
  -- it. (Asked about no event when a category is given: the record still gets its fields, null.)
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

drop function if exists app_public.list_ledger_events(uuid, jsonb, boolean, integer, text, text, text, text, jsonb, jsonb, jsonb, text, integer, integer, text, text, uuid);
create or replace function app_public.list_ledger_events(organization_id uuid, status jsonb default null,
    has_document boolean default null, since_days integer default null, date_from text default null,
    date_to text default null, amount_min text default null, amount_max text default null,
    account_ids jsonb default null, category_ids jsonb default null, payment_account_ids jsonb default null,
    search text default null, "limit" integer default null, "offset" integer default null,
    sort_by text default null, sort_dir text default null, reconciliation_id uuid default null,
    contact_ids jsonb default null) returns jsonb
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
     and v_payments is null and v_contacts is null and v_pattern is null then
    select coalesce(sum(c.n), 0) into v_total from app_public.ledger_event_daily_counts c
     where c.organization_id = list_ledger_events.organization_id
       and (v_status is null or c.status = any (v_status))
       and (v_from is null or c.day >= v_from) and (v_to is null or c.day <= v_to);
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
  if e.status = 'pending' then
    perform app_private.fail('A pending event cannot be confirmed: it is settled when the bank posts it.');
  end if;
  if e.status <> 'needs_review' then perform app_private.fail('Only events in needs_review can be confirmed.'); end if;
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
  if e.status = 'synced' then perform app_private.fail('Event is synced: a synced event is changed only by reversal.'); end if;
  -- A payment's documents are owed again; they are locked before the journal, as payments lock them.
  perform app_private.release_allocations(e.id);
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
  perform app_private.release_allocations(e.id);
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
-- or synced by an undo, to ignored by a reversal), its reversal and its receipts change. Nor is it deleted
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
      new.tax_code, new.journal_entry_id, new.reference, new.splits, new.contact_id)
     is distinct from
     (old.organization_id, old.event_type, old.direction, old.merchant_name, old.functional_amount, old.functional_currency,
      old.transaction_date, old.memo, old.category_id, old.payment_account_id, old.tax_amount, old.tax_account_id,
      old.tax_code, old.journal_entry_id, old.reference, old.splits, old.contact_id)
     or new.status not in ('reconciled', 'confirmed', 'synced', 'ignored')
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
  -- Back to confirmed (synced, when exported) unless the other side of a transfer stays reconciled.
  update app_public.ledger_events e
     set status = case when exists (select 1 from app_public.ledger_event_external_refs x where x.event_id = e.id)
                       then 'synced' else 'confirmed' end
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

-- Each row of a statement matched against the books (docs/api.md, Bank statement imports), one
-- to one: an existing event absorbs at most one row, so n identical rows are all skipped only when
-- n identical events exist.
-- Existing events are those of the payment account or without one, ignored events included (a
-- rejected duplicate must not come back). In order of precedence:
--   0. a posted row settles the account's pending event of it (pending_settlements): not a
--      duplicate, not a new event;
--   1. equal references on the account: a full match, whatever else differs;
--   2. same date, amount, direction and merchant: a full match, unless both carry references
--      and they differ (then they are different transactions);
--   3. a transfer booked into this account from another (a processor payout, a card payment from
--      chequing): same amount, money moving the row's way, dated 0 to 5 days before the row;
--   4. same date, amount and direction, other merchant: a possible match (flagged, imported).
-- Identical rows and identical events pair up in order (the k-th row with the k-th event), so
-- every stage is one statement, whatever the number of rows. The rows and the candidates of
-- stages 2 and 4 sit in temporary tables of the caller's session, dropped at commit.
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
  v_pairs record;
  v_rows_taken integer[] := '{}';
  v_events_taken uuid[] := '{}';
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

  -- 0. Pending events settled by their posted rows.
  update pg_temp.statement_rows s set event_id = p.event_id, settles = true
    from app_private.pending_settlements(org, payment_account) p
   where s.row_index = p.row_index;

  -- 1. References: the k-th row of a reference takes the k-th event of it on this account.
  with r as (
    select s.row_index, s.reference, row_number() over (partition by s.reference order by s.row_index) k
      from pg_temp.statement_rows s where s.reference is not null and not s.settles
  ), e as (
    select e.id, e.reference, row_number() over (partition by e.reference order by e.created, e.id) k
      from app_public.ledger_events e
     where e.organization_id = org and e.payment_account_id = payment_account
       and e.reference in (select s.reference from pg_temp.statement_rows s where s.reference is not null)
       and not exists (select 1 from pg_temp.statement_rows t where t.settles and t.event_id = e.id)
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
        functional_amount = m.amount, reference = coalesce(e.reference, m.reference),
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
--! Included access/idempotency.sql
-- Idempotency-Key claims and stored responses, per credential, for 24 hours.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.idempotency_records
drop policy if exists idempotency_records_tenant on app_public.idempotency_records;
create policy idempotency_records_tenant on app_public.idempotency_records
  using (organization_id = app_public.current_organization_id());

------------------------------------------------------------------------------------------------

create or replace function app_private.claim_idempotency_key(credential text, idem_key text, digest text, org uuid)
  returns table (outcome text, response_status integer, response_body text)
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
declare r app_public.idempotency_records;
begin
  -- Expired after 24 hours; a claim whose request died without answering is free after 5 minutes.
  delete from app_public.idempotency_records x
    where x.credential = claim_idempotency_key.credential and x.idempotency_key = idem_key
      and (x.created < now() - interval '24 hours'
           or (x.response_status is null and x.created < now() - interval '5 minutes'));
  insert into app_public.idempotency_records (organization_id, credential, idempotency_key, request_digest)
    values (org, claim_idempotency_key.credential, idem_key, digest)
    on conflict do nothing
    returning * into r;
  if r.credential is not null then
    return query select 'claimed'::text, null::integer, null::text;
    return;
  end if;
  select * into r from app_public.idempotency_records x
    where x.credential = claim_idempotency_key.credential and x.idempotency_key = idem_key;
  return query select
    case when r.request_digest <> digest then 'mismatch'
         when r.response_status is null then 'in_progress'
         else 'replay' end,
    r.response_status, r.response_body;
end $$;
grant execute on function app_private.claim_idempotency_key(credential text, idem_key text, digest text, org uuid) to accounting_authenticator;

create or replace function app_private.purge_expired() returns void
  language sql as
$$
  delete from app_public.idempotency_records where created < now() - interval '24 hours';
  delete from app_public.rate_limit_windows where window_start < now() - interval '1 hour';
  select app_private.purge_ledger_changes();
  select app_private.expire_pending_events();
$$;

create or replace function app_private.save_idempotent_response(credential text, idem_key text, status integer, body text)
  returns void
  language sql security definer set search_path = pg_catalog, app_public as
$$
  update app_public.idempotency_records x set response_status = status, response_body = body
   where x.credential = save_idempotent_response.credential and x.idempotency_key = idem_key
$$;
grant execute on function app_private.save_idempotent_response(credential text, idem_key text, status integer, body text) to accounting_authenticator;

-- A request that ran out of time changed nothing and is worth retrying: its claim is dropped, not
-- answered, so a retry with the same key runs instead of replaying the timeout.
create or replace function app_private.release_idempotency_key(credential text, idem_key text)
  returns void
  language sql security definer set search_path = pg_catalog, app_public as
$$
  delete from app_public.idempotency_records x
   where x.credential = release_idempotency_key.credential and x.idempotency_key = idem_key and x.response_status is null
$$;
grant execute on function app_private.release_idempotency_key(credential text, idem_key text) to accounting_authenticator;
--! EndIncluded access/idempotency.sql

-- The counts of what is confirmed so far.
insert into app_public.merchant_category_counts (organization_id, merchant, category_id, confirmations)
  select e.organization_id, app_private.merchant_family(e.merchant_name), e.category_id, count(*)
    from app_public.ledger_events e
   where e.status in ('confirmed', 'synced', 'reconciled') and e.category_id is not null
     and app_private.merchant_family(e.merchant_name) <> ''
   group by 1, 2, 3
  on conflict do nothing;
