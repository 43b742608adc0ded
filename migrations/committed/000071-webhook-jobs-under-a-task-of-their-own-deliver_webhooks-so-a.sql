--! Previous: sha1:05be9cf8e9fb2a6f9dbf09956d379002d0581c57
--! Hash: sha1:6db1c1aa23338b1e221a090ff488909552f2150e
--! Message: Webhook jobs under a task of their own (deliver_webhooks) so a worker of the release before takes none; an endpoint's job keeps its place in the queue; every webhook job ends by queuing the next retry; re-enabling an endpoint queues its waiting deliveries; one worker moves the outbox at a time

-- Webhook jobs under a task of their own (`deliver_webhooks`, an endpoint's), so that a worker of
-- the release before, still running during a deploy, takes none of them; an endpoint's job for what
-- is due keeps its place in the queue (preserve_run_at); one worker moves the outbox at a time.
alter table app_private.job_outbox add column if not exists preserve_run_at boolean not null default false;
drop function if exists app_private.queue_job(text, json, text, timestamptz, integer, text);
drop function if exists app_private.queue_webhook_endpoint_jobs(uuid);

--! Included jobs/outbox.sql
-- The job outbox: a change's transaction records the jobs it needs here (a receipt's extraction,
-- the matching its events call for, a webhook endpoint's deliveries), and the worker moves them into
-- graphile-worker's queue in batches (worker/job-outbox.ts). graphile-worker's add_job sends a
-- NOTIFY, and PostgreSQL commits notifying transactions one at a time: with one per request, every
-- request that queued a job waited for the others' commits. Moving a batch sends one NOTIFY.
-- Nothing is lost when a worker dies: a batch leaves the outbox in the transaction that queues it.
-- The owner's (the worker's connection); the API's role reaches it only through the functions of
-- jobs/enqueue.sql and webhooks/deliveries.sql, each for one organization.
-- Re-runnable: `create or replace`.

-- A job for the worker, queued when the caller's transaction commits. The arguments are
-- graphile-worker's add_job's; a job key replaces the job of that key not yet started, as add_job's
-- does, and with `preserve_run_at` keeps that job's time (a job for "whatever is due" that new
-- work must not push back behind later jobs). PL/pgSQL: a SQL function's insert would be planned
-- on every call.
create or replace function app_private.queue_job(task text, payload json, queue_name text default null,
    run_at timestamptz default null, max_attempts integer default null, job_key text default null,
    preserve_run_at boolean default false) returns void
  language plpgsql volatile as
$$
begin
  -- What graphile-worker would refuse refuses the change here, not a whole batch later.
  if max_attempts is not null and max_attempts not between 1 and 32767 then
    raise exception 'queue_job: max_attempts must be between 1 and 32767, not %', max_attempts;
  end if;
  if job_key = '' then raise exception 'queue_job: a job key must not be empty'; end if;
  insert into app_private.job_outbox (task, payload, queue_name, run_at, max_attempts, job_key, preserve_run_at)
    values (task, payload, queue_name, run_at, max_attempts, job_key, preserve_run_at);
end $$;

-- Moves up to `max_jobs` of the outbox's jobs, oldest first, into graphile-worker's queue (one
-- add_jobs call for each key mode: one or two NOTIFYs); returns how many it took. One worker moves
-- at a time (the others find the lock taken and move nothing this time), so that batches reach
-- the queue in the order they were taken. A job due at once is due from when it was queued: the
-- worker takes jobs in that order. Of the jobs of one key in a batch, the last queued is the one
-- that counts (as add_job called in turn would leave it), with the earliest time when its time is
-- preserved; add_jobs could not take a key twice in one call.
create or replace function app_private.dispatch_queued_jobs(max_jobs integer default 500) returns integer
  language plpgsql volatile as
$$
declare
  -- A record, not graphile_worker.job_spec[]: a declared type is resolved when the function is
  -- made, before src/db/migrate.ts may have installed graphile-worker's schema.
  v_batch record;
