--! Previous: -
--! Hash: sha1:9d56b26f35ffb3af97b10d6b77c817b1c454b788
--! Message: foundation: tenancy, auth, rate limit, idempotency

-- Foundation: roles, organizations, users, memberships, API keys, rate-limit windows,
-- idempotency records, and the access check every operation calls first.

create extension if not exists pgcrypto with schema public;

-- Roles are cluster-wide, so they are created only when missing (several databases may share a cluster).
do $$
begin
  if not exists (select 1 from pg_roles where rolname = 'accounting_visitor') then
    create role accounting_visitor nologin;
  end if;
  if not exists (select 1 from pg_roles where rolname = 'accounting_authenticator') then
    create role accounting_authenticator login noinherit;
  end if;
  if not exists (select 1 from pg_roles where rolname = 'reporting_reader') then
    create role reporting_reader nologin;
  end if;
end $$;
grant accounting_visitor to accounting_authenticator;
do $$ begin
  execute format('grant connect on database %I to accounting_authenticator, reporting_reader', current_database());
end $$;

drop schema if exists app_public cascade;
drop schema if exists app_private cascade;
create schema app_public;
create schema app_private;
grant usage on schema app_public to accounting_visitor, accounting_authenticator;
grant usage on schema app_private to accounting_visitor, accounting_authenticator;
alter default privileges in schema app_public revoke execute on functions from public;
alter default privileges in schema app_private revoke execute on functions from public;

-- Identity of the request, from per-request settings. `app.organization_id` is set by the server
-- for an API key (its one organization) and by app_private.assert_org_access for a JWT user after
-- checking membership; RLS policies read nothing else.
create function app_public.current_organization_id() returns uuid
  language sql stable parallel safe as
$$ select nullif(current_setting('app.organization_id', true), '')::uuid $$;
create function app_public.current_user_id() returns uuid
  language sql stable parallel safe as
$$ select nullif(current_setting('app.user_id', true), '')::uuid $$;
create function app_public.current_api_key_id() returns uuid
  language sql stable parallel safe as
$$ select nullif(current_setting('app.api_key_id', true), '')::uuid $$;
grant execute on function app_public.current_organization_id(), app_public.current_user_id(),
  app_public.current_api_key_id() to accounting_visitor, reporting_reader;

-- Raising a business error: SQLSTATE class AP is a mutation-level failure (success: false),
-- class AU an access failure (GraphQL error). The server maps the code to extensions.code.
create function app_private.fail(message text, code text default 'AP400') returns void
  language plpgsql as
$$ begin raise exception using message = message, errcode = code; end $$;
grant execute on function app_private.fail(text, text) to accounting_visitor;

create function app_private.tg__touch_updated() returns trigger language plpgsql as
$$ begin new.updated := now(); return new; end $$;

------------------------------------------------------------------------------------------------
create table app_public.organizations (
  id uuid primary key default gen_random_uuid(),
  name text not null check (length(btrim(name)) between 1 and 200),
  functional_currency text not null default 'CAD' check (functional_currency ~ '^[A-Z]{3}$'),
  created timestamptz not null default now()
);
create unique index organizations_name_key on app_public.organizations (lower(name));
alter table app_public.organizations enable row level security;
alter table app_public.organizations force row level security;
-- An organization is its own tenant: its id plays the part of organization_id.
create policy organizations_tenant on app_public.organizations
  using (id = app_public.current_organization_id());
grant select on app_public.organizations to accounting_visitor;

create table app_public.users (
  id uuid primary key default gen_random_uuid(),
  email text not null check (email ~ '^[^@\s]+@[^@\s]+\.[^@\s]+$'),
  name text,
  created timestamptz not null default now()
);
create unique index users_email_key on app_public.users (lower(email));
alter table app_public.users enable row level security;
alter table app_public.users force row level security;

