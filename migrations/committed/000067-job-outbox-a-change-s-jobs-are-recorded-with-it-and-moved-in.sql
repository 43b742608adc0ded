--! Previous: sha1:ccdb813b58dcba3a9d906351f9a217f20303072a
--! Hash: sha1:eefe7004dbb02b1c1a796db9a2b2753c166f4845
--! Message: Job outbox: a change's jobs are recorded with it and moved into graphile-worker's queue in batches by the worker, one NOTIFY a batch, not one a request's commit

-- The job outbox: jobs a change needs are recorded with it and moved into graphile-worker's queue in
-- batches by the worker, one NOTIFY a batch instead of one a transaction.
create table if not exists app_private.job_outbox (
  id bigint generated always as identity primary key,
  task text not null,
  payload json not null,
  queue_name text,
  run_at timestamptz,
  max_attempts integer,
  job_key text,
  queued_at timestamptz not null default now()
);
create index if not exists job_outbox_job_key on app_private.job_outbox (job_key) where job_key is not null;
-- Rows come and go hundreds of times a second under load: vacuumed by count, not by share.
alter table app_private.job_outbox set (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000);

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

-- The job of `job_key`, whether still in the outbox or already in graphile-worker's queue, is
-- removed (unless it has started: graphile-worker's remove_job leaves a running job be).
create or replace function app_private.remove_queued_job(job_key text) returns void
  language plpgsql volatile as
$$
begin
  delete from app_private.job_outbox o where o.job_key = remove_queued_job.job_key;
  perform graphile_worker.remove_job(job_key);
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
--! Included jobs/enqueue.sql
-- Jobs the database queues in the same transaction as the change that needs them (a receipt
-- stored and its extraction; events changed while receipts wait for them), so that a crash never
-- leaves one without the other, and a job never runs before the change it is for is committed.
-- They go through the job outbox (jobs/outbox.sql): no request's commit waits for another's.
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
  perform app_private.queue_job('extract_receipt', json_build_object('organizationId', org, 'receiptId', receipt_id),
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
  perform app_private.queue_job('match_receipts', json_build_object('organizationId', org, 'receiptIds', receipt_ids,
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
-- transaction shares), so that a later attempt replaces one not yet started. Through the job
-- outbox (jobs/outbox.sql), as the change that made the delivery commits.
create or replace function app_private.add_webhook_attempt_job(organization_id uuid, delivery_id uuid, webhook_endpoint_id uuid,
    at timestamptz) returns void
  language plpgsql volatile as
$$
begin
  perform app_private.queue_job('deliver_webhook', json_build_object('organizationId', organization_id, 'deliveryId', delivery_id),
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
    perform app_private.remove_queued_job('webhook-delivery:' || d.id);
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
