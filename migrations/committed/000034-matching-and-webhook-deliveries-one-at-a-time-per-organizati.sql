--! Previous: sha1:fecf4d2b6f2021ba898d2e5f4da5bc983aecd707
--! Hash: sha1:e66cdb631b25c6ecd877f71bff6eddb0b89921e8
--! Message: Matching and webhook deliveries one at a time per organization; empty job queues purged hourly

--! Included jobs/worker-pools.sql
-- The worker's fairness and its recovery from a dead process (worker/run.ts).
-- The owner's (the worker's connection) only: no grant to the API's role. graphile-worker's schema
-- is installed with the migrations, after these functions; they reach it when they run.
-- Re-runnable: `create or replace`.

-- The queue a job of `task` for organization `org` goes in. graphile-worker runs one job of a
-- queue at a time, so an organization reads one document at a time, runs one long job (a mailbox
-- or cloud-drive scan, a processor import, a daily-totals rebuild) at a time, matches its receipts
-- one run at a time (a run takes the organization's lock anyway: a second would wait in a slot)
-- and posts one batch of webhooks at a time (an endpoint's events still in the order they were
-- made), however many it queues: the worker's other slots stay free for other organizations. Each
-- kind has its own queue, so an organization's receipt does not wait behind its own ten-minute
-- scan. Housekeeping and the operator's reextract_receipts queue nowhere. The worker gives reading,
-- long and quick jobs slots of their own (worker/run.ts).
create or replace function app_private.job_queue(task text, org uuid) returns text
  language sql immutable as
$$
  select case
    when org is null then null
    when task = 'extract_receipt' then 'reading:' || org
    when task in ('scan_mailbox', 'scan_cloud_drive', 'import_processor_balance', 'rebuild_daily_totals') then 'long:' || org
    when task = 'match_receipts' then 'matching:' || org
    when task = 'deliver_webhook' then 'webhook:' || org
  end
$$;

-- Queues with no job left (one is made for each organization and kind that queues work),
-- removed by the hourly housekeeping as graphile-worker's GC_JOB_QUEUES cleanup does.
create or replace function app_private.purge_empty_job_queues() returns integer
  language plpgsql volatile as
$$
declare v_removed integer;
begin
  delete from graphile_worker._private_job_queues q
   where q.locked_at is null
     and not exists (select 1 from graphile_worker._private_jobs j where j.job_queue_id = q.id);
  get diagnostics v_removed = row_count;
  return v_removed;
end $$;

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
    'amounts', (select array_agg(a::text) from unnest(amounts) a)),
    queue_name => app_private.job_queue('match_receipts', org), max_attempts => 10);
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
--! Included webhooks/deliveries.sql
-- Webhook deliveries: each delivery's next attempt is a job of the worker's `deliver_webhook` task
-- on its organization's webhook queue (app_private.job_queue), so that an endpoint's events go out
-- one at a time in the order they were made, and one organization's slow endpoints hold one of the
-- worker's slots at most. A job sends the endpoint's deliveries that are due,
-- oldest event first, in one batch (the jobs of the others it sent are removed); a failed attempt is
-- retried by a later job (exponential backoff for up to 3 days) and never holds back the events
-- behind it. An endpoint that accepted nothing since a delivery was made, when that delivery's
-- retries end, is disabled.
-- Re-runnable: `create or replace`.

-- The job of a delivery's next attempt, at `at`: keyed by the delivery (a key no other
-- transaction shares), so that a later attempt replaces one not yet started. PL/pgSQL: it names
-- graphile-worker's schema, which src/db/migrate.ts installs before the migrations run.
create or replace function app_private.add_webhook_attempt_job(organization_id uuid, delivery_id uuid, webhook_endpoint_id uuid,
    at timestamptz) returns void
  language plpgsql volatile as
$$
begin
  perform graphile_worker.add_job('deliver_webhook', json_build_object('organizationId', organization_id, 'deliveryId', delivery_id),
    queue_name => app_private.job_queue('deliver_webhook', organization_id), run_at => at, max_attempts => 5,
    job_key => 'webhook-delivery:' || delivery_id);
