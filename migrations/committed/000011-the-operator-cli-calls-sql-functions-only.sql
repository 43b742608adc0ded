--! Previous: sha1:7d08d3d97eeb2a098f8134d14eaadb075580dd6b
--! Hash: sha1:32b348fef43c19cb77037f9593f3fcf8b239a056
--! Message: The operator CLI calls SQL functions only

-- The operator's CLI calls SQL functions only: organizations and users looked up by name and email
-- as the API compares them (NFC, case-insensitively), and one revocation rule for keys.
--! Included organizations/organizations.sql
-- Organizations: created by the operator with a starter chart; listed for the caller.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.organizations
-- An organization is its own tenant: its id plays the part of organization_id.
drop policy if exists organizations_tenant on app_public.organizations;
create policy organizations_tenant on app_public.organizations
  using (id = app_public.current_organization_id());
grant select on app_public.organizations to accounting_visitor;

------------------------------------------------------------------------------------------------

create or replace function app_private.create_organization(name text, currency text default 'CAD')
  returns app_public.organizations
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
declare
  o app_public.organizations;
  nm text := app_private.clean_text(create_organization.name);
  cur text := upper(btrim(coalesce(currency, 'CAD')));
  scope text := current_setting('app.organization_id', true);
begin
  if nm is null or nm = '' then perform app_private.fail('Name is required.'); end if;
  if length(nm) > 200 then perform app_private.fail('Name must be at most 200 characters.'); end if;
  if cur !~ '^[A-Z]{3}$' then perform app_private.fail('Currency must be a three-letter code such as CAD.'); end if;
  begin
    insert into app_public.organizations (name, functional_currency) values (nm, cur) returning * into o;
  exception when unique_violation then
    perform app_private.fail('An organization with this name already exists.');
  end;
  -- The new organization in scope while its starter chart is written (RLS is forced), then back.
  perform set_config('app.organization_id', o.id::text, true);
  perform app_private.create_starter_chart(o.id);
  perform set_config('app.organization_id', coalesce(scope, ''), true);
  return o;
end $$;

create or replace function app_public.my_organizations() returns jsonb
  language plpgsql stable security definer set search_path = pg_catalog, app_public as
$$
declare
  key_id uuid := app_public.current_api_key_id();
  uid uuid := app_public.current_user_id();
begin
  if key_id is null and uid is null then perform app_private.fail('Authentication Required.', 'AU401'); end if;
  return coalesce((
    select jsonb_agg(jsonb_build_object('id', o.id, 'name', o.name) order by lower(o.name), o.id)
    from app_public.organizations o
    where (key_id is not null and o.id = (select k.organization_id from app_public.api_keys k where k.id = key_id))
       or (key_id is null and o.id in (select m.organization_id from app_public.memberships m where m.user_id = uid))
  ), '[]'::jsonb);
end $$;
grant execute on function app_public.my_organizations() to accounting_visitor;

-- The operator names organizations (CLI --org-name): compared as stored, case-insensitively in NFC.
create or replace function app_private.organization_by_name(name text) returns app_public.organizations
  language plpgsql stable security definer set search_path = pg_catalog, app_public as
$$
declare o app_public.organizations;
begin
  select * into o from app_public.organizations x where lower(x.name) = lower(app_private.clean_text(organization_by_name.name));
  if not found then perform app_private.fail(format('No organization named "%s".', btrim(organization_by_name.name)), 'AP404'); end if;
  return o;
end $$;
--! EndIncluded organizations/organizations.sql
--! Included organizations/members.sql
-- Users and memberships: roles, the owner rules (an organization always keeps an owner; only an
-- owner grants, changes or removes the owner role), and the admin operations.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.memberships
drop policy if exists memberships_tenant on app_public.memberships;
create policy memberships_tenant on app_public.memberships
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select on app_public.memberships to accounting_visitor;

drop trigger if exists _100_keep_owner on app_public.memberships;
create constraint trigger _100_keep_owner after update or delete on app_public.memberships
  deferrable initially deferred for each row
  when (old.role = 'owner')
  execute function app_private.tg_memberships__keep_owner();

