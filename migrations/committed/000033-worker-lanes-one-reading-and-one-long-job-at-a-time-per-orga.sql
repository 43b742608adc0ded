--! Previous: sha1:3854489b5f3829ce2d2759b73bcc7b90eca05c0e
--! Hash: sha1:fecf4d2b6f2021ba898d2e5f4da5bc983aecd707
--! Message: Worker lanes: one reading and one long job at a time per organization; worker pools beat, and a dead pool's jobs run again

-- Worker pools prove they are alive; the jobs of a dead one are run again within a minute.
create table if not exists app_private.worker_heartbeats (
  pool_id text primary key,
  beat_at timestamptz not null default now()
);

--! Included jobs/worker-pools.sql
-- The worker's fairness and its recovery from a dead process (worker/run.ts).
-- The owner's (the worker's connection) only: no grant to the API's role. graphile-worker's schema
-- is installed with the migrations, after these functions; they reach it when they run.
-- Re-runnable: `create or replace`.

-- The queue a job of `task` for organization `org` goes in. graphile-worker runs one job of a
-- queue at a time, so an organization reads one document at a time and runs one long job (a
-- mailbox or cloud-drive scan, a processor import, a daily-totals rebuild) at a time, however many
-- it queues: the worker's other slots stay free for other organizations. Reading and long jobs are
-- separate queues, so an organization's receipt does not wait behind its own ten-minute scan.
-- Other tasks (matching, webhooks, housekeeping) are short and queue nowhere. The worker gives
-- each of these lanes its own slots (worker/run.ts).
create or replace function app_private.job_queue(task text, org uuid) returns text
  language sql immutable as
$$
  select case
    when org is null then null
    when task = 'extract_receipt' then 'reading:' || org
    when task in ('scan_mailbox', 'scan_cloud_drive', 'import_processor_balance', 'rebuild_daily_totals') then 'long:' || org
  end
$$;

