--! Previous: sha1:f7ee0cddc71926c3690e77e4e9b1699c02e927a6
--! Hash: sha1:11a1947ba5211288852cf0722105248e596f7523
--! Message: Receipts: uploads, intake messages, receipts and the pairs a person unlinked; lifecycle, intake, extraction records and matching in SQL; jobs queued by the database

-- Receipts (decisions §9, §12): uploaded files, intake messages, receipts and the pairs a person
-- unlinked; an organization's date order for receipts. Functions, policies and triggers live in
-- migrations/fixtures/receipts/.

create extension if not exists pg_trgm with schema public;

alter table app_public.organizations add column if not exists date_order text not null default 'auto'
  constraint organizations_date_order_check check (date_order in ('auto', 'DMY', 'MDY'));

-- Files stored by POST /uploads, waiting for createReceipt or attachReceiptToEvent.
create table if not exists app_public.uploads (
  id uuid primary key default app_private.uuid_v7(),
  organization_id uuid not null references app_public.organizations on delete cascade,
  object_key text not null constraint uploads_object_key_check check (length(object_key) between 1 and 1024),
  filename text not null constraint uploads_filename_check check (length(filename) <= 255),
  content_type text not null,
  size bigint not null constraint uploads_size_check check (size >= 0),
  sha256 text not null constraint uploads_sha256_check check (sha256 ~ '^[0-9a-f]{64}$'),
  uploaded_at timestamptz not null default now(),
  constraint uploads_object_key_key unique (object_key)
);
create index if not exists uploads_organization_idx on app_public.uploads (organization_id, uploaded_at);
alter table app_public.uploads enable row level security;
alter table app_public.uploads force row level security;

-- One row per message delivered to an organization's intake address: a Message-ID seen again
-- creates nothing.
create table if not exists app_public.intake_messages (
  id uuid primary key default app_private.uuid_v7(),
  organization_id uuid not null references app_public.organizations on delete cascade,
  channel text not null constraint intake_messages_channel_check check (channel in ('email', 'sms', 'mailbox', 'cloud_drive')),
  message_id text not null constraint intake_messages_message_id_check check (length(message_id) between 1 and 998),
  sender text not null default '' constraint intake_messages_sender_check check (length(sender) <= 998),
  received_at timestamptz not null default now(),
  constraint intake_messages_message_key unique (organization_id, channel, message_id),
  constraint intake_messages_organization_id_id_key unique (organization_id, id)
);
alter table app_public.intake_messages enable row level security;
alter table app_public.intake_messages force row level security;

create table if not exists app_public.receipts (
  id uuid primary key default app_private.uuid_v7(),
  organization_id uuid not null references app_public.organizations on delete cascade,
  source text not null constraint receipts_source_check check (source in ('web_upload', 'email', 'sms', 'mailbox', 'cloud_drive')),
  status text not null default 'draft' constraint receipts_status_check check (status in ('draft', 'processed', 'reviewed', 'rejected')),
  match_status text not null default 'pending' constraint receipts_match_status_check check (match_status in ('pending', 'matched', 'unmatched')),
  object_key text not null constraint receipts_object_key_check check (length(object_key) between 1 and 1024),
  filename text not null default '' constraint receipts_filename_check check (length(filename) <= 255),
  content_type text not null,
  size bigint not null constraint receipts_size_check check (size >= 0),
  sha256 text not null constraint receipts_sha256_check check (sha256 ~ '^[0-9a-f]{64}$'),
  uploaded_at timestamptz not null default now(),
  intake_message_id uuid,
  vendor_name text constraint receipts_vendor_name_check check (length(vendor_name) <= 500),
  amount numeric(20,2),
  currency text constraint receipts_currency_check check (currency ~ '^[A-Z]{3}$'),
  -- One reading of the printed date, or two when day and month could be either way (dateOrder auto).
  date_readings date[] not null default '{}' constraint receipts_date_readings_check check (cardinality(date_readings) <= 2),
  receipt_date date,
  extracted_text text,
  extraction_method text,
  extraction_error text,
  extracted_at timestamptz,
  event_id uuid,
  linked_by text constraint receipts_linked_by_check check (linked_by in ('person', 'matching')),
  linked_at timestamptz,
  match_details jsonb,
  created timestamptz not null default now(),
  updated timestamptz not null default now(),
  constraint receipts_organization_id_id_key unique (organization_id, id),
  constraint receipts_event_fkey foreign key (organization_id, event_id)
    references app_public.ledger_events (organization_id, id) on delete set null (event_id),
  constraint receipts_intake_message_fkey foreign key (organization_id, intake_message_id)
    references app_public.intake_messages (organization_id, id) on delete set null (intake_message_id)
);
-- The same file twice in one organization is one receipt.
create unique index if not exists receipts_sha256_key on app_public.receipts (organization_id, sha256);
-- Matching links at most one receipt to an event.
create unique index if not exists receipts_matched_event_key on app_public.receipts (event_id) where linked_by = 'matching';
create index if not exists receipts_event_idx on app_public.receipts (event_id) where event_id is not null;
create index if not exists receipts_list_idx on app_public.receipts (organization_id, uploaded_at desc, id desc);
create index if not exists receipts_to_match_idx on app_public.receipts (organization_id)
  where status = 'processed' and event_id is null;
