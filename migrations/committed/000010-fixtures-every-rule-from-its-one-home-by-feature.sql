--! Previous: sha1:17c4920f20d95b2bd38d30462bf35545a3cbac15
--! Hash: sha1:7d08d3d97eeb2a098f8134d14eaadb075580dd6b
--! Message: Fixtures: every rule from its one home by feature

-- Every function, trigger, view, policy and grant from its one home under migrations/fixtures,
-- by feature. From here on a rule is changed by editing its fixture and including that file in
-- the next migration; this one brings them all in once (definitions unchanged).
--! Included inputs/values.sql
-- Values as the API takes them: amounts, dates and ids parsed and bounded in one place each
-- (the largest amount, the range of dates), and the business error every operation raises.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Raising a business error: SQLSTATE class AP is a mutation-level failure (success: false),
-- class AU an access failure (GraphQL error). The server maps the code to extensions.code.
create or replace function app_private.fail(message text, code text default 'AP400') returns void
  language plpgsql as
$$ begin raise exception using message = message, errcode = code; end $$;
grant execute on function app_private.fail(message text, code text) to accounting_visitor;

-- The field a caller's message names: "Transaction date must be ..." -> "Transaction date".
create or replace function app_private.field_of(message text, fallback text) returns text
  language sql immutable parallel safe as
$$ select coalesce(nullif(substring(message from '^(.+?) must '), ''), fallback) $$;
grant execute on function app_private.field_of(message text, fallback text) to accounting_visitor;

-- Timestamps leave the database as ISO 8601 UTC, whatever the session's time zone.
create or replace function app_private.iso(ts timestamptz) returns text
  language sql stable parallel safe as
