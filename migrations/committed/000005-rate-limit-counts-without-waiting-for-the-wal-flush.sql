--! Previous: sha1:63dee695ec735043b42289c3aa125c47eddfc8a9
--! Hash: sha1:53cd8c6fe075253f5756635b54bc5e721d30d600
--! Message: rate limit counts without waiting for the WAL flush

-- Counting a request in its rate-limit window does not wait for the WAL flush: a crash can lose
-- at most the last few milliseconds of counts, which errs in the caller's favour, and every API
-- key request saves a synchronous commit.
create or replace function app_private.authenticate_api_key(key_digest text, quota integer)
  returns table (api_key_id uuid, organization_id uuid, request_count integer, window_end timestamptz)
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
declare k app_public.api_keys;
begin
  perform set_config('synchronous_commit', 'off', true);
  select * into k from app_public.api_keys where digest = key_digest and revoked_at is null;
  if not found then return; end if;
  if k.last_used_at is null or k.last_used_at < now() - interval '1 minute' then
    update app_public.api_keys set last_used_at = now() where id = k.id;
  end if;
  return query
  insert into app_public.rate_limit_windows as w (api_key_id, organization_id, window_start, request_count)
    values (k.id, k.organization_id, clock_timestamp(), 1)
  on conflict on constraint rate_limit_windows_pkey do update set
    window_start = case when w.window_start + interval '1 hour' <= clock_timestamp()
                        then clock_timestamp() else w.window_start end,
    request_count = case when w.window_start + interval '1 hour' <= clock_timestamp()
                         then 1 else w.request_count + 1 end
  returning w.api_key_id, w.organization_id, w.request_count, w.window_start + interval '1 hour';
end $$;
