--! Previous: sha1:2961d9f8498766ea1cf09a825765489696f4c2ed
--! Hash: sha1:d45696ab54bc874b211b99b221d98e29dd5ff552
--! Message: An intake message id kept one way; the duplicate pre-check asks the database

-- An intake message's id kept one way, and the duplicate pre-check asks the database.
--! Included receipts/intake.sql
-- How files arrive: web uploads (POST /uploads) and intake messages (SMTP, POST /intake/email,
-- POST /intake/sms; later mailboxes and cloud drives), each file becoming a receipt queued for
-- extraction in the same transaction (decisions §9, §12).
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.uploads
drop policy if exists uploads_tenant on app_public.uploads;
create policy uploads_tenant on app_public.uploads
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select, insert on app_public.uploads to accounting_visitor;

-- app_public.intake_messages
drop policy if exists intake_messages_tenant on app_public.intake_messages;
create policy intake_messages_tenant on app_public.intake_messages
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select on app_public.intake_messages to accounting_visitor;

------------------------------------------------------------------------------------------------

-- The file POST /uploads stored, recorded as the caller (the key is namespaced by organization).
create or replace function app_private.record_upload(organization_id uuid, object_key text, filename text,
    content_type text, size bigint, sha256 text) returns void
  language plpgsql volatile as
$$
begin
  perform app_private.assert_org_access(organization_id, false);
  if split_part(object_key, '/', 1) <> organization_id::text then
    perform app_private.fail('The object key is not in this organization''s space.');
  end if;
  if content_type not in ('image/jpeg', 'image/png', 'image/webp', 'image/heic', 'application/pdf', 'text/plain') then
    perform app_private.fail('Unsupported file type.');
  end if;
  insert into app_public.uploads (organization_id, object_key, filename, content_type, size, sha256)
    values (organization_id, object_key, left(coalesce(app_private.clean_text(filename), ''), 255), content_type, size, sha256);
end $$;
grant execute on function app_private.record_upload(organization_id uuid, object_key text, filename text, content_type text, size bigint, sha256 text) to accounting_visitor;

-- The organizations whose active intake addresses are among these (email compared lower-case,
-- SMS on digits only), each once, oldest address first: a message goes to each. Looked up before
-- any tenant is known, hence the definer.
create or replace function app_private.intake_organizations(address_type text, addresses text[]) returns uuid[]
  language sql stable security definer set search_path = pg_catalog, app_public as
$$
  select coalesce(array_agg(o.organization_id order by o.first_created), '{}') from (
    select i.organization_id, min(i.created) as first_created from app_public.intake_addresses i
     where i.active and i.address_type = intake_organizations.address_type
       and i.address = any (select case when intake_organizations.address_type = 'sms' then regexp_replace(a, '[^0-9]', '', 'g')
                                        else lower(btrim(a)) end from unnest(addresses) a)
     group by i.organization_id) o
$$;

-- The message id as it is kept: trimmed, at most 998 characters; null or blank when there is none.
create or replace function app_private.intake_message_key(message_id text) returns text
  language sql immutable parallel safe as
$$ select nullif(left(btrim(message_id), 998), '') $$;

-- True when this message already reached this organization: an intake transport answers a
-- duplicate without storing its files (receive_intake_message still decides, in its transaction).
create or replace function app_private.intake_message_seen(organization_id uuid, channel text, message_id text) returns boolean
  language sql stable as
$$ select exists (select 1 from app_public.intake_messages m
     where m.organization_id = intake_message_seen.organization_id and m.channel = intake_message_seen.channel
       and m.message_id = app_private.intake_message_key(intake_message_seen.message_id)) $$;

-- A message delivered to an organization: its row, or null when the same message id came before
-- (nothing is stored again). A message without an id is always new.
create or replace function app_private.receive_intake_message(organization_id uuid, channel text, message_id text, sender text)
  returns uuid
  language plpgsql volatile as
$$
declare v_id uuid;
begin
  perform app_private.scope_organization(organization_id);
  insert into app_public.intake_messages (organization_id, channel, message_id, sender)
    values (organization_id, channel, coalesce(app_private.intake_message_key(message_id), 'generated:' || gen_random_uuid()),
            left(coalesce(sender, ''), 998))
    on conflict on constraint intake_messages_message_key do nothing
    returning id into v_id;
  return v_id;
end $$;

-- One file of an intake message, stored under the organization's key space, becomes a receipt.
create or replace function app_private.receive_receipt(organization_id uuid, source text, object_key text, filename text,
    content_type text, size bigint, sha256 text, intake_message_id uuid default null) returns jsonb
  language plpgsql volatile as
$$
begin
  perform app_private.scope_organization(organization_id);
  if split_part(object_key, '/', 1) <> organization_id::text then
    perform app_private.fail('The object key is not in this organization''s space.');
  end if;
  return app_private.store_receipt(organization_id, source, object_key, filename, content_type, size, sha256, intake_message_id);
end $$;
--! EndIncluded receipts/intake.sql