-- Each running worker pool says it is alive every few seconds (graphile-worker locks a job with
-- its pool's id). A pool that stops cleanly removes its row.
create or replace function app_private.beat_worker_pools(pool_ids text[]) returns void
  language sql volatile as
$$
  insert into app_private.worker_heartbeats (pool_id, beat_at)
  select distinct p, now() from unnest(pool_ids) p
  on conflict (pool_id) do update set beat_at = excluded.beat_at;
$$;

create or replace function app_private.forget_worker_pools(pool_ids text[]) returns void
  language sql volatile as
$$ delete from app_private.worker_heartbeats where pool_id = any (pool_ids) $$;

-- Unlocks the jobs (and their queues) of every pool that stopped beating for `dead_after` (its
-- process was killed, ran out of memory, or froze), so that another worker runs them again at
-- once instead of after graphile-worker's four hours. A job's attempt was counted when it was
-- locked: a job that kills its worker each time ends after its max_attempts. A lock by a pool that
-- never beat (one from before heartbeats, or graphile-worker's run-once tools) is released after
-- `unknown_after`. Returns how many jobs were unlocked.
create or replace function app_private.release_dead_worker_jobs(dead_after interval, unknown_after interval) returns integer
  language plpgsql volatile as
$$
declare v_dead text[]; v_released integer;
begin
  select coalesce(array_agg(distinct d.locked_by), '{}') into v_dead from (
    select j.locked_by, j.locked_at from graphile_worker._private_jobs j where j.locked_by is not null
    union all
    select q.locked_by, q.locked_at from graphile_worker._private_job_queues q where q.locked_by is not null
  ) d
  left join app_private.worker_heartbeats h on h.pool_id = d.locked_by
  where h.beat_at < now() - dead_after or (h.pool_id is null and d.locked_at < now() - unknown_after);
  -- Pools gone long ago without a lock left.
  delete from app_private.worker_heartbeats where beat_at < now() - greatest(dead_after, interval '1 day')
     or pool_id = any (v_dead);
  if cardinality(v_dead) = 0 then return 0; end if;
  select count(*) into v_released from graphile_worker._private_jobs where locked_by = any (v_dead);
  perform graphile_worker.force_unlock_workers(v_dead);
  return v_released;
end $$;
--! EndIncluded jobs/worker-pools.sql
--! Included jobs/enqueue.sql
-- Jobs the database queues in the same transaction as the change that needs them (a receipt
-- stored and its extraction; events changed while receipts wait for them), so that a crash never
-- leaves one without the other, and a job never runs before the change it is for is committed.
-- graphile-worker's schema is installed with the migrations (src/db/migrate.ts); its functions are
-- the owner's, so the API's role reaches them only through these, each for one organization.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- A caller queues work only for the organization it is in; the operator names any.
create or replace function app_private.check_job_organization(org uuid) returns void
  language plpgsql stable as
$$
begin
  if app_public.current_organization_id() is distinct from org
     and (app_public.current_api_key_id() is not null or app_public.current_user_id() is not null) then
    perform app_private.fail('Organization Not Found.', 'AU404');
  end if;
end $$;
grant execute on function app_private.check_job_organization(org uuid) to accounting_visitor;

-- Extraction of a stored receipt. Up to 5 attempts: the last one records an unreadable receipt
-- (never stuck in draft).
create or replace function app_private.queue_receipt_extraction(org uuid, receipt_id uuid) returns void
  language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as
$$
begin
  perform app_private.check_job_organization(org);
  perform graphile_worker.add_job('extract_receipt', json_build_object('organizationId', org, 'receiptId', receipt_id),
    queue_name => app_private.job_queue('extract_receipt', org), max_attempts => 5);
end $$;
grant execute on function app_private.queue_receipt_extraction(org uuid, receipt_id uuid) to accounting_visitor;

-- Matching of the organization's waiting receipts: these ones (null: all), or those of these
-- amounts (null: any). No job key: a keyed job is one row that every writer would wait on.
create or replace function app_private.queue_receipt_matching(org uuid, receipt_ids uuid[] default null, amounts numeric[] default null)
  returns void
  language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as
$$
begin
  perform app_private.check_job_organization(org);
  perform graphile_worker.add_job('match_receipts', json_build_object('organizationId', org, 'receiptIds', receipt_ids,
    'amounts', (select array_agg(a::text) from unnest(amounts) a)), max_attempts => 10);
end $$;
grant execute on function app_private.queue_receipt_matching(org uuid, receipt_ids uuid[], amounts numeric[]) to accounting_visitor;

-- Extraction again of an organization's receipts that wait for an event and were read before
-- (the operator's `reextract_receipts`, after the reader improved): those it could not read (an
-- error, or no amount or no vendor), or, with `include_read`, all of them. The job says
-- `reextract`: a read that fails keeps the earlier reading. A job key per receipt: asking again
-- while one waits queues nothing more. Returns how many receipts were asked for.
create or replace function app_private.queue_receipt_reextraction(org uuid, include_read boolean default false) returns integer
  language plpgsql volatile as
$$
declare v_queued integer;
begin
  select count(graphile_worker.add_job('extract_receipt', json_build_object('organizationId', org, 'receiptId', r.id, 'reextract', true),
           queue_name => app_private.job_queue('extract_receipt', org), max_attempts => 5,
           job_key => 'reextract:' || r.id, job_key_mode => 'preserve_run_at'))
    into v_queued
    from app_public.receipts r
   where r.organization_id = org and r.event_id is null and r.status <> 'rejected' and r.extracted_at is not null
     and (include_read or r.extraction_error is not null or r.amount is null or r.vendor_name is null);
  return v_queued;
end $$;
--! EndIncluded jobs/enqueue.sql
--! Included jobs/operator-jobs.sql
-- Jobs an operator drives from the CLI (`enqueue`, `list_jobs`, `retry_job`): the tasks of the
-- worker that take an organization and are safe to run again, queued, listed and retried here.
-- The operator's (owner connection) only: no grant to the API's role. graphile-worker's schema is
-- installed with the migrations, after these functions; they reach it when they run.
-- Re-runnable: `create or replace`.

-- The tasks an operator may queue, each idempotent and recorded in app_private.job_results.
create or replace function app_private.operator_job_tasks() returns text[]
  language sql immutable as
$$ select array['import_processor_balance', 'match_receipts', 'reextract_receipts', 'rebuild_daily_totals'] $$;

-- Queues `task` for an organization with `payload` (an object; organizationId is set from `org`),
-- and returns the job's id.
create or replace function app_private.enqueue_operator_job(task text, org uuid, payload jsonb default '{}') returns bigint
  language plpgsql volatile as
$$
declare v_id bigint;
begin
  if task is null or not task = any (app_private.operator_job_tasks()) then
    perform app_private.fail(format('Unknown task "%s": one of %s.', task, array_to_string(app_private.operator_job_tasks(), ', ')));
  end if;
  if jsonb_typeof(coalesce(payload, '{}')) <> 'object' then
    perform app_private.fail('The payload must be a JSON object.');
  end if;
  if not exists (select 1 from app_public.organizations o where o.id = org) then
    perform app_private.fail('Organization Not Found.', 'AP404');
  end if;
  -- A stored export of this organization only: a mistyped key never imports another's.
  if task = 'import_processor_balance'
     and coalesce(payload->>'objectKey', '') not like 'processor-imports/' || org || '/%' then
    perform app_private.fail(format('The objectKey must be one of this organization''s stored exports (processor-imports/%s/…).', org));
  end if;
  select (graphile_worker.add_job(task, (coalesce(payload, '{}') || jsonb_build_object('organizationId', org))::json,
      queue_name => app_private.job_queue(task, org), max_attempts => 5)).id into v_id;
  return v_id;
end $$;

-- The jobs in the queue (waiting, running, or failing: `failed_only`), newest first.
create or replace function app_private.list_operator_jobs(failed_only boolean default false, lim integer default 50) returns jsonb
  language plpgsql stable as
$$
declare v_jobs jsonb;
begin
  select coalesce(jsonb_agg(j order by j."createdAt" desc, j.id::bigint desc), '[]') into v_jobs from (
    -- The private table, not the jobs view: the view has no payload (graphile-worker 0.18).
    select x.id::text as id, t.identifier as task, x.payload->>'organizationId' as "organizationId",
           (select o.name from app_public.organizations o
             where x.payload->>'organizationId' ~ '^[0-9a-f-]{36}$' and o.id = (x.payload->>'organizationId')::uuid) as organization,
           case when x.locked_at is not null then 'running'
                when x.attempts >= x.max_attempts then 'failed'
                when x.last_error is not null then 'retrying'
                else 'waiting' end as state,
           x.attempts, x.max_attempts as "maxAttempts", x.last_error as "lastError", x.run_at as "runAt", x.created_at as "createdAt"
      from graphile_worker._private_jobs x join graphile_worker._private_tasks t on t.id = x.task_id
     where not failed_only or x.last_error is not null
     order by x.created_at desc, x.id desc
     limit greatest(1, least(coalesce(lim, 50), 1000))) j;
  return v_jobs;
end $$;

-- Runs a job in the queue again now, with all its attempts (a failed one included).
create or replace function app_private.retry_operator_job(job_id bigint) returns jsonb
  language plpgsql volatile as
$$
declare v_found boolean;
begin
  select true into v_found from graphile_worker.reschedule_jobs(array[job_id], run_at => now(), attempts => 0) limit 1;
  if v_found is null then
    perform app_private.fail(format('No job %s waiting in the queue: it is running now, or it ended (a job that succeeded or failed for good is no longer there; enqueue it again).', job_id), 'AP404');
  end if;
  return (select to_jsonb(j) from (select x.id::text as id, x.task_identifier as task, x.attempts, x.run_at as "runAt"
                                     from graphile_worker.jobs x where x.id = job_id) j);
end $$;

-- What jobs did, newest first (app_private.job_results): every attempt of every recorded task, or
-- of one task, or of one job.
create or replace function app_private.list_job_results(task text default null, job_id text default null, lim integer default 50)
  returns jsonb
  language sql stable as
$$
  select coalesce(jsonb_agg(r order by r.id desc), '[]') from (
    select x.id, x.job_name as task, x.job_id as "jobId", x.attempt, x.organization_id as "organizationId",
           (select o.name from app_public.organizations o where o.id = x.organization_id) as organization,
           x.status, x.result, x.error, x.started_at as "startedAt", x.finished_at as "finishedAt"
      from app_private.job_results x
     where (list_job_results.task is null or x.job_name = list_job_results.task)
       and (list_job_results.job_id is null or x.job_id = list_job_results.job_id)
     order by x.id desc
     limit greatest(1, least(coalesce(lim, 50), 1000))) r
$$;
--! EndIncluded jobs/operator-jobs.sql
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

-- A scan of one source, queued now; the scan's id (the worker's job id) is returned. The
-- organization's long-job queue: its scans run one at a time, in order; a scan of a source not
-- yet started is not queued twice.
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
    queue_name => app_private.job_queue(app_private.source_scan_task(v_kind), organization_id),
    job_key => 'scan:' || receipt_source_id, max_attempts => 3) j;
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