create table app_public.memberships (
  organization_id uuid not null references app_public.organizations on delete cascade,
  user_id uuid not null references app_public.users on delete cascade,
  role text not null check (role in ('owner', 'admin', 'member')),
  created timestamptz not null default now(),
  primary key (organization_id, user_id)
);
create index memberships_user_idx on app_public.memberships (user_id);
alter table app_public.memberships enable row level security;
alter table app_public.memberships force row level security;
create policy memberships_tenant on app_public.memberships
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
-- A user sees themself and the members of the organization in scope.
create policy users_visible on app_public.users for select using (
  id = app_public.current_user_id()
  or id in (select m.user_id from app_public.memberships m
            where m.organization_id = app_public.current_organization_id())
);
grant select on app_public.users to accounting_visitor;
grant select, insert, delete on app_public.memberships to accounting_visitor;
grant update (role) on app_public.memberships to accounting_visitor;

-- An organization always keeps an owner: checked at commit, so a role swap inside one
-- transaction is fine, and concurrent removals serialize on the organization row.
create function app_private.tg_memberships__keep_owner() returns trigger
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
create constraint trigger _100_keep_owner after update or delete on app_public.memberships
  deferrable initially deferred for each row
  when (old.role = 'owner')
  execute function app_private.tg_memberships__keep_owner();

create table app_public.api_keys (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app_public.organizations on delete cascade,
  digest text not null unique check (digest ~ '^[0-9a-f]{64}$'),
  prefix text not null,
  label text not null default '',
  created_by uuid references app_public.users on delete set null,
  created timestamptz not null default now(),
  last_used_at timestamptz,
  revoked_at timestamptz
);
create index api_keys_org_idx on app_public.api_keys (organization_id, created);
alter table app_public.api_keys enable row level security;
alter table app_public.api_keys force row level security;
create policy api_keys_tenant on app_public.api_keys
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
-- The digest is never readable by the API role.
grant select (id, organization_id, prefix, label, created_by, created, last_used_at, revoked_at)
  on app_public.api_keys to accounting_visitor;
grant update (revoked_at) on app_public.api_keys to accounting_visitor;

create table app_public.rate_limit_windows (
  api_key_id uuid primary key references app_public.api_keys on delete cascade,
  organization_id uuid not null references app_public.organizations on delete cascade,
  window_start timestamptz not null,
  request_count integer not null
);
alter table app_public.rate_limit_windows enable row level security;
alter table app_public.rate_limit_windows force row level security;
create policy rate_limit_windows_tenant on app_public.rate_limit_windows
  using (organization_id = app_public.current_organization_id());
grant select on app_public.rate_limit_windows to accounting_visitor;

-- Idempotency-Key records: one per credential and key, holding the first response.
create table app_public.idempotency_records (
  organization_id uuid references app_public.organizations on delete cascade,
  credential text not null,            -- 'key:<api key id>' or 'user:<user id>'
  idempotency_key text not null check (length(idempotency_key) between 1 and 255),
  request_digest text not null,
  response_status integer,             -- null while the first request is still running
  response_body text,
  created timestamptz not null default now(),
  primary key (credential, idempotency_key)
);
create index idempotency_records_created_idx on app_public.idempotency_records (created);
alter table app_public.idempotency_records enable row level security;
alter table app_public.idempotency_records force row level security;
create policy idempotency_records_tenant on app_public.idempotency_records
  using (organization_id = app_public.current_organization_id());

------------------------------------------------------------------------------------------------
-- Authentication. Both run on the authenticator's connection before the GraphQL operation.

-- One statement: find the key by digest, count the request in its rolling window, touch
-- last_used_at (at most once a minute, to spare writes). Returns no row for an unknown or
-- revoked key. The upsert's row lock makes concurrent counting exact.
create function app_private.authenticate_api_key(key_digest text, quota integer)
  returns table (api_key_id uuid, organization_id uuid, request_count integer, window_end timestamptz)
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
declare k app_public.api_keys;
begin
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

create function app_private.authenticate_user(user_id uuid) returns boolean
  language sql stable security definer set search_path = pg_catalog, app_public as
$$ select exists (select 1 from app_public.users u where u.id = user_id) $$;

grant execute on function app_private.authenticate_api_key(text, integer),
  app_private.authenticate_user(uuid) to accounting_authenticator;