create index if not exists receipts_vendor_trgm_idx on app_public.receipts using gin (vendor_name public.gin_trgm_ops);
alter table app_public.receipts enable row level security;
alter table app_public.receipts force row level security;

-- A receipt a person unlinked from an event is never linked to it again automatically.
create table if not exists app_public.receipt_unlinked_pairs (
  organization_id uuid not null,
  receipt_id uuid not null,
  event_id uuid not null,
  unlinked_at timestamptz not null default now(),
  constraint receipt_unlinked_pairs_pkey primary key (receipt_id, event_id),
  constraint receipt_unlinked_pairs_receipt_fkey foreign key (organization_id, receipt_id)
    references app_public.receipts (organization_id, id) on delete cascade,
  constraint receipt_unlinked_pairs_event_fkey foreign key (organization_id, event_id)
    references app_public.ledger_events (organization_id, id) on delete cascade
);
create index if not exists receipt_unlinked_pairs_event_idx on app_public.receipt_unlinked_pairs (event_id);
alter table app_public.receipt_unlinked_pairs enable row level security;
alter table app_public.receipt_unlinked_pairs force row level security;

--! Included jobs/enqueue.sql
-- Jobs the database queues in the same transaction as the change that needs them (a receipt
-- stored and its extraction; events changed and the receipts waiting for them), so that a crash
-- never leaves one without the other. graphile-worker's schema is installed with the migrations
-- (src/db/migrate.ts); its functions are the owner's, so the API's role reaches them only here.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

create or replace function app_private.enqueue_job(task text, payload jsonb, job_key text default null) returns void
  language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as
$$
begin
  -- Only the tasks the database itself owes; an operator's jobs are added by the CLI.
  if task not in ('extract_receipt', 'match_receipts') then
    perform app_private.fail(format('No task "%s" may be queued from SQL.', task));
  end if;
  -- Extraction gives up sooner: its last attempt records an unreadable receipt (never stuck in draft).
  perform graphile_worker.add_job(task, payload::json, job_key => job_key,
    max_attempts => case task when 'extract_receipt' then 5 else 10 end);
end $$;
grant execute on function app_private.enqueue_job(task text, payload jsonb, job_key text) to accounting_visitor;
--! EndIncluded jobs/enqueue.sql
--! Included organizations/organizations.sql
-- Organizations: created by the operator with a starter chart; listed for the caller.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.organizations
-- An organization is its own tenant: its id plays the part of organization_id.
drop policy if exists organizations_tenant on app_public.organizations;
create policy organizations_tenant on app_public.organizations
  using (id = app_public.current_organization_id());
