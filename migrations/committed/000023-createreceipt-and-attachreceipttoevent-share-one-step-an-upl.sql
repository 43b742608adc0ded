--! Previous: sha1:d3aee185be082581f6dc26842d20bd2371c53d93
--! Hash: sha1:13854b28cf9a0768b0e24c2a465385bfb9ce3c99
--! Message: createReceipt and attachReceiptToEvent share one step: an upload made a receipt

-- createReceipt and attachReceiptToEvent share one step: an upload made a receipt.
--! Included receipts/receipts.sql
-- Receipts: the record of a stored file, its lifecycle, and the operations a person uses on it
-- (contract: Receipt; decisions §9, §12). Intake is in intake.sql, matching in matching.sql.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.receipts
drop policy if exists receipts_tenant on app_public.receipts;
create policy receipts_tenant on app_public.receipts
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select, insert on app_public.receipts to accounting_visitor;
grant update (status, match_status, event_id, linked_by, linked_at, match_details, receipt_date, updated) on app_public.receipts to accounting_visitor;

-- app_public.receipt_unlinked_pairs
drop policy if exists receipt_unlinked_pairs_tenant on app_public.receipt_unlinked_pairs;
create policy receipt_unlinked_pairs_tenant on app_public.receipt_unlinked_pairs
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select, insert on app_public.receipt_unlinked_pairs to accounting_visitor;

-- An event removed under a linked receipt (a processor import deleted) sets only event_id null:
-- the link's other columns follow, so the receipt reads unmatched rather than linked to nothing.
create or replace function app_private.tg_receipts__link_state() returns trigger
  language plpgsql as
$$
begin
  if new.event_id is null and old.event_id is not null then
    new.linked_by := null;
    new.linked_at := null;
    if new.match_status = 'matched' then new.match_status := 'unmatched'; end if;
    -- The person's link is gone with its event: the receipt waits for review (and matching) again.
    if new.status = 'reviewed' then new.status := case when new.extracted_at is null then 'draft' else 'processed' end; end if;
  end if;
  return new;
end $$;

-- hasDocument is true while a receipt is linked: kept by the database, whoever links or unlinks.
create or replace function app_private.tg_receipts__has_document() returns trigger
  language plpgsql as
$$
declare ids uuid[];
begin
  if tg_op = 'INSERT' then ids := array[new.event_id];
  elsif tg_op = 'DELETE' then ids := array[old.event_id];
  elsif new.event_id is distinct from old.event_id then ids := array[old.event_id, new.event_id];
  else return null;
  end if;
  -- Locked first, in id order: a concurrent link or unlink of the same event waits here, and the
  -- update below (a new statement) then sees what it committed.
  perform 1 from app_public.ledger_events e where e.id = any (ids) order by e.id for no key update;
  update app_public.ledger_events e
     set has_document = exists (select 1 from app_public.receipts r where r.event_id = e.id)
   where e.id = any (ids)
     and e.has_document is distinct from exists (select 1 from app_public.receipts r where r.event_id = e.id);
  return null;
end $$;
grant execute on function app_private.tg_receipts__has_document() to accounting_visitor;

drop trigger if exists _100_touch_updated on app_public.receipts;
create trigger _100_touch_updated before update on app_public.receipts
  for each row execute function app_private.tg__touch_updated();

drop trigger if exists _200_link_state on app_public.receipts;
create trigger _200_link_state before update of event_id on app_public.receipts
  for each row execute function app_private.tg_receipts__link_state();

drop trigger if exists _500_has_document on app_public.receipts;
create trigger _500_has_document after insert or update of event_id or delete on app_public.receipts
  for each row execute function app_private.tg_receipts__has_document();

------------------------------------------------------------------------------------------------

-- The receipt as the API shows it. imageUrl is signed by the server from objectKey and contentType.
create or replace function app_private.receipt_json(r app_public.receipts, e app_public.ledger_events, full_text boolean default false)
  returns jsonb
  language sql stable as
