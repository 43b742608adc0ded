--! Previous: sha1:c19f9c76531bffc07c4e5772797987cef4044923
--! Hash: sha1:ccdb813b58dcba3a9d906351f9a217f20303072a
--! Message: Reading the change again: an event's JSON is planned once and a mutation's events are built in one call; a settled pending event is judged on the row as it is now, keeps a tax set by hand when no rule has one and takes a rule's contact; no settled event counted twice for its rule; no feed change for an organization being deleted

-- Reading the change again: an event's JSON is planned once (generic plan), and the events a
-- mutation returns are built in one call; a pending event settled is judged on the row as it is
-- now (a person's classification while the import runs stays), keeps a tax set by hand when no
-- rule has one, and takes a rule's contact; a rule's count counts no settled event twice; a
-- reconciliation's ticks write no change for an organization being deleted.

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
create or replace function app_private.ledger_event_json_by_id(event_id uuid) returns jsonb
  language sql stable as
$$ select x.event from app_private.ledger_events_json(array[ledger_event_json_by_id.event_id]) x $$;
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
  begin
    insert into app_public.ledger_event_external_refs as x (organization_id, event_id, external_system, external_id)
      select mark_ledger_events_synced.organization_id, t.id, v_system, t.ref from unnest(v_ids, v_refs) t (id, ref) order by t.id
      on conflict on constraint ledger_event_external_refs_pkey do update set external_id = excluded.external_id, synced_at = now();
  exception when unique_violation then
    -- Another call gave one of these ids to another event at the same moment.
    perform app_private.fail(format('An external id of %s given here is already on another event.', v_system));
  end;
  update app_public.ledger_events e set status = 'synced' where e.id = any (v_ids) and e.status = 'confirmed';
  -- An event already synced or reconciled changes no field of its own: its new id is still a change.
  insert into app_public.ledger_change_feed (organization_id, event_id, kind)
    select mark_ledger_events_synced.organization_id, a.id, 'synced' from unnest(v_already) a (id) order by a.id;
  return jsonb_build_object('success', true, 'error', null, 'syncedCount', array_length(v_ids, 1),
    'events', (select jsonb_agg(x.event order by t.o) from unnest(v_ids) with ordinality t (i, o)
                 join app_private.ledger_events_json(v_ids) x on x.id = t.i));
end $$;
grant execute on function app_public.mark_ledger_events_synced(organization_id uuid, event_ids jsonb, external_system text, external_ids jsonb) to accounting_visitor;
--! EndIncluded ledger/external-refs.sql
--! Included ledger/changes.sql
-- The change feed (docs/api.md, The change feed): every change to an organization's events, for
-- integrators who poll instead of taking webhooks. A change is written by the statement that
-- makes it, in its transaction, with that transaction's id. A page reads only the changes of
-- transactions older than every transaction still running (the snapshot's xmin), in (transaction,
-- change) order: a change committed late can therefore never fall behind a cursor already handed
-- out, as it could with a timestamp or a plain sequence. Kept 30 days.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables (and the triggers that write
-- it from other tables: ledger events, reconciliation ticks).

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

-- One row per changed event per statement, from the transition tables; static SQL in each branch,
-- so that its plan is kept (a confirm pays no planning).
create or replace function app_private.tg_ledger_events__changes() returns trigger
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
begin
  if tg_op = 'INSERT' then
    insert into app_public.ledger_change_feed (organization_id, event_id, kind)
      select n.organization_id, n.id, 'created' from new_rows n order by n.id;
  elsif tg_op = 'UPDATE' then
    insert into app_public.ledger_change_feed (organization_id, event_id, kind)
      select d.organization_id, d.id, d.kind
        from (select n.organization_id, n.id, app_private.change_kind(o, n) kind from new_rows n join old_rows o on o.id = n.id) d
       where d.kind is not null
       order by d.id;
  else
    insert into app_public.ledger_change_feed (organization_id, event_id, kind)
      select o.organization_id, o.id, 'deleted' from old_rows o
       -- An organization being deleted takes its feed with it.
       where exists (select 1 from app_public.organizations g where g.id = o.organization_id)
       order by o.id;
  end if;
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

-- A tick or untick in a reconciliation may change what an event shows (`cleared`): one change per
-- event per statement (a transfer is cleared on each of its two accounts).
create or replace function app_private.tg_reconciliation_clearings__changes() returns trigger
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
begin
  if tg_op = 'INSERT' then
    insert into app_public.ledger_change_feed (organization_id, event_id, kind)
      select distinct n.organization_id, n.event_id, 'updated' from new_rows n order by n.event_id;
  else
    insert into app_public.ledger_change_feed (organization_id, event_id, kind)
      select distinct o.organization_id, o.event_id, 'updated' from old_rows o
       -- An organization being deleted takes its feed with it; an event deleted has its own change.
       where exists (select 1 from app_public.organizations g where g.id = o.organization_id)
         and exists (select 1 from app_public.ledger_events e where e.id = o.event_id)
       order by o.event_id;
  end if;
  return null;
end $$;
grant execute on function app_private.tg_reconciliation_clearings__changes() to accounting_visitor;

drop trigger if exists _820_changes_insert on app_public.reconciliation_clearings;
create trigger _820_changes_insert after insert on app_public.reconciliation_clearings
  referencing new table as new_rows for each statement execute function app_private.tg_reconciliation_clearings__changes();
drop trigger if exists _820_changes_delete on app_public.reconciliation_clearings;
create trigger _820_changes_delete after delete on app_public.reconciliation_clearings
  referencing old table as old_rows for each statement execute function app_private.tg_reconciliation_clearings__changes();

-- A cursor is "<transaction>.<change>" of the last change read.
drop function if exists app_private.change_cursor(xid8, bigint);
create or replace function app_private.change_cursor(txid bigint, id bigint) returns text
  language sql immutable parallel safe as
$$ select txid::text || '.' || id::text $$;
grant execute on function app_private.change_cursor(txid bigint, id bigint) to accounting_visitor;

-- ledgerChanges(organizationId, after, limit): {changes: [{cursor, eventId, kind, at, event}],
-- nextCursor, hasMore}. `event` is the event as it is now (null once deleted). Without `after`,
-- from the oldest change kept. An unknown or expired cursor is refused naming the oldest valid one.
-- The page is json, not jsonb: a page of 200 changes with their events is about 240 KB, and jsonb
-- would take each event apart and build it again twice over (into the list, then the page).
create or replace function app_public.ledger_changes(organization_id uuid, after text default null, "limit" integer default null)
  returns json
  language plpgsql stable as
$$
declare
  v_limit integer := app_private.page_size("limit");
  v_txid bigint := 0;
  v_id bigint := 0;
  v_horizon bigint := pg_snapshot_xmin(pg_current_snapshot())::text::bigint;
  v_oldest text;
  v_page json;
  v_last bigint[];
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
    select c.txid, c.id, c.event_id, c.kind, c.at, row_number() over (order by c.txid, c.id) rn
      from (select c.* from app_public.ledger_change_feed c
             where c.organization_id = ledger_changes.organization_id and (c.txid, c.id) > (v_txid, v_id) and c.txid < v_horizon
               and c.at >= now() - app_private.ledger_changes_retention()
             order by c.txid, c.id
             limit v_limit + 1) c
  ), events as materialized (
    -- Each event of the page once (its creation and confirmation are often on one page), built
    -- as a list builds them.
    select e.id, e.event::json event
      from app_private.ledger_events_json(array(select distinct x.event_id from page x where x.rn <= v_limit)) e
  )
  select coalesce(json_agg(json_build_object('cursor', app_private.change_cursor(n.txid, n.id), 'eventId', n.event_id,
           'kind', n.kind, 'at', app_private.iso(n.at), 'event', v.event) order by n.rn) filter (where n.rn <= v_limit), '[]'),
         max(array[n.txid, n.id]) filter (where n.rn <= v_limit),
         count(*)
    into v_page, v_last, v_count
    from page n left join events v on v.id = n.event_id;
  return json_build_object('changes', v_page, 'nextCursor', coalesce(app_private.change_cursor(v_last[1], v_last[2]), after),
    'hasMore', v_count > v_limit);