-- app_public.users
-- A user sees themself and the members of the organization in scope.
drop policy if exists users_visible on app_public.users;
create policy users_visible on app_public.users for select using (
  id = app_public.current_user_id()
  or id in (select m.user_id from app_public.memberships m
            where m.organization_id = app_public.current_organization_id())
);
grant select on app_public.users to accounting_visitor;

------------------------------------------------------------------------------------------------

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
  select * into u from app_public.users where lower(email) = lower(app_private.clean_text(member_email));
  if not found then perform app_private.fail('User not found.', 'AP404'); end if;
  begin
    insert into app_public.memberships (organization_id, user_id, role) values (org, u.id, member_role) returning * into m;
  exception when unique_violation then
    perform app_private.fail('User is already a member of this organization.');
  end;
  return app_private.membership_json(m, u);
end $$;

create or replace function app_private.create_user(email text, name text default null) returns app_public.users
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
declare
  u app_public.users;
  em text := lower(app_private.clean_text(create_user.email));
begin
  if em is null or em !~ '^[^@\s]+@[^@\s]+\.[^@\s]+$' or length(em) > 254 then
    perform app_private.fail('Email must look like an email address.');
  end if;
  begin
    insert into app_public.users (email, name) values (em, normalize(create_user.name, NFC)) returning * into u;
  exception when unique_violation then
    perform app_private.fail('A user with this email already exists.');
  end;
  return u;
end $$;

create or replace function app_private.membership_json(m app_public.memberships, u app_public.users) returns jsonb
  language sql stable as
$$ select jsonb_build_object('userId', u.id, 'email', u.email, 'name', coalesce(u.name, ''),
     'role', m.role, 'created', app_private.iso(m.created)) $$;
grant execute on function app_private.membership_json(m app_public.memberships, u app_public.users) to accounting_visitor;

-- An organization always keeps an owner: checked at commit, so a role swap inside one
-- transaction is fine, and concurrent removals serialize on the organization row.
create or replace function app_private.tg_memberships__keep_owner() returns trigger
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
declare org uuid := coalesce(old.organization_id, new.organization_id);
begin
  perform 1 from app_public.organizations where id = org for update;
  if not found then return null; end if; -- the organization itself is being deleted
  if not exists (select 1 from app_public.memberships where organization_id = org and role = 'owner') then
    perform app_private.fail('An organization must keep at least one owner.');
  end if;
  return null;
end $$;
grant execute on function app_private.tg_memberships__keep_owner() to accounting_visitor;

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
grant execute on function app_public.add_member(organization_id uuid, email text, role text) to accounting_visitor;

create or replace function app_public.list_members(organization_id uuid) returns jsonb
  language plpgsql stable as
$$
begin
  perform app_private.assert_org_access(organization_id, true);
  return coalesce((select jsonb_agg(app_private.membership_json(m, u) order by lower(u.email), u.id)
    from app_public.memberships m join app_public.users u on u.id = m.user_id
    where m.organization_id = list_members.organization_id), '[]'::jsonb);
end $$;
grant execute on function app_public.list_members(organization_id uuid) to accounting_visitor;

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
grant execute on function app_public.remove_member(organization_id uuid, user_id uuid) to accounting_visitor;

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
grant execute on function app_public.update_member_role(organization_id uuid, user_id uuid, role text) to accounting_visitor;

-- The operator names users by email (CLI --email), as addMember does.
create or replace function app_private.user_by_email(email text) returns app_public.users
  language plpgsql stable security definer set search_path = pg_catalog, app_public as
$$
declare u app_public.users;
begin
  select * into u from app_public.users x where lower(x.email) = lower(app_private.clean_text(user_by_email.email));
  if not found then perform app_private.fail(format('No user with email "%s".', btrim(user_by_email.email)), 'AP404'); end if;
  return u;
end $$;
--! EndIncluded organizations/members.sql
--! Included access/api-keys.sql
-- API keys: drawn in the database, stored as a SHA-256 digest and a display prefix, shown once;
-- authentication and the rate-limit count in one round trip (decisions §2-§3).
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.api_keys
drop policy if exists api_keys_tenant on app_public.api_keys;
create policy api_keys_tenant on app_public.api_keys
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select (created, created_by, id, label, last_used_at, organization_id, prefix, revoked_at) on app_public.api_keys to accounting_visitor;
grant update (revoked_at) on app_public.api_keys to accounting_visitor;

------------------------------------------------------------------------------------------------