begin
  if not pg_try_advisory_xact_lock(hashtext('accounting-api:job-outbox')) then return 0; end if;
  with taken as (
    delete from app_private.job_outbox o
     where o.id in (select x.id from app_private.job_outbox x order by x.id limit max_jobs for update skip locked)
    returning o.*
  ), counted as (
    select t.*, count(*) over () as taken_count,
           row_number() over (partition by t.job_key order by t.id desc) as nth_of_key,
           min(coalesce(t.run_at, t.queued_at)) over (partition by t.job_key) as earliest
      from taken t
  )
  select coalesce(max(c.taken_count), 0) as taken,
         array_agg(row(c.task, c.payload, c.queue_name, coalesce(c.run_at, c.queued_at), c.max_attempts, c.job_key, null, null)::graphile_worker.job_spec
                   order by c.id) filter (where not c.preserve_run_at and (c.job_key is null or c.nth_of_key = 1)) as specs,
         array_agg(row(c.task, c.payload, c.queue_name, c.earliest, c.max_attempts, c.job_key, null, null)::graphile_worker.job_spec
                   order by c.id) filter (where c.preserve_run_at and (c.job_key is null or c.nth_of_key = 1)) as preserved
    into v_batch
    from counted c;
  if v_batch.specs is not null then
    perform graphile_worker.add_jobs(v_batch.specs);
  end if;
  if v_batch.preserved is not null then
    perform graphile_worker.add_jobs(v_batch.preserved, job_key_preserve_run_at => true);
  end if;
  return v_batch.taken;
end $$;
--! EndIncluded jobs/outbox.sql
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
    when task in ('deliver_webhooks', 'deliver_webhook') then 'webhook:' || org
  end
$$;

