--! Previous: sha1:6cbbe8dc5ccea895930f27960c71cf2d616b4230
--! Hash: sha1:63b64d99756afd973505a02b9663bd5ec5fb3832
--! Message: A receipt source's status is generated from its last error

-- A receipt source's status follows from its last error: one fact, not two kept in step.
alter table app_public.receipt_sources drop column if exists status;
alter table app_public.receipt_sources add column status text not null
  generated always as (case when last_error is null then 'connected' else 'error' end) stored;

--! Included sources/receipt-sources.sql
-- Receipt sources (decisions §13): what mailboxes and cloud-drive folders share. Connecting,
-- listing, scanning now and disconnecting; the schedule of scans, their backoff after failures,
-- and the state a scan leaves. The kinds' own rules are in mailboxes.sql and cloud-drives.sql.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security and grants of this feature's tables.

-- app_public.receipt_sources: the API's role never reads the sealed secret, nor the scan state.
drop policy if exists receipt_sources_tenant on app_public.receipt_sources;
create policy receipt_sources_tenant on app_public.receipt_sources
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
revoke all on app_public.receipt_sources from accounting_visitor;
grant select (id, organization_id, kind, settings, status, last_error, last_scanned_at, created) on app_public.receipt_sources to accounting_visitor;
grant insert (id, organization_id, kind, settings, secret_sealed) on app_public.receipt_sources to accounting_visitor;
grant delete on app_public.receipt_sources to accounting_visitor;

-- app_public.cloud_drive_objects: written by the worker only; removed with their source.
drop policy if exists cloud_drive_objects_tenant on app_public.cloud_drive_objects;
create policy cloud_drive_objects_tenant on app_public.cloud_drive_objects
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select, delete on app_public.cloud_drive_objects to accounting_visitor;

------------------------------------------------------------------------------------------------

-- The worker's task of each kind.
create or replace function app_private.source_scan_task(kind text) returns text
  language sql immutable parallel safe as
$$ select case kind when 'mailbox' then 'scan_mailbox' when 'cloud_drive' then 'scan_cloud_drive' end $$;

-- The name a person reads in errors.
create or replace function app_private.source_noun(kind text) returns text
  language sql immutable parallel safe as
$$ select case kind when 'mailbox' then 'Mailbox' else 'Cloud drive' end $$;
grant execute on function app_private.source_noun(kind text) to accounting_visitor;

-- A source as the API shows it: its settings (already in the contract's field names) and its state.
create or replace function app_private.receipt_source_json(id uuid, settings jsonb, status text, last_error text,
    last_scanned_at timestamptz, created timestamptz) returns jsonb
  language sql stable as
$$ select settings || jsonb_build_object('id', id, 'status', status, 'lastError', last_error,
     'lastScannedAt', app_private.iso(last_scanned_at), 'created', app_private.iso(created)) $$;
grant execute on function app_private.receipt_source_json(id uuid, settings jsonb, status text, last_error text, last_scanned_at timestamptz, created timestamptz) to accounting_visitor;

-- A source whose connection the server has tested, with its secret sealed to this id; `settings`
-- comes from the kind's settings function, which checked the caller (owner or admin) and every field.
create or replace function app_private.add_receipt_source(organization_id uuid, kind text, settings jsonb, receipt_source_id uuid,
    secret_sealed text) returns jsonb
  language plpgsql volatile as
$$
declare v_id uuid; v_created timestamptz;
begin
  begin
    insert into app_public.receipt_sources (id, organization_id, kind, settings, secret_sealed)
      values (receipt_source_id, add_receipt_source.organization_id, kind, settings, secret_sealed)
      returning receipt_sources.id, receipt_sources.created into v_id, v_created;
  exception when unique_violation then
    perform app_private.fail(format('This %s is already connected.', lower(app_private.source_noun(kind))));
  end;
  -- Its first scan runs now.
  perform app_private.queue_source_scan(add_receipt_source.organization_id, v_id);
  return app_private.receipt_source_json(v_id, settings, 'connected', null, null, v_created);
end $$;
grant execute on function app_private.add_receipt_source(organization_id uuid, kind text, settings jsonb, receipt_source_id uuid, secret_sealed text) to accounting_visitor;

-- The organization's sources of one kind, oldest first (not paginated: a handful at most).
create or replace function app_private.list_receipt_sources(organization_id uuid, kind text) returns jsonb
  language plpgsql stable as
$$
begin
  perform app_private.assert_org_access(organization_id, true);
  return coalesce((select jsonb_agg(app_private.receipt_source_json(s.id, s.settings, s.status, s.last_error, s.last_scanned_at, s.created)
                                    order by s.created, s.id)
    from app_public.receipt_sources s
   where s.organization_id = list_receipt_sources.organization_id and s.kind = list_receipt_sources.kind), '[]'::jsonb);
end $$;
grant execute on function app_private.list_receipt_sources(organization_id uuid, kind text) to accounting_visitor;

-- A scan of one source, queued now; the scan's id (the worker's job id) is returned. One queue a
-- source: its scans run one at a time, in order; a scan not yet started is not queued twice.
create or replace function app_private.queue_source_scan(organization_id uuid, receipt_source_id uuid) returns text
  language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as