$$
  select jsonb_build_object(
    'id', r.id, 'vendorName', r.vendor_name, 'amount', r.amount, 'currency', r.currency,
    'receiptDate', to_char(r.receipt_date, 'YYYY-MM-DD'),
    'dateReadings', (select coalesce(jsonb_agg(to_char(d, 'YYYY-MM-DD') order by d), '[]'::jsonb) from unnest(r.date_readings) d),
    'status', r.status, 'source', r.source, 'matchStatus', r.match_status,
    'filename', r.filename, 'contentType', r.content_type, 'size', r.size, 'objectKey', r.object_key,
    'uploadedAt', app_private.iso(r.uploaded_at), 'extractedAt', app_private.iso(r.extracted_at),
    'extractionMethod', r.extraction_method, 'extractionError', r.extraction_error,
    'extractedText', case when full_text then r.extracted_text end,
    'linkedBy', r.linked_by, 'linkedAt', app_private.iso(r.linked_at),
    'event', case when e.id is null then null else jsonb_build_object('id', e.id, 'merchantName', e.merchant_name,
      'status', e.status, 'transactionDate', to_char(e.transaction_date, 'YYYY-MM-DD'),
      'functionalAmount', app_private.money(e.functional_amount)) end,
    'created', app_private.iso(r.created), 'updated', app_private.iso(r.updated))
$$;
grant execute on function app_private.receipt_json(r app_public.receipts, e app_public.ledger_events, full_text boolean) to accounting_visitor;

create or replace function app_private.receipt_json_by_id(receipt_id uuid, full_text boolean default false) returns jsonb
  language sql stable as
$$ select app_private.receipt_json(r, e, full_text) from app_public.receipts r
     left join app_public.ledger_events e on e.id = r.event_id where r.id = receipt_json_by_id.receipt_id $$;
grant execute on function app_private.receipt_json_by_id(receipt_id uuid, full_text boolean) to accounting_visitor;

-- A receipt of the organization in scope, locked for a change; a clear error when there is none.
create or replace function app_private.receipt_for_update(receipt_id uuid) returns app_public.receipts
  language plpgsql volatile as
$$
declare r app_public.receipts;
begin
  select * into r from app_public.receipts x where x.id = receipt_id for update;
  if not found then perform app_private.fail('Receipt not found.', 'AP404'); end if;
  return r;
end $$;
grant execute on function app_private.receipt_for_update(receipt_id uuid) to accounting_visitor;

-- An event a receipt may be linked to, locked: links to one event are made one at a time.
create or replace function app_private.event_for_link(event_id uuid) returns app_public.ledger_events
  language plpgsql volatile as
$$
declare e app_public.ledger_events;
begin
  select * into e from app_public.ledger_events x where x.id = event_id for no key update;
  if not found then perform app_private.fail('Ledger event not found.', 'AP404'); end if;
  if e.status = 'ignored' then perform app_private.fail('A receipt cannot be linked to a rejected event.'); end if;
  return e;
end $$;
grant execute on function app_private.event_for_link(event_id uuid) to accounting_visitor;

-- The receipt a stored file becomes (decisions §12): the same bytes twice in one organization give
-- back the first receipt. A new one is queued for extraction in the same transaction.
create or replace function app_private.store_receipt(org uuid, source text, object_key text, filename text,
    content_type text, size bigint, sha256 text, intake_message_id uuid default null)
  returns jsonb
  language plpgsql volatile as
$$
#variable_conflict use_column
declare
  v_id uuid;
begin
  insert into app_public.receipts (organization_id, source, object_key, filename, content_type, size, sha256, intake_message_id)
    values (org, source, object_key, left(coalesce(filename, ''), 255), content_type, size, sha256, intake_message_id)
    on conflict (organization_id, sha256) do nothing
    returning id into v_id;
  if v_id is null then
    select r.id into v_id from app_public.receipts r where r.organization_id = org and r.sha256 = store_receipt.sha256;
    return jsonb_build_object('receiptId', v_id, 'duplicate', true);
  end if;
  perform app_private.queue_receipt_extraction(org, v_id);
  return jsonb_build_object('receiptId', v_id, 'duplicate', false);
end $$;
grant execute on function app_private.store_receipt(org uuid, source text, object_key text, filename text, content_type text, size bigint, sha256 text, intake_message_id uuid) to accounting_visitor;