-- Each running worker pool says it is alive every few seconds (graphile-worker locks a job with
-- its pool's id). `beating_since` is when its current run of beats began: a pool that was silent
-- for `dead_after` (its database out of reach) starts a new run. A pool that stops cleanly removes
-- its row.
create or replace function app_private.beat_worker_pools(pool_ids text[], dead_after interval) returns void
  language sql volatile as
$$
  insert into app_private.worker_heartbeats as h (pool_id, beat_at, beating_since)
  select distinct p, now(), now() from unnest(pool_ids) p
  on conflict (pool_id) do update
    set beat_at = excluded.beat_at,
        beating_since = case when h.beat_at < now() - dead_after then now() else h.beating_since end;
$$;

create or replace function app_private.forget_worker_pools(pool_ids text[]) returns void
  language sql volatile as
$$ delete from app_private.worker_heartbeats where pool_id = any (pool_ids) $$;

-- Unlocks the jobs (and their queues) of every pool that stopped beating for `dead_after` (its
-- process was killed or ran out of memory), so that another worker runs them again within a
-- minute instead of after graphile-worker's four hours. Only a caller whose own pools (`own`)
-- have beaten without a gap for `dead_after` judges others: after the database was out of reach,
-- every pool's last beat is old, and none is taken for dead until they could all beat again. A
-- lock by a pool that never beat (graphile-worker's run-once tools, a worker of an older version)
-- is released after `unknown_after`. A released job waits `retry_after` × attempts² (10 s, 40 s, 90 s …
-- and says why in last_error: its attempt was counted when it was taken, so a job that kills its
-- worker every time ends after its max_attempts, without a tight loop of crashes. Returns how
-- many jobs were unlocked.
create or replace function app_private.release_dead_worker_jobs(own text[], dead_after interval, unknown_after interval,
    retry_after interval) returns integer
  language plpgsql volatile as
$$
declare v_dead text[]; v_released integer;
begin
  if not exists (select 1 from app_private.worker_heartbeats h
                  where h.pool_id = any (own) and h.beating_since <= now() - dead_after) then
    return 0;
  end if;
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
  update graphile_worker._private_jobs
     set run_at = now() + retry_after * attempts * attempts,
         last_error = 'The worker running this job stopped before it finished (killed, or out of memory).'
   where locked_by = any (v_dead);
  get diagnostics v_released = row_count;
  perform graphile_worker.force_unlock_workers(v_dead);
  return v_released;
end $$;
--! EndIncluded jobs/worker-pools.sql
--! Included webhooks/deliveries.sql
-- Webhook deliveries: an endpoint's due deliveries are sent by a job of the worker's
-- `deliver_webhooks` task for that endpoint, on its organization's webhook queue
-- (app_private.job_queue), so that an endpoint's events go out one at a time in the order they
-- were made, and one organization's slow endpoints hold one of the worker's slots at most. A job
-- sends the endpoint's due deliveries, oldest event first, in batches; a failed attempt is retried
-- later (exponential backoff for up to 3 days) and never holds back the events behind it. An
-- endpoint that accepted nothing since a delivery was made, when that delivery's retries end, is
-- disabled.
-- An endpoint has at most two jobs waiting: one for what is due now, keyed by the endpoint (a
-- job not yet started takes every delivery made before it runs, however many events queued it,
-- and keeps its place in the queue), and one at its next retry. Both go through the job outbox
-- (jobs/outbox.sql), with the change that made the deliveries. Every job ends by queuing the
-- endpoint's next retry from the deliveries as they are then, so that a retry job that ran early
-- or late leaves none behind.
-- Re-runnable: `create or replace`.

-- The job that sends an endpoint's deliveries due at `at`: now (or earlier), or at its next retry.
create or replace function app_private.queue_webhook_endpoint_job(organization_id uuid, webhook_endpoint_id uuid, at timestamptz)
  returns void
  language plpgsql volatile as
$$
declare v_later boolean := at > now();
begin
  perform app_private.queue_job('deliver_webhooks',
    json_build_object('organizationId', organization_id, 'webhookEndpointId', webhook_endpoint_id),
    queue_name => app_private.job_queue('deliver_webhooks', organization_id), run_at => case when v_later then at end,
    max_attempts => 5, job_key => case when v_later then 'webhook-retry:' else 'webhook-endpoint:' end || webhook_endpoint_id,
    preserve_run_at => not v_later);
end $$;

-- An endpoint's jobs, as its pending deliveries need them: one now when any is due (unless
-- `due_now` is false: the caller is that job), and one at the earliest retry of the others (the
-- retry job's time is always the earliest of all, however many were asked for before).
create or replace function app_private.queue_webhook_endpoint_jobs(webhook_endpoint_id uuid, due_now boolean default true) returns void
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
  if v_due and due_now then perform app_private.queue_webhook_endpoint_job(v_org, webhook_endpoint_id, now()); end if;
  if v_next is not null then perform app_private.queue_webhook_endpoint_job(v_org, webhook_endpoint_id, v_next); end if;
end $$;

-- An endpoint's jobs, as its pending deliveries need them (a caller's: only of the organization it is in).
create or replace function app_private.resume_webhook_endpoint(webhook_endpoint_id uuid) returns void
  language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as
$$
begin
  perform app_private.check_job_organization(ep.organization_id)
     from app_public.webhook_endpoints ep where ep.id = resume_webhook_endpoint.webhook_endpoint_id;
  perform app_private.queue_webhook_endpoint_jobs(webhook_endpoint_id);
end $$;
grant execute on function app_private.resume_webhook_endpoint(webhook_endpoint_id uuid) to accounting_visitor;

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
-- has more deliveries due now (its job sends the next batch); the next retry of each endpoint the
-- outcomes' deliveries are on gets its job (their own endpoints, whatever the caller named: a
-- worker of the release before named a delivery).
create or replace function app_private.record_webhook_attempts(webhook_endpoint_id uuid, outcomes jsonb, retry_base interval,
    retry_window interval) returns boolean
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
  perform app_private.queue_webhook_endpoint_jobs(x.webhook_endpoint_id, due_now => false)
     from (select distinct d.webhook_endpoint_id from app_public.webhook_deliveries d
            where d.id in (select (o->>'deliveryId')::uuid from jsonb_array_elements(outcomes) o)) x;
  return exists (select 1 from app_public.webhook_deliveries d join app_public.webhook_endpoints ep on ep.id = d.webhook_endpoint_id
                  where d.webhook_endpoint_id = record_webhook_attempts.webhook_endpoint_id and d.status = 'pending'
                    and d.next_attempt_at <= now() and ep.status = 'enabled');
end $$;
--! EndIncluded webhooks/deliveries.sql
--! Included webhooks/endpoints.sql
-- Webhook endpoints (issue 13): registering, listing, changing and removing them, and the log of
-- their deliveries. createWebhookEndpoint and updateWebhookEndpoint are served by the server (it
-- checks the URL's host through the outbound guard and seals the signing secret, which SQL never
-- sees in clear); their rules are here. Owner or admin only, by JWT.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security and grants of this feature's tables.

-- app_public.webhook_endpoints: the API's role never reads the sealed secret.
drop policy if exists webhook_endpoints_tenant on app_public.webhook_endpoints;
create policy webhook_endpoints_tenant on app_public.webhook_endpoints
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
revoke all on app_public.webhook_endpoints from accounting_visitor;
grant select (id, organization_id, url, events, description, status, disabled_reason, failing_since, created, updated)
  on app_public.webhook_endpoints to accounting_visitor;
grant insert (id, organization_id, url, events, description, secret_sealed) on app_public.webhook_endpoints to accounting_visitor;
grant update (url, events, description, status, disabled_reason, failing_since, updated) on app_public.webhook_endpoints to accounting_visitor;
grant delete on app_public.webhook_endpoints to accounting_visitor;

drop trigger if exists _100_touch_updated on app_public.webhook_endpoints;
create trigger _100_touch_updated before update on app_public.webhook_endpoints
  for each row execute function app_private.tg__touch_updated();

-- app_public.webhook_events and webhook_deliveries: written by the database's own functions and
-- the worker; read by the delivery log; a redelivery puts a delivery back to pending.
drop policy if exists webhook_events_tenant on app_public.webhook_events;
create policy webhook_events_tenant on app_public.webhook_events
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select on app_public.webhook_events to accounting_visitor;

drop policy if exists webhook_deliveries_tenant on app_public.webhook_deliveries;
create policy webhook_deliveries_tenant on app_public.webhook_deliveries
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select on app_public.webhook_deliveries to accounting_visitor;

------------------------------------------------------------------------------------------------

-- The events an endpoint may subscribe to.
create or replace function app_private.webhook_event_types() returns text[]
  language sql immutable parallel safe as
$$ select array['ledger_event.created', 'ledger_event.confirmed', 'ledger_event.rejected', 'ledger_event.reversed',
                'bank_import.completed', 'processor_import.completed', 'receipt.received', 'receipt.matched',
                'receipt.unmatched', 'reconciliation.completed', 'invoice.approved', 'invoice.paid', 'bill.approved', 'bill.paid'] $$;
grant execute on function app_private.webhook_event_types() to accounting_visitor;

-- An endpoint as the API shows it (by id: the API's role may not read a whole row, which holds the secret).
create or replace function app_private.webhook_endpoint_json(webhook_endpoint_id uuid) returns jsonb
  language sql stable as
$$ select jsonb_build_object('id', ep.id, 'url', ep.url, 'events', to_jsonb(ep.events), 'description', ep.description,
     'status', ep.status, 'disabledReason', ep.disabled_reason, 'created', app_private.iso(ep.created))
     from app_public.webhook_endpoints ep where ep.id = webhook_endpoint_id $$;
grant execute on function app_private.webhook_endpoint_json(webhook_endpoint_id uuid) to accounting_visitor;

-- The caller (owner or admin, by JWT) and the fields of an endpoint, checked and normalised: the
-- URL's scheme, host and address are the server's to check (src/webhooks/endpoint-url.ts).
-- A null argument is a field left as it is (an update) or absent (a creation: url and events are
-- required there).
create or replace function app_private.webhook_endpoint_settings(organization_id uuid, url text, events text[], description text)
  returns jsonb
  language plpgsql stable as
$$
declare
  -- The scheme as the URL parser writes it (lower case), which the table's check expects.
  v_url text := regexp_replace(app_private.clean_text(url), '^[Hh][Tt][Tt][Pp]([Ss]?)://', 'http\1://');
  v_events text[];
  v_unknown text;
  v_description text := app_private.clean_text(description);
begin
  perform app_private.assert_org_access(organization_id, true);
  if v_url is not null and (v_url !~* '^https?://' or length(v_url) > 2048) then
    perform app_private.fail('url must be an https URL of at most 2048 characters.');
  end if;
  if events is not null then
    select array_agg(distinct btrim(e) order by btrim(e)) into v_events from unnest(events) e;
    if v_events is null then perform app_private.fail('events must name at least one event type.'); end if;
    select e into v_unknown from unnest(v_events) e where not (e = any (app_private.webhook_event_types())) limit 1;
    if v_unknown is not null then
      perform app_private.fail(format('events: unknown event type %s; known: %s.', v_unknown,
        array_to_string(app_private.webhook_event_types(), ', ')));
    end if;
  end if;
  if length(v_description) > 500 then perform app_private.fail('description must be at most 500 characters.'); end if;
  return jsonb_build_object('url', v_url, 'events', to_jsonb(v_events), 'description', v_description);
end $$;
grant execute on function app_private.webhook_endpoint_settings(organization_id uuid, url text, events text[], description text) to accounting_visitor;

-- An endpoint whose URL the server has checked, with its signing secret sealed to this id.
create or replace function app_private.create_webhook_endpoint(organization_id uuid, url text, events text[], description text,
    webhook_endpoint_id uuid, secret_sealed text) returns jsonb
  language plpgsql volatile as
$$
declare
  s jsonb := app_private.webhook_endpoint_settings(organization_id, url, events, description);
begin
  if s->>'url' is null then perform app_private.fail('url is required.'); end if;
  if s->'events' = 'null'::jsonb then perform app_private.fail('events must name at least one event type.'); end if;
  -- Creations of one organization one at a time, so that two cannot both pass the limit.
  perform pg_advisory_xact_lock(hashtext('webhook_endpoints:' || create_webhook_endpoint.organization_id));
  if (select count(*) from app_public.webhook_endpoints x where x.organization_id = create_webhook_endpoint.organization_id) >= 20 then
    perform app_private.fail('An organization may have at most 20 webhook endpoints.');
  end if;
  insert into app_public.webhook_endpoints (id, organization_id, url, events, description, secret_sealed)
    values (webhook_endpoint_id, create_webhook_endpoint.organization_id, s->>'url',
            array(select jsonb_array_elements_text(s->'events')), s->>'description', secret_sealed);
  return jsonb_build_object('success', true, 'error', null, 'webhookEndpoint', app_private.webhook_endpoint_json(webhook_endpoint_id),
    'secret', null);
end $$;
grant execute on function app_private.create_webhook_endpoint(organization_id uuid, url text, events text[], description text, webhook_endpoint_id uuid, secret_sealed text) to accounting_visitor;

-- Changes the fields given (null: unchanged). status `enabled` turns a disabled endpoint back on
-- (its failed deliveries stay failed: redeliverWebhook sends one again); `disabled` stops it, and
-- its pending deliveries fail.
create or replace function app_private.update_webhook_endpoint(organization_id uuid, webhook_endpoint_id uuid, url text,
    events text[], description text, status text) returns jsonb
  language plpgsql volatile as
$$
declare
  s jsonb := app_private.webhook_endpoint_settings(organization_id, url, events, description);
begin
  if status is not null and status not in ('enabled', 'disabled') then
    perform app_private.fail('status must be one of: enabled, disabled.');
  end if;
  update app_public.webhook_endpoints x
     set url = coalesce(s->>'url', x.url),
         events = case when s->'events' = 'null'::jsonb then x.events else array(select jsonb_array_elements_text(s->'events')) end,
         description = case when update_webhook_endpoint.description is null then x.description else s->>'description' end,
         status = coalesce(update_webhook_endpoint.status, x.status),
         disabled_reason = case when coalesce(update_webhook_endpoint.status, x.status) = 'enabled' then null
                                when update_webhook_endpoint.status = 'disabled' then null else x.disabled_reason end,
         -- Enabled again: its failures so far no longer count towards disabling it.
         failing_since = case when update_webhook_endpoint.status = 'enabled' then null else x.failing_since end
   where x.organization_id = update_webhook_endpoint.organization_id and x.id = webhook_endpoint_id;
  if not found then perform app_private.fail('Webhook endpoint not found.', 'AP404'); end if;
  if update_webhook_endpoint.status = 'disabled' then
    perform app_private.fail_pending_webhook_deliveries(webhook_endpoint_id);
  elsif update_webhook_endpoint.status = 'enabled' then
    -- A delivery made while it was being disabled may still wait: its jobs again.
    perform app_private.resume_webhook_endpoint(webhook_endpoint_id);
  end if;
  return jsonb_build_object('success', true, 'error', null, 'webhookEndpoint', app_private.webhook_endpoint_json(webhook_endpoint_id));
end $$;
grant execute on function app_private.update_webhook_endpoint(organization_id uuid, webhook_endpoint_id uuid, url text, events text[], description text, status text) to accounting_visitor;

-- The endpoint, its deliveries and its secret go (deliveries queued for it find nothing to do).
create or replace function app_public.delete_webhook_endpoint(organization_id uuid, webhook_endpoint_id uuid) returns jsonb
  language plpgsql volatile as
$$
begin
  perform app_private.assert_org_access(organization_id, true);
  delete from app_public.webhook_endpoints x
   where x.organization_id = delete_webhook_endpoint.organization_id and x.id = webhook_endpoint_id;
  if not found then perform app_private.fail('Webhook endpoint not found.', 'AP404'); end if;
  return jsonb_build_object('success', true, 'error', null);
end $$;
grant execute on function app_public.delete_webhook_endpoint(organization_id uuid, webhook_endpoint_id uuid) to accounting_visitor;

-- The organization's endpoints, oldest first (not paginated: 20 at most).
create or replace function app_public.list_webhook_endpoints(organization_id uuid) returns jsonb
  language plpgsql stable as
$$
begin
  perform app_private.assert_org_access(organization_id, true);
  return coalesce((select jsonb_agg(app_private.webhook_endpoint_json(x.id) order by x.created, x.id)
    from app_public.webhook_endpoints x where x.organization_id = list_webhook_endpoints.organization_id), '[]'::jsonb);
end $$;
grant execute on function app_public.list_webhook_endpoints(organization_id uuid) to accounting_visitor;

-- A delivery as the log shows it.
create or replace function app_private.webhook_delivery_json(d app_public.webhook_deliveries, event_type text) returns jsonb
  language sql stable as
$$ select jsonb_build_object('id', d.id, 'webhookEndpointId', d.webhook_endpoint_id, 'eventId', d.webhook_event_id,
     'eventType', event_type, 'status', d.status, 'attempts', d.attempts, 'responseCode', d.response_code,
     'lastError', d.last_error, 'lastAttemptAt', app_private.iso(d.last_attempt_at),
     'nextAttemptAt', app_private.iso(d.next_attempt_at), 'deliveredAt', app_private.iso(d.delivered_at),
     'created', app_private.iso(d.created)) $$;
grant execute on function app_private.webhook_delivery_json(d app_public.webhook_deliveries, event_type text) to accounting_visitor;

-- An endpoint's deliveries, newest first: status pending (waiting for an attempt), succeeded or
-- failed (retries ended); attempts so far, the last answer's HTTP status or why there was none,
-- and when the next attempt is due.
create or replace function app_public.list_webhook_deliveries(organization_id uuid, webhook_endpoint_id uuid, status text default null,
    "limit" integer default null, "offset" integer default null) returns jsonb
  language plpgsql stable as
$$
declare
  lim integer := app_private.page_size("limit");
  off integer := app_private.page_offset("offset");
begin
  perform app_private.assert_org_access(organization_id, true);
  if status is not null and status not in ('pending', 'succeeded', 'failed') then
    perform app_private.fail('status must be one of: pending, succeeded, failed.');
  end if;
  if not exists (select 1 from app_public.webhook_endpoints x
                  where x.organization_id = list_webhook_deliveries.organization_id and x.id = webhook_endpoint_id) then
    perform app_private.fail('Webhook endpoint not found.', 'AP404');
  end if;
  return (
    with f as (
      select d from app_public.webhook_deliveries d
       where d.webhook_endpoint_id = list_webhook_deliveries.webhook_endpoint_id
         and (list_webhook_deliveries.status is null or d.status = list_webhook_deliveries.status)
    ), page as (
      select f.d, row_number() over (order by (f.d).seq desc) as rn
        from f order by (f.d).seq desc limit lim offset off
    )
    select jsonb_build_object(
      'items', coalesce((select jsonb_agg(app_private.webhook_delivery_json(page.d, ev.type) order by page.rn)
                           from page join app_public.webhook_events ev on ev.id = (page.d).webhook_event_id), '[]'::jsonb),
      'totalCount', (select count(*) from f), 'pageSize', lim, 'offset', off));
end $$;
grant execute on function app_public.list_webhook_deliveries(organization_id uuid, webhook_endpoint_id uuid, status text, "limit" integer, "offset" integer) to accounting_visitor;

-- Sends a delivery again now, whatever its status (a pending one sooner than its retry was due),
-- with the same event id; its earlier attempts stay counted.
create or replace function app_public.redeliver_webhook(organization_id uuid, webhook_delivery_id uuid) returns jsonb
  language plpgsql volatile as
$$
declare
  d app_public.webhook_deliveries;
  v_status text;
begin
  perform app_private.assert_org_access(organization_id, true);
  select * into d from app_public.webhook_deliveries x
   where x.organization_id = redeliver_webhook.organization_id and x.id = webhook_delivery_id;
  if not found then perform app_private.fail('Webhook delivery not found.', 'AP404'); end if;
  select ep.status into v_status from app_public.webhook_endpoints ep where ep.id = d.webhook_endpoint_id;
  if v_status <> 'enabled' then perform app_private.fail('The webhook endpoint is disabled: enable it first.'); end if;
  perform app_private.queue_webhook_attempt(d.id, now());
  select * into d from app_public.webhook_deliveries x where x.id = webhook_delivery_id;
  return jsonb_build_object('success', true, 'error', null, 'delivery', app_private.webhook_delivery_json(d,
    (select ev.type from app_public.webhook_events ev where ev.id = d.webhook_event_id)));
end $$;
grant execute on function app_public.redeliver_webhook(organization_id uuid, webhook_delivery_id uuid) to accounting_visitor;
--! EndIncluded webhooks/endpoints.sql
--! Included rules/suggestions.sql
-- Suggestions from history (docs/api.md, Category rules): for an event waiting for review with no
-- category, the category most often confirmed for the same merchant in the organization, with its
-- share of those confirmations, from 3 of them or more. Never applied on its own.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.merchant_category_counts
drop policy if exists merchant_category_counts_tenant on app_public.merchant_category_counts;
create policy merchant_category_counts_tenant on app_public.merchant_category_counts
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select on app_public.merchant_category_counts to accounting_visitor;

------------------------------------------------------------------------------------------------

-- A merchant as suggestions compare it: case, spaces, punctuation, digits and store numbers
-- ("#123", "Store 45", "No. 7") left out: "STARBUCKS #123" and "Starbucks 456" are one merchant.
create or replace function app_private.merchant_family(merchant_name text) returns text
  language sql immutable parallel safe as
$$ select regexp_replace(regexp_replace(lower(normalize(merchant_name, NFC)),
     '(#|\m(store|no|nr|unit|loc|location)\M\.?)\s*[0-9]+', ' ', 'g'), '[^[:alpha:]]+', '', 'g') $$;
grant execute on function app_private.merchant_family(merchant_name text) to accounting_visitor;

-- The counts follow every insert, change and deletion of events: an event counts while it is
-- confirmed (or synced, or reconciled) with a category. Statement-level, from the transition
-- tables; static SQL in each branch, so that its plan is kept (a confirm pays no planning).
-- A merchant's count under a category is the sum of up to 16 rows (`shard`), each written by the
-- database sessions whose process id falls on it: confirms of one merchant in concurrent
-- transactions do not wait for each other's commit on one row (a bookkeeper's run of confirms of
-- one supplier did, one at a time).
-- The counter row this session writes: its process id's, of 16 (a parallel worker has its own
-- process: restricted to the session's).
create or replace function app_private.counter_shard() returns smallint
  language sql volatile parallel restricted as
$$ select (pg_backend_pid() % 16)::smallint $$;
grant execute on function app_private.counter_shard() to accounting_visitor;

create or replace function app_private.tg_ledger_events__merchant_counts() returns trigger
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
begin
  if tg_op = 'INSERT' then
    insert into app_public.merchant_category_counts as t (organization_id, merchant, category_id, shard, confirmations)
      select n.organization_id, app_private.merchant_family(n.merchant_name), n.category_id, app_private.counter_shard(), count(*)
        from new_rows n
       where n.status in ('confirmed', 'synced', 'reconciled') and n.category_id is not null
         and app_private.merchant_family(n.merchant_name) <> ''
       group by 1, 2, 3 order by 1, 2, 3
      on conflict (organization_id, merchant, category_id, shard) do update set confirmations = t.confirmations + excluded.confirmations;
  elsif tg_op = 'UPDATE' then
    insert into app_public.merchant_category_counts as t (organization_id, merchant, category_id, shard, confirmations)
      select x.organization_id, app_private.merchant_family(x.merchant_name), x.category_id, app_private.counter_shard(), sum(x.k)
        from new_rows n join old_rows o on o.id = n.id
        cross join lateral (values (n.organization_id, n.merchant_name, n.category_id, n.status, 1),
                                   (o.organization_id, o.merchant_name, o.category_id, o.status, -1))
          x (organization_id, merchant_name, category_id, status, k)
       where (n.status, n.category_id, n.merchant_name) is distinct from (o.status, o.category_id, o.merchant_name)
         and x.status in ('confirmed', 'synced', 'reconciled') and x.category_id is not null
         and app_private.merchant_family(x.merchant_name) <> ''
       group by 1, 2, 3 having sum(x.k) <> 0
       order by 1, 2, 3
      on conflict (organization_id, merchant, category_id, shard) do update set confirmations = t.confirmations + excluded.confirmations;
  else
    insert into app_public.merchant_category_counts as t (organization_id, merchant, category_id, shard, confirmations)
      select o.organization_id, app_private.merchant_family(o.merchant_name), o.category_id, app_private.counter_shard(), -count(*)
        from old_rows o
       where o.status in ('confirmed', 'synced', 'reconciled') and o.category_id is not null
         and app_private.merchant_family(o.merchant_name) <> ''
         -- Rows of an organization being deleted go with it.
         and exists (select 1 from app_public.organizations g where g.id = o.organization_id)
       group by 1, 2, 3 order by 1, 2, 3
      on conflict (organization_id, merchant, category_id, shard) do update set confirmations = t.confirmations + excluded.confirmations;
  end if;
  return null;
end $$;
grant execute on function app_private.tg_ledger_events__merchant_counts() to accounting_visitor;

drop trigger if exists _510_merchant_counts_insert on app_public.ledger_events;
create trigger _510_merchant_counts_insert after insert on app_public.ledger_events
  referencing new table as new_rows for each statement execute function app_private.tg_ledger_events__merchant_counts();
drop trigger if exists _510_merchant_counts_update on app_public.ledger_events;
create trigger _510_merchant_counts_update after update on app_public.ledger_events
  referencing old table as old_rows new table as new_rows for each statement execute function app_private.tg_ledger_events__merchant_counts();
drop trigger if exists _510_merchant_counts_delete on app_public.ledger_events;
create trigger _510_merchant_counts_delete after delete on app_public.ledger_events
  referencing old table as old_rows for each statement execute function app_private.tg_ledger_events__merchant_counts();

-- LedgerEvent.suggestedCategory: {account {id, name}, confidence, basis}, or null. Of the
-- merchant's confirmations under a category one may give (active, not Accounts Receivable or
-- Payable, where payments of invoices and bills post), the category
-- confirmed most (the first by name of equals), its share as confidence (two decimals), their
-- number as basis; only from 3 of them, and only when the category fits the event.
-- PL/pgSQL, whose plan is kept for the session: a list calls it for each event waiting.
create or replace function app_private.suggested_category(org uuid, merchant_name text, event_type text) returns jsonb
  language plpgsql stable as
