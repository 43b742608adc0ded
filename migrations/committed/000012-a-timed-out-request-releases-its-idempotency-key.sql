--! Previous: sha1:32b348fef43c19cb77037f9593f3fcf8b239a056
--! Hash: sha1:45d3232bbf34ff218c8a01f4b6da0581861bdd69
--! Message: A timed-out request releases its Idempotency-Key

-- An Idempotency-Key whose request timed out is released, not answered.
--! Included access/idempotency.sql
-- Idempotency-Key claims and stored responses, per credential, for 24 hours.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.idempotency_records
drop policy if exists idempotency_records_tenant on app_public.idempotency_records;
create policy idempotency_records_tenant on app_public.idempotency_records
  using (organization_id = app_public.current_organization_id());

------------------------------------------------------------------------------------------------

create or replace function app_private.claim_idempotency_key(credential text, idem_key text, digest text, org uuid)
  returns table (outcome text, response_status integer, response_body text)
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
declare r app_public.idempotency_records;
begin
  -- Expired after 24 hours; a claim whose request died without answering is free after 5 minutes.
  delete from app_public.idempotency_records x
    where x.credential = claim_idempotency_key.credential and x.idempotency_key = idem_key
      and (x.created < now() - interval '24 hours'
           or (x.response_status is null and x.created < now() - interval '5 minutes'));
  insert into app_public.idempotency_records (organization_id, credential, idempotency_key, request_digest)
    values (org, claim_idempotency_key.credential, idem_key, digest)
    on conflict do nothing
    returning * into r;
  if r.credential is not null then
    return query select 'claimed'::text, null::integer, null::text;
    return;
  end if;
  select * into r from app_public.idempotency_records x
    where x.credential = claim_idempotency_key.credential and x.idempotency_key = idem_key;
  return query select
    case when r.request_digest <> digest then 'mismatch'
         when r.response_status is null then 'in_progress'
         else 'replay' end,
    r.response_status, r.response_body;
end $$;
grant execute on function app_private.claim_idempotency_key(credential text, idem_key text, digest text, org uuid) to accounting_authenticator;

create or replace function app_private.purge_expired() returns void
  language sql as
$$
  delete from app_public.idempotency_records where created < now() - interval '24 hours';
  delete from app_public.rate_limit_windows where window_start < now() - interval '1 hour';
$$;

create or replace function app_private.save_idempotent_response(credential text, idem_key text, status integer, body text)
  returns void
  language sql security definer set search_path = pg_catalog, app_public as
$$
  update app_public.idempotency_records x set response_status = status, response_body = body
   where x.credential = save_idempotent_response.credential and x.idempotency_key = idem_key
$$;
grant execute on function app_private.save_idempotent_response(credential text, idem_key text, status integer, body text) to accounting_authenticator;

-- A request that ran out of time changed nothing and is worth retrying: its claim is dropped, not
-- answered, so a retry with the same key runs instead of replaying the timeout.
create or replace function app_private.release_idempotency_key(credential text, idem_key text)
  returns void
  language sql security definer set search_path = pg_catalog, app_public as
$$
  delete from app_public.idempotency_records x
   where x.credential = release_idempotency_key.credential and x.idempotency_key = idem_key and x.response_status is null
$$;
grant execute on function app_private.release_idempotency_key(credential text, idem_key text) to accounting_authenticator;
--! EndIncluded access/idempotency.sql
