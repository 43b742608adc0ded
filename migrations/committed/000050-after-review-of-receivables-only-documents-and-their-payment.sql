--! Previous: sha1:b7270f6cdbb791a2156d115b346a63708d14eb52
--! Hash: sha1:098070cffddd62af3a86357361813ea451684c2a
--! Message: After review of receivables: only documents and their payments post to Accounts Receivable and Payable; a control account made once and an inactive one refused; documents locked before a payment's event; a processor import's deletion gives back what it paid; a contact with documents keeps its type; suggestions match a number as a word

-- After review of receivables and payables: only documents and their payments post to Accounts
-- Receivable and Payable (categories and rules refuse them), so that contact balances stay those
-- of the books; a control account made once, and an inactive one refused; documents locked
-- before the payment's event (no deadlock); a processor import's deletion gives back what its
-- lines paid; a contact with documents keeps its type; suggestions match a number as a word.
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
  if a.account_type in ('accounts_receivable', 'accounts_payable') then
    perform app_private.fail('Accounts Receivable and Payable take only invoices, bills and their payments.');
  end if;
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
   where d.id in (select (x->>'documentId')::uuid from jsonb_array_elements(case when jsonb_typeof(allocations) = 'array' then allocations end) x
                   where x->>'documentId' ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$')
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
begin
  if jsonb_typeof(allocations) is distinct from 'array' or jsonb_array_length(allocations) = 0 then
    perform app_private.fail('Allocations must be a list of at least one document.');
  end if;
  if jsonb_array_length(allocations) > max_allocations then perform app_private.fail(format('At most %s allocations.', max_allocations)); end if;
  if exists (select 1 from jsonb_array_elements(allocations) x
              where x->>'documentId' is null or x->>'documentId' !~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$') then
    perform app_private.fail('Each allocation needs a documentId.');
  end if;
  if (select count(distinct x->>'documentId') from jsonb_array_elements(allocations) x) < jsonb_array_length(allocations) then
    perform app_private.fail('Each document at most once in allocations.');
  end if;
  for a in
    select (x->>'documentId')::uuid as document_id,
           app_private.parse_amount(x->>'amount', 'An allocation''s amount must be a positive decimal string.') as amount
      from jsonb_array_elements(allocations) x
     order by (x->>'documentId')::uuid
  loop
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
    insert into app_public.payment_allocations (organization_id, event_id, document_id, amount) values (e.organization_id, e.id, d.id, a.amount);
    update app_public.documents x set amount_paid = x.amount_paid + a.amount, status = app_private.paid_status(x.amount_paid + a.amount, x.total)
     where x.id = d.id;
    if d.amount_paid + a.amount = d.total then
      perform app_private.record_webhook_event(e.organization_id, kind || '.paid', d.id,
        (select app_private.document_json(x) from app_public.documents x where x.id = d.id));
    end if;
  end loop;
  if (select sum(app_private.parse_amount(x->>'amount', 'An allocation''s amount must be a positive decimal string.'))
        from jsonb_array_elements(allocations) x) <> e.functional_amount then
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
--! Included imports/processor-balance.sql
-- Processor balance imports (contract: Server-side commands, CSV row mapping; docs/api.md,
-- Processor imports).
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

-- Starts an import in the caller's transaction: the organization in scope and an empty staging
-- table (dropped at the end of the transaction).
create or replace function app_private.processor_import_begin(org uuid) returns void
  language plpgsql volatile as
$$
begin
  perform set_config('app.organization_id', org::text, true);
  if not exists (select 1 from app_public.organizations o where o.id = org) then
    perform app_private.fail('Organization not found.', 'AP404');
  end if;
  if to_regclass('pg_temp.processor_import_rows') is not null then drop table pg_temp.processor_import_rows; end if;
  create temp table processor_import_rows (
    line integer not null,
    id text not null,
    row_type text not null,
    amount numeric(20,2) not null,
    fee numeric(20,2) not null,
    created date not null,
    description text not null,
    source_ref text not null,
    currency text not null
  ) on commit drop;
end $$;

-- One chunk of parsed rows (the reader checked every value's form and names the line of a bad one).
create or replace function app_private.processor_import_stage(lines integer[], ids text[], row_types text[],
    amounts numeric[], fees numeric[], dates date[], descriptions text[], sources text[], currencies text[]) returns integer
  language plpgsql volatile as
$$
begin
  insert into pg_temp.processor_import_rows (line, id, row_type, amount, fee, created, description, source_ref, currency)
    select * from unnest(lines, ids, row_types, amounts, fees, dates, descriptions, sources, currencies);
  return coalesce(cardinality(lines), 0);
end $$;

-- Posts the staged rows, set-based whatever their number (the gross revenue method: docs/api.md,
-- Processor imports):
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
  -- Every row in the organization's currency: amounts are booked as they stand, never converted.
  perform app_private.fail(format('Line %s, column %s: "%s" is not the organization''s currency (%s).',
      r.line, case layout when 'A' then 'Currency' else 'currency' end, r.currency, cur))
    from (select x.line, x.currency from pg_temp.processor_import_rows x
           where upper(x.currency) <> cur order by x.line limit 1) r;

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

  perform app_private.record_webhook_event(org, 'processor_import.completed', null, jsonb_build_object(
    'batchId', v_key, 'layout', layout, 'fileName', file_name, 'rows', n_rows, 'created', n_created,
    'status', case when review then 'needs_review' else 'confirmed' end));
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
    -- Linked receipts first: receipt, then event, is the order every link takes its locks in.
    perform 1 from app_public.receipts r join app_public.ledger_events e on e.id = r.event_id
     where e.organization_id = org and e.source = 'processor_import' and e.import_batch_id = any (v_batches)
     order by r.id for update of r;
    -- A line applied to invoices or bills paid them: they are owed again.
    perform app_private.release_allocations(e.id) from app_public.ledger_events e
     where e.organization_id = org and e.source = 'processor_import' and e.import_batch_id = any (v_batches)
       and exists (select 1 from app_public.payment_allocations p where p.event_id = e.id);
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
-- Analysts see who a document is for (reporting.documents), not how to reach them.
grant select (id, organization_id, contact_type, display_name, active) on app_public.contacts to reporting_reader;

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
    -- Its invoices (a customer's) or bills (a vendor's) say which side it is on.
    if lower(btrim(contact_type)) <> c.contact_type
       and exists (select 1 from app_public.documents d where d.contact_id = c.id and d.status <> 'void') then
      perform app_private.fail('A contact with invoices or bills keeps its type.');
    end if;
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

-- Invoices and bills, one row each: what is still due and how late, as of today (receivables:
-- kind invoice; payables: kind bill). Drafts and void documents included, with nothing due.
create or replace view reporting.documents with (security_invoker = true) as
  select d.id, d.organization_id, d.kind, d.number, d.contact_id, c.display_name as contact_name, d.issue_date, d.due_date,
         d.status, d.subtotal, d.tax_total, d.total, d.amount_paid,
         (case when d.status in ('open', 'partially_paid') then d.total - d.amount_paid else 0 end)::numeric(20,2) as amount_due,
         case when d.status in ('open', 'partially_paid') then greatest(current_date - d.due_date, 0) else 0 end as days_past_due
    from app_public.documents d
    join app_public.contacts c on c.id = d.contact_id;
grant select on reporting.documents to reporting_reader;

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
