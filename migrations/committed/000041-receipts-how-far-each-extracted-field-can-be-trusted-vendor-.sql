--! Previous: sha1:6a52d8d66a3cd2dbf7a46055ed6f7f55d3b6b04d
--! Hash: sha1:e076f4d125ec568b450c115d80f6d12642034141
--! Message: Receipts: how far each extracted field can be trusted (vendor, amount and date confidence), and matching that asks more of a receipt with a low-confidence field

-- How far each extracted field can be trusted (high, medium, low; src/receipts/extraction/types.ts):
-- shown on the receipt, and asked more of by matching when low.
alter table app_public.receipts
  add column if not exists vendor_confidence text,
  add column if not exists amount_confidence text,
  add column if not exists date_confidence text;
alter table app_public.receipts drop constraint if exists receipts_field_confidence_check;
alter table app_public.receipts add constraint receipts_field_confidence_check
  check (vendor_confidence in ('high', 'medium', 'low') and amount_confidence in ('high', 'medium', 'low')
     and date_confidence in ('high', 'medium', 'low'));

--! Included receipts/receipts.sql
-- Receipts: the record of a stored file, its lifecycle, and the operations a person uses on it
-- (contract: Receipt; docs/api.md, Records and lifecycle). Intake is in intake.sql, matching in
-- matching.sql.
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
    'extraction', case when r.extracted_at is not null then jsonb_build_object('vendorConfidence', r.vendor_confidence,
      'amountConfidence', r.amount_confidence, 'dateConfidence', r.date_confidence) end,
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

-- The receipt a stored file becomes: the same bytes twice in one organization give
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
  perform app_private.record_webhook_event(org, 'receipt.received', v_id);
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

-- A person's link, which nothing automatic undoes: the receipt is reviewed, matched, and linked
-- to this event only; a link made by matching to this event is confirmed.
create or replace function app_private.link_receipt(r app_public.receipts, e app_public.ledger_events) returns void
  language plpgsql volatile as
$$
begin
  if r.status = 'rejected' then perform app_private.fail('A rejected receipt cannot be linked.'); end if;
  update app_public.receipts x set event_id = e.id, linked_by = 'person', linked_at = now(), status = 'reviewed',
         match_status = 'matched', receipt_date = coalesce(app_private.reading_nearest(x.date_readings, e.transaction_date), x.receipt_date)
   where x.id = r.id;
  -- Linked anew: a person confirming matching's link to the same event is no new match.
  if r.event_id is distinct from e.id then
    perform app_private.record_webhook_event(r.organization_id, 'receipt.matched', r.id);
  end if;
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
  -- A link removed; a receipt never linked (rejected unread, say) changes no match.
  if r.event_id is not null then
    perform app_private.record_webhook_event(r.organization_id, 'receipt.unmatched', r.id);
  end if;
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

-- Newest first (by arrival), filtered; the paginated envelope (docs/api.md, Paging).
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

-- An extractor's confidence in a field (high, medium, low); anything else is no answer, and an
-- answer that says nothing is the least trust: low.
create or replace function app_private.field_confidence(value text) returns text
  language sql immutable parallel safe as
$$ select case when value in ('high', 'medium', 'low') then value else 'low' end $$;

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
      -- A field's confidence only beside a value it describes.
      vendor_confidence = case when nullif(btrim(extraction->>'vendorName'), '') is not null then app_private.field_confidence(extraction->>'vendorConfidence') end,
      amount_confidence = case when v_amount is not null then app_private.field_confidence(extraction->>'amountConfidence') end,
      date_confidence = case when cardinality(readings) > 0 then app_private.field_confidence(extraction->>'dateConfidence') end,
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
--! Included receipts/matching.sql
-- Matching receipts to ledger events (docs/api.md, Matching): candidates in one query, a link only
-- for a unique confident match, precision first. Thresholds measured on the evaluation corpus
-- (`npm run eval:receipts`; bench/README.md, "Receipts: extraction and matching quality").
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Matching for an organization's waiting receipts of these amounts (null: any), when it has any.
-- Drafts count too: their extraction's own matching may run before the event's transaction commits.
create or replace function app_private.queue_waiting_receipt_matching(org uuid, amounts numeric[]) returns void
  language plpgsql volatile security definer set search_path = pg_catalog, app_public, pg_temp as
$$
begin
  if exists (select 1 from app_public.receipts r where r.organization_id = org and r.event_id is null
                and r.status in ('draft', 'processed')) then
    perform app_private.queue_receipt_matching(org, null, amounts);
  end if;