grant select on app_public.organizations to accounting_visitor;
grant update (date_order) on app_public.organizations to accounting_visitor;

------------------------------------------------------------------------------------------------

create or replace function app_private.create_organization(name text, currency text default 'CAD')
  returns app_public.organizations
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
declare
  o app_public.organizations;
  nm text := app_private.clean_text(create_organization.name);
  cur text := upper(btrim(coalesce(currency, 'CAD')));
  scope text := current_setting('app.organization_id', true);
begin
  if nm is null or nm = '' then perform app_private.fail('Name is required.'); end if;
  if length(nm) > 200 then perform app_private.fail('Name must be at most 200 characters.'); end if;
  if cur !~ '^[A-Z]{3}$' then perform app_private.fail('Currency must be a three-letter code such as CAD.'); end if;
  begin
    insert into app_public.organizations (name, functional_currency) values (nm, cur) returning * into o;
  exception when unique_violation then
    perform app_private.fail('An organization with this name already exists.');
  end;
  -- The new organization in scope while its starter chart is written (RLS is forced), then back.
  perform set_config('app.organization_id', o.id::text, true);
  perform app_private.create_starter_chart(o.id);
  perform set_config('app.organization_id', coalesce(scope, ''), true);
  return o;
end $$;

create or replace function app_public.my_organizations() returns jsonb
  language plpgsql stable security definer set search_path = pg_catalog, app_public as
$$
declare
  key_id uuid := app_public.current_api_key_id();
  uid uuid := app_public.current_user_id();
begin
  if key_id is null and uid is null then perform app_private.fail('Authentication Required.', 'AU401'); end if;
  return coalesce((
    select jsonb_agg(jsonb_build_object('id', o.id, 'name', o.name) order by lower(o.name), o.id)
    from app_public.organizations o
    where (key_id is not null and o.id = (select k.organization_id from app_public.api_keys k where k.id = key_id))
       or (key_id is null and o.id in (select m.organization_id from app_public.memberships m where m.user_id = uid))
  ), '[]'::jsonb);
end $$;
grant execute on function app_public.my_organizations() to accounting_visitor;

-- The operator names organizations (CLI --org-name): compared as stored, case-insensitively in NFC.
create or replace function app_private.organization_by_name(name text) returns app_public.organizations
  language plpgsql stable security definer set search_path = pg_catalog, app_public as
$$
declare o app_public.organizations;
begin
  select * into o from app_public.organizations x where lower(x.name) = lower(app_private.clean_text(organization_by_name.name));
  if not found then perform app_private.fail(format('No organization named "%s".', btrim(organization_by_name.name)), 'AP404'); end if;
  return o;
end $$;

-- Settings an owner or admin changes (decisions §12): how receipts' ambiguous dates are read.
create or replace function app_public.update_organization_settings(organization_id uuid, date_order text default null) returns jsonb
  language plpgsql volatile as
$$
declare o app_public.organizations;
begin
  perform app_private.assert_org_access(organization_id, true);
  if date_order is not null and date_order not in ('auto', 'DMY', 'MDY') then
    perform app_private.fail('dateOrder must be one of: auto, DMY, MDY.');
  end if;
  update app_public.organizations x set date_order = coalesce(update_organization_settings.date_order, x.date_order)
   where x.id = update_organization_settings.organization_id
   returning * into o;
  return jsonb_build_object('success', true, 'error', null,
    'organization', jsonb_build_object('id', o.id, 'name', o.name, 'functionalCurrency', o.functional_currency, 'dateOrder', o.date_order));
end $$;
grant execute on function app_public.update_organization_settings(organization_id uuid, date_order text) to accounting_visitor;
--! EndIncluded organizations/organizations.sql
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
  perform app_private.enqueue_job('extract_receipt', jsonb_build_object('organizationId', org, 'receiptId', v_id));
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

create or replace function app_public.create_receipt(organization_id uuid, object_key text, filename text default null) returns jsonb
  language plpgsql volatile as
