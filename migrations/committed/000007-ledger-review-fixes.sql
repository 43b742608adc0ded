--! Previous: sha1:0cf143cd3f5252164cc14537c7934ede7e7a31b6
--! Hash: sha1:0358d285653106da7262e92d73fff2b073dab666
--! Message: ledger review fixes

-- Second review (ledger): direction kept on edits, empty status lists, a new rule's matchCount,
-- organizations with books can be deleted by the operator, deleted events are audited.

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
  if memo is not null and length(memo) > 5000 then perform app_private.fail('Memo must be at most 5000 characters.'); end if;
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
      memo = coalesce(update_ledger_event.memo, x.memo),
      functional_amount = v_amount,
      event_type = v_type,
      -- Only a change of type recomputes the direction: an imported event's comes from the sign.
      direction = case when update_ledger_event.event_type is null then x.direction else app_private.direction_for(v_type) end,
      category_id = v_category,
      tax_amount = v_tax
    where x.id = e.id;
  return jsonb_build_object('success', true, 'error', null, 'event', app_private.ledger_event_json_by_id(e.id));
end $$;

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
    -- An empty list matches nothing, in the page and in the total alike.
    select coalesce(array_agg(s), '{}') into v_status from jsonb_array_elements_text(status) s;
    if not (coalesce(v_status, '{}') <@ statuses) then
      perform app_private.fail(format('status must be any of: %s.', array_to_string(statuses, ', ')));
    end if;
    v_where := v_where || ' and e.status = any ($2)';
  end if;
  if since_days is not null then
    if since_days < 0 then perform app_private.fail('sinceDays must not be negative.'); end if;
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
    select coalesce(array_agg(x::uuid), '{}') into v_accounts from jsonb_array_elements_text(account_ids) x;
    v_where := v_where || ' and e.category_id = any ($8)';
  end if;
  if category_ids is not null then
    select coalesce(array_agg(x::uuid), '{}') into v_categories from jsonb_array_elements_text(category_ids) x;
    v_where := v_where || ' and e.category_id = any ($9)';
  end if;
  if payment_account_ids is not null then
    select coalesce(array_agg(x::uuid), '{}') into v_payments from jsonb_array_elements_text(payment_account_ids) x;
    v_where := v_where || ' and e.payment_account_id = any ($10)';
  end if;
  if search is not null and search <> '' then
    v_pattern := app_private.like_pattern(search);
    v_where := v_where || ' and (e.merchant_name ilike $11 or e.memo ilike $11)';
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

-- A deleted event (processor imports can be deleted) leaves its last values in the trail.
create or replace function app_private.tg_ledger_events__audit_delete() returns trigger
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
begin
  -- An organization being deleted takes its events with it: nothing to record for it.
  if not exists (select 1 from app_public.organizations o where o.id = old.organization_id) then return null; end if;
  insert into app_public.ledger_event_audit (organization_id, event_id, action, actor_api_key_id, actor_user_id, changes)
    select old.organization_id, old.id, coalesce(nullif(current_setting('app.audit_action', true), ''), 'delete'),
           app_public.current_api_key_id(), app_public.current_user_id(),
           coalesce(jsonb_object_agg(f.key, jsonb_build_object('old', f.value, 'new', null)), '{}'::jsonb)
      from jsonb_each(to_jsonb(old)) f
     where f.value <> 'null'::jsonb and f.key not in ('id', 'organization_id', 'created', 'updated');
  return null;
end $$;
drop trigger if exists _800_audit_delete on app_public.ledger_events;
create trigger _800_audit_delete after delete on app_public.ledger_events
  for each row execute function app_private.tg_ledger_events__audit_delete();
