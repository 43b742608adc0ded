--! Previous: sha1:eefe7004dbb02b1c1a796db9a2b2753c166f4845
--! Hash: sha1:1e6115e8d6c71005417d03d2e542c49e4326e965
--! Message: Webhook jobs by endpoint: one job for what is due now and one at the next retry, however many events wait; a job sends batches until none is due

-- Webhook jobs by endpoint, not by delivery: an endpoint has one job for what is due now and one
-- at its next retry, however many events are waiting.
drop function if exists app_private.add_webhook_attempt_job(uuid, uuid, uuid, timestamptz);
drop function if exists app_private.remove_queued_job(text);
drop function if exists app_private.webhook_deliveries_due(uuid, integer);
drop function if exists app_private.record_webhook_attempts(uuid, jsonb, interval, interval);
drop index if exists app_private.job_outbox_job_key;

--! Included jobs/outbox.sql
-- The job outbox: a change's transaction records the jobs it needs here (a receipt's extraction,
-- the matching its events call for, a webhook delivery's attempt), and the worker moves them into
-- graphile-worker's queue in batches (worker/job-outbox.ts). graphile-worker's add_job sends a
-- NOTIFY, and PostgreSQL commits notifying transactions one at a time: with one per request, every
-- request that queued a job waited for the others' commits. Moving a batch sends one NOTIFY.
-- Nothing is lost when a worker dies: a batch leaves the outbox in the transaction that queues it.
-- The owner's (the worker's connection); the API's role reaches it only through the functions of
-- jobs/enqueue.sql and webhooks/deliveries.sql, each for one organization.
-- Re-runnable: `create or replace`.

-- A job for the worker, queued when the caller's transaction commits. The arguments are
-- graphile-worker's add_job's; a job key replaces the job of that key not yet started, as add_job's
-- does. PL/pgSQL: a SQL function's insert would be planned on every call.
create or replace function app_private.queue_job(task text, payload json, queue_name text default null,
    run_at timestamptz default null, max_attempts integer default null, job_key text default null) returns void
  language plpgsql volatile as
$$
begin
  insert into app_private.job_outbox (task, payload, queue_name, run_at, max_attempts, job_key)
    values (task, payload, queue_name, run_at, max_attempts, job_key);
end $$;

-- Moves up to `max_jobs` of the outbox's jobs, oldest first, into graphile-worker's queue in one
-- add_jobs call (one NOTIFY); returns how many it took. Jobs another worker is moving are skipped.
-- A job due at once is due from when it was queued: the worker takes jobs in that order.
-- Of the jobs of one key in a batch, the last queued is the one that counts (as add_job called in
-- turn would leave it); add_jobs could not take a key twice in one call.
create or replace function app_private.dispatch_queued_jobs(max_jobs integer default 500) returns integer
  language plpgsql volatile as
$$
declare
  -- A record, not graphile_worker.job_spec[]: a declared type is resolved when the function is
  -- made, before src/db/migrate.ts may have installed graphile-worker's schema.
  v_batch record;
begin
  with taken as (
    delete from app_private.job_outbox o
     where o.id in (select x.id from app_private.job_outbox x order by x.id limit max_jobs for update skip locked)
    returning o.*
  ), counted as (
    select t.*, count(*) over () as taken_count,
           row_number() over (partition by t.job_key order by t.id desc) as nth_of_key
      from taken t
  )
  select coalesce(max(c.taken_count), 0) as taken,
         array_agg(row(c.task, c.payload, c.queue_name, coalesce(c.run_at, c.queued_at), c.max_attempts, c.job_key, null, null)::graphile_worker.job_spec
                   order by c.id) filter (where c.job_key is null or c.nth_of_key = 1) as specs
    into v_batch
    from counted c;
  if v_batch.specs is not null then
    perform graphile_worker.add_jobs(v_batch.specs);
  end if;
  return v_batch.taken;