end $$;

-- The next attempt of a delivery, at `at` (a caller's: only of the organization it is in).
create or replace function app_private.queue_webhook_attempt(delivery_id uuid, at timestamptz) returns void
  language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as
$$
declare d app_public.webhook_deliveries;
begin
  select * into d from app_public.webhook_deliveries x where x.id = delivery_id;
  perform app_private.check_job_organization(d.organization_id);
  if app_public.current_organization_id() is not null and d.organization_id is distinct from app_public.current_organization_id() then
    perform app_private.fail('Webhook delivery not found.', 'AP404');
  end if;
  update app_public.webhook_deliveries x set status = 'pending', next_attempt_at = at where x.id = d.id;
  perform app_private.add_webhook_attempt_job(d.organization_id, d.id, d.webhook_endpoint_id, at);
end $$;
grant execute on function app_private.queue_webhook_attempt(delivery_id uuid, at timestamptz) to accounting_visitor;

-- The wait before attempt `attempts + 1`: `base` (a minute in production), four times longer
-- after each failure, at most 12 hours (the exponent is capped first: no interval overflows).
create or replace function app_private.webhook_retry_delay(attempts integer, base interval) returns interval
  language sql immutable parallel safe as
$$ select least(base * power(4, least(greatest(attempts - 1, 0), 16))::float8, interval '12 hours') $$;

-- An endpoint's pending deliveries fail (the endpoint was disabled); their jobs find nothing to do.
create or replace function app_private.fail_pending_webhook_deliveries(webhook_endpoint_id uuid) returns void
  language sql volatile security definer set search_path = pg_catalog, pg_temp as
$$
  update app_public.webhook_deliveries x
     set status = 'failed', next_attempt_at = null, last_error = coalesce(x.last_error || ' ', '') || 'The endpoint was disabled.'
   where x.webhook_endpoint_id = fail_pending_webhook_deliveries.webhook_endpoint_id and x.status = 'pending'
     and x.organization_id = coalesce(app_public.current_organization_id(), x.organization_id)
$$;
grant execute on function app_private.fail_pending_webhook_deliveries(webhook_endpoint_id uuid) to accounting_visitor;

------------------------------------------------------------------------------------------------
-- The worker's side (owner connection).

-- What the job of `delivery_id` sends: its endpoint (null when it or the delivery is gone, or
-- the endpoint is disabled) and up to `batch` of the endpoint's deliveries due now, in the order
-- their events were made, each with the attempt it is (the attempts made before) and the exact
-- body signed and sent.
create or replace function app_private.webhook_deliveries_due(delivery_id uuid, batch integer) returns jsonb
  language sql stable as
$$
  select jsonb_build_object('organizationId', ep.organization_id, 'webhookEndpointId', ep.id, 'url', ep.url,
           'secretSealed', ep.secret_sealed, 'deliveries', coalesce((
      select jsonb_agg(jsonb_build_object('deliveryId', d.id, 'attempt', d.attempts,
               'body', jsonb_build_object('id', ev.id, 'type', ev.type, 'created', app_private.iso(ev.created),
                 'organizationId', ev.organization_id, 'data', jsonb_build_object('object', ev.object))::text) order by d.seq)
        from (select * from app_public.webhook_deliveries x
               where x.webhook_endpoint_id = ep.id and x.status = 'pending' and x.next_attempt_at <= now()
               order by x.seq limit batch) d
        join app_public.webhook_events ev on ev.id = d.webhook_event_id), '[]'::jsonb))
    from app_public.webhook_deliveries of
    join app_public.webhook_endpoints ep on ep.id = of.webhook_endpoint_id
   where of.id = delivery_id and ep.status = 'enabled'
$$;

-- What attempt `attempt` of a delivery got: an HTTP status (2xx: delivered) or an error (no
-- answer, a refused address, a timeout). A failure is retried after webhook_retry_delay, the last
-- time at `retry_window` after the delivery was made; a failure then ends it. Returns the
-- delivery's status after it, or null when the attempt was stale.
create or replace function app_private.record_webhook_attempt(delivery_id uuid, attempt integer, response_code integer, error text,
    retry_base interval, retry_window interval) returns text
  language plpgsql volatile as
$$
declare
  d app_public.webhook_deliveries;
  ok boolean := error is null and response_code between 200 and 299;
  v_last boolean;
  v_error text := left(coalesce(error, case when not (response_code between 200 and 299)
                                         then format('The endpoint answered HTTP %s.', response_code) end), 2000);
begin
  select * into d from app_public.webhook_deliveries x where x.id = delivery_id for update;
  if not found or d.status <> 'pending' or d.attempts <> attempt then return null; end if;
  v_last := now() >= d.created + retry_window;
  update app_public.webhook_deliveries x
     set attempts = x.attempts + 1, first_attempt_at = coalesce(x.first_attempt_at, now()), last_attempt_at = now(),
         response_code = record_webhook_attempt.response_code, last_error = v_error,
         status = case when ok then 'succeeded' when v_last then 'failed' else 'pending' end,
         delivered_at = case when ok then now() end,
         next_attempt_at = case when not ok and not v_last
           then least(now() + app_private.webhook_retry_delay(x.attempts + 1, retry_base), d.created + retry_window) end
   where x.id = d.id
   returning * into d;
  update app_public.webhook_endpoints ep set failing_since = case when ok then null else coalesce(ep.failing_since, now()) end
   where ep.id = d.webhook_endpoint_id and ep.failing_since is distinct from case when ok then null else coalesce(ep.failing_since, now()) end;
  if d.status = 'pending' then
    perform app_private.queue_webhook_attempt(d.id, d.next_attempt_at);
  else
    -- Sent by another delivery's job, perhaps: its own has nothing left to do.
    perform graphile_worker.remove_job('webhook-delivery:' || d.id);
  end if;
  return d.status;
end $$;

-- A batch's outcomes ([{deliveryId, attempt, responseCode, error}]), recorded in one round trip
-- by the job of `job_delivery_id`. Then, an endpoint that has failed since the first attempt of
-- a delivery whose retries just ended is disabled (decided once the whole batch is recorded: a
-- later delivery of the batch that succeeded clears it); and the job's own delivery, when due and
-- not in the batch, gets a job again.
create or replace function app_private.record_webhook_attempts(job_delivery_id uuid, outcomes jsonb, retry_base interval,
    retry_window interval) returns void
  language plpgsql volatile as
$$
declare
  a jsonb;
  v_failed uuid[] := '{}';
  v_endpoint uuid;
begin
  for a in select * from jsonb_array_elements(outcomes) loop
    if app_private.record_webhook_attempt((a->>'deliveryId')::uuid, (a->>'attempt')::integer,
         (a->>'responseCode')::integer, a->>'error', retry_base, retry_window) = 'failed' then
      v_failed := v_failed || (a->>'deliveryId')::uuid;
    end if;
  end loop;
  for v_endpoint in
    select distinct d.webhook_endpoint_id from app_public.webhook_deliveries d
      join app_public.webhook_endpoints ep on ep.id = d.webhook_endpoint_id
     where d.id = any (v_failed) and ep.status = 'enabled' and ep.failing_since <= d.first_attempt_at
  loop
    update app_public.webhook_endpoints ep
       set status = 'disabled', disabled_reason = format('Disabled at %s: every attempt failed for %s.',
             app_private.iso(now()), justify_interval(retry_window))
     where ep.id = v_endpoint;
    perform app_private.fail_pending_webhook_deliveries(v_endpoint);
  end loop;
  if exists (select 1 from app_public.webhook_deliveries d where d.id = job_delivery_id and d.status = 'pending'
                and d.next_attempt_at <= now()
                and not (d.id::text in (select x->>'deliveryId' from jsonb_array_elements(outcomes) x))) then
    perform app_private.queue_webhook_attempt(job_delivery_id, now());
  end if;
end $$;
--! EndIncluded webhooks/deliveries.sql