end $$;
grant execute on function app_public.ledger_changes(organization_id uuid, after text, "limit" integer) to accounting_visitor;

-- Changes older than the retention go (the hourly purge).
create or replace function app_private.purge_ledger_changes() returns void
  language sql as
$$ delete from app_public.ledger_change_feed c where c.at < now() - app_private.ledger_changes_retention() $$;
--! EndIncluded ledger/changes.sql
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
-- `waiting`: a pending event, or one set aside while pending (its posted row is not its duplicate).
drop function if exists app_private.statement_candidates(uuid, uuid, date[], numeric[]);
create or replace function app_private.statement_candidates(org uuid, payment_account uuid, days date[], amounts numeric[])
  returns table (id uuid, transaction_date date, functional_amount numeric, direction text, merchant_name text,
    reference text, created timestamptz, waiting boolean)
  language sql stable security definer set search_path = pg_catalog, app_public, pg_temp set jit = off as
$$
  select e.id, e.transaction_date, e.functional_amount, e.direction, e.merchant_name, e.reference, e.created,
         e.status = 'pending' or e.status = 'ignored' and app_private.ignored_while_pending(org, e.id)
    from app_public.ledger_events e
   where e.organization_id = org and org = app_public.current_organization_id()
     and (e.payment_account_id = payment_account or e.payment_account_id is null)
     and (e.transaction_date, e.functional_amount) in (select d, a from unnest(days, amounts) x (d, a))