$$
declare
  u app_public.uploads;
  stored jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  u := app_private.upload_by_key(object_key);
  stored := app_private.store_receipt(u.organization_id, 'web_upload', u.object_key,
    coalesce(nullif(app_private.clean_text(filename), ''), u.filename), u.content_type, u.size, u.sha256);
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
  u app_public.uploads;
  e app_public.ledger_events;
  r app_public.receipts;
  stored jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  e := app_private.event_for_link(event_id);
  u := app_private.upload_by_key(object_key);
  stored := app_private.store_receipt(u.organization_id, 'web_upload', u.object_key,
    coalesce(nullif(app_private.clean_text(filename), ''), u.filename), u.content_type, u.size, u.sha256);
  r := app_private.receipt_for_update((stored->>'receiptId')::uuid);
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
    perform app_private.enqueue_job('match_receipts', jsonb_build_object('organizationId', r.organization_id, 'receiptIds', jsonb_build_array(r.id)));
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
  select coalesce(array_agg(d::date order by d::date), '{}') into readings
    from (select distinct d from jsonb_array_elements_text(coalesce(extraction->'dateReadings', '[]'::jsonb)) d
           where d ~ '^\d{4}-\d{2}-\d{2}$' limit 2) x;
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
    perform app_private.enqueue_job('match_receipts', jsonb_build_object('organizationId', r.organization_id, 'receiptIds', jsonb_build_array(r.id)));
  end if;
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
--! Included receipts/intake.sql
-- How files arrive: web uploads (POST /uploads) and intake messages (SMTP, POST /intake/email,
-- POST /intake/sms; later mailboxes and cloud drives), each file becoming a receipt queued for
-- extraction in the same transaction (decisions §9, §12).
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.uploads
drop policy if exists uploads_tenant on app_public.uploads;
create policy uploads_tenant on app_public.uploads
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select, insert on app_public.uploads to accounting_visitor;

-- app_public.intake_messages
drop policy if exists intake_messages_tenant on app_public.intake_messages;
create policy intake_messages_tenant on app_public.intake_messages
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select on app_public.intake_messages to accounting_visitor;

------------------------------------------------------------------------------------------------

-- The file POST /uploads stored, recorded as the caller (the key is namespaced by organization).
create or replace function app_private.record_upload(organization_id uuid, object_key text, filename text,
    content_type text, size bigint, sha256 text) returns void
  language plpgsql volatile as
$$
begin
  perform app_private.assert_org_access(organization_id, false);
  if split_part(object_key, '/', 1) <> organization_id::text then
    perform app_private.fail('The object key is not in this organization''s space.');
  end if;
  if content_type not in ('image/jpeg', 'image/png', 'image/webp', 'image/heic', 'application/pdf', 'text/plain') then
    perform app_private.fail('Unsupported file type.');
  end if;
  insert into app_public.uploads (organization_id, object_key, filename, content_type, size, sha256)
    values (organization_id, object_key, left(coalesce(app_private.clean_text(filename), ''), 255), content_type, size, sha256);
end $$;
grant execute on function app_private.record_upload(organization_id uuid, object_key text, filename text, content_type text, size bigint, sha256 text) to accounting_visitor;

-- The organization whose active intake address is one of these (email compared lower-case, SMS
-- on digits only), or null. Looked up before any tenant is known, hence the definer.
create or replace function app_private.intake_organization(address_type text, addresses text[]) returns uuid
  language sql stable security definer set search_path = pg_catalog, app_public as
$$
  select i.organization_id from app_public.intake_addresses i
   where i.active and i.address_type = intake_organization.address_type
     and i.address = any (select case when intake_organization.address_type = 'sms' then regexp_replace(a, '[^0-9]', '', 'g')
                                      else lower(btrim(a)) end from unnest(addresses) a)
   order by i.created limit 1
$$;

-- A message delivered to an organization: its row, or null when the same message id came before
-- (nothing is stored again). A message without an id is always new.
create or replace function app_private.receive_intake_message(organization_id uuid, channel text, message_id text, sender text)
  returns uuid
  language plpgsql volatile as