$$
declare v_kind text; v_job bigint;
begin
  perform app_private.check_job_organization(organization_id);
  select s.kind into v_kind from app_public.receipt_sources s
   where s.organization_id = queue_source_scan.organization_id and s.id = receipt_source_id;
  if v_kind is null then return null; end if;
  select j.id into v_job from graphile_worker.add_job(app_private.source_scan_task(v_kind),
    json_build_object('organizationId', organization_id, 'receiptSourceId', receipt_source_id),
    queue_name => v_kind || ':' || receipt_source_id, job_key => 'scan:' || receipt_source_id, max_attempts => 3) j;
  return v_job::text;
end $$;
grant execute on function app_private.queue_source_scan(organization_id uuid, receipt_source_id uuid) to accounting_visitor;

-- syncMailbox and syncCloudDrive: a scan now.
create or replace function app_private.sync_receipt_source(organization_id uuid, kind text, receipt_source_id uuid) returns jsonb
  language plpgsql volatile as
$$
declare v_scan text;
begin
  perform app_private.assert_org_access(organization_id, true);
  if not exists (select 1 from app_public.receipt_sources s
                  where s.organization_id = sync_receipt_source.organization_id and s.kind = sync_receipt_source.kind
                    and s.id = receipt_source_id) then
    perform app_private.fail(app_private.source_noun(kind) || ' not found.', 'AP404');
  end if;
  v_scan := app_private.queue_source_scan(organization_id, receipt_source_id);
  return jsonb_build_object('success', true, 'error', null, 'scanId', v_scan);
end $$;
grant execute on function app_private.sync_receipt_source(organization_id uuid, kind text, receipt_source_id uuid) to accounting_visitor;

-- disconnectMailbox and disconnectCloudDrive: the source and its secret go; its receipts stay.
create or replace function app_private.disconnect_receipt_source(organization_id uuid, kind text, receipt_source_id uuid) returns jsonb
  language plpgsql volatile as
$$
begin
  perform app_private.assert_org_access(organization_id, true);
  delete from app_public.receipt_sources s
   where s.organization_id = disconnect_receipt_source.organization_id and s.kind = disconnect_receipt_source.kind
     and s.id = receipt_source_id;
  if not found then perform app_private.fail(app_private.source_noun(kind) || ' not found.', 'AP404'); end if;
  return jsonb_build_object('success', true, 'error', null);
end $$;
grant execute on function app_private.disconnect_receipt_source(organization_id uuid, kind text, receipt_source_id uuid) to accounting_visitor;

------------------------------------------------------------------------------------------------
-- The worker's side (owner connection).

-- Every source whose scan is due is queued, and its next scan put one interval ahead, so that a
-- scan still running is not queued again each minute. Run by the worker's cron every minute.
create or replace function app_private.queue_due_source_scans(mailbox_interval interval, cloud_drive_interval interval)
  returns integer
  language plpgsql volatile as