-- A web upload of this organization, by its key (another organization's key is not found).
create or replace function app_private.upload_by_key(object_key text) returns app_public.uploads
  language plpgsql stable as
$$
declare u app_public.uploads;
begin
  select * into u from app_public.uploads x where x.object_key = upload_by_key.object_key
     and x.organization_id = app_public.current_organization_id();
  if not found then perform app_private.fail('Upload not found: upload the file with POST /uploads first.', 'AP404'); end if;
  return u;
end $$;
grant execute on function app_private.upload_by_key(object_key text) to accounting_visitor;

-- The web upload under this key (of the organization in scope) as a receipt, named `filename` or
-- as uploaded: {receiptId, duplicate}.
create or replace function app_private.store_upload_receipt(object_key text, filename text) returns jsonb
  language plpgsql volatile as
$$
declare u app_public.uploads := app_private.upload_by_key(object_key);
begin
  return app_private.store_receipt(u.organization_id, 'web_upload', u.object_key,
    coalesce(nullif(app_private.clean_text(filename), ''), u.filename), u.content_type, u.size, u.sha256);
end $$;
grant execute on function app_private.store_upload_receipt(object_key text, filename text) to accounting_visitor;

create or replace function app_public.create_receipt(organization_id uuid, object_key text, filename text default null) returns jsonb
  language plpgsql volatile as
$$
declare stored jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  stored := app_private.store_upload_receipt(object_key, filename);
  return jsonb_build_object('success', true, 'error', null, 'receiptId', stored->'receiptId', 'duplicate', stored->'duplicate',
    'receipt', app_private.receipt_json_by_id((stored->>'receiptId')::uuid));
end $$;
grant execute on function app_public.create_receipt(organization_id uuid, object_key text, filename text) to accounting_visitor;

-- A person's link (decisions §12): the receipt is reviewed, matched, and linked to this event
-- only; a link made by matching to this event is confirmed.
create or replace function app_private.link_receipt(r app_public.receipts, e app_public.ledger_events) returns void
  language plpgsql volatile as
$$
begin
  if r.status = 'rejected' then perform app_private.fail('A rejected receipt cannot be linked.'); end if;
  update app_public.receipts x set event_id = e.id, linked_by = 'person', linked_at = now(), status = 'reviewed',
         match_status = 'matched', receipt_date = coalesce(app_private.reading_nearest(x.date_readings, e.transaction_date), x.receipt_date)
   where x.id = r.id;
end $$;
grant execute on function app_private.link_receipt(r app_public.receipts, e app_public.ledger_events) to accounting_visitor;

create or replace function app_public.attach_receipt_to_event(organization_id uuid, event_id uuid, object_key text, filename text default null)
  returns jsonb
  language plpgsql volatile as
$$
declare
  e app_public.ledger_events;
  r app_public.receipts;
begin
  perform app_private.assert_org_access(organization_id, false);
  -- The receipt, then the event: the order every link takes its locks in.
  r := app_private.receipt_for_update((app_private.store_upload_receipt(object_key, filename)->>'receiptId')::uuid);
  e := app_private.event_for_link(event_id);
  if r.event_id is not null and r.event_id <> e.id and r.linked_by = 'person' then
    perform app_private.fail('This file is already attached to another transaction; unlink it first.');
  end if;
  perform app_private.link_receipt(r, e);
  return jsonb_build_object('success', true, 'error', null, 'receiptId', r.id);
end $$;
grant execute on function app_public.attach_receipt_to_event(organization_id uuid, event_id uuid, object_key text, filename text) to accounting_visitor;

create or replace function app_public.link_receipt_to_event(organization_id uuid, receipt_id uuid, event_id uuid) returns jsonb
  language plpgsql volatile as
$$
declare
  r app_public.receipts;
  e app_public.ledger_events;
begin
  perform app_private.assert_org_access(organization_id, false);
  -- The receipt, then the event: the order matching locks them in.
  r := app_private.receipt_for_update(receipt_id);
  e := app_private.event_for_link(event_id);
  perform app_private.link_receipt(r, e);
  return jsonb_build_object('success', true, 'error', null, 'receipt', app_private.receipt_json_by_id(r.id));
end $$;
grant execute on function app_public.link_receipt_to_event(organization_id uuid, receipt_id uuid, event_id uuid) to accounting_visitor;

-- Unlinking remembers the pair (never linked again automatically) and leaves the receipt to
-- matching for any other event.
create or replace function app_private.unlink_receipt(r app_public.receipts, new_status text) returns void
  language plpgsql volatile as
$$
begin
  if r.event_id is not null then
    insert into app_public.receipt_unlinked_pairs (organization_id, receipt_id, event_id)
      values (r.organization_id, r.id, r.event_id) on conflict do nothing;
  end if;
  update app_public.receipts x set event_id = null, linked_by = null, linked_at = null, status = new_status,
         match_status = case when new_status = 'draft' then 'pending' else 'unmatched' end, match_details = null
   where x.id = r.id;
end $$;
grant execute on function app_private.unlink_receipt(r app_public.receipts, new_status text) to accounting_visitor;

create or replace function app_public.unlink_receipt(organization_id uuid, receipt_id uuid) returns jsonb
  language plpgsql volatile as
$$
declare r app_public.receipts;
begin
  perform app_private.assert_org_access(organization_id, false);
  r := app_private.receipt_for_update(receipt_id);
  if r.event_id is null then perform app_private.fail('Receipt is not linked to a transaction.'); end if;
  if r.status = 'rejected' then perform app_private.fail('Receipt is rejected.'); end if;
  perform app_private.unlink_receipt(r, case when r.extracted_at is null then 'draft' else 'processed' end);
  if r.extracted_at is not null then
    perform app_private.queue_receipt_matching(r.organization_id, array[r.id]);
  end if;
  return jsonb_build_object('success', true, 'error', null, 'receipt', app_private.receipt_json_by_id(r.id));
end $$;
grant execute on function app_public.unlink_receipt(organization_id uuid, receipt_id uuid) to accounting_visitor;

create or replace function app_public.reject_receipt(organization_id uuid, receipt_id uuid) returns jsonb
  language plpgsql volatile as
$$
declare r app_public.receipts;
begin
  perform app_private.assert_org_access(organization_id, false);
  r := app_private.receipt_for_update(receipt_id);
  if r.status = 'rejected' then perform app_private.fail('Receipt is already rejected.'); end if;
  perform app_private.unlink_receipt(r, 'rejected');
  return jsonb_build_object('success', true, 'error', null, 'receipt', app_private.receipt_json_by_id(r.id));
end $$;
grant execute on function app_public.reject_receipt(organization_id uuid, receipt_id uuid) to accounting_visitor;

create or replace function app_public.get_receipt(organization_id uuid, receipt_id uuid) returns jsonb
  language plpgsql stable as
$$
declare result jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  result := app_private.receipt_json_by_id(receipt_id, true);
  if result is null then perform app_private.fail('Receipt not found.', 'AP404'); end if;
  return result;
end $$;
grant execute on function app_public.get_receipt(organization_id uuid, receipt_id uuid) to accounting_visitor;

-- Newest first (by arrival), filtered; the paginated envelope (decisions §5).
create or replace function app_public.list_receipts(organization_id uuid, "limit" integer default null, "offset" integer default null,
    search text default null, status text default null, source text default null, match_status text default null,
    event_id uuid default null) returns jsonb
  language plpgsql stable as
$$
declare
  lim integer;
  off integer;
  pattern text := app_private.like_pattern(nullif(app_private.clean_text(search), ''));
begin
  perform app_private.assert_org_access(organization_id, false);
  lim := app_private.page_size("limit");
  off := app_private.page_offset("offset");
  if status is not null and status not in ('draft', 'processed', 'reviewed', 'rejected') then
    perform app_private.fail('status must be one of: draft, processed, reviewed, rejected.');
  end if;
  if source is not null and source not in ('web_upload', 'email', 'sms', 'mailbox', 'cloud_drive') then
    perform app_private.fail('source must be one of: web_upload, email, sms, mailbox, cloud_drive.');
  end if;
  if match_status is not null and match_status not in ('pending', 'matched', 'unmatched') then
    perform app_private.fail('matchStatus must be one of: pending, matched, unmatched.');
  end if;
  return (
    with f as (
      select r from app_public.receipts r
       where r.organization_id = list_receipts.organization_id
         and (pattern is null or r.vendor_name ilike pattern)
         and (list_receipts.status is null or r.status = list_receipts.status)
         and (list_receipts.source is null or r.source = list_receipts.source)
         and (list_receipts.match_status is null or r.match_status = list_receipts.match_status)
         and (list_receipts.event_id is null or r.event_id = list_receipts.event_id)
    ), page as (
      select f.r, row_number() over (order by (f.r).uploaded_at desc, (f.r).id desc) as rn
        from f order by (f.r).uploaded_at desc, (f.r).id desc limit lim offset off
    )
    select jsonb_build_object(
      'items', coalesce((select jsonb_agg(app_private.receipt_json(page.r, e) order by page.rn)
                           from page left join app_public.ledger_events e on e.id = (page.r).event_id), '[]'::jsonb),
      'totalCount', (select count(*) from f), 'pageSize', lim, 'offset', off));
end $$;
grant execute on function app_public.list_receipts(organization_id uuid, "limit" integer, "offset" integer, search text, status text, source text, match_status text, event_id uuid) to accounting_visitor;

-- What the extraction job read (worker). A receipt a person already reviewed or rejected keeps
-- its status; a draft becomes processed, with empty fields when nothing could be read.
create or replace function app_private.record_receipt_extraction(receipt_id uuid, extraction jsonb) returns void
  language plpgsql volatile as
$$
declare
  r app_public.receipts;
  readings date[];
  v_amount numeric(20,2);
begin
  select * into r from app_public.receipts x where x.id = receipt_id for update;
  if not found then return; end if;  -- deleted meanwhile: nothing to record
  perform app_private.scope_organization(r.organization_id);
  select coalesce(array_agg(d order by d), '{}') into readings
    from (select distinct app_private.try_date(t) d from jsonb_array_elements_text(coalesce(extraction->'dateReadings', '[]'::jsonb)) t
           where app_private.try_date(t) is not null limit 2) x;
  v_amount := case when extraction->>'amount' ~ '^-?\d{1,15}(\.\d{1,2})?$' then (extraction->>'amount')::numeric end;
  update app_public.receipts x set
      vendor_name = left(nullif(btrim(extraction->>'vendorName'), ''), 500),
      amount = v_amount,
      currency = case when extraction->>'currency' ~ '^[A-Z]{3}$' then extraction->>'currency' end,
      date_readings = readings,
      -- Until matching picks a reading: the one nearest the arrival day and not after it.
      receipt_date = case when x.linked_by = 'person' then coalesce(app_private.reading_nearest(readings, (select e.transaction_date from app_public.ledger_events e where e.id = x.event_id)), x.receipt_date)
                          else app_private.reading_before(readings, (x.uploaded_at at time zone 'UTC')::date) end,
      extracted_text = left(extraction->>'text', 100000),
      extraction_method = left(extraction->>'method', 50),
      extraction_error = left(extraction->>'error', 2000),
      extracted_at = now(),
      status = case when x.status = 'draft' then 'processed' else x.status end
   where x.id = r.id;
  if r.status in ('draft', 'processed') and r.event_id is null then
    perform app_private.queue_receipt_matching(r.organization_id, array[r.id]);
  end if;
end $$;

-- A YYYY-MM-DD day that exists, else null (an extractor's reading is never trusted to be one).
create or replace function app_private.try_date(day text) returns date
  language plpgsql immutable as
$$
begin
  if day !~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' then return null; end if;
  return make_date(substr(day, 1, 4)::int, substr(day, 6, 2)::int, substr(day, 9, 2)::int);
exception when others then
  return null;
end $$;

-- Of a receipt's date readings, the one nearest a day (a linked event's date).
create or replace function app_private.reading_nearest(readings date[], day date) returns date
  language sql immutable parallel safe as
$$ select d from unnest(readings) d order by abs(d - day) nulls last, d limit 1 $$;
grant execute on function app_private.reading_nearest(readings date[], day date) to accounting_visitor;

-- Of a receipt's date readings, the one nearest the arrival day and not after it (else the earliest).
create or replace function app_private.reading_before(readings date[], arrived date) returns date
  language sql immutable parallel safe as
$$ select d from unnest(readings) d order by d > arrived, abs(d - arrived), d limit 1 $$;
grant execute on function app_private.reading_before(readings date[], arrived date) to accounting_visitor;
--! EndIncluded receipts/receipts.sql