$$
declare v_id uuid;
begin
  perform app_private.scope_organization(organization_id);
  insert into app_public.intake_messages (organization_id, channel, message_id, sender)
    values (organization_id, channel, coalesce(nullif(left(btrim(message_id), 998), ''), 'generated:' || gen_random_uuid()),
            left(coalesce(sender, ''), 998))
    on conflict on constraint intake_messages_message_key do nothing
    returning id into v_id;
  return v_id;
end $$;

-- One file of an intake message, stored under the organization's key space, becomes a receipt.
create or replace function app_private.receive_receipt(organization_id uuid, source text, object_key text, filename text,
    content_type text, size bigint, sha256 text, intake_message_id uuid default null) returns jsonb
  language plpgsql volatile as
$$
begin
  perform app_private.scope_organization(organization_id);
  if split_part(object_key, '/', 1) <> organization_id::text then
    perform app_private.fail('The object key is not in this organization''s space.');
  end if;
  return app_private.store_receipt(organization_id, source, object_key, filename, content_type, size, sha256, intake_message_id);
end $$;
--! EndIncluded receipts/intake.sql
--! Included receipts/matching.sql
-- Matching receipts to ledger events (decisions §9, §12): candidates in one query, a link only for
-- a unique confident match, precision first. Thresholds measured on the evaluation corpus
-- (`npm run eval:receipts`, README "Receipt matching").
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

create or replace function app_private.tg_ledger_events__rematch_receipts() returns trigger
  language plpgsql security definer set search_path = pg_catalog, app_public, pg_temp as
$$
declare
  orgs uuid[];
  org uuid;
begin
  if tg_op = 'INSERT' then
    select array_agg(distinct n.organization_id) into orgs from new_rows n;
  else
    select array_agg(distinct n.organization_id) into orgs from new_rows n join old_rows o on o.id = n.id
     where n.functional_amount <> o.functional_amount or n.transaction_date <> o.transaction_date;
  end if;
  foreach org in array coalesce(orgs, '{}') loop
    if exists (select 1 from app_public.receipts r where r.organization_id = org and r.status = 'processed' and r.event_id is null) then
      perform app_private.enqueue_job('match_receipts', jsonb_build_object('organizationId', org), 'match_receipts:' || org);
    end if;
  end loop;
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
$$ select 0.3::real, 0.15::real $$;
grant execute on function app_private.receipt_match_thresholds() to accounting_visitor;

-- A vendor or merchant name reduced to its words: lower case, letters only, without legal
-- suffixes and store words (bank lines add store numbers, cities and "#").
create or replace function app_private.vendor_key(name text) returns text
  language sql immutable parallel safe as
$$ select btrim(regexp_replace(
     regexp_replace(' ' || regexp_replace(lower(coalesce(name, '')), '[^a-z]+', ' ', 'g') || ' ',
       ' (inc|ltd|llc|llp|corp|co|sdn|bhd|the|store|shop|ca|on|qc|bc|ab|pos|purchase) ', ' ', 'g'),
     ' +', ' ', 'g')) $$;
grant execute on function app_private.vendor_key(name text) to accounting_visitor;

-- How alike a receipt's vendor and a bank line's merchant are (0 to 1): trigram word similarity
-- either way round, since either may carry words the other lacks.
create or replace function app_private.vendor_similarity(vendor text, merchant text) returns real
  language sql immutable parallel safe as
$$
  select case when a = '' or b = '' then 0::real
              else greatest(public.word_similarity(a, b), public.word_similarity(b, a)) end
    from (select app_private.vendor_key(vendor) a, app_private.vendor_key(merchant) b) k
