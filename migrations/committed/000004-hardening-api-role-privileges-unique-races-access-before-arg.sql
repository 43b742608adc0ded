--! Previous: sha1:612c0e03ef1c49c2661575e2ed3514c45420ba6f
--! Hash: sha1:63dee695ec735043b42289c3aa125c47eddfc8a9
--! Message: hardening: API role privileges, unique races, access before arguments, owners manage owners

-- Hardening after review: narrower privileges for the API role, unique races answered with the
-- contract's messages, access checked before argument checks, and only owners manage owners.

-- 1. Member and key management runs as the definer after the access check, so the API role needs
--    no write grants on memberships and cannot call the private helpers with another organization.
create or replace function app_public.create_api_key(organization_id uuid, label text default null) returns jsonb
  language plpgsql volatile security definer set search_path = pg_catalog, app_public as
$$
begin
  perform app_private.assert_org_access(organization_id, true);
  return jsonb_build_object('success', true, 'error', null)
    || app_private.create_api_key(organization_id, label, app_public.current_user_id());
end $$;

create or replace function app_private.add_member(org uuid, member_email text, member_role text) returns jsonb
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
declare
  u app_public.users;
  m app_public.memberships;
begin
  if member_role is null or member_role not in ('owner', 'admin', 'member') then
    perform app_private.fail('Role must be one of: owner, admin, member.');
  end if;
  select * into u from app_public.users where lower(email) = lower(btrim(member_email));
  if not found then perform app_private.fail('User not found.', 'AP404'); end if;
  begin
    insert into app_public.memberships (organization_id, user_id, role) values (org, u.id, member_role) returning * into m;
  exception when unique_violation then
    perform app_private.fail('User is already a member of this organization.');
  end;
  return app_private.membership_json(m, u);
end $$;

-- The caller's role in the organization in scope (null for an API key).
create or replace function app_private.caller_role(org uuid) returns text
  language sql stable security definer set search_path = pg_catalog, app_public as
$$ select m.role from app_public.memberships m where m.organization_id = org and m.user_id = app_public.current_user_id() $$;

create or replace function app_public.add_member(organization_id uuid, email text, role text) returns jsonb
  language plpgsql volatile security definer set search_path = pg_catalog, app_public as
$$
begin
  perform app_private.assert_org_access(organization_id, true);
  if role = 'owner' and app_private.caller_role(organization_id) <> 'owner' then
    perform app_private.fail('Only an owner can grant, change or remove the owner role.');
  end if;
  return jsonb_build_object('success', true, 'error', null,
    'member', app_private.add_member(organization_id, email, role));
end $$;

create or replace function app_public.remove_member(organization_id uuid, user_id uuid) returns jsonb
  language plpgsql volatile security definer set search_path = pg_catalog, app_public as
$$
declare target_role text;
begin
  perform app_private.assert_org_access(organization_id, true);
  select m.role into target_role from app_public.memberships m
   where m.organization_id = remove_member.organization_id and m.user_id = remove_member.user_id for update;
  if target_role is null then perform app_private.fail('Member not found.', 'AP404'); end if;
  if target_role = 'owner' and app_private.caller_role(organization_id) <> 'owner' then
    perform app_private.fail('Only an owner can grant, change or remove the owner role.');
  end if;
  delete from app_public.memberships m where m.organization_id = remove_member.organization_id and m.user_id = remove_member.user_id;
  set constraints app_public._100_keep_owner immediate;
  return jsonb_build_object('success', true, 'error', null);
end $$;

create or replace function app_public.update_member_role(organization_id uuid, user_id uuid, role text) returns jsonb
  language plpgsql volatile security definer set search_path = pg_catalog, app_public as
$$
declare
  m app_public.memberships;
  u app_public.users;
