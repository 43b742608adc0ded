--! Previous: sha1:53cd8c6fe075253f5756635b54bc5e721d30d600
--! Hash: sha1:0cf143cd3f5252164cc14537c7934ede7e7a31b6
--! Message: JWT sessions may name their organization

-- A JWT session may name the organization it works in (header X-Organization-Id), so that reads
-- without an organizationId argument (the general ledger connection) are scoped for users too.
-- One statement checks the user and the membership, in the order of decisions §2.
create or replace function app_private.authenticate_user_in(user_id uuid, org uuid) returns text
  language sql stable security definer set search_path = pg_catalog, app_public as
$$
  select case
    when not exists (select 1 from app_public.users u where u.id = user_id) then 'invalid_user'
    when org is null then 'ok'
    when not exists (select 1 from app_public.organizations o where o.id = org) then 'organization_not_found'
    when not exists (select 1 from app_public.memberships m where m.organization_id = org and m.user_id = authenticate_user_in.user_id) then 'not_member'
    else 'ok'
  end
$$;
revoke execute on function app_private.authenticate_user_in(uuid, uuid) from public;
grant execute on function app_private.authenticate_user_in(uuid, uuid) to accounting_authenticator;

-- Replaced by authenticate_user_in.
drop function if exists app_private.authenticate_user(uuid);