$$ select to_char(ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') $$;
grant execute on function app_private.iso(ts timestamp with time zone) to accounting_visitor, reporting_reader;

-- A field of a batch item: a string, or null when absent; anything else is the item's error.
create or replace function app_private.item_text(item jsonb, key text) returns text
  language plpgsql immutable as
$$
declare v jsonb;
begin
  if item is null or jsonb_typeof(item) <> 'object' then perform app_private.fail('Each item must be an object.'); end if;
  v := item -> key;
  if v is null or jsonb_typeof(v) = 'null' then return null; end if;
  if jsonb_typeof(v) <> 'string' then perform app_private.fail(format('%s must be a string.', key)); end if;
  return v #>> '{}';
end $$;
grant execute on function app_private.item_text(item jsonb, key text) to accounting_visitor;

create or replace function app_private.item_uuid(item jsonb, key text) returns uuid
  language sql immutable as
$$ select app_private.parse_uuid(app_private.item_text(item, key), format('%s must be a UUID.', key)) $$;
grant execute on function app_private.item_uuid(item jsonb, key text) to accounting_visitor;

-- The largest amount (event amount, tax amount, list filters). Per-account daily totals are
-- numeric(20,2): a billion events of this size on one account and day still fit.
create or replace function app_private.max_amount() returns numeric
  language sql immutable parallel safe as
$$ select 999999999.99::numeric $$;
grant execute on function app_private.max_amount() to accounting_visitor;

create or replace function app_private.max_date() returns date
  language sql immutable parallel safe as
$$ select date '2199-12-31' $$;
grant execute on function app_private.max_date() to accounting_visitor;

-- The range of every date argument (transactionDate, dateFrom, dateTo, startDate, endDate).
create or replace function app_private.min_date() returns date
  language sql immutable parallel safe as
$$ select date '1900-01-01' $$;
grant execute on function app_private.min_date() to accounting_visitor;

-- Money leaves the database as a decimal string with exactly two decimals.
create or replace function app_private.money(amount numeric) returns text
  language sql immutable parallel safe as
$$ select amount::numeric(20,2)::text $$;
grant execute on function app_private.money(amount numeric) to accounting_visitor;

-- A decimal string with at most 2 fractional digits, at most max_amount(); positive unless
-- allow_zero. Malformed input gets the caller's message; a well-formed but larger amount gets
-- "<field> must be at most 999,999,999.99." (the field taken from the caller's message).
create or replace function app_private.parse_amount(amount text, message text, allow_zero boolean default false) returns numeric
  language plpgsql immutable as
$$
declare
  s text := btrim(amount);
  whole text;
  v numeric;
begin
  if s is null or s !~ '^[0-9]+(\.[0-9]{1,2})?$' then perform app_private.fail(message); end if;
  -- Leading zeros are dropped before converting, and a number with more whole digits than the
  -- maximum is refused unconverted (a 100,000-digit string never reaches numeric).
  whole := ltrim(split_part(s, '.', 1), '0');
  if length(whole) > length(trunc(app_private.max_amount())::text) then
    perform app_private.fail(format('%s must be at most %s.', app_private.field_of(message, 'Amount'),
      to_char(app_private.max_amount(), 'FM999,999,999,999,990.00')));
  end if;
  v := (coalesce(nullif(whole, ''), '0') || coalesce('.' || nullif(split_part(s, '.', 2), ''), ''))::numeric;
  if v > app_private.max_amount() then
    perform app_private.fail(format('%s must be at most %s.', app_private.field_of(message, 'Amount'),
      to_char(app_private.max_amount(), 'FM999,999,999,999,990.00')));
  end if;
  if v = 0 and not allow_zero then perform app_private.fail(message); end if;
  return v;
end $$;
grant execute on function app_private.parse_amount(amount text, message text, allow_zero boolean) to accounting_visitor;

-- A `YYYY-MM-DD` string that names a real day from min_date() to max_date(). Malformed input
-- gets the caller's message; a real day out of range gets "<field> must be between ... and ...".
create or replace function app_private.parse_date(day text, message text) returns date
  language plpgsql immutable as
$$
declare d date;
begin
  if day is null or day !~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' then perform app_private.fail(message); end if;
  begin
    d := day::date;
  exception when others then
    perform app_private.fail(message);
  end;
  if d < app_private.min_date() or d > app_private.max_date() then
    perform app_private.fail(format('%s must be between %s and %s.', app_private.field_of(message, 'Date'),
      to_char(app_private.min_date(), 'YYYY-MM-DD'), to_char(app_private.max_date(), 'YYYY-MM-DD')));
  end if;
  return d;
end $$;
grant execute on function app_private.parse_date(day text, message text) to accounting_visitor;

-- A UUID given as text (list filters, batch items): the forms GraphQL's UUID scalar accepts.
create or replace function app_private.parse_uuid(id text, message text) returns uuid
  language plpgsql immutable as
$$
begin
  if id is null then return null; end if;
  if id !~ '^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$' then
    perform app_private.fail(message);
  end if;
  return id::uuid;
end $$;
grant execute on function app_private.parse_uuid(id text, message text) to accounting_visitor;

-- A list of UUIDs given as a JSON array (listLedgerEvents' accountIds, categoryIds, paymentAccountIds).
create or replace function app_private.uuid_list(ids jsonb, field text) returns uuid[]
  language plpgsql immutable as
$$
declare
  x jsonb;
  out uuid[] := '{}';
begin
  if ids is null then return null; end if;
  if jsonb_typeof(ids) <> 'array' then perform app_private.fail(format('%s must be a list of UUIDs.', field)); end if;
  for x in select e from jsonb_array_elements(ids) e loop
    if jsonb_typeof(x) <> 'string' then perform app_private.fail(format('%s must be a list of UUIDs.', field)); end if;
    out := out || app_private.parse_uuid(x #>> '{}', format('%s must be a list of UUIDs.', field));
  end loop;
  return out;
end $$;
grant execute on function app_private.uuid_list(ids jsonb, field text) to accounting_visitor;
--! EndIncluded inputs/values.sql
--! Included inputs/text.sql
-- Text as it is stored and searched: trimmed, in Unicode NFC (so look-alike names are one name),
-- emails and phones cleaned, search text escaped for ILIKE and bounded.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

create or replace function app_private.clean_email(email text) returns text
  language plpgsql immutable as
$$
declare e text := nullif(app_private.clean_text(email), '');
begin
  if e is not null and (e !~ '^[^@\s]+@[^@\s]+\.[^@\s]+$' or length(e) > 254) then
    perform app_private.fail('Email must look like an email address.');
  end if;
  return e;
end $$;
grant execute on function app_private.clean_email(email text) to accounting_visitor;

create or replace function app_private.clean_phone(phone text) returns text
  language plpgsql immutable as
$$
declare p text := nullif(btrim(phone), '');
begin
  if p is not null and p !~ '^\+?[0-9 ().-]{3,30}$' then
    perform app_private.fail('Phone must be 3 to 30 characters: digits, spaces, a leading + and ( ) - . only.');
  end if;
  return p;
end $$;
grant execute on function app_private.clean_phone(phone text) to accounting_visitor;

-- Text as it is stored: NFC, without surrounding spaces.
create or replace function app_private.clean_text(t text) returns text
  language sql immutable parallel safe as
$$ select btrim(normalize(t, NFC)) $$;
grant execute on function app_private.clean_text(t text) to accounting_visitor;

-- A search is at most 200 characters: ILIKE costs the pattern's length times each value's, and
-- a 100,000-character search over the tax codes took seconds. Every list search goes through
-- like_pattern, so the limit lives here. (chr(92) is the backslash, the ILIKE escape.)
create or replace function app_private.like_pattern(search text) returns text
  language plpgsql immutable parallel safe as
$$
declare b constant text := chr(92);
begin
  if length(search) > 200 then perform app_private.fail('search must be at most 200 characters.'); end if;
  return '%' || replace(replace(replace(normalize(search, NFC), b, b || b), '%', b || '%'), '_', b || '_') || '%';
end $$;
grant execute on function app_private.like_pattern(search text) to accounting_visitor;

-- NFC: the rule in the tables. One trigger function; each table names its columns (TG_ARGV) and
-- its trigger fires only when one of them is not in NFC (the WHEN clause costs next to nothing).
-- On UPDATE only changed values are normalized, so a row written before this rule is never
-- rewritten behind the caller's back.
create or replace function app_private.tg__nfc() returns trigger
  language plpgsql as
$$
declare
  n jsonb := to_jsonb(new);
  o jsonb := case when tg_op = 'UPDATE' then to_jsonb(old) end;
  patch jsonb := '{}';
  col text;
  v text;
begin
  foreach col in array tg_argv loop
    v := n ->> col;
    if v is not null and v is not nfc normalized and (o is null or o -> col is distinct from n -> col) then
      patch := patch || jsonb_build_object(col, normalize(v, NFC));
    end if;
  end loop;
  if patch <> '{}' then new := jsonb_populate_record(new, patch); end if;
  return new;
end $$;
grant execute on function app_private.tg__nfc() to accounting_visitor;

-- The human-entered text columns, each table's in one trigger.
do $$
declare
  t record;
begin
  for t in select * from (values
      ('organizations', array['name']),
      ('users', array['email', 'name']),
      ('api_keys', array['label']),
      ('accounts', array['name', 'sub_type']),
      ('contacts', array['display_name', 'email']),
      ('category_rules', array['vendor_pattern']),
      ('intake_addresses', array['address', 'label']),
      ('ledger_events', array['merchant_name', 'memo', 'reference'])
    ) v (tbl, cols)
  loop
    execute format('drop trigger if exists _050_nfc on app_public.%I', t.tbl);
    execute format('create trigger _050_nfc before insert or update on app_public.%I for each row when (%s) '
                   'execute function app_private.tg__nfc(%s)',
      t.tbl,
      (select string_agg(format('new.%I is not nfc normalized', c), ' or ') from unnest(t.cols) c),
      (select string_agg(quote_literal(c), ', ') from unnest(t.cols) c));
  end loop;
end $$;
--! EndIncluded inputs/text.sql
--! Included inputs/paging.sql
-- Paging and sorting arguments shared by every list (decisions §5).
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

create or replace function app_private.check_sort_by(sort_by text, allowed text[]) returns void
  language plpgsql immutable as
$$
begin
  if sort_by is not null and not (sort_by = any (allowed)) then
    perform app_private.fail(format('sortBy must be one of: %s.', array_to_string(allowed, ', ')), 'AP400');
  end if;
end $$;
grant execute on function app_private.check_sort_by(sort_by text, allowed text[]) to accounting_visitor;

create or replace function app_private.page_offset(off integer) returns integer
  language plpgsql immutable as
$$
begin
  if coalesce(off, 0) < 0 then perform app_private.fail('offset must not be negative.', 'AP400'); end if;
  return coalesce(off, 0);
end $$;
grant execute on function app_private.page_offset(off integer) to accounting_visitor;

-- Paging arguments shared by every list (decisions §5).
create or replace function app_private.page_size(lim integer) returns integer
  language plpgsql immutable as
$$
begin
  if lim is null then return 25; end if;
  if lim < 1 then perform app_private.fail('limit must be at least 1.', 'AP400'); end if;
  return least(lim, 200);
end $$;
grant execute on function app_private.page_size(lim integer) to accounting_visitor;

create or replace function app_private.sort_dir(dir text, default_dir text default 'asc') returns text
  language plpgsql immutable as
$$
begin
  if dir is null then return default_dir; end if;
  if lower(dir) not in ('asc', 'desc') then
    perform app_private.fail('sortDir must be one of: asc, desc.', 'AP400');
  end if;
  return lower(dir);
end $$;
grant execute on function app_private.sort_dir(dir text, default_dir text) to accounting_visitor;
--! EndIncluded inputs/paging.sql
--! Included inputs/timestamps.sql
-- `updated` kept by a trigger on every table that has one.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

create or replace function app_private.tg__touch_updated() returns trigger language plpgsql as
$$ begin new.updated := now(); return new; end $$;
grant execute on function app_private.tg__touch_updated() to accounting_visitor;
--! EndIncluded inputs/timestamps.sql
--! Included access/identity.sql
-- Who is calling and what they may touch: the verified identity the server puts in settings, and
-- the access check every operation starts with (decisions §2 order), which puts the organization
-- in scope for row-level security.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- The access check every operation runs first, in the order of decisions §2. On success the
-- organization is in scope for RLS for the rest of the transaction.
create or replace function app_private.assert_org_access(org uuid, admin boolean default false) returns void
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
grant execute on function app_private.assert_org_access(org uuid, admin boolean) to accounting_visitor;

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
grant execute on function app_private.authenticate_user_in(user_id uuid, org uuid) to accounting_authenticator;

-- The caller's role in the organization in scope (null for an API key).
create or replace function app_private.caller_role(org uuid) returns text
  language sql stable security definer set search_path = pg_catalog, app_public as
$$ select m.role from app_public.memberships m where m.organization_id = org and m.user_id = app_public.current_user_id() $$;
grant execute on function app_private.caller_role(org uuid) to accounting_visitor;

create or replace function app_public.current_api_key_id() returns uuid
  language sql stable parallel safe as
$$ select nullif(current_setting('app.api_key_id', true), '')::uuid $$;
grant execute on function app_public.current_api_key_id() to accounting_visitor, reporting_reader;

-- Identity of the request, from per-request settings. `app.organization_id` is set by the server
-- for an API key (its one organization) and by app_private.assert_org_access for a JWT user after
-- checking membership; RLS policies read nothing else.
create or replace function app_public.current_organization_id() returns uuid
  language sql stable parallel safe as
$$ select nullif(current_setting('app.organization_id', true), '')::uuid $$;
grant execute on function app_public.current_organization_id() to accounting_visitor, reporting_reader;

create or replace function app_public.current_user_id() returns uuid
  language sql stable parallel safe as
$$ select nullif(current_setting('app.user_id', true), '')::uuid $$;
grant execute on function app_public.current_user_id() to accounting_visitor, reporting_reader;
--! EndIncluded access/identity.sql
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

create or replace function app_public.revoke_api_key(organization_id uuid, api_key_id uuid) returns jsonb
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
grant execute on function app_public.revoke_api_key(organization_id uuid, api_key_id uuid) to accounting_visitor;
--! EndIncluded access/api-keys.sql
--! Included access/rate-limit.sql
-- Rate-limit windows: one row per API key and window, counted by authenticate_api_key.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.rate_limit_windows
drop policy if exists rate_limit_windows_tenant on app_public.rate_limit_windows;
create policy rate_limit_windows_tenant on app_public.rate_limit_windows
  using (organization_id = app_public.current_organization_id());
grant select on app_public.rate_limit_windows to accounting_visitor;
--! EndIncluded access/rate-limit.sql
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
--! EndIncluded access/idempotency.sql
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
--! EndIncluded organizations/members.sql
--! Included chart/tax-codes.sql
-- GIFI tax codes and sales tax codes (reference data, read-only for the API).
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.sales_tax_codes
grant select on app_public.sales_tax_codes to accounting_visitor;
grant select on app_public.sales_tax_codes to reporting_reader;

-- app_public.tax_codes
grant select on app_public.tax_codes to accounting_visitor;
grant select on app_public.tax_codes to reporting_reader;

------------------------------------------------------------------------------------------------

create or replace function app_private.tax_code_json(t app_public.tax_codes) returns jsonb
  language sql immutable as
$$ select case when t.id is null then null else jsonb_build_object('id', t.id, 'code', t.code, 'name', t.name,
     'classification', t.classification, 'accountType', t.account_type) end $$;
grant execute on function app_private.tax_code_json(t app_public.tax_codes) to accounting_visitor;

-- The rate is a percentage as a decimal string with 3 decimals ("9.975").
create or replace function app_public.list_sales_tax_codes(organization_id uuid) returns jsonb
  language plpgsql stable as
$$
begin
  perform app_private.assert_org_access(organization_id, false);
  return coalesce((select jsonb_agg(jsonb_build_object('code', s.code, 'name', s.name, 'rate', s.rate::text,
      'jurisdiction', s.jurisdiction, 'recoverable', s.recoverable) order by s.jurisdiction <> 'CA', s.jurisdiction, s.code)
    from app_public.sales_tax_codes s), '[]'::jsonb);
end $$;
grant execute on function app_public.list_sales_tax_codes(organization_id uuid) to accounting_visitor;

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
grant execute on function app_public.list_tax_codes(organization_id uuid, search text, "limit" integer, "offset" integer, classification text, account_type text) to accounting_visitor;
--! EndIncluded chart/tax-codes.sql
--! Included chart/accounts.sql
-- The chart of accounts: accounts tied to GIFI codes, sub-accounts, the starter chart, balances.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.accounts
drop policy if exists accounts_tenant on app_public.accounts;
create policy accounts_tenant on app_public.accounts
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select on app_public.accounts to accounting_visitor;
grant select on app_public.accounts to reporting_reader;
grant insert (account_type, active, classification, last_four, name, organization_id, parent_id, sub_type, tax_code_id) on app_public.accounts to accounting_visitor;
grant update (active, last_four, name, parent_id, sub_type, tax_code_id, updated) on app_public.accounts to accounting_visitor;

drop trigger if exists _100_touch_updated on app_public.accounts;
create trigger _100_touch_updated before update on app_public.accounts
  for each row execute function app_private.tg__touch_updated();

drop trigger if exists _200_no_cycle on app_public.accounts;
create trigger _200_no_cycle before update of parent_id on app_public.accounts
  for each row when (new.parent_id is not null and new.parent_id is distinct from old.parent_id)
  execute function app_private.tg_accounts__no_cycle();

------------------------------------------------------------------------------------------------

-- Balances as of a day: debit-normal accounts (asset, expense) debits - credits, others credits - debits.
create or replace function app_private.account_balances(org uuid, as_of date default current_date)
  returns table (account_id uuid, balance numeric)
  language sql stable as
$$
  select t.account_id,
         case when a.classification in ('asset', 'expense') then sum(t.debit) - sum(t.credit)
              else sum(t.credit) - sum(t.debit) end
    from app_public.account_daily_totals t
    join app_public.accounts a on a.id = t.account_id
   where t.organization_id = org and t.day <= as_of
   group by t.account_id, a.classification
$$;
grant execute on function app_private.account_balances(org uuid, as_of date) to accounting_visitor, reporting_reader;

create or replace function app_private.account_by_id(org uuid, account uuid) returns jsonb
  language sql stable as
$$ select app_private.account_json(a, (select b.balance from app_private.account_balances(org) b where b.account_id = a.id))
     from app_public.accounts a where a.organization_id = org and a.id = account $$;
grant execute on function app_private.account_by_id(org uuid, account uuid) to accounting_visitor;

-- currentBalance is a JSON number (contract); the balance stays numeric until here.
create or replace function app_private.account_json(a app_public.accounts, balance numeric) returns jsonb
  language sql stable as
$$ select jsonb_build_object('id', a.id, 'name', a.name, 'accountType', a.account_type,
     'classification', a.classification, 'subType', a.sub_type, 'lastFour', a.last_four, 'parentId', a.parent_id,
     'currentBalance', coalesce(balance, 0), 'active', a.active,
     'taxCode', (select app_private.tax_code_json(t) from app_public.tax_codes t where t.id = a.tax_code_id),
     'created', app_private.iso(a.created), 'updated', app_private.iso(a.updated)) $$;
grant execute on function app_private.account_json(a app_public.accounts, balance numeric) to accounting_visitor;

-- Allowed account types: the GIFI suggestions except `total`, plus credit_card and clearing.
create or replace function app_private.check_account_type(account_type text) returns void
  language plpgsql stable as
$$
begin
  if account_type in ('credit_card', 'clearing')
     or (account_type <> 'total' and exists (select 1 from app_public.tax_codes t where t.account_type = check_account_type.account_type)) then
    return;
  end if;
  perform app_private.fail(format('Account type %s is not allowed. Allowed types: %s.', coalesce('"' || account_type || '"', '(none)'),
    (select string_agg(x, ', ' order by x) from (
       select distinct t.account_type as x from app_public.tax_codes t where t.account_type <> 'total'
       union select 'credit_card' union select 'clearing') s)));
end $$;
grant execute on function app_private.check_account_type(account_type text) to accounting_visitor;

create or replace function app_private.create_starter_chart(org uuid) returns void
  language plpgsql volatile as
$$
begin
  insert into app_public.accounts (organization_id, name, account_type, classification, tax_code_id)
  select org, v.name, v.account_type, v.classification, t.id
    from (values
      (1, 'Chequing', 'bank', 'asset', '1002'),
      (2, 'Processor Clearing', 'clearing', 'asset', '1007'),
      (3, 'GST/HST Payable', 'tax_payable', 'liability', '2680'),
      (4, 'Owner''s Equity', 'equity', 'equity', '3540'),
      (5, 'Retained Earnings', 'retained_earnings', 'equity', '3600'),
      (6, 'Sales Revenue', 'income', 'revenue', '8000'),
      (7, 'Cost of Goods Sold', 'cost_of_goods_sold', 'expense', '8320'),
      (8, 'Bank Fees & Charges', 'expense', 'expense', '8715')
    ) v (ord, name, account_type, classification, code)
    join app_public.tax_codes t on t.code = v.code
   order by v.ord;
end $$;
grant execute on function app_private.create_starter_chart(org uuid) to accounting_visitor;

create or replace function app_private.insert_account(org uuid, name text, tax_code_id uuid, account_type text,
    classification text, sub_type text, last_four text, parent_id uuid) returns app_public.accounts
  language plpgsql volatile as
$$
declare
  t app_public.tax_codes;
  r app_public.accounts;
  nm text := app_private.clean_text(name);
  st text := coalesce(app_private.clean_text(sub_type), '');
  typ text := nullif(lower(btrim(account_type)), '');
  cls text := nullif(lower(btrim(classification)), '');
  four text := nullif(btrim(last_four), '');
begin
  if nm is null or nm = '' then perform app_private.fail('Name is required.'); end if;
  if length(nm) > 200 then perform app_private.fail('Name must be at most 200 characters.'); end if;
  if insert_account.tax_code_id is not null then
    select * into t from app_public.tax_codes c where c.id = insert_account.tax_code_id;
    if not found then perform app_private.fail('Tax code not found.'); end if;
    if t.account_type = 'total' then
      perform app_private.fail(format('Tax code %s is a computed total and cannot be used for an account.', t.code));
    end if;
    typ := coalesce(typ, t.account_type);
    cls := coalesce(cls, t.classification);
  elsif typ is null or cls is null then
    perform app_private.fail('Give either taxCodeId, or accountType and classification.');
  end if;
  if cls not in ('asset', 'liability', 'equity', 'revenue', 'expense') then
    perform app_private.fail('Classification must be one of: asset, liability, equity, revenue, expense.');
  end if;
  perform app_private.check_account_type(typ);
  if t.id is not null and t.classification <> cls then
    perform app_private.fail(format('Tax code %s is for %s accounts, not %s.', t.code, t.classification, cls));
  end if;
  if four is not null and four !~ '^[0-9]{4}$' then perform app_private.fail('lastFour must be exactly 4 digits.'); end if;
  if length(st) > 100 then perform app_private.fail('subType must be at most 100 characters.'); end if;
  insert into app_public.accounts (organization_id, name, account_type, classification, sub_type, last_four, parent_id, tax_code_id)
    values (org, nm, typ, cls, st, four, app_private.resolve_parent(org, insert_account.parent_id, cls), t.id)
    returning * into r;
  return r;
end $$;
grant execute on function app_private.insert_account(org uuid, name text, tax_code_id uuid, account_type text, classification text, sub_type text, last_four text, parent_id uuid) to accounting_visitor;

-- The parent of a (sub-)account: of this organization and of the same classification.
create or replace function app_private.resolve_parent(org uuid, parent uuid, classification text) returns uuid
  language plpgsql stable as
$$
declare p app_public.accounts;
begin
  if parent is null then return null; end if;
  select * into p from app_public.accounts a where a.organization_id = org and a.id = parent;
  if not found then perform app_private.fail('Parent account not found.'); end if;
  if p.classification <> resolve_parent.classification then
    perform app_private.fail(format('A sub-account must have the classification of its parent (%s).', p.classification));
  end if;
  return p.id;
end $$;
grant execute on function app_private.resolve_parent(org uuid, parent uuid, classification text) to accounting_visitor;

-- No cycles in parent_id. Changes of parent serialize per organization (advisory lock), and each
-- check runs on a fresh snapshot after the lock, so two concurrent moves cannot close a loop.
-- A new row cannot close one (nothing points at it yet), so only updates are checked.
create or replace function app_private.tg_accounts__no_cycle() returns trigger
  language plpgsql as
$$
begin
  perform pg_advisory_xact_lock(hashtext('app_public.accounts.parent_id'), hashtext(new.organization_id::text));
  if exists (
    with recursive up (id, parent_id) as (
      select a.id, a.parent_id from app_public.accounts a
       where a.organization_id = new.organization_id and a.id = new.parent_id
      union
      select a.id, a.parent_id from app_public.accounts a join up on a.id = up.parent_id
       where a.organization_id = new.organization_id
    )
    select 1 from up where up.id = new.id
  ) then
    perform app_private.fail('An account cannot be placed under itself or one of its own sub-accounts.');
  end if;
  return new;
end $$;
grant execute on function app_private.tg_accounts__no_cycle() to accounting_visitor;

-- Each item in its own savepoint (the exception block); failures are listed by 0-based index.
-- An item that is not an object, or a field of the wrong JSON type, is that item's failure.
create or replace function app_public.batch_create_accounts(organization_id uuid, items jsonb) returns jsonb
  language plpgsql volatile as
$$
declare
  item jsonb;
  idx integer := 0;
  n_created integer := 0;
  errs jsonb := '[]'::jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  if items is null or jsonb_typeof(items) <> 'array' then perform app_private.fail('items must be a list.'); end if;
  if jsonb_array_length(items) > 500 then
    perform app_private.fail(format('A batch holds at most 500 items (got %s); nothing was created.', jsonb_array_length(items)));
  end if;
  for item in select e.value from jsonb_array_elements(items) with ordinality e (value, ordinality) order by e.ordinality loop
    begin
      perform app_private.insert_account(batch_create_accounts.organization_id, app_private.item_text(item, 'name'),
        app_private.item_uuid(item, 'taxCodeId'), app_private.item_text(item, 'accountType'),
        app_private.item_text(item, 'classification'), app_private.item_text(item, 'subType'),
        app_private.item_text(item, 'lastFour'), app_private.item_uuid(item, 'parentId'));
      n_created := n_created + 1;
    exception
      when unique_violation then
        errs := errs || jsonb_build_array(jsonb_build_object('index', idx, 'error', 'Account with this name already exists.'));
      when others then
        if sqlstate like 'AP%' then
          errs := errs || jsonb_build_array(jsonb_build_object('index', idx, 'error', sqlerrm));
        else
          raise;
        end if;
    end;
    idx := idx + 1;
  end loop;
  return jsonb_build_object('created', n_created, 'errors', errs);
end $$;
grant execute on function app_public.batch_create_accounts(organization_id uuid, items jsonb) to accounting_visitor;

create or replace function app_public.create_account(organization_id uuid, name text, tax_code_id uuid default null,
    account_type text default null, classification text default null, sub_type text default null,
    last_four text default null, parent_id uuid default null) returns jsonb
  language plpgsql volatile as
$$
declare r app_public.accounts;
begin
  perform app_private.assert_org_access(organization_id, false);
  begin
    r := app_private.insert_account(create_account.organization_id, create_account.name, create_account.tax_code_id,
      create_account.account_type, create_account.classification, create_account.sub_type, create_account.last_four,
      create_account.parent_id);
  exception when unique_violation then
    perform app_private.fail('Account with this name already exists.');
  end;
  return jsonb_build_object('success', true, 'error', null, 'account', app_private.account_by_id(r.organization_id, r.id));
end $$;
grant execute on function app_public.create_account(organization_id uuid, name text, tax_code_id uuid, account_type text, classification text, sub_type text, last_four text, parent_id uuid) to accounting_visitor;

-- Accounts are never deleted; deactivating hides them from new use (category rules pointing at
-- them stop matching). The ledger adds: an account with posted lines keeps them.
create or replace function app_public.deactivate_account(organization_id uuid, account_id uuid) returns jsonb
  language plpgsql volatile as
$$
begin
  perform app_private.assert_org_access(organization_id, false);
  update app_public.accounts x set active = false
   where x.organization_id = deactivate_account.organization_id and x.id = deactivate_account.account_id;
  if not found then perform app_private.fail('Account not found.', 'AP404'); end if;
  return jsonb_build_object('success', true, 'error', null,
    'account', app_private.account_by_id(deactivate_account.organization_id, deactivate_account.account_id));
end $$;
grant execute on function app_public.deactivate_account(organization_id uuid, account_id uuid) to accounting_visitor;

create or replace function app_public.list_accounts(organization_id uuid, "limit" integer default null, "offset" integer default null,
    search text default null, sort_by text default null, sort_dir text default null, active boolean default null,
    classification text default null) returns jsonb
  language plpgsql stable as
$$
declare
  lim integer;
  off integer;
  dir text;
  key text;
  result jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  lim := app_private.page_size("limit");
  off := app_private.page_offset("offset");
  dir := app_private.sort_dir(sort_dir, 'asc');
  perform app_private.check_sort_by(sort_by, array['name', 'accountType', 'classification', 'subType', 'currentBalance', 'active', 'created', 'updated']);
  -- Whitelisted above; ties by name, then id, in the same direction, so the order is total.
  key := case coalesce(sort_by, 'name')
    when 'name' then 'f.lname' when 'accountType' then '(f.a).account_type' when 'classification' then '(f.a).classification'
    when 'subType' then 'lower((f.a).sub_type)' when 'currentBalance' then 'f.balance' when 'active' then '(f.a).active'
    when 'created' then '(f.a).created' when 'updated' then '(f.a).updated' end;
  execute format($q$
    with f as (
      select a, lower(a.name) as lname, coalesce(b.balance, 0) as balance
        from app_public.accounts a
        left join app_private.account_balances($1) b on b.account_id = a.id
       where a.organization_id = $1
         and ($2::text is null or a.name ilike app_private.like_pattern($2))
         and ($3::boolean is null or a.active = $3)
         and ($4::text is null or a.classification = $4)
    ), page as (
      select f.a, f.balance, row_number() over (order by %1$s %2$s, f.lname %2$s, (f.a).id %2$s) as rn
        from f order by rn limit $5 offset $6
    )
    select jsonb_build_object(
      'items', coalesce((select jsonb_agg(app_private.account_json(page.a, page.balance) order by page.rn) from page), '[]'::jsonb),
      'totalCount', (select count(*) from f), 'pageSize', $5, 'offset', $6)
  $q$, key, dir) into result using organization_id, search, active, classification, lim, off;
  return result;
end $$;
grant execute on function app_public.list_accounts(organization_id uuid, "limit" integer, "offset" integer, search text, sort_by text, sort_dir text, active boolean, classification text) to accounting_visitor;

create or replace function app_public.reactivate_account(organization_id uuid, account_id uuid) returns jsonb
  language plpgsql volatile as
$$
begin
  perform app_private.assert_org_access(organization_id, false);
  update app_public.accounts x set active = true
   where x.organization_id = reactivate_account.organization_id and x.id = reactivate_account.account_id;
  if not found then perform app_private.fail('Account not found.', 'AP404'); end if;
  return jsonb_build_object('success', true, 'error', null,
    'account', app_private.account_by_id(reactivate_account.organization_id, reactivate_account.account_id));
end $$;
grant execute on function app_public.reactivate_account(organization_id uuid, account_id uuid) to accounting_visitor;

create or replace function app_public.update_account(organization_id uuid, account_id uuid, name text default null,
    last_four text default null, parent_id uuid default null, clear_parent boolean default null,
    tax_code_id uuid default null, sub_type text default null) returns jsonb
  language plpgsql volatile as
$$
declare
  a app_public.accounts;
  t app_public.tax_codes;
  nm text := app_private.clean_text(name);
  st text := app_private.clean_text(sub_type);
  four text := btrim(last_four);
begin
  perform app_private.assert_org_access(organization_id, false);
  -- A parent change takes the organization's parent lock before any row lock (the trigger takes it
  -- too), and rows are locked "no key" so concurrent foreign-key checks on them do not wait.
  if update_account.parent_id is not null then
    perform pg_advisory_xact_lock(hashtext('app_public.accounts.parent_id'), hashtext(update_account.organization_id::text));
  end if;
  select * into a from app_public.accounts x
   where x.organization_id = update_account.organization_id and x.id = update_account.account_id for no key update;
  if not found then perform app_private.fail('Account not found.', 'AP404'); end if;
  if nm is not null then
    if nm = '' then perform app_private.fail('Name is required.'); end if;
    if length(nm) > 200 then perform app_private.fail('Name must be at most 200 characters.'); end if;
    a.name := nm;
  end if;
  if four is not null then
    if four <> '' and four !~ '^[0-9]{4}$' then perform app_private.fail('lastFour must be exactly 4 digits.'); end if;
    a.last_four := nullif(four, '');
  end if;
  if coalesce(clear_parent, false) then
    if update_account.parent_id is not null then perform app_private.fail('Give parentId or clearParent, not both.'); end if;
    a.parent_id := null;
  elsif update_account.parent_id is not null then
    if update_account.parent_id = a.id then
      perform app_private.fail('An account cannot be placed under itself or one of its own sub-accounts.');
    end if;
    a.parent_id := app_private.resolve_parent(a.organization_id, update_account.parent_id, a.classification);
  end if;
  if update_account.tax_code_id is not null then
    select * into t from app_public.tax_codes c where c.id = update_account.tax_code_id;
    if not found then perform app_private.fail('Tax code not found.'); end if;
    if t.account_type = 'total' then
      perform app_private.fail(format('Tax code %s is a computed total and cannot be used for an account.', t.code));
    end if;
    if t.classification <> a.classification then
      perform app_private.fail(format('Tax code %s is for %s accounts, not %s.', t.code, t.classification, a.classification));
    end if;
    a.tax_code_id := t.id;
  end if;
  if st is not null then
    if length(st) > 100 then perform app_private.fail('subType must be at most 100 characters.'); end if;
    a.sub_type := st;
  end if;
  begin
    update app_public.accounts x set name = a.name, last_four = a.last_four, parent_id = a.parent_id,
        tax_code_id = a.tax_code_id, sub_type = a.sub_type
     where x.organization_id = a.organization_id and x.id = a.id;
  exception when unique_violation then
    perform app_private.fail('Account with this name already exists.');
  end;
  return jsonb_build_object('success', true, 'error', null, 'account', app_private.account_by_id(a.organization_id, a.id));
end $$;
grant execute on function app_public.update_account(organization_id uuid, account_id uuid, name text, last_four text, parent_id uuid, clear_parent boolean, tax_code_id uuid, sub_type text) to accounting_visitor;
--! EndIncluded chart/accounts.sql
--! Included contacts/contacts.sql
-- Contacts: vendors and customers, unique by name per organization and type.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.contacts
drop policy if exists contacts_tenant on app_public.contacts;
create policy contacts_tenant on app_public.contacts
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select on app_public.contacts to accounting_visitor;
grant insert (active, contact_type, display_name, email, organization_id, phone) on app_public.contacts to accounting_visitor;
grant update (active, contact_type, display_name, email, phone, updated) on app_public.contacts to accounting_visitor;

drop trigger if exists _100_touch_updated on app_public.contacts;
create trigger _100_touch_updated before update on app_public.contacts
  for each row execute function app_private.tg__touch_updated();

------------------------------------------------------------------------------------------------

-- What each contact owes or is owed. Nothing posts to contacts yet, so every balance is 0; a
-- later issue replaces this function.
create or replace function app_private.contact_balances(org uuid)
  returns table (contact_id uuid, balance numeric)
  language sql stable as
$$ select null::uuid, null::numeric where false $$;
grant execute on function app_private.contact_balances(org uuid) to accounting_visitor, reporting_reader;

create or replace function app_private.contact_by_id(org uuid, contact uuid) returns jsonb
  language sql stable as
$$ select app_private.contact_json(c, (select b.balance from app_private.contact_balances(org) b where b.contact_id = c.id))
     from app_public.contacts c where c.organization_id = org and c.id = contact $$;
grant execute on function app_private.contact_by_id(org uuid, contact uuid) to accounting_visitor;

-- email and phone are "" when absent; balance is a JSON number (contract).
create or replace function app_private.contact_json(c app_public.contacts, balance numeric) returns jsonb
  language sql stable as
$$ select jsonb_build_object('id', c.id, 'contactType', c.contact_type, 'displayName', c.display_name,
     'email', coalesce(c.email, ''), 'phone', coalesce(c.phone, ''), 'balance', coalesce(balance, 0),
     'active', c.active, 'created', app_private.iso(c.created), 'updated', app_private.iso(c.updated)) $$;
grant execute on function app_private.contact_json(c app_public.contacts, balance numeric) to accounting_visitor;

create or replace function app_private.insert_contact(org uuid, contact_type text, display_name text, email text, phone text)
  returns app_public.contacts
  language plpgsql volatile as
$$
declare
  r app_public.contacts;
  typ text := lower(btrim(contact_type));
  nm text := app_private.clean_text(display_name);
begin
  if typ is null or typ not in ('vendor', 'customer') then perform app_private.fail('Contact type must be vendor or customer.'); end if;
  if nm is null or nm = '' then perform app_private.fail('Display name is required.'); end if;
  if length(nm) > 200 then perform app_private.fail('Display name must be at most 200 characters.'); end if;
  insert into app_public.contacts (organization_id, contact_type, display_name, email, phone)
    values (org, typ, nm, app_private.clean_email(email), app_private.clean_phone(phone))
    returning * into r;
  return r;
end $$;
grant execute on function app_private.insert_contact(org uuid, contact_type text, display_name text, email text, phone text) to accounting_visitor;

create or replace function app_public.batch_create_contacts(organization_id uuid, items jsonb) returns jsonb
  language plpgsql volatile as
$$
declare
  item jsonb;
  idx integer := 0;
  n_created integer := 0;
  errs jsonb := '[]'::jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  if items is null or jsonb_typeof(items) <> 'array' then perform app_private.fail('items must be a list.'); end if;
  if jsonb_array_length(items) > 500 then
    perform app_private.fail(format('A batch holds at most 500 items (got %s); nothing was created.', jsonb_array_length(items)));
  end if;
  for item in select e.value from jsonb_array_elements(items) with ordinality e (value, ordinality) order by e.ordinality loop
    begin
      perform app_private.insert_contact(batch_create_contacts.organization_id, app_private.item_text(item, 'contactType'),
        app_private.item_text(item, 'displayName'), app_private.item_text(item, 'email'), app_private.item_text(item, 'phone'));
      n_created := n_created + 1;
    exception
      when unique_violation then
        errs := errs || jsonb_build_array(jsonb_build_object('index', idx, 'error', 'Contact with this name already exists.'));
      when others then
        if sqlstate like 'AP%' then
          errs := errs || jsonb_build_array(jsonb_build_object('index', idx, 'error', sqlerrm));
        else
          raise;
        end if;
    end;
    idx := idx + 1;
  end loop;
  return jsonb_build_object('created', n_created, 'errors', errs);
end $$;
grant execute on function app_public.batch_create_contacts(organization_id uuid, items jsonb) to accounting_visitor;

create or replace function app_public.create_contact(organization_id uuid, contact_type text, display_name text,
    email text default null, phone text default null) returns jsonb
  language plpgsql volatile as
$$
declare r app_public.contacts;
begin
  perform app_private.assert_org_access(organization_id, false);
  begin
    r := app_private.insert_contact(create_contact.organization_id, create_contact.contact_type, create_contact.display_name,
      create_contact.email, create_contact.phone);
  exception when unique_violation then
    perform app_private.fail('Contact with this name already exists.');
  end;
  return jsonb_build_object('success', true, 'error', null, 'contact', app_private.contact_by_id(r.organization_id, r.id));
end $$;
grant execute on function app_public.create_contact(organization_id uuid, contact_type text, display_name text, email text, phone text) to accounting_visitor;

create or replace function app_public.deactivate_contact(organization_id uuid, contact_id uuid) returns jsonb
  language plpgsql volatile as
$$
begin
  perform app_private.assert_org_access(organization_id, false);
  update app_public.contacts x set active = false
   where x.organization_id = deactivate_contact.organization_id and x.id = deactivate_contact.contact_id;
  if not found then perform app_private.fail('Contact not found.', 'AP404'); end if;
  return jsonb_build_object('success', true, 'error', null,
    'contact', app_private.contact_by_id(deactivate_contact.organization_id, deactivate_contact.contact_id));
end $$;
grant execute on function app_public.deactivate_contact(organization_id uuid, contact_id uuid) to accounting_visitor;

create or replace function app_public.list_contacts(organization_id uuid, "limit" integer default null, "offset" integer default null,
    search text default null, sort_by text default null, sort_dir text default null, contact_type text default null,
    active boolean default null) returns jsonb
  language plpgsql stable as
$$
declare
  lim integer;
  off integer;
  dir text;
  key text;
  result jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  lim := app_private.page_size("limit");
  off := app_private.page_offset("offset");
  dir := app_private.sort_dir(sort_dir, 'asc');
  perform app_private.check_sort_by(sort_by, array['displayName', 'contactType', 'email', 'balance', 'created', 'updated']);
  if contact_type is not null and contact_type not in ('vendor', 'customer') then
    perform app_private.fail('Contact type must be vendor or customer.');
  end if;
  key := case coalesce(sort_by, 'displayName')
    when 'displayName' then 'f.lname' when 'contactType' then '(f.c).contact_type' when 'email' then 'lower((f.c).email)'
    when 'balance' then 'f.balance' when 'created' then '(f.c).created' when 'updated' then '(f.c).updated' end;
  execute format($q$
    with f as (
      select c, lower(c.display_name) as lname, coalesce(b.balance, 0) as balance
        from app_public.contacts c
        left join app_private.contact_balances($1) b on b.contact_id = c.id
       where c.organization_id = $1
         and ($2::text is null or c.display_name ilike app_private.like_pattern($2) or c.email ilike app_private.like_pattern($2))
         and ($3::text is null or c.contact_type = $3)
         and ($4::boolean is null or c.active = $4)
    ), page as (
      select f.c, f.balance, row_number() over (order by %1$s %2$s nulls last, f.lname %2$s, (f.c).id %2$s) as rn
        from f order by rn limit $5 offset $6
    )
    select jsonb_build_object(
      'items', coalesce((select jsonb_agg(app_private.contact_json(page.c, page.balance) order by page.rn) from page), '[]'::jsonb),
      'totalCount', (select count(*) from f), 'pageSize', $5, 'offset', $6)
  $q$, key, dir) into result using organization_id, search, contact_type, active, lim, off;
  return result;
end $$;
grant execute on function app_public.list_contacts(organization_id uuid, "limit" integer, "offset" integer, search text, sort_by text, sort_dir text, contact_type text, active boolean) to accounting_visitor;

create or replace function app_public.reactivate_contact(organization_id uuid, contact_id uuid) returns jsonb
  language plpgsql volatile as
$$
begin
  perform app_private.assert_org_access(organization_id, false);
  update app_public.contacts x set active = true
   where x.organization_id = reactivate_contact.organization_id and x.id = reactivate_contact.contact_id;
  if not found then perform app_private.fail('Contact not found.', 'AP404'); end if;
  return jsonb_build_object('success', true, 'error', null,
    'contact', app_private.contact_by_id(reactivate_contact.organization_id, reactivate_contact.contact_id));
end $$;
grant execute on function app_public.reactivate_contact(organization_id uuid, contact_id uuid) to accounting_visitor;

-- Null arguments leave a field unchanged; email or phone "" clears it.
create or replace function app_public.update_contact(organization_id uuid, contact_id uuid, contact_type text default null,
    display_name text default null, email text default null, phone text default null) returns jsonb
  language plpgsql volatile as
$$
declare
  c app_public.contacts;
  nm text := app_private.clean_text(display_name);
begin
  perform app_private.assert_org_access(organization_id, false);
  select * into c from app_public.contacts x
   where x.organization_id = update_contact.organization_id and x.id = update_contact.contact_id for no key update;
  if not found then perform app_private.fail('Contact not found.', 'AP404'); end if;
  if contact_type is not null then
    if lower(btrim(contact_type)) not in ('vendor', 'customer') then perform app_private.fail('Contact type must be vendor or customer.'); end if;
    c.contact_type := lower(btrim(contact_type));
  end if;
  if nm is not null then
    if nm = '' then perform app_private.fail('Display name is required.'); end if;
    if length(nm) > 200 then perform app_private.fail('Display name must be at most 200 characters.'); end if;
    c.display_name := nm;
  end if;
  if email is not null then c.email := app_private.clean_email(email); end if;
  if phone is not null then c.phone := app_private.clean_phone(phone); end if;
  begin
    update app_public.contacts x set contact_type = c.contact_type, display_name = c.display_name, email = c.email, phone = c.phone
     where x.organization_id = c.organization_id and x.id = c.id;
  exception when unique_violation then
    perform app_private.fail('Contact with this name already exists.');
  end;
  return jsonb_build_object('success', true, 'error', null, 'contact', app_private.contact_by_id(c.organization_id, c.id));
end $$;
grant execute on function app_public.update_contact(organization_id uuid, contact_id uuid, contact_type text, display_name text, email text, phone text) to accounting_visitor;
--! EndIncluded contacts/contacts.sql
--! Included rules/category-rules.sql
-- Category rules: ILIKE patterns on merchant names; the longest matching pattern wins, then the
-- oldest; a new rule classifies the events waiting for review.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.category_rules
drop policy if exists category_rules_tenant on app_public.category_rules;
create policy category_rules_tenant on app_public.category_rules
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant delete, select on app_public.category_rules to accounting_visitor;
grant insert (account_id, organization_id, vendor_pattern) on app_public.category_rules to accounting_visitor;
grant update (account_id, match_count, updated, vendor_pattern) on app_public.category_rules to accounting_visitor;

drop trigger if exists _100_touch_updated on app_public.category_rules;
create trigger _100_touch_updated before update on app_public.category_rules
  for each row execute function app_private.tg__touch_updated();

drop trigger if exists _600_classify_needs_review on app_public.category_rules;
create trigger _600_classify_needs_review after insert on app_public.category_rules
  for each row execute function app_private.tg_category_rules__classify();

------------------------------------------------------------------------------------------------

-- The rule for a merchant name (compared in NFC, as patterns are stored): among rules whose
-- pattern matches and whose account is active, the longest pattern wins, then the oldest rule.
create or replace function app_private.best_category_rule(org uuid, merchant_name text) returns uuid
  language sql stable as
$$
  select r.id
    from app_public.category_rules r
    join app_public.accounts a on a.organization_id = r.organization_id and a.id = r.account_id
   where r.organization_id = org and a.active and normalize(merchant_name, NFC) ilike r.vendor_pattern
   order by length(r.vendor_pattern) desc, r.created, r.id
   limit 1
$$;
grant execute on function app_private.best_category_rule(org uuid, merchant_name text) to accounting_visitor;

create or replace function app_private.category_rule_json(r app_public.category_rules) returns jsonb
  language sql stable as
$$ select jsonb_build_object('id', r.id, 'vendorPattern', r.vendor_pattern,
     'account', (select jsonb_build_object('id', a.id, 'name', a.name, 'accountType', a.account_type, 'active', a.active)
                   from app_public.accounts a where a.organization_id = r.organization_id and a.id = r.account_id),
     'matchCount', r.match_count, 'created', app_private.iso(r.created), 'updated', app_private.iso(r.updated)) $$;
grant execute on function app_private.category_rule_json(r app_public.category_rules) to accounting_visitor;

-- A usable ILIKE pattern: not blank, at most 200 characters (in NFC), no dangling escape.
create or replace function app_private.check_vendor_pattern(pattern text) returns text
  language plpgsql immutable as
$$
declare p text := app_private.clean_text(pattern);
begin
  if p is null or p = '' then perform app_private.fail('Vendor pattern is required.'); end if;
  if length(p) > 200 then perform app_private.fail('Vendor pattern must be at most 200 characters.'); end if;
  -- An odd number of trailing backslashes leaves the escape character dangling.
  if p ~ '(^|[^\\])(\\\\)*\\$' then perform app_private.fail('Vendor pattern is not a valid ILIKE pattern.'); end if;
  return p;
end $$;
grant execute on function app_private.check_vendor_pattern(pattern text) to accounting_visitor;

-- The target of a rule: an active account of this organization.
create or replace function app_private.rule_account(org uuid, account uuid) returns uuid
  language plpgsql stable as
$$
declare a app_public.accounts;
begin
  select * into a from app_public.accounts x where x.organization_id = org and x.id = account;
  if not found then perform app_private.fail('Category account not found.'); end if;
  if not a.active then perform app_private.fail('Category account is inactive.'); end if;
  return a.id;
end $$;
grant execute on function app_private.rule_account(org uuid, account uuid) to accounting_visitor;

-- the best rule for, and counts them.
create or replace function app_private.tg_category_rules__classify() returns trigger
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
declare n integer;
begin
  perform set_config('app.audit_action', 'rule', true);
  update app_public.ledger_events e set category_id = new.account_id
    from app_public.accounts a
   where a.id = new.account_id and a.active
     and e.organization_id = new.organization_id and e.status = 'needs_review' and e.category_id is null
     and e.merchant_name ilike new.vendor_pattern
     and app_private.category_fits(e.event_type, a.classification)
     and e.payment_account_id is distinct from a.id
     and app_private.best_category_rule(new.organization_id, e.merchant_name) = new.id;
  get diagnostics n = row_count;
  if n > 0 then
    update app_public.category_rules r set match_count = r.match_count + n where r.id = new.id;
  end if;
  return null;
end $$;
grant execute on function app_private.tg_category_rules__classify() to accounting_visitor;

create or replace function app_public.create_category_rule(organization_id uuid, vendor_pattern text, category_id uuid) returns jsonb
  language plpgsql volatile as
$$
declare r app_public.category_rules;
begin
  perform app_private.assert_org_access(organization_id, false);
  begin
    insert into app_public.category_rules (organization_id, vendor_pattern, account_id)
      values (create_category_rule.organization_id, app_private.check_vendor_pattern(vendor_pattern),
              app_private.rule_account(create_category_rule.organization_id, category_id))
      returning * into r;
  exception when unique_violation then
    perform app_private.fail('A category rule with this pattern already exists.');
  end;
  -- Read again: the insert trigger has just classified matching events and counted them.
  select * into r from app_public.category_rules x where x.id = r.id;
  return jsonb_build_object('success', true, 'error', null, 'categoryRule', app_private.category_rule_json(r));
end $$;
grant execute on function app_public.create_category_rule(organization_id uuid, vendor_pattern text, category_id uuid) to accounting_visitor;

create or replace function app_public.delete_category_rule(organization_id uuid, category_rule_id uuid) returns jsonb
  language plpgsql volatile as
$$
begin
  perform app_private.assert_org_access(organization_id, false);
  delete from app_public.category_rules x
   where x.organization_id = delete_category_rule.organization_id and x.id = category_rule_id;
  if not found then perform app_private.fail('Category rule not found.', 'AP404'); end if;
  return jsonb_build_object('success', true, 'error', null);
end $$;
grant execute on function app_public.delete_category_rule(organization_id uuid, category_rule_id uuid) to accounting_visitor;

create or replace function app_public.list_category_rules(organization_id uuid, "limit" integer default null, "offset" integer default null,
    search text default null, sort_by text default null, sort_dir text default null) returns jsonb
  language plpgsql stable as
$$
declare
  lim integer;
  off integer;
  dir text;
  key text;
  result jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  lim := app_private.page_size("limit");
  off := app_private.page_offset("offset");
  dir := app_private.sort_dir(sort_dir, 'asc');
  perform app_private.check_sort_by(sort_by, array['vendorPattern', 'matchCount', 'created', 'updated']);
  key := case coalesce(sort_by, 'vendorPattern')
    when 'vendorPattern' then 'f.lpattern' when 'matchCount' then '(f.r).match_count'
    when 'created' then '(f.r).created' when 'updated' then '(f.r).updated' end;
  execute format($q$
    with f as (
      select r, lower(r.vendor_pattern) as lpattern
        from app_public.category_rules r
       where r.organization_id = $1 and ($2::text is null or r.vendor_pattern ilike app_private.like_pattern($2))
    ), page as (
      select f.r, row_number() over (order by %1$s %2$s, f.lpattern %2$s, (f.r).id %2$s) as rn
        from f order by rn limit $3 offset $4
    )
    select jsonb_build_object(
      'items', coalesce((select jsonb_agg(app_private.category_rule_json(page.r) order by page.rn) from page), '[]'::jsonb),
      'totalCount', (select count(*) from f), 'pageSize', $3, 'offset', $4)
  $q$, key, dir) into result using organization_id, search, lim, off;
  return result;
end $$;
grant execute on function app_public.list_category_rules(organization_id uuid, "limit" integer, "offset" integer, search text, sort_by text, sort_dir text) to accounting_visitor;

create or replace function app_public.update_category_rule(organization_id uuid, category_rule_id uuid, vendor_pattern text default null,
    category_id uuid default null) returns jsonb
  language plpgsql volatile as
$$
declare r app_public.category_rules;
begin
  perform app_private.assert_org_access(organization_id, false);
  select * into r from app_public.category_rules x
   where x.organization_id = update_category_rule.organization_id and x.id = category_rule_id for no key update;
  if not found then perform app_private.fail('Category rule not found.', 'AP404'); end if;
  if vendor_pattern is not null then r.vendor_pattern := app_private.check_vendor_pattern(vendor_pattern); end if;
  if category_id is not null then r.account_id := app_private.rule_account(r.organization_id, category_id); end if;
  begin
    update app_public.category_rules x set vendor_pattern = r.vendor_pattern, account_id = r.account_id
     where x.organization_id = r.organization_id and x.id = r.id
     returning * into r;
  exception when unique_violation then
    perform app_private.fail('A category rule with this pattern already exists.');
  end;
  return jsonb_build_object('success', true, 'error', null, 'categoryRule', app_private.category_rule_json(r));
end $$;
grant execute on function app_public.update_category_rule(organization_id uuid, category_rule_id uuid, vendor_pattern text, category_id uuid) to accounting_visitor;
--! EndIncluded rules/category-rules.sql
--! Included intake/intake-addresses.sql
-- Intake addresses: the email addresses and phone numbers receipts arrive at, unique across
-- organizations while active.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.intake_addresses
drop policy if exists intake_addresses_tenant on app_public.intake_addresses;
create policy intake_addresses_tenant on app_public.intake_addresses
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select on app_public.intake_addresses to accounting_visitor;
grant insert (address, address_type, label, organization_id) on app_public.intake_addresses to accounting_visitor;
grant update (active, deleted_at, label) on app_public.intake_addresses to accounting_visitor;

------------------------------------------------------------------------------------------------

create or replace function app_private.intake_address_json(i app_public.intake_addresses) returns jsonb
  language sql stable as
$$ select jsonb_build_object('id', i.id, 'addressType', i.address_type, 'address', i.address, 'label', i.label,
     'active', i.active, 'created', app_private.iso(i.created)) $$;
grant execute on function app_private.intake_address_json(i app_public.intake_addresses) to accounting_visitor;

create or replace function app_public.create_intake_address(organization_id uuid, address_type text, address text, label text default null)
  returns jsonb
  language plpgsql volatile as
$$
declare
  typ text := lower(btrim(address_type));
  addr text := app_private.clean_text(address);
  lbl text := coalesce(app_private.clean_text(label), '');
  r app_public.intake_addresses;
begin
  perform app_private.assert_org_access(organization_id, false);
  if typ is null or typ not in ('email', 'sms') then perform app_private.fail('Address type must be email or sms.'); end if;
  if addr is null or addr = '' then perform app_private.fail('Address is required.'); end if;
  if typ = 'email' then
    addr := normalize(lower(addr), NFC);
    if addr !~ '^[^@\s]+@[^@\s]+\.[^@\s]+$' or length(addr) > 254 or addr <> lower(addr) then
      perform app_private.fail('Email must look like an email address.');
    end if;
  elsif addr !~ '^[0-9]+$' then
    perform app_private.fail('An SMS address must contain digits only.');
  elsif length(addr) not between 7 and 15 then
    perform app_private.fail('An SMS address must have 7 to 15 digits.');
  end if;
  if length(lbl) > 200 then perform app_private.fail('Label must be at most 200 characters.'); end if;
  begin
    insert into app_public.intake_addresses (organization_id, address_type, address, label)
      values (create_intake_address.organization_id, typ, addr, lbl)
      returning * into r;
  exception when unique_violation then
    -- The same words whoever holds it (this organization or another): nothing about the owner.
    perform app_private.fail('This address is already registered.');
  end;
  return jsonb_build_object('success', true, 'error', null, 'intakeAddress', app_private.intake_address_json(r));
end $$;
grant execute on function app_public.create_intake_address(organization_id uuid, address_type text, address text, label text) to accounting_visitor;

create or replace function app_public.delete_intake_address(organization_id uuid, intake_address_id uuid) returns jsonb
  language plpgsql volatile as
$$
begin
  perform app_private.assert_org_access(organization_id, false);
  update app_public.intake_addresses x set active = false, deleted_at = now()
   where x.organization_id = delete_intake_address.organization_id and x.id = intake_address_id and x.active;
  if not found then perform app_private.fail('Intake address not found.', 'AP404'); end if;
  return jsonb_build_object('success', true, 'error', null);
end $$;
grant execute on function app_public.delete_intake_address(organization_id uuid, intake_address_id uuid) to accounting_visitor;

-- Active addresses only (a deleted one is deactivated and no longer listed), oldest first.
create or replace function app_public.list_intake_addresses(organization_id uuid) returns jsonb
  language plpgsql stable as
$$
begin
  perform app_private.assert_org_access(organization_id, false);
  return coalesce((select jsonb_agg(app_private.intake_address_json(i) order by i.created, i.id)
    from app_public.intake_addresses i where i.organization_id = list_intake_addresses.organization_id and i.active), '[]'::jsonb);
end $$;
grant execute on function app_public.list_intake_addresses(organization_id uuid) to accounting_visitor;
--! EndIncluded intake/intake-addresses.sql
--! Included ledger/events.sql
-- Ledger events: creation, edits, the staged entry, lists and lookups, and the daily counts the
-- dashboard reads (contract: LedgerEvent; decisions §4-§6).
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.ledger_event_daily_counts
drop policy if exists ledger_event_daily_counts_tenant on app_public.ledger_event_daily_counts;
create policy ledger_event_daily_counts_tenant on app_public.ledger_event_daily_counts
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select on app_public.ledger_event_daily_counts to accounting_visitor;

-- app_public.ledger_events
drop policy if exists ledger_events_tenant on app_public.ledger_events;
create policy ledger_events_tenant on app_public.ledger_events
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant insert, select on app_public.ledger_events to accounting_visitor;
grant select on app_public.ledger_events to reporting_reader;
grant update (category_id, direction, event_type, functional_amount, has_document, journal_entry_id, memo, merchant_name, payment_account_id, reference, status, tax_account_id, tax_amount, tax_code, transaction_date, updated) on app_public.ledger_events to accounting_visitor;

drop trigger if exists _100_touch_updated on app_public.ledger_events;
create trigger _100_touch_updated before update on app_public.ledger_events
  for each row execute function app_private.tg__touch_updated();

drop trigger if exists _500_counts_delete on app_public.ledger_events;
create trigger _500_counts_delete after delete on app_public.ledger_events
  referencing old table as old_rows for each statement execute function app_private.tg_ledger_events__counts();

drop trigger if exists _500_counts_insert on app_public.ledger_events;
create trigger _500_counts_insert after insert on app_public.ledger_events
  referencing new table as new_rows for each statement execute function app_private.tg_ledger_events__counts();

drop trigger if exists _500_counts_update on app_public.ledger_events;
create trigger _500_counts_update after update on app_public.ledger_events
  referencing old table as old_rows new table as new_rows for each statement execute function app_private.tg_ledger_events__counts();

drop trigger if exists _800_audit on app_public.ledger_events;
create trigger _800_audit after insert or update on app_public.ledger_events
  for each row execute function app_private.tg_ledger_events__audit();

drop trigger if exists _800_audit_delete on app_public.ledger_events;
create trigger _800_audit_delete after delete on app_public.ledger_events
  for each row execute function app_private.tg_ledger_events__audit_delete();

------------------------------------------------------------------------------------------------

-- The classifications a category account may have for an event type.
create or replace function app_private.category_fits(event_type text, classification text) returns boolean
  language sql immutable parallel safe as
$$ select case event_type
    when 'expense' then classification in ('expense', 'asset')
    when 'income' then classification = 'revenue'
    when 'refund' then classification in ('revenue', 'expense')
    when 'transfer' then classification in ('asset', 'liability', 'equity')
    else false end $$;
grant execute on function app_private.category_fits(event_type text, classification text) to accounting_visitor;

create or replace function app_private.check_category(account uuid, event_type text) returns void
  language plpgsql stable as
$$
declare a app_public.accounts;
begin
  select * into a from app_public.accounts where id = account;
  if not found then perform app_private.fail('Category account not found.'); end if;
  if not a.active then perform app_private.fail('Category account is inactive.'); end if;
  if not app_private.category_fits(event_type, a.classification) then
    perform app_private.fail(case event_type
      when 'expense' then 'Category must be an expense or asset account for an expense event.'
      when 'income' then 'Category must be a revenue account for an income event.'
      when 'refund' then 'Category must be a revenue or expense account for a refund event.'
      else 'Category must be an asset, liability or equity account for a transfer event.' end);
  end if;
end $$;
grant execute on function app_private.check_category(account uuid, event_type text) to accounting_visitor;

create or replace function app_private.check_payment_account(account uuid) returns void
  language plpgsql stable as
$$
declare a app_public.accounts;
begin
  select * into a from app_public.accounts where id = account;
  if not found then perform app_private.fail('Payment account not found.'); end if;
  if not a.active then perform app_private.fail('Payment account is inactive.'); end if;
  if a.account_type not in ('bank', 'credit_card', 'clearing') then
    perform app_private.fail('Payment account must be a bank, credit card or clearing account.');
  end if;
end $$;
grant execute on function app_private.check_payment_account(account uuid) to accounting_visitor;

create or replace function app_private.check_tax_account(account uuid) returns void
  language plpgsql stable as
$$
declare a app_public.accounts;
begin
  select * into a from app_public.accounts where id = account;
  if not found then perform app_private.fail('Tax account not found.'); end if;
  if not a.active then perform app_private.fail('Tax account is inactive.'); end if;
  if a.classification not in ('liability', 'asset') then
    perform app_private.fail('Tax account must be a liability or asset account.');
  end if;
end $$;
grant execute on function app_private.check_tax_account(account uuid) to accounting_visitor;

-- Which way money moves relative to the payment account (decisions §6).
create or replace function app_private.direction_for(event_type text) returns text
  language sql immutable parallel safe as
$$ select case event_type when 'income' then 'in' else 'out' end $$;
grant execute on function app_private.direction_for(event_type text) to accounting_visitor;

-- Receipts of an event: none until the receipts issue replaces this function.
create or replace function app_private.event_receipts(event_id uuid) returns jsonb
  language sql stable as
$$ select '[]'::jsonb $$;
grant execute on function app_private.event_receipts(event_id uuid) to accounting_visitor;

create or replace function app_private.ledger_event_json(e app_public.ledger_events, c app_public.accounts,
    p app_public.accounts, t app_public.accounts, j app_public.journal_entries) returns jsonb
  language sql stable as
$$
  select jsonb_build_object(
    'id', e.id, 'eventType', e.event_type, 'direction', e.direction, 'merchantName', e.merchant_name,
    'functionalAmount', app_private.money(e.functional_amount), 'functionalCurrency', e.functional_currency,
    'transactionDate', to_char(e.transaction_date, 'YYYY-MM-DD'), 'status', e.status, 'memo', e.memo,
    'hasDocument', e.has_document,
    'account', case when c.id is null then null else jsonb_build_object('id', c.id, 'name', c.name, 'accountType', c.account_type) end,
    'category', case when c.id is null then null else jsonb_build_object('id', c.id, 'name', c.name) end,
    'paymentAccount', case when p.id is null then null else jsonb_build_object('id', p.id, 'name', p.name) end,
    'taxAmount', app_private.money(e.tax_amount), 'taxCode', e.tax_code,
    'taxAccount', case when t.id is null then null else jsonb_build_object('id', t.id, 'name', t.name) end,
    'journalEntry', case when j.id is null then null else jsonb_build_object('id', j.id,
        'txnDate', to_char(j.txn_date, 'YYYY-MM-DD'), 'totalAmount', app_private.money(j.total_amount),
        'voidedAt', app_private.iso(j.voided_at)) end,
    'receipts', app_private.event_receipts(e.id),
    'created', app_private.iso(e.created), 'updated', app_private.iso(e.updated))
$$;
grant execute on function app_private.ledger_event_json(e app_public.ledger_events, c app_public.accounts, p app_public.accounts, t app_public.accounts, j app_public.journal_entries) to accounting_visitor;

-- One event, or null when it is not visible.
create or replace function app_private.ledger_event_json_by_id(event_id uuid) returns jsonb
  language sql stable as
$$
  select app_private.ledger_event_json(e, c, p, t, j)
    from app_public.ledger_events e
    left join app_public.accounts c on c.id = e.category_id
    left join app_public.accounts p on p.id = e.payment_account_id
    left join app_public.accounts t on t.id = e.tax_account_id
    left join app_public.journal_entries j on j.id = e.journal_entry_id
   where e.id = ledger_event_json_by_id.event_id
$$;
grant execute on function app_private.ledger_event_json_by_id(event_id uuid) to accounting_visitor;

create or replace function app_private.tg_ledger_events__counts() returns trigger
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
begin
  if tg_op = 'INSERT' then
    insert into app_public.ledger_event_daily_counts as t (organization_id, day, status, n)
      select organization_id, transaction_date, status, count(*) from new_rows group by 1, 2, 3 order by 1, 2, 3
      on conflict (organization_id, day, status) do update set n = t.n + excluded.n;
  elsif tg_op = 'UPDATE' then
    insert into app_public.ledger_event_daily_counts as t (organization_id, day, status, n)
      select organization_id, d, s, sum(k) from (
        select organization_id, transaction_date d, status s, 1 k from new_rows
        union all
        select organization_id, transaction_date, status, -1 from old_rows) x
      group by 1, 2, 3 having sum(k) <> 0 order by 1, 2, 3
      on conflict (organization_id, day, status) do update set n = t.n + excluded.n;
  else
    insert into app_public.ledger_event_daily_counts as t (organization_id, day, status, n)
      select organization_id, transaction_date, status, -count(*) from old_rows r
       -- Rows of an organization being deleted go with it.
       where exists (select 1 from app_public.organizations o where o.id = r.organization_id)
       group by 1, 2, 3 order by 1, 2, 3
      on conflict (organization_id, day, status) do update set n = t.n + excluded.n;
  end if;
  return null;
end $$;
grant execute on function app_private.tg_ledger_events__counts() to accounting_visitor;

create or replace function app_public.create_ledger_event(organization_id uuid, merchant_name text, amount text,
    transaction_date text, event_type text default 'expense', category_id uuid default null,
    payment_account_id uuid default null) returns jsonb
  language plpgsql volatile as
$$
declare
  v_merchant text := app_private.clean_text(merchant_name);
  v_amount numeric;
  v_date date;
  v_type text := coalesce(event_type, 'expense');
  v_category uuid := category_id;
  v_rule uuid;
  v_id uuid;
begin
  perform app_private.assert_org_access(organization_id, false);
  perform set_config('app.audit_action', 'create', true);
  if v_merchant is null or length(v_merchant) = 0 then perform app_private.fail('Merchant name is required.'); end if;
  if length(v_merchant) > 500 then perform app_private.fail('Merchant name must be at most 500 characters.'); end if;
  v_amount := app_private.parse_amount(amount, 'Amount must be a positive decimal string.');
  v_date := app_private.parse_date(transaction_date, 'Transaction date must be a date in YYYY-MM-DD format.');
  if v_type not in ('expense', 'income', 'transfer') then
    perform app_private.fail('Event type must be one of: expense, income, transfer.');
  end if;
  if v_category is not null then perform app_private.check_category(v_category, v_type); end if;
  if payment_account_id is not null then
    perform app_private.check_payment_account(payment_account_id);
    if payment_account_id = v_category then perform app_private.fail('Category and payment account must differ.'); end if;
  end if;
  if v_category is null then
    -- Behavior rule 10: the best matching category rule, when its account is usable for this event.
    select r.id, r.account_id into v_rule, v_category
      from app_public.category_rules r
      join app_public.accounts a on a.id = r.account_id
     where r.id = app_private.best_category_rule(create_ledger_event.organization_id, v_merchant)
       and a.active and app_private.category_fits(v_type, a.classification)
       and a.id is distinct from payment_account_id;
    if v_rule is not null then
      update app_public.category_rules set match_count = match_count + 1 where id = v_rule;
    end if;
  end if;
  insert into app_public.ledger_events (organization_id, event_type, direction, merchant_name, functional_amount,
      functional_currency, transaction_date, category_id, payment_account_id)
    select create_ledger_event.organization_id, v_type, app_private.direction_for(v_type), v_merchant, v_amount,
      o.functional_currency, v_date, v_category, payment_account_id
      from app_public.organizations o where o.id = create_ledger_event.organization_id
    returning id into v_id;
  return jsonb_build_object('success', true, 'error', null, 'eventId', v_id);
end $$;
grant execute on function app_public.create_ledger_event(organization_id uuid, merchant_name text, amount text, transaction_date text, event_type text, category_id uuid, payment_account_id uuid) to accounting_visitor;

create or replace function app_public.get_ledger_event(organization_id uuid, event_id uuid) returns jsonb
  language plpgsql stable as
$$
declare r jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  r := app_private.ledger_event_json_by_id(event_id);
  if r is null then perform app_private.fail('Ledger event not found.', 'AP404'); end if;
  return r;
end $$;
grant execute on function app_public.get_ledger_event(organization_id uuid, event_id uuid) to accounting_visitor;

create or replace function app_public.list_ledger_events(organization_id uuid, status jsonb default null,
    has_document boolean default null, since_days integer default null, date_from text default null,
    date_to text default null, amount_min text default null, amount_max text default null,
    account_ids jsonb default null, category_ids jsonb default null, payment_account_ids jsonb default null,
    search text default null, "limit" integer default null, "offset" integer default null,
    sort_by text default null, sort_dir text default null) returns jsonb
  language plpgsql stable as
$$
declare
  statuses constant text[] := array['needs_review', 'confirmed', 'synced', 'reconciled', 'pending', 'ignored'];
  max_since_days constant integer := 36500;
  v_limit integer := app_private.page_size("limit");
  v_offset integer := app_private.page_offset("offset");
  v_dir text := app_private.sort_dir(sort_dir, 'desc');
  v_status text[];
  v_from date;
  v_to date;
  v_min numeric;
  v_max numeric;
  v_accounts uuid[];
  v_categories uuid[];
  v_payments uuid[];
  v_pattern text;
  v_order text;
  v_where text := '';
  v_total bigint;
  v_items jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  perform app_private.check_sort_by(sort_by, array['transactionDate', 'functionalAmount', 'merchantName', 'status', 'created']);
  v_order := case coalesce(sort_by, 'transactionDate')
    when 'transactionDate' then 'e.transaction_date' when 'functionalAmount' then 'e.functional_amount'
    when 'merchantName' then 'lower(e.merchant_name)' when 'status' then 'e.status' else 'e.created' end;
  if status is not null then
    if jsonb_typeof(status) <> 'array' then
      perform app_private.fail(format('status must be any of: %s.', array_to_string(statuses, ', ')));
    end if;
    -- An empty list matches nothing, in the page and in the total alike.
    select coalesce(array_agg(s), '{}') into v_status from jsonb_array_elements_text(status) s;
    if not (coalesce(v_status, '{}') <@ statuses) then
      perform app_private.fail(format('status must be any of: %s.', array_to_string(statuses, ', ')));
    end if;
    v_where := v_where || ' and e.status = any ($2)';
  end if;
  if since_days is not null then
    if since_days < 0 then perform app_private.fail('sinceDays must not be negative.'); end if;
    if since_days > max_since_days then
      perform app_private.fail(format('sinceDays must be between 0 and %s.', max_since_days));
    end if;
    v_from := current_date - since_days;
  end if;
  if date_from is not null then
    v_from := greatest(v_from, app_private.parse_date(date_from, 'dateFrom must be a date in YYYY-MM-DD format.'));
  end if;
  if date_to is not null then v_to := app_private.parse_date(date_to, 'dateTo must be a date in YYYY-MM-DD format.'); end if;
  if v_from is not null then v_where := v_where || ' and e.transaction_date >= $3'; end if;
  if v_to is not null then v_where := v_where || ' and e.transaction_date <= $4'; end if;
  if has_document is not null then v_where := v_where || ' and e.has_document = $5'; end if;
  if amount_min is not null then
    v_min := app_private.parse_amount(amount_min, 'amountMin must be a decimal string.', true);
    v_where := v_where || ' and e.functional_amount >= $6';
  end if;
  if amount_max is not null then
    v_max := app_private.parse_amount(amount_max, 'amountMax must be a decimal string.', true);
    v_where := v_where || ' and e.functional_amount <= $7';
  end if;
  if account_ids is not null then
    v_accounts := app_private.uuid_list(account_ids, 'accountIds');
    v_where := v_where || ' and e.category_id = any ($8)';
  end if;
  if category_ids is not null then
    v_categories := app_private.uuid_list(category_ids, 'categoryIds');
    v_where := v_where || ' and e.category_id = any ($9)';
  end if;
  if payment_account_ids is not null then
    v_payments := app_private.uuid_list(payment_account_ids, 'paymentAccountIds');
    v_where := v_where || ' and e.payment_account_id = any ($10)';
  end if;
  if search is not null and search <> '' then
    v_pattern := app_private.like_pattern(search);
    v_where := v_where || ' and (e.merchant_name ilike $11 or e.memo ilike $11)';
  end if;

  -- The total: from the per-day status counts when only status and dates filter, else counted.
  if has_document is null and v_min is null and v_max is null and v_accounts is null and v_categories is null
     and v_payments is null and v_pattern is null then
    select coalesce(sum(c.n), 0) into v_total from app_public.ledger_event_daily_counts c
     where c.organization_id = list_ledger_events.organization_id
       and (v_status is null or c.status = any (v_status))
       and (v_from is null or c.day >= v_from) and (v_to is null or c.day <= v_to);
  else
    execute 'select count(*) from app_public.ledger_events e where e.organization_id = $1' || v_where
      into v_total
      using organization_id, v_status, v_from, v_to, has_document, v_min, v_max, v_accounts, v_categories, v_payments, v_pattern;
  end if;

  -- The page, in one statement: ids in total order, then each event with its accounts and entry.
  execute format($q$
    with page as (
      select e.id, row_number() over () as ord from (
        select e.id from app_public.ledger_events e
         where e.organization_id = $1 %1$s
         order by %2$s %3$s, e.id %3$s
         limit $12 offset $13) e)
    select coalesce(jsonb_agg(app_private.ledger_event_json(e, c, p, t, j) order by page.ord), '[]'::jsonb)
      from page
      join app_public.ledger_events e on e.id = page.id
      left join app_public.accounts c on c.id = e.category_id
      left join app_public.accounts p on p.id = e.payment_account_id
      left join app_public.accounts t on t.id = e.tax_account_id
      left join app_public.journal_entries j on j.id = e.journal_entry_id
  $q$, v_where, v_order, v_dir)
    into v_items
    using organization_id, v_status, v_from, v_to, has_document, v_min, v_max, v_accounts, v_categories, v_payments,
          v_pattern, v_limit, v_offset;
  return jsonb_build_object('items', v_items, 'totalCount', v_total, 'pageSize', v_limit, 'offset', v_offset);
end $$;
grant execute on function app_public.list_ledger_events(organization_id uuid, status jsonb, has_document boolean, since_days integer, date_from text, date_to text, amount_min text, amount_max text, account_ids jsonb, category_ids jsonb, payment_account_ids jsonb, search text, "limit" integer, "offset" integer, sort_by text, sort_dir text) to accounting_visitor;

create or replace function app_public.update_ledger_event(organization_id uuid, event_id uuid, transaction_date text default null,
    memo text default null, amount text default null, event_type text default null) returns jsonb
  language plpgsql volatile as
$$
declare
  e app_public.ledger_events;
  v_type text;
  v_category uuid;
  v_amount numeric;
  v_tax numeric;
  v_classification text;
  v_memo text := normalize(memo, NFC);
begin
  perform app_private.assert_org_access(organization_id, false);
  perform set_config('app.audit_action', 'update', true);
  select * into e from app_public.ledger_events x where x.id = event_id for update;
  if not found then perform app_private.fail('Ledger event not found.', 'AP404'); end if;
  if e.status not in ('needs_review', 'pending') then
    perform app_private.fail('Only events in needs_review or pending can be updated.');
  end if;
  v_type := coalesce(event_type, e.event_type);
  if event_type is not null and event_type not in ('expense', 'income', 'transfer') then
    perform app_private.fail('Event type must be one of: expense, income, transfer.');
  end if;
  v_amount := case when amount is null then e.functional_amount
                   else app_private.parse_amount(amount, 'Amount must be a positive decimal string.') end;
  if v_memo is not null and length(v_memo) > 5000 then perform app_private.fail('Memo must be at most 5000 characters.'); end if;
  -- A category that no longer fits the new type is cleared (the event needs classifying again).
  v_category := e.category_id;
  if v_category is not null and v_type <> e.event_type then
    select a.classification into v_classification from app_public.accounts a where a.id = v_category;
    if not app_private.category_fits(v_type, v_classification) then v_category := null; end if;
  end if;
  -- A tax portion computed from a sales tax code follows the amount.
  v_tax := e.tax_amount;
  if e.tax_code is not null and v_amount <> e.functional_amount then
    select round(v_amount * s.rate / (100 + s.rate), 2) into v_tax from app_public.sales_tax_codes s where s.code = e.tax_code;
  end if;
  if v_tax is not null and v_tax >= v_amount then
    perform app_private.fail('Tax amount must be less than the amount.');
  end if;
  update app_public.ledger_events x set
      transaction_date = case when update_ledger_event.transaction_date is null then x.transaction_date
        else app_private.parse_date(update_ledger_event.transaction_date, 'Transaction date must be a date in YYYY-MM-DD format.') end,
      memo = coalesce(v_memo, x.memo),
      functional_amount = v_amount,
      event_type = v_type,
      -- Only a change of type recomputes the direction: an imported event's comes from the sign.
      direction = case when update_ledger_event.event_type is null then x.direction else app_private.direction_for(v_type) end,
      category_id = v_category,
      tax_amount = v_tax
    where x.id = e.id;
  return jsonb_build_object('success', true, 'error', null, 'event', app_private.ledger_event_json_by_id(e.id));
end $$;
grant execute on function app_public.update_ledger_event(organization_id uuid, event_id uuid, transaction_date text, memo text, amount text, event_type text) to accounting_visitor;

-- Classify: category, payment account and tax (decisions §6, §7). Absent arguments keep their value.
create or replace function app_public.update_staged_entry(organization_id uuid, event_id uuid, category_id uuid default null,
    payment_id uuid default null, tax_amount text default null, tax_account_id uuid default null,
    tax_code text default null) returns jsonb
  language plpgsql volatile as
$$
declare
  e app_public.ledger_events;
  v_category uuid;
  v_payment uuid;
  v_tax numeric;
  v_tax_account uuid;
  v_tax_code text;
  v_rate numeric;
begin
  perform app_private.assert_org_access(organization_id, false);
  perform set_config('app.audit_action', 'classify', true);
  select * into e from app_public.ledger_events x where x.id = event_id for update;
  if not found then perform app_private.fail('Ledger event not found.', 'AP404'); end if;
  if e.status in ('confirmed', 'synced', 'reconciled') then perform app_private.fail('Event is already confirmed.'); end if;
  if e.status not in ('needs_review', 'pending') then
    perform app_private.fail('Only events in needs_review or pending can be updated.');
  end if;
  v_category := coalesce(category_id, e.category_id);
  v_payment := coalesce(payment_id, e.payment_account_id);
  if category_id is not null then perform app_private.check_category(category_id, e.event_type); end if;
  if payment_id is not null then perform app_private.check_payment_account(payment_id); end if;
  if v_category = v_payment then perform app_private.fail('Category and payment account must differ.'); end if;

  v_tax_code := coalesce(tax_code, e.tax_code);
  v_tax := e.tax_amount;
  if tax_code is not null then
    select s.rate into v_rate from app_public.sales_tax_codes s where s.code = update_staged_entry.tax_code;
    if v_rate is null then perform app_private.fail('Unknown tax code.'); end if;
    v_tax := round(e.functional_amount * v_rate / (100 + v_rate), 2);
  end if;
  if tax_amount is not null then
    v_tax := app_private.parse_amount(tax_amount, 'Tax amount must be a decimal string of at least 0.', true);
    if tax_code is null then v_tax_code := null; end if; -- an explicit amount replaces a computed one
  end if;
  if v_tax is not null and v_tax >= e.functional_amount then
    perform app_private.fail('Tax amount must be less than the amount.');
  end if;
  v_tax_account := coalesce(tax_account_id, e.tax_account_id);
  if tax_account_id is not null then perform app_private.check_tax_account(tax_account_id); end if;
  if coalesce(v_tax, 0) > 0 and v_tax_account is null then
    -- The organization's sales tax account (the starter chart's GST/HST Payable).
    select a.id into v_tax_account from app_public.accounts a
     where a.account_type = 'tax_payable' and a.active order by a.created, a.id limit 1;
    if v_tax_account is null then perform app_private.fail('A tax account is required for a tax amount.'); end if;
  end if;
  if v_tax_account is not null and v_tax_account in (v_category, v_payment) then
    perform app_private.fail('The tax account must differ from the category and payment accounts.');
  end if;

  update app_public.ledger_events x set category_id = v_category, payment_account_id = v_payment,
      tax_amount = v_tax, tax_account_id = v_tax_account, tax_code = v_tax_code
    where x.id = e.id;
  return jsonb_build_object('success', true, 'error', null, 'event', app_private.ledger_event_json_by_id(e.id));
end $$;
grant execute on function app_public.update_staged_entry(organization_id uuid, event_id uuid, category_id uuid, payment_id uuid, tax_amount text, tax_account_id uuid, tax_code text) to accounting_visitor;
--! EndIncluded ledger/events.sql
--! Included ledger/journal.sql
-- The double-entry journal: one live entry per event, balanced at commit, lines immutable once
-- posted (only voided), per-account daily totals kept by the posting transaction.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.account_daily_totals
drop policy if exists account_daily_totals_tenant on app_public.account_daily_totals;
create policy account_daily_totals_tenant on app_public.account_daily_totals
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select on app_public.account_daily_totals to accounting_visitor;
grant select on app_public.account_daily_totals to reporting_reader;

-- app_public.journal_entries
drop policy if exists journal_entries_tenant on app_public.journal_entries;
create policy journal_entries_tenant on app_public.journal_entries
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant insert, select on app_public.journal_entries to accounting_visitor;
grant select on app_public.journal_entries to reporting_reader;
grant update (voided_at) on app_public.journal_entries to accounting_visitor;

-- Checked once per new entry (with all its lines) and once per changed or removed line. Lines
-- can only be added to an entry posted in the same transaction (below), whose check covers them.
drop trigger if exists _900_balanced on app_public.journal_entries;
create constraint trigger _900_balanced after insert on app_public.journal_entries
  deferrable initially deferred for each row execute function app_private.tg_journal__balanced();

-- app_public.journal_lines
drop policy if exists journal_lines_tenant on app_public.journal_lines;
create policy journal_lines_tenant on app_public.journal_lines
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant insert, select on app_public.journal_lines to accounting_visitor;
grant select on app_public.journal_lines to reporting_reader;
grant update (voided) on app_public.journal_lines to accounting_visitor;

drop trigger if exists _100_immutable on app_public.journal_lines;
create trigger _100_immutable before update on app_public.journal_lines
  for each row execute function app_private.tg_journal_lines__immutable();

drop trigger if exists _100_same_transaction on app_public.journal_lines;
create trigger _100_same_transaction before insert on app_public.journal_lines
  for each row execute function app_private.tg_journal_lines__same_transaction();

drop trigger if exists _500_totals_delete on app_public.journal_lines;
create trigger _500_totals_delete after delete on app_public.journal_lines
  referencing old table as old_rows for each statement execute function app_private.tg_journal_lines__totals();

drop trigger if exists _500_totals_insert on app_public.journal_lines;
create trigger _500_totals_insert after insert on app_public.journal_lines
  referencing new table as new_rows for each statement execute function app_private.tg_journal_lines__totals();

drop trigger if exists _500_totals_update on app_public.journal_lines;
create trigger _500_totals_update after update on app_public.journal_lines
  referencing old table as old_rows new table as new_rows for each statement execute function app_private.tg_journal_lines__totals();

drop trigger if exists _900_balanced on app_public.journal_lines;
create constraint trigger _900_balanced after update or delete on app_public.journal_lines
  deferrable initially deferred for each row execute function app_private.tg_journal__balanced();

------------------------------------------------------------------------------------------------

-- Posts the journal entry of a locked, classified event (decisions §6). Returns the entry id.
create or replace function app_private.post_journal_entry(event_id uuid) returns uuid
  language plpgsql volatile as
$$
declare
  e app_public.ledger_events;
  v_entry uuid;
  v_tax numeric;
begin
  select * into e from app_public.ledger_events x where x.id = event_id;
  v_tax := coalesce(e.tax_amount, 0);
  insert into app_public.journal_entries (organization_id, event_id, txn_date, total_amount)
    values (e.organization_id, e.id, e.transaction_date, e.functional_amount) returning id into v_entry;
  -- out: debit category (+ tax), credit payment; in: debit payment, credit category (+ tax).
  insert into app_public.journal_lines (organization_id, entry_id, account_id, txn_date, debit, credit)
    select e.organization_id, v_entry, l.account_id, e.transaction_date,
           case when l.debit_side then l.amount else 0 end, case when l.debit_side then 0 else l.amount end
      from (values
        (e.category_id, e.functional_amount - v_tax, e.direction = 'out'),
        (e.tax_account_id, v_tax, e.direction = 'out'),
        (e.payment_account_id, e.functional_amount, e.direction = 'in')) l (account_id, amount, debit_side)
     where l.amount > 0
     order by l.account_id;
  return v_entry;
end $$;
grant execute on function app_private.post_journal_entry(event_id uuid) to accounting_visitor;

-- At commit: every entry that still exists has lines, and its debits equal its credits.
create or replace function app_private.tg_journal__balanced() returns trigger
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
declare
  entry uuid;
  d numeric; c numeric; n integer;
begin
  if tg_table_name = 'journal_entries' then entry := new.id;
  elsif tg_op = 'DELETE' then entry := old.entry_id;
  else entry := new.entry_id;
  end if;
  if not exists (select 1 from app_public.journal_entries where id = entry) then return null; end if;
  select coalesce(sum(debit), 0), coalesce(sum(credit), 0), count(*) into d, c, n
    from app_public.journal_lines where entry_id = entry;
  if n < 2 or d <> c then
    raise exception 'Journal entry % does not balance (debits %, credits %, % lines).', entry, d, c, n
      using errcode = 'check_violation';
  end if;
  return null;
end $$;
grant execute on function app_private.tg_journal__balanced() to accounting_visitor;

-- Lines are immutable; the only change is voiding (once).
create or replace function app_private.tg_journal_lines__immutable() returns trigger
  language plpgsql as
$$
begin
  if (new.organization_id, new.entry_id, new.account_id, new.txn_date, new.debit, new.credit)
     is distinct from (old.organization_id, old.entry_id, old.account_id, old.txn_date, old.debit, old.credit)
     or (old.voided and not new.voided) then
    perform app_private.fail('Journal lines cannot be changed; void the entry instead.');
  end if;
  return new;
end $$;
grant execute on function app_private.tg_journal_lines__immutable() to accounting_visitor;

-- Security invoker: an entry the caller cannot see (another organization's) is left to RLS, which
-- refuses the line with a permission error; a missing entry is left to the foreign key.
create or replace function app_private.tg_journal_lines__same_transaction() returns trigger
  language plpgsql as
$$
begin
  -- created defaults to now(), the transaction's start: equal only within the posting transaction.
  if exists (select 1 from app_public.journal_entries j where j.id = new.entry_id and j.created <> now()) then
    raise exception 'Lines can only be added to a journal entry in the transaction that posts it.'
      using errcode = 'check_violation';
  end if;
  return new;
end $$;
grant execute on function app_private.tg_journal_lines__same_transaction() to accounting_visitor;

create or replace function app_private.tg_journal_lines__totals() returns trigger
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
begin
  if tg_op = 'INSERT' then
    insert into app_public.account_daily_totals as t (organization_id, account_id, day, debit, credit)
      select organization_id, account_id, txn_date, sum(debit), sum(credit)
        from new_rows where not voided group by 1, 2, 3 order by 1, 2, 3
      on conflict (organization_id, account_id, day) do update
        set debit = t.debit + excluded.debit, credit = t.credit + excluded.credit;
  elsif tg_op = 'UPDATE' then
    insert into app_public.account_daily_totals as t (organization_id, account_id, day, debit, credit)
      select organization_id, account_id, txn_date, sum(debit), sum(credit) from (
        select organization_id, account_id, txn_date, debit, credit from new_rows where not voided
        union all
        select organization_id, account_id, txn_date, -debit, -credit from old_rows where not voided) x
      group by 1, 2, 3 having sum(debit) <> 0 or sum(credit) <> 0 order by 1, 2, 3
      on conflict (organization_id, account_id, day) do update
        set debit = t.debit + excluded.debit, credit = t.credit + excluded.credit;
  else
    insert into app_public.account_daily_totals as t (organization_id, account_id, day, debit, credit)
      select organization_id, account_id, txn_date, -sum(debit), -sum(credit)
        from old_rows r where not voided
         -- Rows of an organization being deleted go with it.
         and exists (select 1 from app_public.organizations o where o.id = r.organization_id)
       group by 1, 2, 3 order by 1, 2, 3
      on conflict (organization_id, account_id, day) do update
        set debit = t.debit + excluded.debit, credit = t.credit + excluded.credit;
  end if;
  return null;
end $$;
grant execute on function app_private.tg_journal_lines__totals() to accounting_visitor;
--! EndIncluded ledger/journal.sql
--! Included ledger/transitions.sql
-- The transitions of an event that post or void its journal entry (contract: States and
-- transitions).
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

create or replace function app_public.confirm_ledger_event(organization_id uuid, event_id uuid) returns jsonb
  language plpgsql volatile as
$$
declare
  e app_public.ledger_events;
  v_entry uuid;
begin
  perform app_private.assert_org_access(organization_id, false);
  perform set_config('app.audit_action', 'confirm', true);
  -- The row lock serializes concurrent confirms: the first posts, the others see it confirmed.
  select * into e from app_public.ledger_events x where x.id = event_id for update;
  if not found then perform app_private.fail('Ledger event not found.', 'AP404'); end if;
  if e.status in ('confirmed', 'synced', 'reconciled') then perform app_private.fail('Event is already confirmed.'); end if;
  if e.status not in ('needs_review', 'pending') then
    perform app_private.fail('Only events in needs_review or pending can be confirmed.');
  end if;
  if e.category_id is null or e.payment_account_id is null then
    perform app_private.fail('Category and payment account are required to confirm.');
  end if;
  -- The accounts may have changed since classification.
  perform app_private.check_category(e.category_id, e.event_type);
  perform app_private.check_payment_account(e.payment_account_id);
  if coalesce(e.tax_amount, 0) > 0 then perform app_private.check_tax_account(e.tax_account_id); end if;
  if coalesce(e.tax_amount, 0) >= e.functional_amount then perform app_private.fail('Tax amount must be less than the amount.'); end if;
  v_entry := app_private.post_journal_entry(e.id);
  update app_public.ledger_events x set status = 'confirmed', journal_entry_id = v_entry where x.id = e.id;
  return jsonb_build_object('success', true, 'error', null, 'eventId', e.id, 'journalEntryId', v_entry);
end $$;
grant execute on function app_public.confirm_ledger_event(organization_id uuid, event_id uuid) to accounting_visitor;

create or replace function app_public.reject_ledger_event(organization_id uuid, event_id uuid) returns jsonb
  language plpgsql volatile as
$$
declare e app_public.ledger_events;
begin
  perform app_private.assert_org_access(organization_id, false);
  perform set_config('app.audit_action', 'reject', true);
  select * into e from app_public.ledger_events x where x.id = event_id for update;
  if not found then perform app_private.fail('Ledger event not found.', 'AP404'); end if;
  if e.status = 'ignored' then perform app_private.fail('Event is already rejected.'); end if;
  -- A posted entry is voided: kept for audit, out of every report.
  if e.journal_entry_id is not null then
    update app_public.journal_lines l set voided = true where l.entry_id = e.journal_entry_id and not l.voided;
    update app_public.journal_entries j set voided_at = now() where j.id = e.journal_entry_id and j.voided_at is null;
  end if;
  update app_public.ledger_events x set status = 'ignored' where x.id = e.id;
  return jsonb_build_object('success', true, 'error', null, 'eventId', e.id);
end $$;
grant execute on function app_public.reject_ledger_event(organization_id uuid, event_id uuid) to accounting_visitor;
--! EndIncluded ledger/transitions.sql
--! Included ledger/audit.sql
-- The audit trail: every change and deletion of an event, append-only, and its history.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.ledger_event_audit
drop policy if exists ledger_event_audit_append on app_public.ledger_event_audit;
create policy ledger_event_audit_append on app_public.ledger_event_audit for insert
  with check (organization_id = app_public.current_organization_id());

drop policy if exists ledger_event_audit_read on app_public.ledger_event_audit;
create policy ledger_event_audit_read on app_public.ledger_event_audit for select
  using (organization_id = app_public.current_organization_id());
grant select on app_public.ledger_event_audit to accounting_visitor;

drop trigger if exists _100_append_only on app_public.ledger_event_audit;
create trigger _100_append_only before update or delete on app_public.ledger_event_audit
  for each row execute function app_private.tg_ledger_event_audit__append_only();

drop trigger if exists _100_no_truncate on app_public.ledger_event_audit;
create trigger _100_no_truncate before truncate on app_public.ledger_event_audit
  for each statement execute function app_private.tg_ledger_event_audit__append_only();

------------------------------------------------------------------------------------------------

create or replace function app_private.tg_ledger_event_audit__append_only() returns trigger
  language plpgsql as
$$ begin raise exception 'The audit trail is append-only.' using errcode = 'AP403'; end $$;
grant execute on function app_private.tg_ledger_event_audit__append_only() to accounting_visitor;

-- Every insert and change of an event: who, when, what (old and new values of each changed field).
create or replace function app_private.tg_ledger_events__audit() returns trigger
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
declare diff jsonb;
begin
  -- Column by column (cheaper than diffing whole-row JSON on every confirm); null entries dropped.
  if tg_op = 'INSERT' then
    diff := jsonb_strip_nulls(jsonb_build_object(
    'event_type', case when new.event_type is not null then jsonb_build_object('old', null, 'new', to_jsonb(new.event_type)) end,
    'direction', case when new.direction is not null then jsonb_build_object('old', null, 'new', to_jsonb(new.direction)) end,
    'merchant_name', case when new.merchant_name is not null then jsonb_build_object('old', null, 'new', to_jsonb(new.merchant_name)) end,
    'functional_amount', case when new.functional_amount is not null then jsonb_build_object('old', null, 'new', to_jsonb(new.functional_amount)) end,
    'functional_currency', case when new.functional_currency is not null then jsonb_build_object('old', null, 'new', to_jsonb(new.functional_currency)) end,
    'transaction_date', case when new.transaction_date is not null then jsonb_build_object('old', null, 'new', to_jsonb(new.transaction_date)) end,
    'status', case when new.status is not null then jsonb_build_object('old', null, 'new', to_jsonb(new.status)) end,
    'memo', case when new.memo is not null then jsonb_build_object('old', null, 'new', to_jsonb(new.memo)) end,
    'has_document', case when new.has_document is not null then jsonb_build_object('old', null, 'new', to_jsonb(new.has_document)) end,
    'category_id', case when new.category_id is not null then jsonb_build_object('old', null, 'new', to_jsonb(new.category_id)) end,
    'payment_account_id', case when new.payment_account_id is not null then jsonb_build_object('old', null, 'new', to_jsonb(new.payment_account_id)) end,
    'tax_amount', case when new.tax_amount is not null then jsonb_build_object('old', null, 'new', to_jsonb(new.tax_amount)) end,
    'tax_account_id', case when new.tax_account_id is not null then jsonb_build_object('old', null, 'new', to_jsonb(new.tax_account_id)) end,
    'tax_code', case when new.tax_code is not null then jsonb_build_object('old', null, 'new', to_jsonb(new.tax_code)) end,
    'journal_entry_id', case when new.journal_entry_id is not null then jsonb_build_object('old', null, 'new', to_jsonb(new.journal_entry_id)) end,
    'reference', case when new.reference is not null then jsonb_build_object('old', null, 'new', to_jsonb(new.reference)) end,
    'backfill_id', case when new.backfill_id is not null then jsonb_build_object('old', null, 'new', to_jsonb(new.backfill_id)) end));
  else
    diff := jsonb_strip_nulls(jsonb_build_object(
    'event_type', case when old.event_type is distinct from new.event_type then jsonb_build_object('old', to_jsonb(old.event_type), 'new', to_jsonb(new.event_type)) end,
    'direction', case when old.direction is distinct from new.direction then jsonb_build_object('old', to_jsonb(old.direction), 'new', to_jsonb(new.direction)) end,
    'merchant_name', case when old.merchant_name is distinct from new.merchant_name then jsonb_build_object('old', to_jsonb(old.merchant_name), 'new', to_jsonb(new.merchant_name)) end,
    'functional_amount', case when old.functional_amount is distinct from new.functional_amount then jsonb_build_object('old', to_jsonb(old.functional_amount), 'new', to_jsonb(new.functional_amount)) end,
    'functional_currency', case when old.functional_currency is distinct from new.functional_currency then jsonb_build_object('old', to_jsonb(old.functional_currency), 'new', to_jsonb(new.functional_currency)) end,
    'transaction_date', case when old.transaction_date is distinct from new.transaction_date then jsonb_build_object('old', to_jsonb(old.transaction_date), 'new', to_jsonb(new.transaction_date)) end,
    'status', case when old.status is distinct from new.status then jsonb_build_object('old', to_jsonb(old.status), 'new', to_jsonb(new.status)) end,
    'memo', case when old.memo is distinct from new.memo then jsonb_build_object('old', to_jsonb(old.memo), 'new', to_jsonb(new.memo)) end,
    'has_document', case when old.has_document is distinct from new.has_document then jsonb_build_object('old', to_jsonb(old.has_document), 'new', to_jsonb(new.has_document)) end,
    'category_id', case when old.category_id is distinct from new.category_id then jsonb_build_object('old', to_jsonb(old.category_id), 'new', to_jsonb(new.category_id)) end,
    'payment_account_id', case when old.payment_account_id is distinct from new.payment_account_id then jsonb_build_object('old', to_jsonb(old.payment_account_id), 'new', to_jsonb(new.payment_account_id)) end,
    'tax_amount', case when old.tax_amount is distinct from new.tax_amount then jsonb_build_object('old', to_jsonb(old.tax_amount), 'new', to_jsonb(new.tax_amount)) end,
    'tax_account_id', case when old.tax_account_id is distinct from new.tax_account_id then jsonb_build_object('old', to_jsonb(old.tax_account_id), 'new', to_jsonb(new.tax_account_id)) end,
    'tax_code', case when old.tax_code is distinct from new.tax_code then jsonb_build_object('old', to_jsonb(old.tax_code), 'new', to_jsonb(new.tax_code)) end,
    'journal_entry_id', case when old.journal_entry_id is distinct from new.journal_entry_id then jsonb_build_object('old', to_jsonb(old.journal_entry_id), 'new', to_jsonb(new.journal_entry_id)) end,
    'reference', case when old.reference is distinct from new.reference then jsonb_build_object('old', to_jsonb(old.reference), 'new', to_jsonb(new.reference)) end,
    'backfill_id', case when old.backfill_id is distinct from new.backfill_id then jsonb_build_object('old', to_jsonb(old.backfill_id), 'new', to_jsonb(new.backfill_id)) end));
  end if;
  if diff = '{}'::jsonb then return null; end if;
  insert into app_public.ledger_event_audit (organization_id, event_id, action, actor_api_key_id, actor_user_id, changes)
    values (new.organization_id, new.id,
            coalesce(nullif(current_setting('app.audit_action', true), ''), lower(tg_op)),
            app_public.current_api_key_id(), app_public.current_user_id(), diff);
  return null;
end $$;
grant execute on function app_private.tg_ledger_events__audit() to accounting_visitor;

-- A deleted event (processor imports can be deleted) leaves its last values in the trail.
create or replace function app_private.tg_ledger_events__audit_delete() returns trigger
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
begin
  -- An organization being deleted takes its events with it: nothing to record for it.
  if not exists (select 1 from app_public.organizations o where o.id = old.organization_id) then return null; end if;
  insert into app_public.ledger_event_audit (organization_id, event_id, action, actor_api_key_id, actor_user_id, changes)
    select old.organization_id, old.id, coalesce(nullif(current_setting('app.audit_action', true), ''), 'delete'),
           app_public.current_api_key_id(), app_public.current_user_id(),
           coalesce(jsonb_object_agg(f.key, jsonb_build_object('old', f.value, 'new', null)), '{}'::jsonb)
      from jsonb_each(to_jsonb(old)) f
     where f.value <> 'null'::jsonb and f.key not in ('id', 'organization_id', 'created', 'updated');
  return null;
end $$;

create or replace function app_public.ledger_event_history(organization_id uuid, event_id uuid) returns jsonb
  language plpgsql stable as
$$
declare r jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  select jsonb_agg(jsonb_build_object(
      'id', a.id, 'eventId', a.event_id, 'action', a.action,
      'actorType', case when a.actor_api_key_id is not null then 'api_key' when a.actor_user_id is not null then 'user' else 'system' end,
      'actorId', coalesce(a.actor_api_key_id, a.actor_user_id),
      'occurredAt', app_private.iso(a.occurred_at),
      'changes', (select coalesce(jsonb_agg(jsonb_build_object('field', k.key,
            'oldValue', case when jsonb_typeof(k.value -> 'old') in ('null') or k.value -> 'old' is null then null else k.value ->> 'old' end,
            'newValue', case when jsonb_typeof(k.value -> 'new') in ('null') or k.value -> 'new' is null then null else k.value ->> 'new' end)
            order by k.key), '[]'::jsonb)
          from jsonb_each(a.changes) k))
      order by a.id)
    into r
    from app_public.ledger_event_audit a
   where a.organization_id = ledger_event_history.organization_id and a.event_id = ledger_event_history.event_id;
  if r is null then perform app_private.fail('Ledger event not found.', 'AP404'); end if;
  return r;
end $$;
grant execute on function app_public.ledger_event_history(organization_id uuid, event_id uuid) to accounting_visitor;
--! EndIncluded ledger/audit.sql
--! Included reports/reports.sql
-- Reports from per-account daily totals: the dashboard, the income statement, account balances.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Revenue and expense totals per account over a period, from the daily totals.
create or replace function app_private.period_totals(org uuid, period daterange)
  returns table (account_id uuid, account_name text, classification text, total numeric)
  language sql stable as
$$
  select a.id, a.name, a.classification,
         case when a.classification = 'revenue' then sum(t.credit) - sum(t.debit) else sum(t.debit) - sum(t.credit) end
    from app_public.account_daily_totals t
    join app_public.accounts a on a.id = t.account_id
   where t.organization_id = org and t.day >= lower(period) and t.day < upper(period)
     and a.classification in ('revenue', 'expense')
   group by a.id, a.name, a.classification
  having sum(t.debit) <> 0 or sum(t.credit) <> 0
$$;
grant execute on function app_private.period_totals(org uuid, period daterange) to accounting_visitor;

-- Receipts that arrived in the period, rejected ones excluded: 0 until the receipts issue replaces this.
create or replace function app_private.receipt_count(org uuid, period daterange) returns integer
  language sql stable as
$$ select 0 $$;
grant execute on function app_private.receipt_count(org uuid, period daterange) to accounting_visitor;

-- A report period: null means the default; both ends inclusive.
create or replace function app_private.report_period(start_date text, end_date text, default_start date) returns daterange
  language plpgsql stable as
$$
declare
  s date := default_start;
  e date := current_date;
begin
  if start_date is not null then s := app_private.parse_date(start_date, 'startDate must be a date in YYYY-MM-DD format.'); end if;
  if end_date is not null then e := app_private.parse_date(end_date, 'endDate must be a date in YYYY-MM-DD format.'); end if;
  if s > e then perform app_private.fail('startDate must not be after endDate.'); end if;
  return daterange(s, e, '[]');
end $$;
grant execute on function app_private.report_period(start_date text, end_date text, default_start date) to accounting_visitor;

create or replace function app_public.account_balances(organization_id uuid) returns jsonb
  language plpgsql stable as
$$
begin
  perform app_private.assert_org_access(organization_id, false);
  return coalesce((
    select jsonb_agg(jsonb_build_object('accountId', a.id, 'accountName', a.name, 'accountType', a.account_type,
        'classification', a.classification, 'balance', app_private.money(coalesce(b.balance, 0)))
        order by lower(a.name), a.id)
      from app_public.accounts a
      left join app_private.account_balances(account_balances.organization_id) b on b.account_id = a.id
     where a.organization_id = account_balances.organization_id and a.active), '[]'::jsonb);
end $$;
grant execute on function app_public.account_balances(organization_id uuid) to accounting_visitor;

create or replace function app_public.dashboard_summary(organization_id uuid, start_date text default null, end_date text default null)
  returns jsonb
  language plpgsql stable as
$$
declare
  period daterange;
  revenue numeric;
  expenses numeric;
  unreviewed bigint;
begin
  perform app_private.assert_org_access(organization_id, false);
  period := app_private.report_period(start_date, end_date, date_trunc('month', current_date)::date);
  select coalesce(sum(total) filter (where classification = 'revenue'), 0),
         coalesce(sum(total) filter (where classification = 'expense'), 0)
    into revenue, expenses from app_private.period_totals(organization_id, period);
  select coalesce(sum(n), 0) into unreviewed from app_public.ledger_event_daily_counts c
   where c.organization_id = dashboard_summary.organization_id and c.status = 'needs_review';
  return jsonb_build_object('totalRevenue', app_private.money(revenue), 'totalExpenses', app_private.money(expenses),
    'netIncome', app_private.money(revenue - expenses),
    'receiptCount', app_private.receipt_count(organization_id, period),
    'unreviewedCount', unreviewed);
end $$;
grant execute on function app_public.dashboard_summary(organization_id uuid, start_date text, end_date text) to accounting_visitor;

create or replace function app_public.income_statement(organization_id uuid, start_date text default null, end_date text default null)
  returns jsonb
  language plpgsql stable as
$$
declare
  period daterange;
  r jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  period := app_private.report_period(start_date, end_date, date_trunc('year', current_date)::date);
  select jsonb_build_object(
      'incomeAccounts', coalesce(jsonb_agg(jsonb_build_object('accountId', account_id, 'accountName', account_name,
          'total', app_private.money(total)) order by lower(account_name), account_id) filter (where classification = 'revenue'), '[]'::jsonb),
      'expenseAccounts', coalesce(jsonb_agg(jsonb_build_object('accountId', account_id, 'accountName', account_name,
          'total', app_private.money(total)) order by lower(account_name), account_id) filter (where classification = 'expense'), '[]'::jsonb),
      'totalIncome', app_private.money(coalesce(sum(total) filter (where classification = 'revenue'), 0)),
      'totalExpenses', app_private.money(coalesce(sum(total) filter (where classification = 'expense'), 0)),
      'netIncome', app_private.money(coalesce(sum(total) filter (where classification = 'revenue'), 0)
                                     - coalesce(sum(total) filter (where classification = 'expense'), 0)))
    into r
    from app_private.period_totals(organization_id, period);
  return r;
end $$;
grant execute on function app_public.income_statement(organization_id uuid, start_date text, end_date text) to accounting_visitor;
--! EndIncluded reports/reports.sql
--! Included reporting/views.sql
-- The `reporting` schema: views over the posted journal for analysts using plain SQL, scoped by
-- the tables' row-level security (security_invoker).
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Every live line of the books: posted entries of confirmed, synced or reconciled events.
create or replace view reporting.general_ledger with (security_invoker = true) as
  select l.id, l.organization_id, l.entry_id, e.id as event_id, l.txn_date,
         date_trunc('month', l.txn_date)::date as month,
         l.account_id, a.name as account_name, a.account_type, a.classification,
         l.debit, l.credit,
         case when a.classification in ('asset', 'expense') then l.debit - l.credit else l.credit - l.debit end as amount,
         e.merchant_name, e.memo, e.event_type, e.status as event_status
    from app_public.journal_lines l
    join app_public.journal_entries j on j.id = l.entry_id and j.voided_at is null
    join app_public.ledger_events e on e.id = j.event_id and e.status in ('confirmed', 'synced', 'reconciled')
    join app_public.accounts a on a.id = l.account_id
   where not l.voided;
grant select on reporting.general_ledger to accounting_visitor;
grant select on reporting.general_ledger to reporting_reader;

-- Revenue and expense per account and month (revenue credits - debits, expense debits - credits).
create or replace view reporting.income_statement_monthly with (security_invoker = true) as
  select t.organization_id, date_trunc('month', t.day)::date as month, a.id as account_id, a.name as account_name,
         a.classification,
         (case when a.classification = 'revenue' then sum(t.credit) - sum(t.debit) else sum(t.debit) - sum(t.credit) end)::numeric(20,2) as total
    from app_public.account_daily_totals t
    join app_public.accounts a on a.id = t.account_id
   where a.classification in ('revenue', 'expense')
   group by t.organization_id, date_trunc('month', t.day), a.id, a.name, a.classification
  having sum(t.debit) <> 0 or sum(t.credit) <> 0;
grant select on reporting.income_statement_monthly to reporting_reader;

-- Debits and credits per account over all time; the sums of both columns are equal.
create or replace view reporting.trial_balance with (security_invoker = true) as
  select a.organization_id, a.id as account_id, a.name as account_name, a.account_type, a.classification,
         coalesce(sum(t.debit), 0)::numeric(20,2) as debit, coalesce(sum(t.credit), 0)::numeric(20,2) as credit,
         (case when a.classification in ('asset', 'expense') then coalesce(sum(t.debit), 0) - coalesce(sum(t.credit), 0)
               else coalesce(sum(t.credit), 0) - coalesce(sum(t.debit), 0) end)::numeric(20,2) as balance
    from app_public.accounts a
    left join app_public.account_daily_totals t on t.account_id = a.id
   group by a.organization_id, a.id, a.name, a.account_type, a.classification;
grant select on reporting.trial_balance to reporting_reader;
--! EndIncluded reporting/views.sql
