--! Previous: sha1:e41e8e91aaecf57a094c108d2a26bc294741b6a0
--! Hash: sha1:ffe92c13c7eff5a981ab19bf274e0665bd734897
--! Message: The outbox's mover takes no row locks (its lock already makes it the only one); a preserved key's time is the earliest of its own rows

-- The outbox's mover: one at a time already (its lock), so no row locks; a preserved key's time is
-- the earliest of its own rows.
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
     where o.id in (select x.id from app_private.job_outbox x order by x.id limit max_jobs)
    returning o.*
  ), counted as (
    select t.*, count(*) over () as taken_count,
           row_number() over (partition by t.job_key order by t.id desc) as nth_of_key,
           min(coalesce(t.run_at, t.queued_at)) over (partition by t.job_key, t.preserve_run_at) as earliest
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