-- The access check every operation runs first, in the order of decisions §2. On success the
-- organization is in scope for RLS for the rest of the transaction.
create function app_private.assert_org_access(org uuid, admin boolean default false) returns void
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
declare
  key_id uuid := app_public.current_api_key_id();
  uid uuid := app_public.current_user_id();
  key_org uuid;
  member_role text;
begin
  if key_id is null and uid is null then
    perform app_private.fail('Authentication Required.', 'AU401');
  end if;
  if admin and key_id is not null then
    perform app_private.fail('API Keys Cannot Perform Admin Operations.', 'AU403');
  end if;
  if org is null or not exists (select 1 from app_public.organizations where id = org) then
    perform app_private.fail('Organization Not Found.', 'AU404');
  end if;
  if key_id is not null then
    select k.organization_id into key_org from app_public.api_keys k where k.id = key_id and k.revoked_at is null;
    if key_org is distinct from org then
      perform app_private.fail('API Key Not Authorized For This Organization.', 'AU403');
    end if;
  else
    select m.role into member_role from app_public.memberships m where m.organization_id = org and m.user_id = uid;
    if member_role is null then
      perform app_private.fail('Not A Member Of This Organization.', 'AU403');
    end if;
    if admin and member_role not in ('owner', 'admin') then
      perform app_private.fail('Must Be Owner Or Admin.', 'AU403');
    end if;
  end if;
  perform set_config('app.organization_id', org::text, true);
end $$;
grant execute on function app_private.assert_org_access(uuid, boolean) to accounting_visitor;

-- Paging arguments shared by every list (decisions §5).
create function app_private.page_size(lim integer) returns integer
  language plpgsql immutable as
$$
begin
  if lim is null then return 25; end if;
  if lim < 1 then perform app_private.fail('limit must be at least 1.', 'AP400'); end if;
  return least(lim, 200);
end $$;
create function app_private.page_offset(off integer) returns integer
  language plpgsql immutable as
$$
begin
  if coalesce(off, 0) < 0 then perform app_private.fail('offset must not be negative.', 'AP400'); end if;
  return coalesce(off, 0);
end $$;
create function app_private.sort_dir(dir text, default_dir text default 'asc') returns text
  language plpgsql immutable as
$$
begin
  if dir is null then return default_dir; end if;
  if lower(dir) not in ('asc', 'desc') then
    perform app_private.fail('sortDir must be one of: asc, desc.', 'AP400');
  end if;
  return lower(dir);
end $$;
create function app_private.check_sort_by(sort_by text, allowed text[]) returns void
  language plpgsql immutable as
$$
begin
  if sort_by is not null and not (sort_by = any (allowed)) then
    perform app_private.fail(format('sortBy must be one of: %s.', array_to_string(allowed, ', ')), 'AP400');
  end if;
end $$;
-- Escapes % _ and \ so that search text matches literally inside ILIKE.
create function app_private.like_pattern(search text) returns text
  language sql immutable parallel safe as