end $$;
grant execute on function app_private.queue_waiting_receipt_matching(org uuid, amounts numeric[]) to accounting_visitor;

-- Per organization, the amounts now on new or changed events; past 500 distinct amounts, all of
-- the organization's waiting receipts.
create or replace function app_private.tg_ledger_events__rematch_receipts() returns trigger
  language plpgsql as
$$
declare c record;
begin
  if tg_op = 'INSERT' then
    for c in select n.organization_id as org, array_agg(distinct n.functional_amount) as amounts,
                    count(distinct n.functional_amount) as n
               from new_rows n group by 1 loop
      perform app_private.queue_waiting_receipt_matching(c.org, case when c.n <= 500 then c.amounts end);
    end loop;
  else
    for c in select n.organization_id as org, array_agg(distinct n.functional_amount) as amounts,
                    count(distinct n.functional_amount) as n
               from new_rows n join old_rows o on o.id = n.id
              where n.functional_amount <> o.functional_amount or n.transaction_date <> o.transaction_date
              group by 1 loop
      perform app_private.queue_waiting_receipt_matching(c.org, case when c.n <= 500 then c.amounts end);
    end loop;
  end if;
  return null;
end $$;
grant execute on function app_private.tg_ledger_events__rematch_receipts() to accounting_visitor;

-- Events changed in amount or date, or new (bank imports, createLedgerEvent, processor imports):
-- the organization's unmatched receipts are matched again, in one job per organization.
drop trigger if exists _900_rematch_receipts_insert on app_public.ledger_events;
create trigger _900_rematch_receipts_insert after insert on app_public.ledger_events
  referencing new table as new_rows for each statement execute function app_private.tg_ledger_events__rematch_receipts();

drop trigger if exists _900_rematch_receipts_update on app_public.ledger_events;
create trigger _900_rematch_receipts_update after update on app_public.ledger_events
  referencing old table as old_rows new table as new_rows for each statement execute function app_private.tg_ledger_events__rematch_receipts();

------------------------------------------------------------------------------------------------

-- The thresholds: a link needs this vendor similarity, and this lead over the runner-up.
create or replace function app_private.receipt_match_thresholds(out min_similarity real, out min_lead real)
  language sql immutable parallel safe as
$$ select 0.35::real, 0.15::real $$;
grant execute on function app_private.receipt_match_thresholds() to accounting_visitor;