$$
begin
  return (
    with c as (
      select a.id, a.name, a.classification, sum(m.confirmations) as confirmations
        from app_public.merchant_category_counts m
        join app_public.accounts a on a.organization_id = org and a.id = m.category_id
       where m.organization_id = org and m.merchant = app_private.merchant_family(suggested_category.merchant_name)
         and a.active and a.account_type not in ('accounts_receivable', 'accounts_payable')
       group by a.id, a.name, a.classification
      having sum(m.confirmations) > 0
    ), total as (select sum(c.confirmations) n from c)
    select jsonb_build_object('account', jsonb_build_object('id', c.id, 'name', c.name),
             'confidence', round(c.confirmations::numeric / total.n, 2), 'basis', total.n)
      from c cross join total
     where total.n >= 3 and app_private.category_fits(suggested_category.event_type, c.classification)
     order by c.confirmations desc, c.name, c.id
     limit 1);
end $$;
grant execute on function app_private.suggested_category(org uuid, merchant_name text, event_type text) to accounting_visitor;
--! EndIncluded rules/suggestions.sql

-- The endpoints' jobs of the release before give way to the new task's (one running now ends as
-- it would have; the endpoint's new jobs send what is left).
delete from app_private.job_outbox where task = 'deliver_webhook';
do $$
begin
  if to_regclass('graphile_worker._private_jobs') is not null then
    delete from graphile_worker._private_jobs j using graphile_worker._private_tasks t
     where t.id = j.task_id and t.identifier = 'deliver_webhook' and j.locked_at is null;
  end if;
end $$;
select app_private.queue_webhook_endpoint_jobs(ep.id) from app_public.webhook_endpoints ep
 where exists (select 1 from app_public.webhook_deliveries d where d.webhook_endpoint_id = ep.id and d.status = 'pending');