$$ select '%' || replace(replace(replace(search, '\', '\\'), '%', '\%'), '_', '\_') || '%' $$;
grant execute on function app_private.page_size(integer), app_private.page_offset(integer),
  app_private.sort_dir(text, text), app_private.check_sort_by(text, text[]),
  app_private.like_pattern(text) to accounting_visitor;

------------------------------------------------------------------------------------------------
-- Organizations, users, members, API keys: shared by the GraphQL operations and the operator CLI.

create function app_private.create_organization(name text, currency text default 'CAD')
  returns app_public.organizations
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
declare o app_public.organizations;
begin
  if exists (select 1 from app_public.organizations x where lower(x.name) = lower(btrim(create_organization.name))) then
    perform app_private.fail('An organization with this name already exists.');
  end if;
  insert into app_public.organizations (name, functional_currency)
    values (btrim(create_organization.name), upper(coalesce(currency, 'CAD'))) returning * into o;
  return o;
end $$;

create function app_private.create_user(email text, name text default null) returns app_public.users
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
declare u app_public.users;
begin
  if create_user.email is null or create_user.email !~ '^[^@\s]+@[^@\s]+\.[^@\s]+$' then
    perform app_private.fail('Email must look like an email address.');
  end if;
  if exists (select 1 from app_public.users x where lower(x.email) = lower(btrim(create_user.email))) then
    perform app_private.fail('A user with this email already exists.');
  end if;
  insert into app_public.users (email, name) values (lower(btrim(create_user.email)), create_user.name) returning * into u;
  return u;
end $$;

-- Keys are `acct_` and 40 base62 characters drawn by rejection sampling (no modulo bias).
create function app_private.new_api_key_secret() returns text
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

-- Timestamps leave the database as ISO 8601 UTC, whatever the session's time zone.
create function app_private.iso(ts timestamptz) returns text
  language sql stable parallel safe as
$$ select to_char(ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') $$;
grant execute on function app_private.iso(timestamptz) to accounting_visitor, reporting_reader;

-- Takes the columns, not the row: the API role may not read the digest.
create function app_private.api_key_json(id uuid, label text, prefix text, created timestamptz,
    last_used_at timestamptz, revoked_at timestamptz) returns jsonb
  language sql stable as
$$ select jsonb_build_object('id', id, 'label', label, 'prefix', prefix, 'created', app_private.iso(created),
     'lastUsedAt', app_private.iso(last_used_at), 'revokedAt', app_private.iso(revoked_at)) $$;

-- Returns the key's record and, once only, its secret.
create function app_private.create_api_key(org uuid, label text, created_by uuid default null)
  returns jsonb
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
declare
  secret text := app_private.new_api_key_secret();
  k app_public.api_keys;
begin
  if length(coalesce(label, '')) > 200 then perform app_private.fail('Label must be at most 200 characters.'); end if;
  insert into app_public.api_keys (organization_id, digest, prefix, label, created_by)
    values (org, encode(sha256(convert_to(secret, 'UTF8')), 'hex'), left(secret, 9), coalesce(btrim(label), ''), created_by)
    returning * into k;
  return jsonb_build_object('apiKey', app_private.api_key_json(k.id, k.label, k.prefix, k.created, k.last_used_at, k.revoked_at),
    'secret', secret);
end $$;
grant execute on function app_private.api_key_json(uuid, text, text, timestamptz, timestamptz, timestamptz) to accounting_visitor;
grant execute on function app_private.create_api_key(uuid, text, uuid) to accounting_visitor;

create function app_private.membership_json(m app_public.memberships, u app_public.users) returns jsonb
  language sql stable as
$$ select jsonb_build_object('userId', u.id, 'email', u.email, 'name', coalesce(u.name, ''),
     'role', m.role, 'created', app_private.iso(m.created)) $$;
grant execute on function app_private.membership_json(app_public.memberships, app_public.users) to accounting_visitor;

create function app_private.add_member(org uuid, member_email text, member_role text) returns jsonb
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
  if exists (select 1 from app_public.memberships where organization_id = org and user_id = u.id) then
    perform app_private.fail('User is already a member of this organization.');
  end if;
  insert into app_public.memberships (organization_id, user_id, role) values (org, u.id, member_role) returning * into m;
  return app_private.membership_json(m, u);
end $$;
grant execute on function app_private.add_member(uuid, text, text) to accounting_visitor;

------------------------------------------------------------------------------------------------
-- GraphQL operations. Each returns the contract's result shape as JSON.

create function app_public.my_organizations() returns jsonb
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

create function app_public.create_api_key(organization_id uuid, label text default null) returns jsonb
  language plpgsql volatile as
$$
begin
  perform app_private.assert_org_access(organization_id, true);
  return jsonb_build_object('success', true, 'error', null)
    || app_private.create_api_key(organization_id, label, app_public.current_user_id());
end $$;

create function app_public.revoke_api_key(organization_id uuid, api_key_id uuid) returns jsonb
  language plpgsql volatile as
$$
declare k jsonb;
begin
  perform app_private.assert_org_access(organization_id, true);
  update app_public.api_keys a set revoked_at = coalesce(a.revoked_at, now())
    where a.id = api_key_id and a.organization_id = revoke_api_key.organization_id
    returning app_private.api_key_json(a.id, a.label, a.prefix, a.created, a.last_used_at, a.revoked_at) into k;
  if k is null then perform app_private.fail('API key not found.', 'AP404'); end if;
  return jsonb_build_object('success', true, 'error', null, 'apiKey', k);
end $$;

create function app_public.list_api_keys(organization_id uuid) returns jsonb
  language plpgsql stable as
$$
begin
  perform app_private.assert_org_access(organization_id, true);
  return coalesce((select jsonb_agg(app_private.api_key_json(k.id, k.label, k.prefix, k.created, k.last_used_at, k.revoked_at)
      order by k.created, k.id)
    from app_public.api_keys k where k.organization_id = list_api_keys.organization_id), '[]'::jsonb);
end $$;

create function app_public.list_members(organization_id uuid) returns jsonb
  language plpgsql stable as
$$
begin
  perform app_private.assert_org_access(organization_id, true);
  return coalesce((select jsonb_agg(app_private.membership_json(m, u) order by lower(u.email), u.id)
    from app_public.memberships m join app_public.users u on u.id = m.user_id
    where m.organization_id = list_members.organization_id), '[]'::jsonb);
end $$;

create function app_public.add_member(organization_id uuid, email text, role text) returns jsonb
  language plpgsql volatile as
$$
begin
  perform app_private.assert_org_access(organization_id, true);
  return jsonb_build_object('success', true, 'error', null,
    'member', app_private.add_member(organization_id, email, role));
end $$;

create function app_public.remove_member(organization_id uuid, user_id uuid) returns jsonb
  language plpgsql volatile as
$$
begin
  perform app_private.assert_org_access(organization_id, true);
  delete from app_public.memberships m where m.organization_id = remove_member.organization_id and m.user_id = remove_member.user_id;
  if not found then perform app_private.fail('Member not found.', 'AP404'); end if;
  set constraints app_public._100_keep_owner immediate;
  return jsonb_build_object('success', true, 'error', null);
end $$;

create function app_public.update_member_role(organization_id uuid, user_id uuid, role text) returns jsonb
  language plpgsql volatile as
$$
declare
  m app_public.memberships;
  u app_public.users;
begin
  perform app_private.assert_org_access(organization_id, true);
  if role is null or role not in ('owner', 'admin', 'member') then
    perform app_private.fail('Role must be one of: owner, admin, member.');
  end if;
  update app_public.memberships x set role = update_member_role.role
    where x.organization_id = update_member_role.organization_id and x.user_id = update_member_role.user_id
    returning * into m;
  if m is null then perform app_private.fail('Member not found.', 'AP404'); end if;
  set constraints app_public._100_keep_owner immediate;
  select * into u from app_public.users where id = m.user_id;
  return jsonb_build_object('success', true, 'error', null, 'member', app_private.membership_json(m, u));
end $$;

grant execute on function app_public.create_api_key(uuid, text), app_public.revoke_api_key(uuid, uuid),
  app_public.list_api_keys(uuid), app_public.list_members(uuid), app_public.add_member(uuid, text, text),
  app_public.remove_member(uuid, uuid), app_public.update_member_role(uuid, uuid, text) to accounting_visitor;

------------------------------------------------------------------------------------------------
-- Idempotency-Key claims, run on the authenticator's connection before the mutation.
create function app_private.claim_idempotency_key(credential text, idem_key text, digest text, org uuid)
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

create function app_private.save_idempotent_response(credential text, idem_key text, status integer, body text)
  returns void
  language sql security definer set search_path = pg_catalog, app_public as
$$
  update app_public.idempotency_records x set response_status = status, response_body = body
   where x.credential = save_idempotent_response.credential and x.idempotency_key = idem_key
$$;
grant execute on function app_private.claim_idempotency_key(text, text, text, uuid),
  app_private.save_idempotent_response(text, text, integer, text) to accounting_authenticator;

create function app_private.purge_expired() returns void
  language sql as
$$
  delete from app_public.idempotency_records where created < now() - interval '24 hours';
  delete from app_public.rate_limit_windows where window_start < now() - interval '1 hour';
$$;