$$
declare v_count integer;
begin
  with due as (
    select s.id, s.organization_id from app_public.receipt_sources s
     where s.next_scan_at <= now()
     order by s.next_scan_at
     for update skip locked
  ), claimed as (
    update app_public.receipt_sources s
       set next_scan_at = now() + case s.kind when 'mailbox' then mailbox_interval else cloud_drive_interval end
      from due where s.id = due.id
    returning s.id, s.organization_id
  )
  select count(app_private.queue_source_scan(c.organization_id, c.id)) into v_count from claimed c;
  return v_count;
end $$;

-- What a scan needs: the source's kind, settings, sealed secret and where to start; null when it
-- was disconnected meanwhile.
create or replace function app_private.source_for_scan(receipt_source_id uuid) returns jsonb
  language sql stable as
$$ select jsonb_build_object('organizationId', s.organization_id, 'kind', s.kind, 'settings', s.settings,
     'secretSealed', s.secret_sealed, 'cursor', s.cursor)
     from app_public.receipt_sources s where s.id = receipt_source_id $$;

-- Progress within a scan (a mailbox's last UID read, a drive's last key), kept as it goes: a scan
-- cut short resumes. False when the source was disconnected meanwhile: the scan stops.
create or replace function app_private.advance_source_cursor(receipt_source_id uuid, cursor jsonb) returns boolean
  language sql volatile as
$$
  with kept as (update app_public.receipt_sources s set cursor = advance_source_cursor.cursor where s.id = receipt_source_id returning 1)
  select exists (select 1 from kept)
$$;

-- The end of a scan (status follows from last_error). Success: connected, next scan one interval on (at once when it stopped at
-- its limit with more to read). Failure: `error` with the reason, retried after 1, 2, 4 …
-- minutes, at most 6 hours apart.
create or replace function app_private.finish_source_scan(receipt_source_id uuid, error text, scan_interval interval, more boolean)
  returns void
  language sql volatile as
$$
  update app_public.receipt_sources s
     set last_error = left(error, 2000),
         last_scanned_at = now(),
         failures = case when error is null then 0 else s.failures + 1 end,
         next_scan_at = case
           when error is not null then now() + least(interval '1 minute' * power(2, least(s.failures, 20)), interval '6 hours')
           when more then now()
           else now() + scan_interval end
   where s.id = receipt_source_id
$$;

-- The operator's view of scans (CLI list_scans): newest first, from app_private.job_results, each
-- with the source it read (null once disconnected) and what it did.
create or replace function app_private.list_source_scans(organization_id uuid, "limit" integer default 50) returns jsonb
  language sql stable as
$$
  select coalesce(jsonb_agg(x.scan order by x.started_at desc, x.id desc), '[]'::jsonb) from (
    select r.id, r.started_at, jsonb_build_object(
             'scanId', r.job_id, 'attempt', r.attempt, 'kind', case r.job_name when 'scan_mailbox' then 'mailbox' else 'cloud_drive' end,
             'receiptSourceId', r.payload->>'receiptSourceId',
             'source', case s.kind
               when 'mailbox' then (s.settings->>'username') || '@' || (s.settings->>'host') || '/' || (s.settings->>'folder')
               when 'cloud_drive' then (s.settings->>'bucket') || '/' || (s.settings->>'prefix') end,
             'status', r.status,
             'scanned', (r.result->>'scanned')::integer, 'created', (r.result->>'created')::integer,
             'duplicates', (r.result->>'duplicates')::integer, 'refused', (r.result->>'refused')::integer,
             'skipped', (r.result->>'skipped')::integer, 'failed', (r.result->>'failed')::integer, 'error', r.error,
             'startedAt', app_private.iso(r.started_at), 'finishedAt', app_private.iso(r.finished_at)) as scan
      from app_private.job_results r
      left join app_public.receipt_sources s on s.id::text = r.payload->>'receiptSourceId'
     where r.organization_id = list_source_scans.organization_id and r.job_name in ('scan_mailbox', 'scan_cloud_drive')
     order by r.started_at desc, r.id desc
     limit greatest(1, least(coalesce("limit", 50), 1000))) x
$$;
--! EndIncluded sources/receipt-sources.sql