-- Takes the columns, not the row: the API role may not read the digest.
create or replace function app_private.api_key_json(id uuid, label text, prefix text, created timestamptz,
    last_used_at timestamptz, revoked_at timestamptz) returns jsonb
  language sql stable as
$$ select jsonb_build_object('id', id, 'label', label, 'prefix', prefix, 'created', app_private.iso(created),
     'lastUsedAt', app_private.iso(last_used_at), 'revokedAt', app_private.iso(revoked_at)) $$;
grant execute on function app_private.api_key_json(id uuid, label text, prefix text, created timestamp with time zone, last_used_at timestamp with time zone, revoked_at timestamp with time zone) to accounting_visitor;

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
grant execute on function app_private.authenticate_api_key(key_digest text, quota integer) to accounting_authenticator;

-- Returns the key's record and, once only, its secret.
create or replace function app_private.create_api_key(org uuid, label text, created_by uuid default null)
  returns jsonb
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
declare
  secret text := app_private.new_api_key_secret();
  lbl text := coalesce(app_private.clean_text(label), '');
  k app_public.api_keys;
begin
  if length(lbl) > 200 then perform app_private.fail('Label must be at most 200 characters.'); end if;
  insert into app_public.api_keys (organization_id, digest, prefix, label, created_by)
    values (org, encode(sha256(convert_to(secret, 'UTF8')), 'hex'), left(secret, 9), lbl, created_by)
    returning * into k;
  return jsonb_build_object('apiKey', app_private.api_key_json(k.id, k.label, k.prefix, k.created, k.last_used_at, k.revoked_at),
    'secret', secret);
end $$;

-- Keys are `acct_` and 40 base62 characters drawn by rejection sampling (no modulo bias).
create or replace function app_private.new_api_key_secret() returns text
  language plpgsql volatile as
$$
declare
  alphabet constant text := '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  out text := '';
  b integer;
  bytes bytea;
begin
  while length(out) < 40 loop
    bytes := public.gen_random_bytes(64);
    for i in 0 .. 63 loop
      b := get_byte(bytes, i);
      if b < 248 and length(out) < 40 then out := out || substr(alphabet, b % 62 + 1, 1); end if;
    end loop;
  end loop;
  return 'acct_' || out;
end $$;
grant execute on function app_private.new_api_key_secret() to accounting_visitor;

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
grant execute on function app_public.create_api_key(organization_id uuid, label text) to accounting_visitor;

create or replace function app_public.list_api_keys(organization_id uuid) returns jsonb
  language plpgsql stable as
$$
begin
  perform app_private.assert_org_access(organization_id, true);
  return coalesce((select jsonb_agg(app_private.api_key_json(k.id, k.label, k.prefix, k.created, k.last_used_at, k.revoked_at)
      order by k.created, k.id)
    from app_public.api_keys k where k.organization_id = list_api_keys.organization_id), '[]'::jsonb);
end $$;
grant execute on function app_public.list_api_keys(organization_id uuid) to accounting_visitor;

-- Revoking is final and repeatable: a revoked key stays revoked at its first time. Used by the
-- API operation (after its access check) and by the operator's CLI.
create or replace function app_private.revoke_api_key(org uuid, key_id uuid) returns jsonb
  language plpgsql volatile as
$$
declare k jsonb;
begin
  update app_public.api_keys a set revoked_at = coalesce(a.revoked_at, now())
    where a.id = key_id and a.organization_id = org
    returning app_private.api_key_json(a.id, a.label, a.prefix, a.created, a.last_used_at, a.revoked_at) into k;
  if k is null then perform app_private.fail('API key not found.', 'AP404'); end if;
  return k;
end $$;
grant execute on function app_private.revoke_api_key(org uuid, key_id uuid) to accounting_visitor;

create or replace function app_public.revoke_api_key(organization_id uuid, api_key_id uuid) returns jsonb
  language plpgsql volatile as
$$
begin
  perform app_private.assert_org_access(organization_id, true);
  return jsonb_build_object('success', true, 'error', null, 'apiKey', app_private.revoke_api_key(organization_id, api_key_id));
end $$;
grant execute on function app_public.revoke_api_key(organization_id uuid, api_key_id uuid) to accounting_visitor;
--! EndIncluded access/api-keys.sql