-- What a link asks of a receipt with a low-confidence field (a total no arithmetic or label
-- confirms, a date mended from broken digits or merely the first seen, a vendor taken from a
-- forwarded email's sender): its vendor this near the merchant's (the top of the plateau where
-- precision stays 100% on the evaluation corpus), and the event within this many days of its
-- date, not the usual 3.
create or replace function app_private.receipt_match_strict_thresholds(out min_similarity real, out max_day_distance integer)
  language sql immutable parallel safe as
$$ select 0.55::real, 1 $$;
grant execute on function app_private.receipt_match_strict_thresholds() to accounting_visitor;

-- The receipt's fields read with low confidence (src/receipts/extraction/types.ts), by their API names.
create or replace function app_private.receipt_low_confidence_fields(r app_public.receipts) returns text[]
  language sql immutable parallel safe as
$$
  select array_remove(array[case when r.vendor_confidence = 'low' then 'vendor' end,
                            case when r.amount_confidence = 'low' then 'amount' end,
                            case when r.date_confidence = 'low' then 'date' end], null)
$$;
grant execute on function app_private.receipt_low_confidence_fields(r app_public.receipts) to accounting_visitor;

-- A vendor or merchant name reduced to its words: lower case, accents dropped, letters only,
-- without legal suffixes, store words and province codes (bank lines add store numbers, cities
-- and "#"). Shorter than 3 letters in all (an OCR fragment), it is no name: ''.
create or replace function app_private.vendor_key(name text) returns text
  language sql immutable parallel safe as
$$
  select case when length(replace(k, ' ', '')) < 3 then '' else k end
    from (select array_to_string(array(
            select w from regexp_split_to_table(
              translate(lower(coalesce(name, '')), 'àâäáãåçéèêëíìîïñóòôöõúùûüýÿœæ', 'aaaaaaceeeeiiiinooooouuuuyyoa'), '[^a-z]+') w
             where w <> '' and w <> all (array['inc', 'ltd', 'llc', 'llp', 'corp', 'co', 'sdn', 'bhd', 'the', 'store', 'shop',
                                                'ca', 'on', 'qc', 'bc', 'ab', 'mb', 'sk', 'ns', 'nb', 'nl', 'pe', 'pos', 'purchase'])), ' ') as k) x
$$;
grant execute on function app_private.vendor_key(name text) to accounting_visitor;

-- How alike a receipt's vendor and a bank line's merchant are (0 to 1): trigram similarity of one
-- name with the whole words of the other that fit it best (strict word similarity), either way
-- round, since either may carry words the other lacks (a bank line's city, a shop's branch).
create or replace function app_private.vendor_similarity(vendor text, merchant text) returns real
  language plpgsql immutable parallel safe as
$$
declare
  -- PL/pgSQL: its statements are planned once per session (an SQL function with a FROM is not
  -- inlined and was planned again for every candidate).
  a text := app_private.vendor_key(vendor);
  b text := app_private.vendor_key(merchant);
begin
  if a = '' or b = '' then return 0; end if;
  return greatest(public.strict_word_similarity(a, b), public.strict_word_similarity(b, a));
end $$;
grant execute on function app_private.vendor_similarity(vendor text, merchant text) to accounting_visitor;

-- The events a receipt could belong to, in one query: the organization's events that are not
-- ignored, of the same amount (and currency, when the receipt names one), dated within 3 days of
-- a reading of the receipt's date, with no receipt yet and not unlinked from it by a person;
-- best first. A definer so that the amount and date reach the index under RLS (numeric equality
-- is not leakproof); it answers only for a receipt of the organization in scope.
create or replace function app_private.receipt_candidates(receipt_id uuid)
  returns table (event_id uuid, merchant_name text, transaction_date date, functional_amount numeric, status text,
                 similarity real, day_distance integer, reading date)
  language sql stable security definer set search_path = pg_catalog, app_public, pg_temp as
$$
  with hits as (
    -- Each reading's week, by the index on (organization, amount, date); an event near both
    -- readings counts once, with the nearer.
    select distinct on (e.id) e.id, e.merchant_name, e.transaction_date, e.functional_amount, e.status,
           r.vendor_name, abs(e.transaction_date - d.reading) as dist, d.reading
      from app_public.receipts r
     cross join lateral unnest(r.date_readings) as d(reading)
     -- Per reading, so that amount and date both bound the index scan (offset 0 keeps it so).
     cross join lateral (select * from app_public.ledger_events x
                          where x.organization_id = r.organization_id
                            and x.functional_amount = abs(r.amount)
                            and x.transaction_date between d.reading - 3 and d.reading + 3
                         offset 0) e
     where r.id = receipt_candidates.receipt_id
       and r.organization_id = app_public.current_organization_id()
       and r.amount is not null and r.amount <> 0
       and e.status <> 'ignored'
       and (r.currency is null or r.currency = e.functional_currency)
       and not exists (select 1 from app_public.receipts x where x.event_id = e.id)
       and not exists (select 1 from app_public.receipt_unlinked_pairs u where u.receipt_id = r.id and u.event_id = e.id)
     order by e.id, dist, d.reading
  )
  select h.id, h.merchant_name, h.transaction_date, h.functional_amount, h.status,
         app_private.vendor_similarity(h.vendor_name, h.merchant_name) as similarity, h.dist, h.reading
    from hits h
   order by 6 desc, 7, 3, 1
   limit 20
$$;
grant execute on function app_private.receipt_candidates(receipt_id uuid) to accounting_visitor;

-- Links each waiting receipt (processed, not linked) of the organization (these ones, or those of
-- these amounts) that has a unique confident match; the others are unmatched and keep their
-- candidates as suggestions. One run at a time per organization; receipts, then events, are locked
-- as they are linked (the order every link takes): concurrent runs never link two receipts to one
-- event (the partial unique index receipts_matched_event_key stands behind that) or one receipt twice.
create or replace function app_private.match_receipts(org uuid, receipt_ids uuid[] default null, amounts numeric[] default null)
  returns jsonb
  language plpgsql volatile as
$$
declare
  r app_public.receipts;
  c record;
  best_event uuid;
  best_similarity real;
  best_distance integer;
  best_reading date;
  runner_up_similarity real;
  n_candidates integer;
  t record := app_private.receipt_match_thresholds();
  s record := app_private.receipt_match_strict_thresholds();
  low_fields text[];
  min_similarity real;
  max_distance integer;
  matched integer := 0;
  unmatched integer := 0;
  linked boolean;
begin
  perform app_private.scope_organization(org);
  -- Two runs locking events in different orders could deadlock.
  perform pg_advisory_xact_lock(hashtext('match_receipts:' || org));
  for r in
    select * from app_public.receipts x
     where x.organization_id = org and x.status = 'processed' and x.event_id is null
       and (receipt_ids is null or x.id = any (receipt_ids))
       and (amounts is null or abs(x.amount) = any (amounts))
     order by x.uploaded_at, x.id
     for update skip locked
  loop
    linked := false; n_candidates := 0; best_event := null; best_similarity := null; runner_up_similarity := null;
    low_fields := app_private.receipt_low_confidence_fields(r);
    min_similarity := case when low_fields = '{}' then t.min_similarity else greatest(t.min_similarity, s.min_similarity) end;
    max_distance := case when low_fields = '{}' then null else s.max_day_distance end;
    -- The candidates once, best first: the first two decide.
    for c in select * from app_private.receipt_candidates(r.id) loop
      n_candidates := n_candidates + 1;
      if n_candidates = 1 then
        best_event := c.event_id; best_similarity := c.similarity; best_distance := c.day_distance; best_reading := c.reading;
      elsif n_candidates = 2 then
        runner_up_similarity := c.similarity;
      end if;
    end loop;
    if best_similarity >= min_similarity
       and (max_distance is null or best_distance <= max_distance)
       and (runner_up_similarity is null or best_similarity - runner_up_similarity >= t.min_lead) then
      -- The event is locked, then checked again: a person may have linked it meanwhile.
      perform 1 from app_public.ledger_events e where e.id = best_event and e.status <> 'ignored' for no key update;
      if found and not exists (select 1 from app_public.receipts x where x.event_id = best_event) then
        update app_public.receipts x set event_id = best_event, linked_by = 'matching', linked_at = now(),
               match_status = 'matched', receipt_date = best_reading,
               match_details = jsonb_build_object('similarity', round(best_similarity::numeric, 3), 'dayDistance', best_distance,
                 'runnerUpSimilarity', round(runner_up_similarity::numeric, 3), 'lowConfidence', to_jsonb(low_fields))
         where x.id = r.id;
        linked := true;
        perform app_private.record_webhook_event(org, 'receipt.matched', r.id);
      end if;
    end if;
    if linked then
      matched := matched + 1;
    else
      unmatched := unmatched + 1;
      update app_public.receipts x set match_status = 'unmatched',
             match_details = jsonb_build_object('candidates', n_candidates,
               'bestSimilarity', round(best_similarity::numeric, 3), 'runnerUpSimilarity', round(runner_up_similarity::numeric, 3),
               'lowConfidence', to_jsonb(low_fields))
       where x.id = r.id;
      -- Once when it is found to have no match, not at each later run that still finds none.
      if r.match_status is distinct from 'unmatched' then
        perform app_private.record_webhook_event(org, 'receipt.unmatched', r.id);
      end if;
    end if;
  end loop;
  return jsonb_build_object('matched', matched, 'unmatched', unmatched);
end $$;

-- The ranked candidates of a receipt with their scores, for a person to choose from.
create or replace function app_public.receipt_match_suggestions(organization_id uuid, receipt_id uuid) returns jsonb
  language plpgsql stable as
$$
begin
  perform app_private.assert_org_access(organization_id, false);
  if not exists (select 1 from app_public.receipts r where r.id = receipt_id) then
    perform app_private.fail('Receipt not found.', 'AP404');
  end if;
  return coalesce((
    select jsonb_agg(jsonb_build_object(
        'event', jsonb_build_object('id', c.event_id, 'merchantName', c.merchant_name,
          'transactionDate', to_char(c.transaction_date, 'YYYY-MM-DD'), 'functionalAmount', app_private.money(c.functional_amount),
          'status', c.status),
        'vendorSimilarity', round(c.similarity::numeric, 3), 'dayDistance', c.day_distance,
        'receiptDate', to_char(c.reading, 'YYYY-MM-DD'))
      order by c.similarity desc, c.day_distance, c.transaction_date, c.event_id)
    from app_private.receipt_candidates(receipt_id) c), '[]'::jsonb);
end $$;
grant execute on function app_public.receipt_match_suggestions(organization_id uuid, receipt_id uuid) to accounting_visitor;
--! EndIncluded receipts/matching.sql
