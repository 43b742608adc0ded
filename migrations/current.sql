-- Worker pools prove they are alive; the jobs of a dead one are run again within a minute.
create table if not exists app_private.worker_heartbeats (
  pool_id text primary key,
  beat_at timestamptz not null default now()
);

--!include jobs/worker-pools.sql
--!include jobs/enqueue.sql
--!include jobs/operator-jobs.sql
--!include sources/receipt-sources.sql