$$;
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
  select e.id, e.merchant_name, e.transaction_date, e.functional_amount, e.status,
         app_private.vendor_similarity(r.vendor_name, e.merchant_name), d.dist, d.reading
    from app_public.receipts r
    join app_public.ledger_events e
      on e.organization_id = r.organization_id
     and e.functional_amount = abs(r.amount)
     and e.transaction_date between (select min(x) from unnest(r.date_readings) x) - 3
                                and (select max(x) from unnest(r.date_readings) x) + 3
    cross join lateral (select x as reading, abs(e.transaction_date - x) as dist
                          from unnest(r.date_readings) x order by 2, 1 limit 1) d
   where r.id = receipt_candidates.receipt_id
     and r.organization_id = app_public.current_organization_id()
     and r.amount is not null and r.amount <> 0
     and d.dist <= 3
     and e.status <> 'ignored'
     and (r.currency is null or r.currency = e.functional_currency)
     and not exists (select 1 from app_public.receipts x where x.event_id = e.id)
     and not exists (select 1 from app_public.receipt_unlinked_pairs u where u.receipt_id = r.id and u.event_id = e.id)
   order by 6 desc, 7, 3, 1
   limit 20
$$;
grant execute on function app_private.receipt_candidates(receipt_id uuid) to accounting_visitor;

-- Links each waiting receipt (processed, not linked) of the organization that has a unique
-- confident match; the others are unmatched and keep their candidates as suggestions. Receipts
-- and events are locked as they are linked: concurrent runs never link two receipts to one event
-- (the partial unique index receipts_matched_event_key stands behind that) or one receipt twice.
create or replace function app_private.match_receipts(org uuid, receipt_ids uuid[] default null) returns jsonb
  language plpgsql volatile as
$$
declare
  r app_public.receipts;
  best record;
  runner_up record;
  t record := app_private.receipt_match_thresholds();
  matched integer := 0;
  unmatched integer := 0;
  linked boolean;
begin
  perform app_private.scope_organization(org);
  -- One run at a time per organization: two runs locking events in different orders could deadlock.
  perform pg_advisory_xact_lock(hashtext('match_receipts:' || org));
  for r in
    select * from app_public.receipts x
     where x.organization_id = org and x.status = 'processed' and x.event_id is null
       and (receipt_ids is null or x.id = any (receipt_ids))
     order by x.uploaded_at, x.id
     for update skip locked
  loop
    linked := false;
    -- Both always selected: no row leaves the record's fields null.
    select * into best from app_private.receipt_candidates(r.id) c order by c.similarity desc, c.day_distance, c.transaction_date, c.event_id limit 1;
    select * into runner_up from app_private.receipt_candidates(r.id) c where c.event_id is distinct from best.event_id
     order by c.similarity desc, c.day_distance, c.transaction_date, c.event_id limit 1;
    if best.event_id is not null and best.similarity >= t.min_similarity
       and (runner_up.event_id is null or best.similarity - runner_up.similarity >= t.min_lead) then
      -- The event is locked, then checked again: another run may have linked it meanwhile.
      perform 1 from app_public.ledger_events e where e.id = best.event_id and e.status <> 'ignored' for no key update;
      if found and not exists (select 1 from app_public.receipts x where x.event_id = best.event_id) then
        update app_public.receipts x set event_id = best.event_id, linked_by = 'matching', linked_at = now(),
               match_status = 'matched', receipt_date = best.reading,
               match_details = jsonb_build_object('similarity', round(best.similarity::numeric, 3), 'dayDistance', best.day_distance,
                 'runnerUpSimilarity', round(runner_up.similarity::numeric, 3))
         where x.id = r.id;
        linked := true;
      end if;
    end if;
    if linked then
      matched := matched + 1;
    else
      unmatched := unmatched + 1;
      update app_public.receipts x set match_status = 'unmatched',
             match_details = jsonb_build_object('candidates', (select count(*) from app_private.receipt_candidates(r.id)),
               'bestSimilarity', round(best.similarity::numeric, 3), 'runnerUpSimilarity', round(runner_up.similarity::numeric, 3))
       where x.id = r.id;
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
--! Included ledger/events.sql
-- Ledger events: creation, edits, the staged entry, lists and lookups, and the daily counts the
-- dashboard reads (contract: LedgerEvent; decisions §4-§6).
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
grant update (category_id, direction, event_type, functional_amount, has_document, journal_entry_id, memo, merchant_name, payment_account_id, reference, status, tax_account_id, tax_amount, tax_code, transaction_date, updated) on app_public.ledger_events to accounting_visitor;

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

