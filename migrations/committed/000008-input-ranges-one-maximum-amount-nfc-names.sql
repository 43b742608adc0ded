--! Previous: sha1:0358d285653106da7262e92d73fff2b073dab666
--! Hash: sha1:f31c8b8fbc8f99ac17219d59ceaba9d334777f95
--! Message: Input ranges, one maximum amount, NFC names

-- Input ranges and look-alike names.
--
-- 1. Every argument the API accepts stays inside what the database can hold: dates from
--    1900-01-01 to 2199-12-31, sinceDays from 0 to 36500, amounts at most 999,999,999.99 (one
--    constant, app_private.max_amount()), lists and batch items of the right JSON type. A bad value
--    is a business error (AP400) with a message naming the field, never a raw SQL error.
-- 2. Human-entered text is stored in Unicode NFC, so "Café" typed with a composed é (U+00E9) and
--    with e + combining acute (U+0065 U+0301) is one name: the unique indexes on lower(name) see
--    look-alikes as duplicates, and searches match either spelling. A BEFORE trigger per table
--    (app_private.tg__nfc) normalizes the columns, so nothing (the API, the operator CLI, raw SQL)
--    stores another form; the operations normalize their input first as well, so that length
--    checks apply to what is stored (NFC may lengthen a string: U+0958 becomes two code points).
-- 3. A memo no longer rides in ledger_events_date_idx: a 5,000-character memo made the index row
--    larger than a btree page allows ("index row size exceeds maximum", an internal error).
--
-- Re-runnable: create or replace, drop ... if exists, guarded DO blocks.

------------------------------------------------------------------------------------------------
-- Limits, each in one place.

-- The largest amount (event amount, tax amount, list filters). Per-account daily totals are
-- numeric(20,2): a billion events of this size on one account and day still fit.
create or replace function app_private.max_amount() returns numeric
  language sql immutable parallel safe as
$$ select 999999999.99::numeric $$;

-- The range of every date argument (transactionDate, dateFrom, dateTo, startDate, endDate).
create or replace function app_private.min_date() returns date
  language sql immutable parallel safe as
$$ select date '1900-01-01' $$;
create or replace function app_private.max_date() returns date
  language sql immutable parallel safe as
$$ select date '2199-12-31' $$;

-- The field a caller's message names: "Transaction date must be ..." -> "Transaction date".
create or replace function app_private.field_of(message text, fallback text) returns text
  language sql immutable parallel safe as
$$ select coalesce(nullif(substring(message from '^(.+?) must '), ''), fallback) $$;

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

create or replace function app_private.item_uuid(item jsonb, key text) returns uuid
  language sql immutable as
$$ select app_private.parse_uuid(app_private.item_text(item, key), format('%s must be a UUID.', key)) $$;

-- Escapes % _ and \ so that search text matches literally inside ILIKE; in NFC, as stored text is.
create or replace function app_private.like_pattern(search text) returns text
  language sql immutable parallel safe as
$$ select '%' || replace(replace(replace(normalize(search, NFC), '\', '\\'), '%', '\%'), '_', '\_') || '%' $$;

-- Text as it is stored: NFC, without surrounding spaces.
create or replace function app_private.clean_text(t text) returns text
  language sql immutable parallel safe as
$$ select btrim(normalize(t, NFC)) $$;

grant execute on function app_private.max_amount(), app_private.min_date(), app_private.max_date(),
  app_private.field_of(text, text), app_private.parse_uuid(text, text), app_private.uuid_list(jsonb, text),
  app_private.item_text(jsonb, text), app_private.item_uuid(jsonb, text), app_private.clean_text(text)
  to accounting_visitor;

------------------------------------------------------------------------------------------------
-- NFC: the rule in the tables. One trigger function; each table names its columns (TG_ARGV) and
-- its trigger fires only when one of them is not in NFC (the WHEN clause costs next to nothing).
-- On UPDATE only changed values are normalized, so a row written before this rule is never
-- rewritten behind the caller's back (see the one-off normalization below).
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

-- One-off: rows written before the rule, normalized where that does not collide with another
-- row's name (a look-alike pair that already exists is left as it is, with a notice, rather
-- than renamed or merged behind its owner's back).
do $$
declare
  t record;
  r record;
  sets text;
begin
  perform set_config('app.audit_action', 'normalize', true);
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
    sets := (select string_agg(format('%1$I = normalize(%1$I, NFC)', c), ', ') from unnest(t.cols) c);
    for r in execute format('select id from app_public.%I where %s', t.tbl,
        (select string_agg(format('%I is not nfc normalized', c), ' or ') from unnest(t.cols) c))
    loop
      begin
        execute format('update app_public.%I set %s where id = $1', t.tbl, sets) using r.id;
      exception when unique_violation then
        raise notice 'app_public.% %: not normalized to NFC, a look-alike already exists', t.tbl, r.id;
      end;
    end loop;
  end loop;
  perform set_config('app.audit_action', '', true);
end $$;

------------------------------------------------------------------------------------------------
-- A memo (up to 5,000 characters) cannot ride in a btree index row (at most 2,704 bytes): the
-- date index keeps status, merchant name (at most 500 characters, 2,000 bytes) and has_document.
do $$
begin
  if exists (select 1 from pg_indexes where schemaname = 'app_public' and indexname = 'ledger_events_date_idx'
               and indexdef like '%memo%') then
    drop index app_public.ledger_events_date_idx;
    create index ledger_events_date_idx on app_public.ledger_events (organization_id, transaction_date, id)
      include (status, merchant_name, has_document);
  end if;
end $$;

------------------------------------------------------------------------------------------------
-- Organizations, users, members, API keys.

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

------------------------------------------------------------------------------------------------
-- Accounts.

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

------------------------------------------------------------------------------------------------
-- Contacts.

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

------------------------------------------------------------------------------------------------
-- Category rules.

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

------------------------------------------------------------------------------------------------
-- Intake addresses.

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

------------------------------------------------------------------------------------------------
-- Ledger events.

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
