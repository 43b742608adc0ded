--! Previous: sha1:71720b320b6395add1e4000463b57350d1f4cfd8
--! Hash: sha1:b903596ee584c901c14c2c9d810391c35eb29550
--! Message: Webhooks: what 'due now' means, in one function

--! Included webhooks/deliveries.sql
-- Webhook deliveries: an organization's due deliveries are sent by a job of the worker's
-- `deliver_webhooks` task for that organization, on its webhook queue (app_private.job_queue), so
-- that one organization's slow endpoints hold one of the worker's slots at most. The job sends to
-- each of the organization's endpoints with deliveries due at the same time, and to each endpoint
-- one at a time, oldest event first, in batches (src/webhooks/deliver.ts): an endpoint's events go
-- out in the order they were made, and a slow endpoint holds back none of the others. A failed
-- attempt is retried later (exponential backoff for up to 3 days) and never holds back the events
-- behind it. An endpoint that accepted nothing since a delivery was made, when that delivery's
-- retries end, is disabled.
-- An organization has at most two jobs waiting: one for what is due now, keyed by the
-- organization (a job not yet started takes every delivery made before it runs, however many
-- events queued it, and keeps its place in the queue), and one at its endpoints' earliest retry.
-- Both go through the job outbox (jobs/outbox.sql), with the change that made the deliveries.
-- Every job ends by queuing the organization's jobs from the deliveries as they are then, so that
-- a retry job that ran early or late leaves none behind.
-- Re-runnable: `create or replace`.

-- Whether an endpoint has a delivery due now: pending, and its time come. (The job sends those,
-- oldest event first: webhook_deliveries_due.) PL/pgSQL: a SQL function with a subquery is not
-- inlined, and would be planned again in every statement that calls it.
create or replace function app_private.webhook_endpoint_has_due(webhook_endpoint_id uuid) returns boolean
  language plpgsql stable as
$$
begin
  return exists (select 1 from app_public.webhook_deliveries d
                  where d.webhook_endpoint_id = webhook_endpoint_has_due.webhook_endpoint_id and d.status = 'pending'
                    and d.next_attempt_at <= now());
end $$;

-- The job that sends the organization's deliveries due at `at`: now (or earlier), or at its
-- endpoints' earliest retry.
drop function if exists app_private.queue_webhook_endpoint_job(uuid, uuid, timestamptz);
drop function if exists app_private.queue_webhook_endpoint_job(uuid, uuid[], timestamptz);
create or replace function app_private.queue_webhook_job(organization_id uuid, at timestamptz) returns void
  language plpgsql volatile as
$$
declare v_later boolean := at > now();
begin
  perform app_private.queue_job('deliver_webhooks', json_build_object('organizationId', organization_id),
    queue_name => app_private.job_queue('deliver_webhooks', organization_id), run_at => case when v_later then at end,
    max_attempts => 5, job_key => case when v_later then 'webhooks-retry:' else 'webhooks:' end || organization_id,
    preserve_run_at => not v_later);
end $$;

-- The organization's jobs, as its pending deliveries need them: one now when any is due (unless
-- `due_now` is false: the caller is that job), and one at the earliest retry of the others (the
-- retry job's time is always the earliest of all, however many were asked for before).
create or replace function app_private.queue_webhook_jobs(organization_id uuid, due_now boolean default true) returns void
  language plpgsql volatile as
$$
declare
  v_due boolean;
  v_next timestamptz;
begin
  -- Only a failed attempt makes a delivery wait (webhook_deliveries_retry_idx): not a scan of every one due.
  select bool_or(r.due), min(r.next) into v_due, v_next
    from app_public.webhook_endpoints ep
    cross join lateral (
      select app_private.webhook_endpoint_has_due(ep.id) as due,
             (select min(d.next_attempt_at) from app_public.webhook_deliveries d where d.webhook_endpoint_id = ep.id
                 and d.status = 'pending' and d.attempts > 0 and d.next_attempt_at > now()) as next) r
   where ep.organization_id = queue_webhook_jobs.organization_id and ep.status = 'enabled';
  if v_due and due_now then perform app_private.queue_webhook_job(organization_id, now()); end if;
  if v_next is not null then perform app_private.queue_webhook_job(organization_id, v_next); end if;
end $$;

-- Every minute (the worker's `queue_due_webhooks`): the jobs of each organization with a delivery
-- due for more than a minute, as if its job were lost (a worker of the release before took it and
-- did not know it, or it failed its last attempt). A job already waiting keeps its place; one
-- running is followed by one more, which finds what is left. Returns how many organizations.
create or replace function app_private.queue_due_webhook_jobs() returns integer
  language plpgsql volatile as
$$
declare v_orgs uuid[];
begin
  select array_agg(distinct d.organization_id) into v_orgs
    from app_public.webhook_deliveries d
    join app_public.webhook_endpoints ep on ep.id = d.webhook_endpoint_id and ep.status = 'enabled'
   where d.status = 'pending' and d.next_attempt_at <= now() - interval '1 minute';
  perform app_private.queue_webhook_jobs(o) from unnest(v_orgs) o;
  return coalesce(cardinality(v_orgs), 0);
end $$;

-- The jobs of an endpoint's organization (also what a worker of the release before calls).
create or replace function app_private.queue_webhook_endpoint_jobs(webhook_endpoint_id uuid, due_now boolean default true) returns void
  language plpgsql volatile as
$$
begin
  perform app_private.queue_webhook_jobs(ep.organization_id, due_now)
     from app_public.webhook_endpoints ep where ep.id = queue_webhook_endpoint_jobs.webhook_endpoint_id;
end $$;

-- The jobs of an endpoint's organization, as its pending deliveries need them (a caller's: only
-- of the organization it is in).
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

-- The organization's enabled endpoints with deliveries due now, the ones its job sends to.
create or replace function app_private.webhook_endpoints_due(organization_id uuid) returns uuid[]
  language sql stable as
$$
  select coalesce(array_agg(ep.id order by ep.id), '{}')
    from app_public.webhook_endpoints ep
   where ep.organization_id = webhook_endpoints_due.organization_id and ep.status = 'enabled'
     and app_private.webhook_endpoint_has_due(ep.id)
$$;

-- What the job sends to an endpoint: the endpoint (null when it is gone or disabled) and up to
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

-- What a batch's attempts got ([{deliveryId, attempt, responseCode, error}], in the order they
-- were made), recorded in one round trip by the job of endpoint `webhook_endpoint_id`: an HTTP
-- status (2xx: delivered) or an error (no answer, a refused address, a timeout). A failure is
-- retried after webhook_retry_delay, the last time at `retry_window` after the delivery was made;
-- a failure then ends it. An attempt whose delivery is no longer pending, or was attempted since
-- (`attempt` is the attempts made before), is stale and changes nothing. An endpoint is failing
-- since its first failure after its last success. Then, an endpoint that has failed since the
-- first attempt of a delivery whose retries just ended is disabled (decided once the whole batch
-- is recorded: a later delivery of the batch that succeeded clears it). Returns whether the
-- endpoint has more deliveries due now (its job sends the next batch); the next retry of the
-- organization of the outcomes' deliveries gets its job (their own, whatever the caller named: a
-- worker of the release before named a delivery).
-- One statement for the batch: each delivery's update is not HOT (its status and attempt time are
-- indexed), and a statement per delivery cost the worker's database more than the update itself.
drop function if exists app_private.record_webhook_attempt(uuid, integer, integer, text, interval, interval);
create or replace function app_private.record_webhook_attempts(webhook_endpoint_id uuid, outcomes jsonb, retry_base interval,
    retry_window interval) returns boolean
  language plpgsql volatile as
