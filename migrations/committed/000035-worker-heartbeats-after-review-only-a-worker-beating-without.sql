--! Previous: sha1:e66cdb631b25c6ecd877f71bff6eddb0b89921e8
--! Hash: sha1:c330607f3fb93380c701a1fa5a76aaea442f6ac0
--! Message: Worker heartbeats after review: only a worker beating without a gap judges others dead; a released job waits and says why; no purge of empty queues

-- A pool's current run of beats: only a worker that has been beating judges others dead.
alter table app_private.worker_heartbeats add column if not exists beating_since timestamptz not null default now();
drop function if exists app_private.beat_worker_pools(text[]);
drop function if exists app_private.release_dead_worker_jobs(interval, interval);
drop function if exists app_private.release_dead_worker_jobs(text[], interval, interval);
-- Removing an empty queue could race a transaction adding a job to it (the job would never run).
drop function if exists app_private.purge_empty_job_queues();

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