-- Which way money moves relative to the payment account (decisions §6).
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
    'journalEntry', case when j.id is null then null else jsonb_build_object('id', j.id,
        'txnDate', to_char(j.txn_date, 'YYYY-MM-DD'), 'totalAmount', app_private.money(j.total_amount),
        'voidedAt', app_private.iso(j.voided_at)) end,
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
    sort_by text default null, sort_dir text default null) returns jsonb
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
grant execute on function app_public.list_ledger_events(organization_id uuid, status jsonb, has_document boolean, since_days integer, date_from text, date_to text, amount_min text, amount_max text, account_ids jsonb, category_ids jsonb, payment_account_ids jsonb, search text, "limit" integer, "offset" integer, sort_by text, sort_dir text) to accounting_visitor;

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
  v_memo text := normalize(memo, NFC);
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
  if v_memo is not null and length(v_memo) > 5000 then perform app_private.fail('Memo must be at most 5000 characters.'); end if;
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
      memo = coalesce(v_memo, x.memo),
      functional_amount = v_amount,
      event_type = v_type,
      -- Only a change of type recomputes the direction: an imported event's comes from the sign.
      direction = case when update_ledger_event.event_type is null then x.direction else app_private.direction_for(v_type) end,
      category_id = v_category,
      tax_amount = v_tax
    where x.id = e.id;
  return jsonb_build_object('success', true, 'error', null, 'event', app_private.ledger_event_json_by_id(e.id));
end $$;
grant execute on function app_public.update_ledger_event(organization_id uuid, event_id uuid, transaction_date text, memo text, amount text, event_type text) to accounting_visitor;

-- Classify: category, payment account and tax (decisions §6, §7). Absent arguments keep their value.
create or replace function app_public.update_staged_entry(organization_id uuid, event_id uuid, category_id uuid default null,
    payment_id uuid default null, tax_amount text default null, tax_account_id uuid default null,
    tax_code text default null) returns jsonb
  language plpgsql volatile as
$$
declare
  e app_public.ledger_events;
  v_category uuid;
  v_payment uuid;
  v_tax numeric;
  v_tax_account uuid;
  v_tax_code text;
  v_rate numeric;
begin
  perform app_private.assert_org_access(organization_id, false);
  perform set_config('app.audit_action', 'classify', true);
  select * into e from app_public.ledger_events x where x.id = event_id for update;
  if not found then perform app_private.fail('Ledger event not found.', 'AP404'); end if;
  if e.status in ('confirmed', 'synced', 'reconciled') then perform app_private.fail('Event is already confirmed.'); end if;
  if e.status not in ('needs_review', 'pending') then
    perform app_private.fail('Only events in needs_review or pending can be updated.');
  end if;
  v_category := coalesce(category_id, e.category_id);
  v_payment := coalesce(payment_id, e.payment_account_id);
  if category_id is not null then perform app_private.check_category(category_id, e.event_type); end if;
  if payment_id is not null then perform app_private.check_payment_account(payment_id); end if;
  if v_category = v_payment then perform app_private.fail('Category and payment account must differ.'); end if;

  v_tax_code := coalesce(tax_code, e.tax_code);
  v_tax := e.tax_amount;
  if tax_code is not null then
    select s.rate into v_rate from app_public.sales_tax_codes s where s.code = update_staged_entry.tax_code;
    if v_rate is null then perform app_private.fail('Unknown tax code.'); end if;
    v_tax := round(e.functional_amount * v_rate / (100 + v_rate), 2);
  end if;
  if tax_amount is not null then
    v_tax := app_private.parse_amount(tax_amount, 'Tax amount must be a decimal string of at least 0.', true);
    if tax_code is null then v_tax_code := null; end if; -- an explicit amount replaces a computed one
  end if;
  if v_tax is not null and v_tax >= e.functional_amount then
    perform app_private.fail('Tax amount must be less than the amount.');
  end if;
  v_tax_account := coalesce(tax_account_id, e.tax_account_id);
  if tax_account_id is not null then perform app_private.check_tax_account(tax_account_id); end if;
  if coalesce(v_tax, 0) > 0 and v_tax_account is null then
    -- The organization's sales tax account (the starter chart's GST/HST Payable).
    select a.id into v_tax_account from app_public.accounts a
     where a.account_type = 'tax_payable' and a.active order by a.created, a.id limit 1;
    if v_tax_account is null then perform app_private.fail('A tax account is required for a tax amount.'); end if;
  end if;
  if v_tax_account is not null and v_tax_account in (v_category, v_payment) then
    perform app_private.fail('The tax account must differ from the category and payment accounts.');
  end if;

  update app_public.ledger_events x set category_id = v_category, payment_account_id = v_payment,
      tax_amount = v_tax, tax_account_id = v_tax_account, tax_code = v_tax_code
    where x.id = e.id;
  return jsonb_build_object('success', true, 'error', null, 'event', app_private.ledger_event_json_by_id(e.id));