$$;
grant execute on function app_private.statement_candidates(org uuid, payment_account uuid, days date[], amounts numeric[]) to accounting_visitor;

-- Pairs of statement rows and events in order of preference, taken greedily: a pair is kept when
-- neither its row nor its event is in a pair kept before it. Matching by a window (of days), not
-- an equal key, is paired this way; few rows get there.
create or replace function app_private.greedy_pairs(pairs app_private.row_event_pair[])
  returns table (row_index integer, event_id uuid)
  language plpgsql immutable as
$$
declare
  p app_private.row_event_pair;
  v_rows integer[] := '{}';
  v_events uuid[] := '{}';
begin
  foreach p in array coalesce(pairs, '{}') loop
    if not (p.row_index = any (v_rows)) and not (p.event_id = any (v_events)) then
      v_rows := v_rows || p.row_index;
      v_events := v_events || p.event_id;
    end if;
  end loop;
  return query select * from unnest(v_rows, v_events);
end $$;
grant execute on function app_private.greedy_pairs(pairs app_private.row_event_pair[]) to accounting_visitor;

-- Each row of a statement matched against the books (docs/api.md, Bank statement imports), one
-- to one: an existing event absorbs at most one row, so n identical rows are all skipped only when
-- n identical events exist.
-- Existing events are those of the payment account or without one, ignored events included (a
-- rejected duplicate must not come back). A posted row is compared with posted events, a pending
-- row with pending ones (an event set aside while pending counts as pending: its posted row is new).
-- In order of precedence:
--   1. equal references on the account, money moving the same way: a full match, whatever else
--      differs;
--   2. same date, amount, direction and merchant: a full match, unless both carry references
--      and they differ (then they are different transactions);
--   3. a posted row left settles the account's pending event of it (pending_settlements);
--   4. a transfer booked into this account from another (a processor payout, a card payment from
--      chequing): same amount, money moving the row's way, dated 0 to 5 days before the row;
--   5. same date, amount and direction, other merchant: a possible match (flagged, imported).
-- Identical rows and identical events pair up in order (the k-th row with the k-th event), so
-- every stage is one statement, whatever the number of rows. The rows and the candidates of
-- stages 2 and 5 sit in temporary tables of the caller's session, dropped at commit.
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


  -- 1. References: the k-th row of a reference takes the k-th event of it on this account.
  with r as (
    select s.row_index, s.reference, s.pending, s.direction,
           row_number() over (partition by s.reference, s.pending, s.direction order by s.row_index) k
      from pg_temp.statement_rows s where s.reference is not null
  ), e as (
    select e.id, e.reference, x.waiting, e.direction,
           row_number() over (partition by e.reference, x.waiting, e.direction order by e.created, e.id) k
      from app_public.ledger_events e
      cross join lateral (select e.status = 'pending' or e.status = 'ignored' and app_private.ignored_while_pending(org, e.id) waiting) x
     where e.organization_id = org and e.payment_account_id = payment_account
       and e.reference in (select s.reference from pg_temp.statement_rows s where s.reference is not null)
  )
  -- A posted row is the duplicate of a posted event, a pending row of a pending one (a pending
  -- event is settled by its posted row: step 3 below).
  update pg_temp.statement_rows s set event_id = e.id, full_match = true
    from r join e on e.reference = r.reference and e.k = r.k and e.waiting = r.pending and e.direction = r.direction
   where s.row_index = r.row_index;

  -- 2. Same day, amount, direction and merchant. Rows with a reference go first, to events
  -- without one (their only possible partners); rows without a reference take any event left.
  foreach v_with_reference in array array[true, false] loop
    with e as (
      select c.id, c.transaction_date, c.functional_amount, c.direction, c.merchant_key, c.waiting,
             row_number() over (partition by c.transaction_date, c.functional_amount, c.direction, c.merchant_key, c.waiting
                                order by c.created, c.id) k
        from pg_temp.statement_candidates c
       where not exists (select 1 from pg_temp.statement_rows t where t.event_id = c.id)
         and (not v_with_reference or c.reference is null)
    ), r as (
      select s.row_index, s.transaction_date, s.amount, s.direction, s.merchant_key, s.pending,
             row_number() over (partition by s.transaction_date, s.amount, s.direction, s.merchant_key, s.pending order by s.row_index) k
        from pg_temp.statement_rows s
       where s.event_id is null and (s.reference is not null) = v_with_reference
    )
    update pg_temp.statement_rows s set event_id = e.id, full_match = true
      from r join e on (e.transaction_date, e.functional_amount, e.direction, e.merchant_key, e.k, e.waiting)
                     = (r.transaction_date, r.amount, r.direction, r.merchant_key, r.k, r.pending)
     where s.row_index = r.row_index;
  end loop;

  -- 3. Posted rows still unmatched settle the account's pending events (pending_settlements).
  update pg_temp.statement_rows s set event_id = p.event_id, settles = true
    from app_private.pending_settlements(org, payment_account) p
   where s.row_index = p.row_index;

  -- 4. Transfers into (or out of) this account booked on another: a date window, not an equal
  -- key, so the pairs are taken greedily, each row its nearest event. Few rows get here.
  update pg_temp.statement_rows s set event_id = t.event_id, full_match = true
    from app_private.greedy_pairs((
      select array_agg(row(s.row_index, e.id)::app_private.row_event_pair
                       order by s.row_index, s.transaction_date - e.transaction_date, e.created, e.id)
        from pg_temp.statement_rows s
        join app_public.ledger_events e
          on e.organization_id = org and e.category_id = payment_account and e.event_type = 'transfer'
         and e.payment_account_id is distinct from payment_account
         and e.functional_amount = s.amount and e.direction <> s.direction
         and e.transaction_date between s.transaction_date - 5 and s.transaction_date
       where s.event_id is null
         and not exists (select 1 from pg_temp.statement_rows t where t.event_id = e.id))) t
   where s.row_index = t.row_index;

  -- 5. Possible matches: same day, amount and direction, another merchant; an event not taken by
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
  ), unclassified as (
    -- Pending events settled with another amount lose their classification (it was made for the
    -- old one); with those never classified, the rules are asked for them as for a new event.
    select e.id, e.merchant_name, e.direction, e.event_type, e.contact_id, e.category_id, m.amount, m.transaction_date
      from m join app_public.ledger_events e on e.id = m.matching_event_id
     where m.settles_pending and e.status = 'pending' and (e.functional_amount <> m.amount or e.category_id is null)
  ), ruled as (
    -- The rule for each new or unclassified event (rule_classifications), as createLedgerEvent
    -- applies it.
    select * from app_private.rule_classifications(org, array(
      select row(f.id, f.merchant_name, f.direction, f.amount, payment_account_id, f.event_type, f.transaction_date, null)::app_private.rule_subject
        from fresh f
      union all
      select row(u.id, u.merchant_name, u.direction, u.amount, payment_account_id, u.event_type, u.transaction_date, u.contact_id)::app_private.rule_subject
        from unclassified u))
  ), settled as (
    -- Whether the classification stays is judged on the row as it is now, not as the statement's
    -- snapshot saw it: a person may classify the pending event while the import runs. It stays
    -- when the amount is the posted one, unless it is empty and a rule has one; otherwise the
    -- rule's (none without a rule: a new amount is classified again). A rule's contact replaces
    -- the event's only when it names one.
    update app_public.ledger_events e set status = 'needs_review', transaction_date = m.transaction_date,
        functional_amount = m.amount, reference = coalesce(m.reference, e.reference),
        category_id = case when (e.functional_amount = m.amount and (e.category_id is not null or r.event_id is null)) then e.category_id else r.category_id end,
        splits = case when (e.functional_amount = m.amount and (e.category_id is not null or r.event_id is null)) then e.splits else r.splits end,
        tax_amount = case when (e.functional_amount = m.amount and (e.category_id is not null or r.event_id is null)) then e.tax_amount else r.tax_amount end,
        tax_code = case when (e.functional_amount = m.amount and (e.category_id is not null or r.event_id is null)) then e.tax_code else r.tax_code end,
        tax_account_id = case when (e.functional_amount = m.amount and (e.category_id is not null or r.event_id is null)) then e.tax_account_id else r.tax_account_id end,
        contact_id = case when (e.functional_amount = m.amount and (e.category_id is not null or r.event_id is null)) then e.contact_id else coalesce(r.contact_id, e.contact_id) end
      from m left join ruled r on r.event_id = m.matching_event_id
     where m.settles_pending and e.id = m.matching_event_id and e.status = 'pending'
     returning 1
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
    -- A settled event the same category again is no new match of its rule.
    update app_public.category_rules r set match_count = r.match_count + c.n
      from (select x.rule_id, count(*) n from ruled x left join unclassified u on u.id = x.event_id
             where u.category_id is distinct from x.category_id group by x.rule_id) c
     where r.id = c.rule_id
  )
  select (select count(*) from inserted), (select count(*) from settled), (select count(*) from m),
         (select coalesce(jsonb_agg(app_private.duplicate_check_json(m.row_index, m.is_duplicate, m.is_possible_duplicate,
                  m.matching_event_id, m.settles_pending) order by m.row_index), '[]') from m)
    into v_imported, v_settled, v_total, v_results;
  -- Each settling row settled its event: one changed meanwhile (expired, rejected) fails the import,
  -- which is then made again, rather than leave the row neither imported nor settled.
  if v_settled <> (select count(*) from jsonb_array_elements(v_results) r where (r->>'settlesPendingEvent')::boolean) then
    perform app_private.fail('A pending event changed during the import: import the statement again.');
  end if;

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
