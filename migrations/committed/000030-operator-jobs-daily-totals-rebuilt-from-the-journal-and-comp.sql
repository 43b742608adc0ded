--! Previous: sha1:63b64d99756afd973505a02b9663bd5ec5fb3832
--! Hash: sha1:89b95cda97e0e77ad14b1fac867efb3776be55a2
--! Message: Operator jobs: daily totals rebuilt from the journal and compared, jobs queued, listed and retried by the operator, what they did listed, receipts read again

--! Included ledger/daily-totals.sql
-- Rebuilding an organization's daily totals (per account and day, kept by the journal's triggers)
-- and daily counts (per status and day, kept by the events' triggers) from the journal lines and
-- the events themselves, for the operator (`enqueue rebuild_daily_totals`): it says whether what
-- the triggers kept was right, and puts right what was not.
-- Re-runnable: `create or replace`.

-- In one repeatable-read transaction (the worker's), so that the journal and the totals are read
-- from one snapshot while postings go on; a posting of the organization that commits meanwhile
-- makes a repair fail to serialize, and the job is retried. A total of zero and no row are the same.
create or replace function app_private.rebuild_daily_totals(org uuid) returns jsonb
  language plpgsql volatile as
$$
declare
  started timestamptz := clock_timestamp();
  v_totals_kept bigint;
  v_counts_kept bigint;
  v_totals_wrong bigint;
  v_counts_wrong bigint;
begin
  if current_setting('transaction_isolation') not in ('repeatable read', 'serializable') then
    perform app_private.fail('rebuild_daily_totals must run in a repeatable read transaction.');
  end if;
  if not exists (select 1 from app_public.organizations o where o.id = org) then
    perform app_private.fail('Organization Not Found.', 'AP404');
  end if;

  -- A posting waits for no repair longer than this; the repair gives up first and the job is
  -- retried (postings take the totals and the counts in different orders, so no order of ours
  -- avoids a deadlock, but then the job, not a user's request, is the one that fails).
  perform set_config('lock_timeout', '200ms', true);
  drop table if exists pg_temp.rebuilt_totals, pg_temp.wrong_totals, pg_temp.rebuilt_counts, pg_temp.wrong_counts;

  create temporary table rebuilt_totals on commit drop as
    select l.account_id, l.txn_date as day, sum(l.debit) as debit, sum(l.credit) as credit
      from app_public.journal_lines l where l.organization_id = org and not l.voided group by 1, 2;
  create temporary table wrong_totals on commit drop as
    select coalesce(r.account_id, t.account_id) as account_id, coalesce(r.day, t.day) as day,
           coalesce(r.debit, 0) as debit, coalesce(r.credit, 0) as credit
      from rebuilt_totals r
      full join (select * from app_public.account_daily_totals k where k.organization_id = org) t
        on t.account_id = r.account_id and t.day = r.day
     where coalesce(r.debit, 0) <> coalesce(t.debit, 0) or coalesce(r.credit, 0) <> coalesce(t.credit, 0);
  create temporary table rebuilt_counts on commit drop as
    select e.transaction_date as day, e.status, count(*) as n
      from app_public.ledger_events e where e.organization_id = org group by 1, 2;
  create temporary table wrong_counts on commit drop as
    select coalesce(r.day, c.day) as day, coalesce(r.status, c.status) as status, coalesce(r.n, 0) as n
      from rebuilt_counts r
      full join (select * from app_public.ledger_event_daily_counts k where k.organization_id = org) c
        on c.day = r.day and c.status = r.status
     where coalesce(r.n, 0) <> coalesce(c.n, 0);

  -- Both worked out before either is written: rows are locked only for the writes.
  insert into app_public.account_daily_totals as t (organization_id, account_id, day, debit, credit)
    select org, w.account_id, w.day, w.debit, w.credit from wrong_totals w order by 2, 3
    on conflict (organization_id, account_id, day) do update set debit = excluded.debit, credit = excluded.credit;
  insert into app_public.ledger_event_daily_counts as t (organization_id, day, status, n)
    select org, w.day, w.status, w.n from wrong_counts w order by 2, 3
    on conflict (organization_id, day, status) do update set n = excluded.n;
  select count(*) into v_totals_kept from rebuilt_totals;
  select count(*) into v_totals_wrong from wrong_totals;
  select count(*) into v_counts_kept from rebuilt_counts;
  select count(*) into v_counts_wrong from wrong_counts;

  return jsonb_build_object(
    'organizationId', org,
    'equal', v_totals_wrong = 0 and v_counts_wrong = 0,
    'accountDays', v_totals_kept, 'accountDaysRepaired', v_totals_wrong,
    'statusDays', v_counts_kept, 'statusDaysRepaired', v_counts_wrong,
    'ms', round(extract(epoch from clock_timestamp() - started) * 1000));
end $$;
--! EndIncluded ledger/daily-totals.sql
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
      max_attempts => 5)).id into v_id;
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
    max_attempts => 5);
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
           max_attempts => 5, job_key => 'reextract:' || r.id, job_key_mode => 'preserve_run_at'))
    into v_queued
    from app_public.receipts r
   where r.organization_id = org and r.event_id is null and r.status <> 'rejected' and r.extracted_at is not null
     and (include_read or r.extraction_error is not null or r.amount is null or r.vendor_name is null);
  return v_queued;
end $$;
--! EndIncluded jobs/enqueue.sql