end $$;
grant execute on function app_public.update_staged_entry(organization_id uuid, event_id uuid, category_id uuid, payment_id uuid, tax_amount text, tax_account_id uuid, tax_code text) to accounting_visitor;
--! EndIncluded ledger/events.sql
--! Included reports/reports.sql
-- Reports from per-account daily totals: the dashboard, the income statement, account balances.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Revenue and expense totals per account over a period, from the daily totals.
create or replace function app_private.period_totals(org uuid, period daterange)
  returns table (account_id uuid, account_name text, classification text, total numeric)
  language sql stable as
$$
  select a.id, a.name, a.classification,
         case when a.classification = 'revenue' then sum(t.credit) - sum(t.debit) else sum(t.debit) - sum(t.credit) end
    from app_public.account_daily_totals t
    join app_public.accounts a on a.id = t.account_id
   where t.organization_id = org and t.day >= lower(period) and t.day < upper(period)
     and a.classification in ('revenue', 'expense')
   group by a.id, a.name, a.classification
  having sum(t.debit) <> 0 or sum(t.credit) <> 0
$$;
grant execute on function app_private.period_totals(org uuid, period daterange) to accounting_visitor;

-- Receipts that arrived (uploaded or received) in the period, by UTC day, rejected ones excluded (decisions §11).
create or replace function app_private.receipt_count(org uuid, period daterange) returns integer
  language sql stable as
$$ select count(*)::integer from app_public.receipts r
    where r.organization_id = org and r.status <> 'rejected'
      and r.uploaded_at >= (lower(period)::timestamp at time zone 'UTC')
      and r.uploaded_at < (upper(period)::timestamp at time zone 'UTC') $$;
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

create or replace function app_public.account_balances(organization_id uuid) returns jsonb
  language plpgsql stable as
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

create or replace function app_public.dashboard_summary(organization_id uuid, start_date text default null, end_date text default null)
  returns jsonb
  language plpgsql stable as
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
  select coalesce(sum(n), 0) into unreviewed from app_public.ledger_event_daily_counts c
   where c.organization_id = dashboard_summary.organization_id and c.status = 'needs_review';
  return jsonb_build_object('totalRevenue', app_private.money(revenue), 'totalExpenses', app_private.money(expenses),
    'netIncome', app_private.money(revenue - expenses),
    'receiptCount', app_private.receipt_count(organization_id, period),
    'unreviewedCount', unreviewed);
end $$;
grant execute on function app_public.dashboard_summary(organization_id uuid, start_date text, end_date text) to accounting_visitor;

create or replace function app_public.income_statement(organization_id uuid, start_date text default null, end_date text default null)
  returns jsonb
  language plpgsql stable as
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