$$
declare
  -- An array, so that the deliveries are found by their key, not by a join planned for a hundred rows.
  v_ids uuid[] := array(select (o->>'deliveryId')::uuid from jsonb_array_elements(outcomes) o);
  v_failed uuid[];
  v_endpoint uuid;
begin
  -- The endpoints first, then their deliveries: the order updateWebhookEndpoint takes them in when
  -- it disables one (fail_pending_webhook_deliveries), so that the two never deadlock.
  perform 1 from app_public.webhook_endpoints ep
   where ep.id in (select d.webhook_endpoint_id from app_public.webhook_deliveries d where d.id = any (v_ids))
   order by ep.id for no key update;
  with outcome as (
    select x.delivery_id, x.attempt, x.response_code, x.n,
           x.error is null and coalesce(x.response_code between 200 and 299, false) as ok,
           left(coalesce(x.error, case when not (x.response_code between 200 and 299)
                                    then format('The endpoint answered HTTP %s.', x.response_code) end), 2000) as error
      from rows from (jsonb_to_recordset(outcomes) as ("deliveryId" uuid, attempt integer, "responseCode" integer, error text))
             with ordinality x(delivery_id, attempt, response_code, error, n)
  ), locked as materialized (
    -- In the order they were made.
    select d.id from app_public.webhook_deliveries d
     where d.id = any (v_ids) order by d.seq for update
  ), recorded as (
    update app_public.webhook_deliveries d
       set attempts = d.attempts + 1, first_attempt_at = coalesce(d.first_attempt_at, now()), last_attempt_at = now(),
           response_code = o.response_code, last_error = o.error,
           status = case when o.ok then 'succeeded' when now() >= d.created + retry_window then 'failed' else 'pending' end,
           delivered_at = case when o.ok then now() end,
           next_attempt_at = case when not o.ok and now() < d.created + retry_window
             then least(now() + app_private.webhook_retry_delay(d.attempts + 1, retry_base), d.created + retry_window) end
      from outcome o, locked l
     where d.id = any (v_ids) and l.id = d.id and o.delivery_id = d.id and d.status = 'pending' and d.attempts = o.attempt
    returning d.id, d.webhook_endpoint_id, d.status, o.ok, o.n
  ), failing as (
    select r.webhook_endpoint_id, bool_or(r.ok) as any_ok, (array_agg(r.ok order by r.n desc))[1] as last_ok
      from recorded r group by r.webhook_endpoint_id
  ), endpoints as (
    update app_public.webhook_endpoints ep
       set failing_since = case when f.last_ok then null when f.any_ok then now() else coalesce(ep.failing_since, now()) end
      from failing f
     where ep.id = f.webhook_endpoint_id
       and ep.failing_since is distinct from case when f.last_ok then null when f.any_ok then now() else coalesce(ep.failing_since, now()) end
  )
  select coalesce(array_agg(r.id) filter (where r.status = 'failed'), '{}') into v_failed from recorded r;
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
  perform app_private.queue_webhook_jobs(x.organization_id, due_now => false)
     from (select distinct d.organization_id from app_public.webhook_deliveries d where d.id = any (v_ids)) x;
  return exists (select 1 from app_public.webhook_endpoints ep
                  where ep.id = record_webhook_attempts.webhook_endpoint_id and ep.status = 'enabled'
                    and app_private.webhook_endpoint_has_due(ep.id));
end $$;
--! EndIncluded webhooks/deliveries.sql