end $$;
--! EndIncluded jobs/outbox.sql
--! Included webhooks/deliveries.sql
-- Webhook deliveries: an endpoint's due deliveries are sent by a job of the worker's
-- `deliver_webhook` task for that endpoint, on its organization's webhook queue
-- (app_private.job_queue), so that an endpoint's events go out one at a time in the order they
-- were made, and one organization's slow endpoints hold one of the worker's slots at most. A job
-- sends the endpoint's due deliveries, oldest event first, in batches; a failed attempt is retried
-- later (exponential backoff for up to 3 days) and never holds back the events behind it. An
-- endpoint that accepted nothing since a delivery was made, when that delivery's retries end, is
-- disabled.
-- An endpoint has at most two jobs waiting: one for what is due now, keyed by the endpoint (a
-- job not yet started takes every delivery made before it runs, however many events queued it),
-- and one at its next retry. Both go through the job outbox (jobs/outbox.sql), with the change
-- that made the deliveries.
-- Re-runnable: `create or replace`.

-- The job that sends an endpoint's deliveries due at `at`: now (or earlier), or at its next retry.
create or replace function app_private.queue_webhook_endpoint_job(organization_id uuid, webhook_endpoint_id uuid, at timestamptz)
  returns void
  language plpgsql volatile as
$$
declare v_later boolean := at > now();
begin
  perform app_private.queue_job('deliver_webhook',
    json_build_object('organizationId', organization_id, 'webhookEndpointId', webhook_endpoint_id),
    queue_name => app_private.job_queue('deliver_webhook', organization_id), run_at => case when v_later then at end,
    max_attempts => 5, job_key => case when v_later then 'webhook-retry:' else 'webhook-endpoint:' end || webhook_endpoint_id);
end $$;