begin
  perform app_private.assert_org_access(organization_id, true);
  if role is null or role not in ('owner', 'admin', 'member') then
    perform app_private.fail('Role must be one of: owner, admin, member.');
  end if;
  select * into m from app_public.memberships x
   where x.organization_id = update_member_role.organization_id and x.user_id = update_member_role.user_id for update;
  if m is null then perform app_private.fail('Member not found.', 'AP404'); end if;
  if (m.role = 'owner' or role = 'owner') and app_private.caller_role(organization_id) <> 'owner' then
    perform app_private.fail('Only an owner can grant, change or remove the owner role.');
  end if;
  update app_public.memberships x set role = update_member_role.role
   where x.organization_id = m.organization_id and x.user_id = m.user_id
   returning * into m;
  set constraints app_public._100_keep_owner immediate;
  select * into u from app_public.users where id = m.user_id;
  return jsonb_build_object('success', true, 'error', null, 'member', app_private.membership_json(m, u));
end $$;

-- Per-schema default privileges cannot take away PUBLIC's global EXECUTE, so until now every
-- function was executable by PUBLIC. Now: no function is PUBLIC's; the API role may run every
-- function of both schemas (security-invoker ones run under RLS as the caller) except the
-- security-definer helpers that take an organization or identity they do not check themselves.
alter default privileges revoke execute on functions from public;
revoke execute on all functions in schema app_public, app_private from public;
grant execute on all functions in schema app_public, app_private to accounting_visitor;
revoke execute on function
  app_private.create_api_key(uuid, text, uuid), app_private.add_member(uuid, text, text),
  app_private.create_organization(text, text), app_private.create_user(text, text),
  app_private.authenticate_api_key(text, integer), app_private.authenticate_user(uuid),
  app_private.claim_idempotency_key(text, text, text, uuid), app_private.save_idempotent_response(text, text, integer, text),
  app_private.purge_expired()
  from accounting_visitor;
revoke insert, delete, update on app_public.memberships from accounting_visitor;
-- Column grants are revoked one by one; the table-level revoke leaves them.
revoke update (role) on app_public.memberships from accounting_visitor;

-- 2. Uniqueness is the index's: a concurrent duplicate gets the same message as a sequential one.
create or replace function app_private.create_organization(name text, currency text default 'CAD')
  returns app_public.organizations
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
declare
  o app_public.organizations;
  scope text := current_setting('app.organization_id', true);
begin
  begin
    insert into app_public.organizations (name, functional_currency)
      values (btrim(create_organization.name), upper(coalesce(currency, 'CAD'))) returning * into o;
  exception when unique_violation then
    perform app_private.fail('An organization with this name already exists.');
  end;
  -- The new organization in scope while its starter chart is written (RLS is forced), then back.
  perform set_config('app.organization_id', o.id::text, true);
  perform app_private.create_starter_chart(o.id);
  perform set_config('app.organization_id', coalesce(scope, ''), true);
  return o;
end $$;

create or replace function app_private.create_user(email text, name text default null) returns app_public.users
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
declare u app_public.users;
begin
  if create_user.email is null or create_user.email !~ '^[^@\s]+@[^@\s]+\.[^@\s]+$' then
    perform app_private.fail('Email must look like an email address.');
  end if;
  begin
    insert into app_public.users (email, name) values (lower(btrim(create_user.email)), create_user.name) returning * into u;
  exception when unique_violation then
    perform app_private.fail('A user with this email already exists.');
  end;
  return u;
end $$;

-- 3. Access before argument checks (decisions §2 order).
create or replace function app_public.list_tax_codes(organization_id uuid, search text default null,
    "limit" integer default null, "offset" integer default null, classification text default null,
    account_type text default null) returns jsonb
  language plpgsql stable as
$$
declare
  lim integer;
  off integer;
begin
  perform app_private.assert_org_access(organization_id, false);
  lim := app_private.page_size("limit");
  off := app_private.page_offset("offset");
  return (
    with f as (
      select t from app_public.tax_codes t
       where (search is null or t.code ilike app_private.like_pattern(search) or t.name ilike app_private.like_pattern(search))
         and (list_tax_codes.classification is null or t.classification = list_tax_codes.classification)
         and (list_tax_codes.account_type is null or t.account_type = list_tax_codes.account_type)
    ), page as (
      select f.t from f order by (f.t).code limit lim offset off
    )
    select jsonb_build_object(
      'items', coalesce((select jsonb_agg(app_private.tax_code_json(page.t) order by (page.t).code) from page), '[]'::jsonb),
      'totalCount', (select count(*) from f), 'pageSize', lim, 'offset', off));
end $$;