-- An endpoint's jobs, as its pending deliveries need them: one now when any is due, and one at
-- the earliest retry of the others (a later retry replaced by an earlier one, never the reverse:
-- the retry job's time is always the earliest of all).
create or replace function app_private.queue_webhook_endpoint_jobs(webhook_endpoint_id uuid) returns void
  language plpgsql volatile as
$$
declare
  v_org uuid;
  v_due boolean;
  v_next timestamptz;
begin
  select ep.organization_id,
         exists (select 1 from app_public.webhook_deliveries d where d.webhook_endpoint_id = ep.id and d.status = 'pending'
                   and d.next_attempt_at <= now()),
         (select min(d.next_attempt_at) from app_public.webhook_deliveries d where d.webhook_endpoint_id = ep.id and d.status = 'pending'
             and d.next_attempt_at > now())
    into v_org, v_due, v_next
    from app_public.webhook_endpoints ep where ep.id = queue_webhook_endpoint_jobs.webhook_endpoint_id and ep.status = 'enabled';
  if v_due then perform app_private.queue_webhook_endpoint_job(v_org, webhook_endpoint_id, now()); end if;
  if v_next is not null then perform app_private.queue_webhook_endpoint_job(v_org, webhook_endpoint_id, v_next); end if;
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
  perform app_private.queue_webhook_endpoint_jobs(d.webhook_endpoint_id);
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

-- What the job of an endpoint sends: the endpoint (null when it is gone or disabled) and up to
-- `batch` of its deliveries due now, in the order their events were made, each with the attempt
-- it is (the attempts made before) and the exact body signed and sent.
create or replace function app_private.webhook_deliveries_due(webhook_endpoint_id uuid, batch integer) returns jsonb
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
    from app_public.webhook_endpoints ep
   where ep.id = webhook_deliveries_due.webhook_endpoint_id and ep.status = 'enabled'
$$;

-- What attempt `attempt` of a delivery got: an HTTP status (2xx: delivered) or an error (no
-- answer, a refused address, a timeout). A failure is retried after webhook_retry_delay, the last
-- time at `retry_window` after the delivery was made; a failure then ends it. Returns the
-- delivery's status after it, or null when the attempt was stale. The caller queues the
-- endpoint's next jobs (record_webhook_attempts).
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
  return d.status;
end $$;

-- A batch's outcomes ([{deliveryId, attempt, responseCode, error}]), recorded in one round trip
-- by the job of endpoint `webhook_endpoint_id`. Then, an endpoint that has failed since the first
-- attempt of a delivery whose retries just ended is disabled (decided once the whole batch is
-- recorded: a later delivery of the batch that succeeded clears it). Returns whether the endpoint
-- has more deliveries due now (its job sends the next batch); its next retry gets its job.
create or replace function app_private.record_webhook_attempts(webhook_endpoint_id uuid, outcomes jsonb, retry_base interval,
    retry_window interval) returns boolean
  language plpgsql volatile as
$$
declare
  a jsonb;
  v_failed uuid[] := '{}';
  v_endpoint uuid;
  v_next timestamptz;
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
  select min(d.next_attempt_at) into v_next from app_public.webhook_deliveries d
   where d.webhook_endpoint_id = record_webhook_attempts.webhook_endpoint_id and d.status = 'pending' and d.next_attempt_at > now();
  if v_next is not null then
    perform app_private.queue_webhook_endpoint_job(ep.organization_id, ep.id, v_next)
       from app_public.webhook_endpoints ep where ep.id = record_webhook_attempts.webhook_endpoint_id and ep.status = 'enabled';
  end if;
  return exists (select 1 from app_public.webhook_deliveries d join app_public.webhook_endpoints ep on ep.id = d.webhook_endpoint_id
                  where d.webhook_endpoint_id = record_webhook_attempts.webhook_endpoint_id and d.status = 'pending'
                    and d.next_attempt_at <= now() and ep.status = 'enabled');
end $$;
--! EndIncluded webhooks/deliveries.sql
--! Included webhooks/events.sql
-- Webhook events (issue 13): each change an endpoint subscribed to is recorded in the transaction
-- of the change, with one delivery per subscribed endpoint and its job, so that a rolled-back
-- change sends nothing and a committed one is never without its event. The functions that own
-- the changes call record_webhook_event (ledger/events.sql, ledger/transitions.sql,
-- receipts/receipts.sql, receipts/matching.sql, imports/*.sql); an import makes one
-- `*.completed` event, not one per row.
-- Re-runnable: `create or replace`.

-- An event of `type` about `object` (or the object `object_id` names, read only when an endpoint
-- subscribed): nothing when no enabled endpoint of the organization subscribed to the type.
create or replace function app_private.record_webhook_event(org uuid, type text, object_id uuid, object jsonb default null)
  returns void
  language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as
$$
declare
  v_event uuid;
  d record;
begin
  -- Few statements: the caller may hold a lock that others wait on until it commits (the day's counts).
  -- Only for the organization the caller is in (the operator's and the worker's: any).
  perform app_private.check_job_organization(org);
  if not exists (select 1 from app_public.webhook_endpoints ep
                  where ep.organization_id = org and ep.status = 'enabled' and record_webhook_event.type = any (ep.events)) then
    return;
  end if;
  if object is null then
    object := case split_part(record_webhook_event.type, '.', 1)
      when 'ledger_event' then (select app_private.ledger_event_json_by_id(e.id) from app_public.ledger_events e
                                 where e.id = object_id and e.organization_id = org)
      when 'receipt' then (select app_private.receipt_json_by_id(r.id) from app_public.receipts r
                            where r.id = object_id and r.organization_id = org) end;
    if object is null then raise exception 'record_webhook_event: no % of organization % with id %', type, org, object_id; end if;
  end if;
  insert into app_public.webhook_events (organization_id, type, object)
    values (org, record_webhook_event.type, object)
    returning id into v_event;
  for d in
    insert into app_public.webhook_deliveries (organization_id, webhook_endpoint_id, webhook_event_id)
      select org, ep.id, v_event from app_public.webhook_endpoints ep
       where ep.organization_id = org and ep.status = 'enabled' and record_webhook_event.type = any (ep.events)
       order by ep.id
      returning webhook_endpoint_id, next_attempt_at
  loop
    perform app_private.queue_webhook_endpoint_job(org, d.webhook_endpoint_id, d.next_attempt_at);
  end loop;
end $$;
grant execute on function app_private.record_webhook_event(org uuid, type text, object_id uuid, object jsonb) to accounting_visitor;
--! EndIncluded webhooks/events.sql

-- The deliveries' jobs waiting give way to their endpoints' (one running now finds its delivery
-- sent, or its payload of the old kind refused; the endpoint's own job sends what is left).
delete from app_private.job_outbox where task = 'deliver_webhook';
do $$
begin
  if to_regclass('graphile_worker._private_jobs') is not null then
    delete from graphile_worker._private_jobs j using graphile_worker._private_tasks t
     where t.id = j.task_id and t.identifier = 'deliver_webhook' and j.locked_at is null and j.payload::jsonb ? 'deliveryId';
  end if;
end $$;
select app_private.queue_webhook_endpoint_jobs(ep.id) from app_public.webhook_endpoints ep
 where exists (select 1 from app_public.webhook_deliveries d where d.webhook_endpoint_id = ep.id and d.status = 'pending');
