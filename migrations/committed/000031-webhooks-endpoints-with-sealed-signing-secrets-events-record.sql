--! Previous: sha1:89b95cda97e0e77ad14b1fac867efb3776be55a2
--! Hash: sha1:4ae508c19d274c72078d7cc764e8549f50e87512
--! Message: Webhooks: endpoints with sealed signing secrets, events recorded with their change, deliveries on a queue per endpoint, retried with backoff, endpoints disabled after failing for the retry window

-- Webhooks (issue 13): the endpoints an organization registers, the events its changes make, and
-- the deliveries of each event to each endpoint. Functions, triggers, policies and grants live in
-- migrations/fixtures/webhooks/.

-- An HTTPS URL the organization's events are posted to, signed with a secret sealed with
-- SECRETS_KEY by the server (it must be read back to sign): never in clear here, never readable
-- by the API's role.
create table if not exists app_public.webhook_endpoints (
  id uuid primary key default app_private.uuid_v7(),
  organization_id uuid not null references app_public.organizations on delete cascade,
  url text not null constraint webhook_endpoints_url_check check (url ~ '^https?://' and length(url) <= 2048),
  events text[] not null constraint webhook_endpoints_events_check check (cardinality(events) between 1 and 20),
  description text constraint webhook_endpoints_description_check check (length(description) <= 500),
  secret_sealed text not null constraint webhook_endpoints_secret_sealed_check check (secret_sealed ~ '^v1:'),
  status text not null default 'enabled' constraint webhook_endpoints_status_check check (status in ('enabled', 'disabled')),
  -- Why the service disabled it (null when enabled, or disabled by a person).
  disabled_reason text constraint webhook_endpoints_disabled_reason_check check (length(disabled_reason) <= 500),
  -- Since when every attempt failed (null after a success, or when enabled again): an endpoint
  -- failing since a delivery's first attempt, when that delivery's retries end, is disabled.
  failing_since timestamptz,
  created timestamptz not null default now(),
  updated timestamptz not null default now(),
  constraint webhook_endpoints_organization_id_id_key unique (organization_id, id)
);
create index if not exists webhook_endpoints_organization_idx on app_public.webhook_endpoints (organization_id) where status = 'enabled';
alter table app_public.webhook_endpoints enable row level security;
alter table app_public.webhook_endpoints force row level security;

-- One change an endpoint subscribed to, made in the transaction of the change; `object` is the
-- changed thing as the API shows it then.
create table if not exists app_public.webhook_events (
  id uuid primary key default app_private.uuid_v7(),
  organization_id uuid not null references app_public.organizations on delete cascade,
  type text not null constraint webhook_events_type_check check (length(type) <= 100),
  object jsonb not null,
  -- The time of the change (not of its transaction's start: two events of one transaction differ).
  created timestamptz not null default clock_timestamp(),
  constraint webhook_events_organization_id_id_key unique (organization_id, id)
);
alter table app_public.webhook_events enable row level security;
alter table app_public.webhook_events force row level security;

-- One event's delivery to one endpoint: pending until the endpoint answers 2xx (succeeded), or
-- until its retries end (failed).
create table if not exists app_public.webhook_deliveries (
  id uuid primary key default app_private.uuid_v7(),
  organization_id uuid not null,
  webhook_endpoint_id uuid not null,
  webhook_event_id uuid not null,
  status text not null default 'pending' constraint webhook_deliveries_status_check check (status in ('pending', 'succeeded', 'failed')),
  attempts integer not null default 0 constraint webhook_deliveries_attempts_check check (attempts >= 0),
  response_code integer,
  last_error text constraint webhook_deliveries_last_error_check check (length(last_error) <= 2000),
  first_attempt_at timestamptz,
  last_attempt_at timestamptz,
  next_attempt_at timestamptz default now(),
  delivered_at timestamptz,
  -- The order an endpoint's deliveries go out in: the order their events were made.
  seq bigint generated always as identity,
  created timestamptz not null default now(),
  constraint webhook_deliveries_endpoint_fkey foreign key (organization_id, webhook_endpoint_id)
    references app_public.webhook_endpoints (organization_id, id) on delete cascade,
  constraint webhook_deliveries_event_fkey foreign key (organization_id, webhook_event_id)
    references app_public.webhook_events (organization_id, id) on delete cascade
);
create index if not exists webhook_deliveries_endpoint_idx on app_public.webhook_deliveries (webhook_endpoint_id, created desc, id desc);
-- An endpoint's deliveries due, in the order their events were made.
create index if not exists webhook_deliveries_due_idx on app_public.webhook_deliveries (webhook_endpoint_id, seq) where status = 'pending';
create index if not exists webhook_deliveries_event_idx on app_public.webhook_deliveries (webhook_event_id);
-- The metrics' last hour of attempts.
create index if not exists webhook_deliveries_last_attempt_idx on app_public.webhook_deliveries (last_attempt_at);
alter table app_public.webhook_deliveries enable row level security;
alter table app_public.webhook_deliveries force row level security;

--! Included webhooks/endpoints.sql
-- Webhook endpoints (issue 13): registering, listing, changing and removing them, and the log of
-- their deliveries. createWebhookEndpoint and updateWebhookEndpoint are served by the server (it
-- checks the URL's host through the outbound guard and seals the signing secret, which SQL never
-- sees in clear); their rules are here. Owner or admin only, by JWT.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security and grants of this feature's tables.

-- app_public.webhook_endpoints: the API's role never reads the sealed secret.
drop policy if exists webhook_endpoints_tenant on app_public.webhook_endpoints;
create policy webhook_endpoints_tenant on app_public.webhook_endpoints
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
revoke all on app_public.webhook_endpoints from accounting_visitor;
grant select (id, organization_id, url, events, description, status, disabled_reason, failing_since, created, updated)
  on app_public.webhook_endpoints to accounting_visitor;
grant insert (id, organization_id, url, events, description, secret_sealed) on app_public.webhook_endpoints to accounting_visitor;
grant update (url, events, description, status, disabled_reason, failing_since, updated) on app_public.webhook_endpoints to accounting_visitor;
grant delete on app_public.webhook_endpoints to accounting_visitor;

drop trigger if exists _100_touch_updated on app_public.webhook_endpoints;
create trigger _100_touch_updated before update on app_public.webhook_endpoints
  for each row execute function app_private.tg__touch_updated();

-- app_public.webhook_events and webhook_deliveries: written by the database's own functions and
-- the worker; read by the delivery log; a redelivery puts a delivery back to pending.
drop policy if exists webhook_events_tenant on app_public.webhook_events;
create policy webhook_events_tenant on app_public.webhook_events
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select on app_public.webhook_events to accounting_visitor;

drop policy if exists webhook_deliveries_tenant on app_public.webhook_deliveries;
create policy webhook_deliveries_tenant on app_public.webhook_deliveries
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select on app_public.webhook_deliveries to accounting_visitor;

------------------------------------------------------------------------------------------------

-- The events an endpoint may subscribe to.
create or replace function app_private.webhook_event_types() returns text[]
  language sql immutable parallel safe as
$$ select array['ledger_event.created', 'ledger_event.confirmed', 'ledger_event.rejected', 'bank_import.completed',
                'processor_import.completed', 'receipt.received', 'receipt.matched', 'receipt.unmatched'] $$;
grant execute on function app_private.webhook_event_types() to accounting_visitor;

-- An endpoint as the API shows it (by id: the API's role may not read a whole row, which holds the secret).
create or replace function app_private.webhook_endpoint_json(webhook_endpoint_id uuid) returns jsonb
  language sql stable as
$$ select jsonb_build_object('id', ep.id, 'url', ep.url, 'events', to_jsonb(ep.events), 'description', ep.description,
     'status', ep.status, 'disabledReason', ep.disabled_reason, 'created', app_private.iso(ep.created))
     from app_public.webhook_endpoints ep where ep.id = webhook_endpoint_id $$;
grant execute on function app_private.webhook_endpoint_json(webhook_endpoint_id uuid) to accounting_visitor;

-- The caller (owner or admin, by JWT) and the fields of an endpoint, checked and normalised: the
-- URL's scheme, host and address are the server's to check (src/webhooks/endpoint-url.ts).
-- A null argument is a field left as it is (an update) or absent (a creation: url and events are
-- required there).
create or replace function app_private.webhook_endpoint_settings(organization_id uuid, url text, events text[], description text)
  returns jsonb
  language plpgsql stable as
$$
declare
  -- The scheme as the URL parser writes it (lower case), which the table's check expects.
  v_url text := regexp_replace(app_private.clean_text(url), '^[Hh][Tt][Tt][Pp]([Ss]?)://', 'http\1://');
  v_events text[];
  v_unknown text;
  v_description text := app_private.clean_text(description);
begin
  perform app_private.assert_org_access(organization_id, true);
  if v_url is not null and (v_url !~* '^https?://' or length(v_url) > 2048) then
    perform app_private.fail('url must be an https URL of at most 2048 characters.');
  end if;
  if events is not null then
    select array_agg(distinct btrim(e) order by btrim(e)) into v_events from unnest(events) e;
    if v_events is null then perform app_private.fail('events must name at least one event type.'); end if;
    select e into v_unknown from unnest(v_events) e where not (e = any (app_private.webhook_event_types())) limit 1;
    if v_unknown is not null then
      perform app_private.fail(format('events: unknown event type %s; known: %s.', v_unknown,
        array_to_string(app_private.webhook_event_types(), ', ')));
    end if;
  end if;
  if length(v_description) > 500 then perform app_private.fail('description must be at most 500 characters.'); end if;
  return jsonb_build_object('url', v_url, 'events', to_jsonb(v_events), 'description', v_description);
end $$;
grant execute on function app_private.webhook_endpoint_settings(organization_id uuid, url text, events text[], description text) to accounting_visitor;

-- An endpoint whose URL the server has checked, with its signing secret sealed to this id.
create or replace function app_private.create_webhook_endpoint(organization_id uuid, url text, events text[], description text,
    webhook_endpoint_id uuid, secret_sealed text) returns jsonb
  language plpgsql volatile as
$$
declare
  s jsonb := app_private.webhook_endpoint_settings(organization_id, url, events, description);
begin
  if s->>'url' is null then perform app_private.fail('url is required.'); end if;
  if s->'events' = 'null'::jsonb then perform app_private.fail('events must name at least one event type.'); end if;
  -- Creations of one organization one at a time, so that two cannot both pass the limit.
  perform pg_advisory_xact_lock(hashtext('webhook_endpoints:' || create_webhook_endpoint.organization_id));
  if (select count(*) from app_public.webhook_endpoints x where x.organization_id = create_webhook_endpoint.organization_id) >= 20 then
    perform app_private.fail('An organization may have at most 20 webhook endpoints.');
  end if;
  insert into app_public.webhook_endpoints (id, organization_id, url, events, description, secret_sealed)
    values (webhook_endpoint_id, create_webhook_endpoint.organization_id, s->>'url',
            array(select jsonb_array_elements_text(s->'events')), s->>'description', secret_sealed);
  return jsonb_build_object('success', true, 'error', null, 'webhookEndpoint', app_private.webhook_endpoint_json(webhook_endpoint_id),
    'secret', null);
end $$;
grant execute on function app_private.create_webhook_endpoint(organization_id uuid, url text, events text[], description text, webhook_endpoint_id uuid, secret_sealed text) to accounting_visitor;

-- Changes the fields given (null: unchanged). status `enabled` turns a disabled endpoint back on
-- (its failed deliveries stay failed: redeliverWebhook sends one again); `disabled` stops it, and
-- its pending deliveries fail.
create or replace function app_private.update_webhook_endpoint(organization_id uuid, webhook_endpoint_id uuid, url text,
    events text[], description text, status text) returns jsonb
  language plpgsql volatile as
$$
declare
  s jsonb := app_private.webhook_endpoint_settings(organization_id, url, events, description);
begin
  if status is not null and status not in ('enabled', 'disabled') then
    perform app_private.fail('status must be one of: enabled, disabled.');
  end if;
  update app_public.webhook_endpoints x
     set url = coalesce(s->>'url', x.url),
         events = case when s->'events' = 'null'::jsonb then x.events else array(select jsonb_array_elements_text(s->'events')) end,
         description = case when update_webhook_endpoint.description is null then x.description else s->>'description' end,
         status = coalesce(update_webhook_endpoint.status, x.status),
         disabled_reason = case when coalesce(update_webhook_endpoint.status, x.status) = 'enabled' then null
                                when update_webhook_endpoint.status = 'disabled' then null else x.disabled_reason end,
         -- Enabled again: its failures so far no longer count towards disabling it.
         failing_since = case when update_webhook_endpoint.status = 'enabled' then null else x.failing_since end
   where x.organization_id = update_webhook_endpoint.organization_id and x.id = webhook_endpoint_id;
  if not found then perform app_private.fail('Webhook endpoint not found.', 'AP404'); end if;
  if update_webhook_endpoint.status = 'disabled' then
    perform app_private.fail_pending_webhook_deliveries(webhook_endpoint_id);
  end if;
  return jsonb_build_object('success', true, 'error', null, 'webhookEndpoint', app_private.webhook_endpoint_json(webhook_endpoint_id));
end $$;
grant execute on function app_private.update_webhook_endpoint(organization_id uuid, webhook_endpoint_id uuid, url text, events text[], description text, status text) to accounting_visitor;

-- The endpoint, its deliveries and its secret go (deliveries queued for it find nothing to do).
create or replace function app_public.delete_webhook_endpoint(organization_id uuid, webhook_endpoint_id uuid) returns jsonb
  language plpgsql volatile as
$$
begin
  perform app_private.assert_org_access(organization_id, true);
  delete from app_public.webhook_endpoints x
   where x.organization_id = delete_webhook_endpoint.organization_id and x.id = webhook_endpoint_id;
  if not found then perform app_private.fail('Webhook endpoint not found.', 'AP404'); end if;
  return jsonb_build_object('success', true, 'error', null);
end $$;
grant execute on function app_public.delete_webhook_endpoint(organization_id uuid, webhook_endpoint_id uuid) to accounting_visitor;

-- The organization's endpoints, oldest first (not paginated: 20 at most).
create or replace function app_public.list_webhook_endpoints(organization_id uuid) returns jsonb
  language plpgsql stable as
$$
begin
  perform app_private.assert_org_access(organization_id, true);
  return coalesce((select jsonb_agg(app_private.webhook_endpoint_json(x.id) order by x.created, x.id)
    from app_public.webhook_endpoints x where x.organization_id = list_webhook_endpoints.organization_id), '[]'::jsonb);
end $$;
grant execute on function app_public.list_webhook_endpoints(organization_id uuid) to accounting_visitor;

-- A delivery as the log shows it.
create or replace function app_private.webhook_delivery_json(d app_public.webhook_deliveries, event_type text) returns jsonb
  language sql stable as
$$ select jsonb_build_object('id', d.id, 'webhookEndpointId', d.webhook_endpoint_id, 'eventId', d.webhook_event_id,
     'eventType', event_type, 'status', d.status, 'attempts', d.attempts, 'responseCode', d.response_code,
     'lastError', d.last_error, 'lastAttemptAt', app_private.iso(d.last_attempt_at),
     'nextAttemptAt', app_private.iso(d.next_attempt_at), 'deliveredAt', app_private.iso(d.delivered_at),
     'created', app_private.iso(d.created)) $$;
grant execute on function app_private.webhook_delivery_json(d app_public.webhook_deliveries, event_type text) to accounting_visitor;

-- An endpoint's deliveries, newest first: status pending (waiting for an attempt), succeeded or
-- failed (retries ended); attempts so far, the last answer's HTTP status or why there was none,
-- and when the next attempt is due.
create or replace function app_public.list_webhook_deliveries(organization_id uuid, webhook_endpoint_id uuid, status text default null,
    "limit" integer default null, "offset" integer default null) returns jsonb
  language plpgsql stable as
$$
declare
  lim integer := app_private.page_size("limit");
  off integer := app_private.page_offset("offset");
begin
  perform app_private.assert_org_access(organization_id, true);
  if status is not null and status not in ('pending', 'succeeded', 'failed') then
    perform app_private.fail('status must be one of: pending, succeeded, failed.');
  end if;
  if not exists (select 1 from app_public.webhook_endpoints x
                  where x.organization_id = list_webhook_deliveries.organization_id and x.id = webhook_endpoint_id) then
    perform app_private.fail('Webhook endpoint not found.', 'AP404');
  end if;
  return (
    with f as (
      select d from app_public.webhook_deliveries d
       where d.webhook_endpoint_id = list_webhook_deliveries.webhook_endpoint_id
         and (list_webhook_deliveries.status is null or d.status = list_webhook_deliveries.status)
    ), page as (
      select f.d, row_number() over (order by (f.d).seq desc) as rn
        from f order by (f.d).seq desc limit lim offset off
    )
    select jsonb_build_object(
      'items', coalesce((select jsonb_agg(app_private.webhook_delivery_json(page.d, ev.type) order by page.rn)
                           from page join app_public.webhook_events ev on ev.id = (page.d).webhook_event_id), '[]'::jsonb),
      'totalCount', (select count(*) from f), 'pageSize', lim, 'offset', off));
end $$;
grant execute on function app_public.list_webhook_deliveries(organization_id uuid, webhook_endpoint_id uuid, status text, "limit" integer, "offset" integer) to accounting_visitor;

-- Sends a delivery again now, whatever its status (a pending one sooner than its retry was due),
-- with the same event id; its earlier attempts stay counted.
create or replace function app_public.redeliver_webhook(organization_id uuid, webhook_delivery_id uuid) returns jsonb
  language plpgsql volatile as
$$
declare
  d app_public.webhook_deliveries;
  v_status text;
begin
  perform app_private.assert_org_access(organization_id, true);
  select * into d from app_public.webhook_deliveries x
   where x.organization_id = redeliver_webhook.organization_id and x.id = webhook_delivery_id;
  if not found then perform app_private.fail('Webhook delivery not found.', 'AP404'); end if;
  select ep.status into v_status from app_public.webhook_endpoints ep where ep.id = d.webhook_endpoint_id;
  if v_status <> 'enabled' then perform app_private.fail('The webhook endpoint is disabled: enable it first.'); end if;
  perform app_private.queue_webhook_attempt(d.id, now());
  select * into d from app_public.webhook_deliveries x where x.id = webhook_delivery_id;
  return jsonb_build_object('success', true, 'error', null, 'delivery', app_private.webhook_delivery_json(d,
    (select ev.type from app_public.webhook_events ev where ev.id = d.webhook_event_id)));
end $$;
grant execute on function app_public.redeliver_webhook(organization_id uuid, webhook_delivery_id uuid) to accounting_visitor;
--! EndIncluded webhooks/endpoints.sql
--! Included webhooks/events.sql
-- Webhook events (issue 13): each change an endpoint subscribed to is recorded in the transaction
-- of the change, with one delivery per subscribed endpoint and its job, so that a rolled-back
-- change sends nothing and a committed one is never without its event. The functions that own
-- the changes call record_webhook_event (ledger/events.sql, ledger/transitions.sql,
-- receipts/receipts.sql, receipts/matching.sql, imports/*.sql); an import makes one
-- `*.completed` event, not one per row.
-- Re-runnable: `create or replace`.

-- An event of `type` about `object` (or the object `object_id` names, read only when an endpoint
-- subscribed): nothing when no enabled endpoint of the organization subscribed to the type.
create or replace function app_private.record_webhook_event(org uuid, type text, object_id uuid, object jsonb default null)
  returns void
  language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as
$$
declare
  v_event uuid;
  d record;
begin
  -- Few statements: the caller may hold a lock that others wait on until it commits (the day's counts).
  -- Only for the organization the caller is in (the operator's and the worker's: any).
  perform app_private.check_job_organization(org);
  if not exists (select 1 from app_public.webhook_endpoints ep
                  where ep.organization_id = org and ep.status = 'enabled' and record_webhook_event.type = any (ep.events)) then
    return;
  end if;
  if object is null then
    object := case split_part(record_webhook_event.type, '.', 1)
      when 'ledger_event' then (select app_private.ledger_event_json_by_id(e.id) from app_public.ledger_events e
                                 where e.id = object_id and e.organization_id = org)
      when 'receipt' then (select app_private.receipt_json_by_id(r.id) from app_public.receipts r
                            where r.id = object_id and r.organization_id = org) end;
    if object is null then raise exception 'record_webhook_event: no % of organization % with id %', type, org, object_id; end if;
  end if;
  insert into app_public.webhook_events (organization_id, type, object)
    values (org, record_webhook_event.type, object)
    returning id into v_event;
  for d in
    insert into app_public.webhook_deliveries (organization_id, webhook_endpoint_id, webhook_event_id)
      select org, ep.id, v_event from app_public.webhook_endpoints ep
       where ep.organization_id = org and ep.status = 'enabled' and record_webhook_event.type = any (ep.events)
       order by ep.id
      returning id, webhook_endpoint_id, next_attempt_at
  loop
    perform app_private.add_webhook_attempt_job(org, d.id, d.webhook_endpoint_id, d.next_attempt_at);
  end loop;
end $$;
grant execute on function app_private.record_webhook_event(org uuid, type text, object_id uuid, object jsonb) to accounting_visitor;
--! EndIncluded webhooks/events.sql
--! Included webhooks/deliveries.sql
-- Webhook deliveries (issue 13): each delivery's next attempt is a job of the worker's
-- `deliver_webhook` task on a queue of its endpoint's own, so that an endpoint's events go out
-- one at a time in the order they were made. A job sends the endpoint's deliveries that are due,
-- oldest event first, in one batch (the jobs of the others it sent are removed); a failed attempt is
-- retried by a later job (exponential backoff for up to 3 days) and never holds back the events
-- behind it. An endpoint that accepted nothing since a delivery was made, when that delivery's
-- retries end, is disabled.
-- Re-runnable: `create or replace`.

-- The job of a delivery's next attempt, at `at`: keyed by the delivery (a key no other
-- transaction shares), so that a later attempt replaces one not yet started. PL/pgSQL: it names
-- graphile-worker's schema, which src/db/migrate.ts installs before the migrations run.
create or replace function app_private.add_webhook_attempt_job(organization_id uuid, delivery_id uuid, webhook_endpoint_id uuid,
    at timestamptz) returns void
  language plpgsql volatile as
$$
begin
  perform graphile_worker.add_job('deliver_webhook', json_build_object('organizationId', organization_id, 'deliveryId', delivery_id),
    queue_name => 'webhook:' || webhook_endpoint_id, run_at => at, max_attempts => 5, job_key => 'webhook-delivery:' || delivery_id);
end $$;

-- The next attempt of a delivery, at `at` (a caller's: only of the organization it is in).
create or replace function app_private.queue_webhook_attempt(delivery_id uuid, at timestamptz) returns void
  language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as
$$
declare d app_public.webhook_deliveries;
begin
  select * into d from app_public.webhook_deliveries x where x.id = delivery_id;
  perform app_private.check_job_organization(d.organization_id);
  if app_public.current_organization_id() is not null and d.organization_id is distinct from app_public.current_organization_id() then
    perform app_private.fail('Webhook delivery not found.', 'AP404');
  end if;
  update app_public.webhook_deliveries x set status = 'pending', next_attempt_at = at where x.id = d.id;
  perform app_private.add_webhook_attempt_job(d.organization_id, d.id, d.webhook_endpoint_id, at);
end $$;
grant execute on function app_private.queue_webhook_attempt(delivery_id uuid, at timestamptz) to accounting_visitor;

-- The wait before attempt `attempts + 1`: `base` (a minute in production), four times longer
-- after each failure, at most 12 hours (the exponent is capped first: no interval overflows).
create or replace function app_private.webhook_retry_delay(attempts integer, base interval) returns interval
  language sql immutable parallel safe as
$$ select least(base * power(4, least(greatest(attempts - 1, 0), 16))::float8, interval '12 hours') $$;

-- An endpoint's pending deliveries fail (the endpoint was disabled); their jobs find nothing to do.
create or replace function app_private.fail_pending_webhook_deliveries(webhook_endpoint_id uuid) returns void
  language sql volatile security definer set search_path = pg_catalog, pg_temp as
$$
  update app_public.webhook_deliveries x
     set status = 'failed', next_attempt_at = null, last_error = coalesce(x.last_error || ' ', '') || 'The endpoint was disabled.'
   where x.webhook_endpoint_id = fail_pending_webhook_deliveries.webhook_endpoint_id and x.status = 'pending'
     and x.organization_id = coalesce(app_public.current_organization_id(), x.organization_id)
$$;
grant execute on function app_private.fail_pending_webhook_deliveries(webhook_endpoint_id uuid) to accounting_visitor;

------------------------------------------------------------------------------------------------
-- The worker's side (owner connection).

-- What the job of `delivery_id` sends: its endpoint (null when it or the delivery is gone, or
-- the endpoint is disabled) and up to `batch` of the endpoint's deliveries due now, in the order
-- their events were made, each with the attempt it is (the attempts made before) and the exact
-- body signed and sent.
create or replace function app_private.webhook_deliveries_due(delivery_id uuid, batch integer) returns jsonb
  language sql stable as
$$
  select jsonb_build_object('organizationId', ep.organization_id, 'webhookEndpointId', ep.id, 'url', ep.url,
           'secretSealed', ep.secret_sealed, 'deliveries', coalesce((
      select jsonb_agg(jsonb_build_object('deliveryId', d.id, 'attempt', d.attempts,
               'body', jsonb_build_object('id', ev.id, 'type', ev.type, 'created', app_private.iso(ev.created),
                 'organizationId', ev.organization_id, 'data', jsonb_build_object('object', ev.object))::text) order by d.seq)
        from (select * from app_public.webhook_deliveries x
               where x.webhook_endpoint_id = ep.id and x.status = 'pending' and x.next_attempt_at <= now()
               order by x.seq limit batch) d
        join app_public.webhook_events ev on ev.id = d.webhook_event_id), '[]'::jsonb))
    from app_public.webhook_deliveries of
    join app_public.webhook_endpoints ep on ep.id = of.webhook_endpoint_id
   where of.id = delivery_id and ep.status = 'enabled'
$$;

-- What attempt `attempt` of a delivery got: an HTTP status (2xx: delivered) or an error (no
-- answer, a refused address, a timeout). A failure is retried after webhook_retry_delay, the last
-- time at `retry_window` after the delivery was made; a failure then ends it. Returns the
-- delivery's status after it, or null when the attempt was stale.
create or replace function app_private.record_webhook_attempt(delivery_id uuid, attempt integer, response_code integer, error text,
    retry_base interval, retry_window interval) returns text
  language plpgsql volatile as
$$
declare
  d app_public.webhook_deliveries;
  ok boolean := error is null and response_code between 200 and 299;
  v_last boolean;
  v_error text := left(coalesce(error, case when not (response_code between 200 and 299)
                                         then format('The endpoint answered HTTP %s.', response_code) end), 2000);
begin
  select * into d from app_public.webhook_deliveries x where x.id = delivery_id for update;
  if not found or d.status <> 'pending' or d.attempts <> attempt then return null; end if;
  v_last := now() >= d.created + retry_window;
  update app_public.webhook_deliveries x
     set attempts = x.attempts + 1, first_attempt_at = coalesce(x.first_attempt_at, now()), last_attempt_at = now(),
         response_code = record_webhook_attempt.response_code, last_error = v_error,
         status = case when ok then 'succeeded' when v_last then 'failed' else 'pending' end,
         delivered_at = case when ok then now() end,
         next_attempt_at = case when not ok and not v_last
           then least(now() + app_private.webhook_retry_delay(x.attempts + 1, retry_base), d.created + retry_window) end
   where x.id = d.id
   returning * into d;
  update app_public.webhook_endpoints ep set failing_since = case when ok then null else coalesce(ep.failing_since, now()) end
   where ep.id = d.webhook_endpoint_id and ep.failing_since is distinct from case when ok then null else coalesce(ep.failing_since, now()) end;
  if d.status = 'pending' then
    perform app_private.queue_webhook_attempt(d.id, d.next_attempt_at);
  else
    -- Sent by another delivery's job, perhaps: its own has nothing left to do.
    perform graphile_worker.remove_job('webhook-delivery:' || d.id);
  end if;
  return d.status;
end $$;

-- A batch's outcomes ([{deliveryId, attempt, responseCode, error}]), recorded in one round trip
-- by the job of `job_delivery_id`. Then, an endpoint that has failed since the first attempt of
-- a delivery whose retries just ended is disabled (decided once the whole batch is recorded: a
-- later delivery of the batch that succeeded clears it); and the job's own delivery, when due and
-- not in the batch, gets a job again.
create or replace function app_private.record_webhook_attempts(job_delivery_id uuid, outcomes jsonb, retry_base interval,
    retry_window interval) returns void
  language plpgsql volatile as
$$
declare
  a jsonb;
  v_failed uuid[] := '{}';
  v_endpoint uuid;
begin
  for a in select * from jsonb_array_elements(outcomes) loop
    if app_private.record_webhook_attempt((a->>'deliveryId')::uuid, (a->>'attempt')::integer,
         (a->>'responseCode')::integer, a->>'error', retry_base, retry_window) = 'failed' then
      v_failed := v_failed || (a->>'deliveryId')::uuid;
    end if;
  end loop;
  for v_endpoint in
    select distinct d.webhook_endpoint_id from app_public.webhook_deliveries d
      join app_public.webhook_endpoints ep on ep.id = d.webhook_endpoint_id
     where d.id = any (v_failed) and ep.status = 'enabled' and ep.failing_since <= d.first_attempt_at
  loop
    update app_public.webhook_endpoints ep
       set status = 'disabled', disabled_reason = format('Disabled at %s: every attempt failed for %s.',
             app_private.iso(now()), justify_interval(retry_window))
     where ep.id = v_endpoint;
    perform app_private.fail_pending_webhook_deliveries(v_endpoint);
  end loop;
  if exists (select 1 from app_public.webhook_deliveries d where d.id = job_delivery_id and d.status = 'pending'
                and d.next_attempt_at <= now()
                and not (d.id::text in (select x->>'deliveryId' from jsonb_array_elements(outcomes) x))) then
    perform app_private.queue_webhook_attempt(job_delivery_id, now());
  end if;
end $$;
--! EndIncluded webhooks/deliveries.sql
--! Included imports/bank-statements.sql
-- Bank statement imports: the duplicate check and the import of a whole statement into one
-- payment account, set-based (contract: checkBankStatementDups, importBankStatement, Behavior
-- rules 6-8; decisions §8). The operator's import_bank_csv command calls the same functions.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security and grants of this feature's table.

-- app_public.import_batches
drop policy if exists import_batches_tenant on app_public.import_batches;
create policy import_batches_tenant on app_public.import_batches
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant insert, select on app_public.import_batches to accounting_visitor;
grant select on app_public.import_batches to reporting_reader;

------------------------------------------------------------------------------------------------

-- The most rows one API call may check or import. The operator's CLI imports a whole file in
-- one call, whatever its length (chunks would take identical rows for duplicates of each other).
create or replace function app_private.max_statement_rows() returns integer
  language sql immutable parallel safe as
$$ select 5000 $$;
grant execute on function app_private.max_statement_rows() to accounting_visitor;

-- A merchant name as duplicates compare it: runs of white space (tabs and no-break spaces too)
-- collapsed to one space, then trimmed, case ignored.
create or replace function app_private.merchant_key(merchant_name text) returns text
  language sql immutable parallel safe as
$$ select btrim(lower(regexp_replace(normalize(merchant_name, NFC), '[[:space:]' || chr(160) || ']+', ' ', 'g'))) $$;
grant execute on function app_private.merchant_key(merchant_name text) to accounting_visitor;

-- One statement row, validated; every message names the 0-based row. The sign of the amount
-- gives the direction (negative: money out of the payment account), whatever the event type.
create or replace function app_private.bank_statement_row(item jsonb, row_index integer)
  returns table (transaction_date date, amount numeric, direction text, merchant_name text, event_type text,
    memo text, reference text)
  language plpgsql immutable as
$$
declare
  k text;
  v_amount text;
  v_negative boolean;
begin
  if item is null or jsonb_typeof(item) <> 'object' then
    perform app_private.fail(format('Row %s must be an object.', row_index));
  end if;
  foreach k in array array['transactionDate', 'description', 'amount', 'eventType', 'memo', 'reference'] loop
    if jsonb_typeof(item -> k) not in ('string', 'null') then
      perform app_private.fail(format('Row %s: %s must be a string.', row_index, k));
    end if;
  end loop;
  transaction_date := app_private.parse_date(item ->> 'transactionDate',
    format('Row %s: transactionDate must be a date in YYYY-MM-DD format.', row_index));
  merchant_name := app_private.clean_text(item ->> 'description');
  if merchant_name is null or merchant_name = '' then
    perform app_private.fail(format('Row %s: description is required.', row_index));
  end if;
  if length(merchant_name) > 500 then
    perform app_private.fail(format('Row %s: description must be at most 500 characters.', row_index));
  end if;
  v_amount := btrim(item ->> 'amount');
  if v_amount !~ '^[-+]?[0-9]' then v_amount := 'x'; end if; -- a digit right after the sign
  v_negative := left(v_amount, 1) = '-';
  if left(v_amount, 1) in ('-', '+') then v_amount := substr(v_amount, 2); end if;
  amount := app_private.parse_amount(v_amount,
    format('Row %s: amount must be a non-zero decimal string with at most 2 decimals (negative for money out).', row_index));
  direction := case when v_negative then 'out' else 'in' end;
  event_type := item ->> 'eventType';
  if event_type is null or event_type not in ('expense', 'income', 'transfer') then
    perform app_private.fail(format('Row %s: eventType must be one of: expense, income, transfer.', row_index));
  end if;
  memo := coalesce(normalize(item ->> 'memo', NFC), '');
  if length(memo) > 5000 then perform app_private.fail(format('Row %s: memo must be at most 5000 characters.', row_index)); end if;
  reference := nullif(app_private.clean_text(item ->> 'reference'), '');
  if length(reference) > 255 then
    perform app_private.fail(format('Row %s: reference must be at most 255 characters.', row_index));
  end if;
  return next;
end $$;
grant execute on function app_private.bank_statement_row(item jsonb, row_index integer) to accounting_visitor;

-- The events a statement row could duplicate by date and amount: the organization's on the
-- payment account or without one, on the given days with the given amounts. Security definer, so
-- that the index on (organization, date, amount) serves each pair: under row-level security the
-- planner may not use a numeric comparison in an index condition (numeric_eq is not leakproof)
-- and would read the organization's every event. Tenancy: the organization must be the caller's
-- (the one in scope for RLS), and it filters every row. No temporary objects, no unqualified names.
create or replace function app_private.statement_candidates(org uuid, payment_account uuid, days date[], amounts numeric[])
  returns table (id uuid, transaction_date date, functional_amount numeric, direction text, merchant_name text,
    reference text, created timestamptz)
  language sql stable security definer set search_path = pg_catalog, app_public, pg_temp set jit = off as
$$
  select e.id, e.transaction_date, e.functional_amount, e.direction, e.merchant_name, e.reference, e.created
    from app_public.ledger_events e
   where e.organization_id = org and org = app_public.current_organization_id()
     and (e.payment_account_id = payment_account or e.payment_account_id is null)
     and (e.transaction_date, e.functional_amount) in (select d, a from unnest(days, amounts) x (d, a))
$$;
grant execute on function app_private.statement_candidates(org uuid, payment_account uuid, days date[], amounts numeric[]) to accounting_visitor;

-- Each row of a statement matched against the books (decisions §8), one to one: an existing event
-- absorbs at most one row, so n identical rows are all skipped only when n identical events exist.
-- Existing events are those of the payment account or without one, ignored events included (a
-- rejected duplicate must not come back). In order of precedence:
--   1. equal references on the account: a full match, whatever else differs;
--   2. same date, amount, direction and merchant: a full match, unless both carry references
--      and they differ (then they are different transactions);
--   3. a transfer booked into this account from another (a processor payout, a card payment from
--      chequing): same amount, money moving the row's way, dated 0 to 5 days before the row;
--   4. same date, amount and direction, other merchant: a possible match (flagged, imported).
-- Identical rows and identical events pair up in order (the k-th row with the k-th event), so
-- every stage is one statement, whatever the number of rows. The rows and the candidates of
-- stages 2 and 4 sit in temporary tables of the caller's session, dropped at commit.
create or replace function app_private.bank_statement_matches(org uuid, payment_account uuid, rows jsonb)
  returns table (row_index integer, transaction_date date, amount numeric, direction text, merchant_name text,
    event_type text, memo text, reference text, is_duplicate boolean, is_possible_duplicate boolean, matching_event_id uuid)
  -- JIT is off: the plans are cheap probes that look costly over millions of rows.
  language plpgsql volatile set jit = off as
$$
declare
  v_with_reference boolean;
  v_pairs record;
  v_rows_taken integer[] := '{}';
  v_events_taken uuid[] := '{}';
begin
  if org is distinct from app_public.current_organization_id() then perform app_private.fail('Organization Not Found.', 'AU404'); end if;
  if rows is null or jsonb_typeof(rows) <> 'array' then perform app_private.fail('rows must be a list of statement rows.'); end if;
  drop table if exists pg_temp.statement_rows;
  create temporary table statement_rows (
    row_index integer primary key, transaction_date date, amount numeric, direction text, merchant_name text,
    merchant_key text, event_type text, memo text, reference text,
    event_id uuid, full_match boolean not null default false) on commit drop;
  insert into pg_temp.statement_rows (row_index, transaction_date, amount, direction, merchant_name, merchant_key,
      event_type, memo, reference)
    select (r.n - 1)::integer, x.transaction_date, x.amount, x.direction, x.merchant_name,
           app_private.merchant_key(x.merchant_name), x.event_type, x.memo, x.reference
      from jsonb_array_elements(rows) with ordinality r (item, n)
      cross join lateral app_private.bank_statement_row(r.item, (r.n - 1)::integer) x;
  analyze pg_temp.statement_rows;
  drop table if exists pg_temp.statement_candidates;
  create temporary table statement_candidates on commit drop as
    select c.*, app_private.merchant_key(c.merchant_name) merchant_key
      from app_private.statement_candidates(org, payment_account,
             (select array_agg(s.transaction_date) from pg_temp.statement_rows s),
             (select array_agg(s.amount) from pg_temp.statement_rows s)) c;
  analyze pg_temp.statement_candidates;

  -- 1. References: the k-th row of a reference takes the k-th event of it on this account.
  with r as (
    select s.row_index, s.reference, row_number() over (partition by s.reference order by s.row_index) k
      from pg_temp.statement_rows s where s.reference is not null
  ), e as (
    select e.id, e.reference, row_number() over (partition by e.reference order by e.created, e.id) k
      from app_public.ledger_events e
     where e.organization_id = org and e.payment_account_id = payment_account
       and e.reference in (select s.reference from pg_temp.statement_rows s where s.reference is not null)
  )
  update pg_temp.statement_rows s set event_id = e.id, full_match = true
    from r join e on e.reference = r.reference and e.k = r.k
   where s.row_index = r.row_index;

  -- 2. Same day, amount, direction and merchant. Rows with a reference go first, to events
  -- without one (their only possible partners); rows without a reference take any event left.
  foreach v_with_reference in array array[true, false] loop
    with e as (
      select c.id, c.transaction_date, c.functional_amount, c.direction, c.merchant_key,
             row_number() over (partition by c.transaction_date, c.functional_amount, c.direction, c.merchant_key
                                order by c.created, c.id) k
        from pg_temp.statement_candidates c
       where not exists (select 1 from pg_temp.statement_rows t where t.event_id = c.id)
         and (not v_with_reference or c.reference is null)
    ), r as (
      select s.row_index, s.transaction_date, s.amount, s.direction, s.merchant_key,
             row_number() over (partition by s.transaction_date, s.amount, s.direction, s.merchant_key order by s.row_index) k
        from pg_temp.statement_rows s
       where s.event_id is null and (s.reference is not null) = v_with_reference
    )
    update pg_temp.statement_rows s set event_id = e.id, full_match = true
      from r join e on (e.transaction_date, e.functional_amount, e.direction, e.merchant_key, e.k)
                     = (r.transaction_date, r.amount, r.direction, r.merchant_key, r.k)
     where s.row_index = r.row_index;
  end loop;

  -- 3. Transfers into (or out of) this account booked on another: a date window, not an equal
  -- key, so the pairs are taken greedily, each row its nearest event. Few rows get here.
  for v_pairs in
    select s.row_index, e.id
      from pg_temp.statement_rows s
      join app_public.ledger_events e
        on e.organization_id = org and e.category_id = payment_account and e.event_type = 'transfer'
       and e.payment_account_id is distinct from payment_account
       and e.functional_amount = s.amount and e.direction <> s.direction
       and e.transaction_date between s.transaction_date - 5 and s.transaction_date
     where s.event_id is null
       and not exists (select 1 from pg_temp.statement_rows t where t.event_id = e.id)
     order by s.row_index, s.transaction_date - e.transaction_date, e.created, e.id
  loop
    if not (v_pairs.row_index = any (v_rows_taken)) and not (v_pairs.id = any (v_events_taken)) then
      v_rows_taken := v_rows_taken || v_pairs.row_index;
      v_events_taken := v_events_taken || v_pairs.id;
    end if;
  end loop;
  update pg_temp.statement_rows s set event_id = t.id, full_match = true
    from unnest(v_rows_taken, v_events_taken) t (row_index, id)
   where s.row_index = t.row_index;

  -- 4. Possible matches: same day, amount and direction, another merchant; an event not taken by
  -- a full match first. Flagged only: the row is imported. (A further copy of a row whose events
  -- are all taken is no possible match: its merchant is the same, it is simply one more.)
  update pg_temp.statement_rows s set event_id = p.id
    from (select distinct on (r.row_index) r.row_index, c.id
            from pg_temp.statement_rows r
            join pg_temp.statement_candidates c
              on c.transaction_date = r.transaction_date and c.functional_amount = r.amount and c.direction = r.direction
             and c.merchant_key <> r.merchant_key
           where r.event_id is null
             and not (c.reference is not null and r.reference is not null and c.reference <> r.reference)
           order by r.row_index, c.id in (select t.event_id from pg_temp.statement_rows t where t.full_match), c.created, c.id) p
   where s.row_index = p.row_index;

  return query
    select s.row_index, s.transaction_date, s.amount, s.direction, s.merchant_name, s.event_type, s.memo, s.reference,
           s.full_match, s.event_id is not null and not s.full_match, s.event_id
      from pg_temp.statement_rows s order by s.row_index;
end $$;
grant execute on function app_private.bank_statement_matches(org uuid, payment_account uuid, rows jsonb) to accounting_visitor;

-- One row's duplicate-check result as the contract shapes it.
create or replace function app_private.duplicate_check_json(row_index integer, is_duplicate boolean,
    is_possible_duplicate boolean, matching_event_id uuid) returns jsonb
  language sql immutable parallel safe as
$$ select jsonb_build_object('rowIndex', row_index, 'isDuplicate', is_duplicate,
     'isPossibleDuplicate', is_possible_duplicate, 'matchingEventId', matching_event_id) $$;
grant execute on function app_private.duplicate_check_json(row_index integer, is_duplicate boolean, is_possible_duplicate boolean, matching_event_id uuid) to accounting_visitor;

-- The duplicate flags of a statement; writes nothing.
create or replace function app_private.check_bank_statement_dups(org uuid, payment_account_id uuid, rows jsonb) returns jsonb
  language plpgsql volatile as
$$
begin
  perform app_private.scope_organization(org);
  perform app_private.check_payment_account(payment_account_id);
  return (select coalesce(jsonb_agg(app_private.duplicate_check_json(m.row_index, m.is_duplicate,
             m.is_possible_duplicate, m.matching_event_id) order by m.row_index), '[]')
            from app_private.bank_statement_matches(org, payment_account_id, rows) m);
end $$;
grant execute on function app_private.check_bank_statement_dups(org uuid, payment_account_id uuid, rows jsonb) to accounting_visitor;

-- Imports a statement: one event per row that is not a full match, in needs_review on the payment
-- account, categorised by the best category rule. Imports into one account are serialised (a row
-- lock on the account), so two imports of one statement at once give the result of one after
-- the other: the second sees the first's events and skips every row.
create or replace function app_private.import_bank_statement(org uuid, payment_account_id uuid, currency text,
    rows jsonb, file_name text default null) returns jsonb
  language plpgsql volatile as
$$
declare
  v_currency text;
  v_batch uuid;
  v_imported integer;
  v_total integer;
  v_results jsonb;
begin
  perform app_private.scope_organization(org);
  perform set_config('app.audit_action', 'import', true);
  perform app_private.check_payment_account(payment_account_id);
  select o.functional_currency into v_currency from app_public.organizations o where o.id = org;
  if currency is not null and upper(btrim(currency)) <> v_currency then
    perform app_private.fail(format('currency must be the organization''s currency (%s).', v_currency));
  end if;
  -- Later statements of this function see what a concurrent import committed before the lock
  -- (each statement takes a new snapshot at READ COMMITTED, not at a stricter level).
  if current_setting('transaction_isolation') <> 'read committed' then
    perform app_private.fail('A bank statement import must run at the READ COMMITTED isolation level.');
  end if;
  perform 1 from app_public.accounts a where a.id = payment_account_id for no key update;

  v_batch := app_private.uuid_v7();
  insert into app_public.import_batches (id, organization_id, source, batch_key, payment_account_id, file_name,
      actor_api_key_id, actor_user_id)
    values (v_batch, org, 'bank_import', 'bank:' || v_batch, payment_account_id, file_name,
      app_public.current_api_key_id(), app_public.current_user_id());

  with m as (
    select * from app_private.bank_statement_matches(org, payment_account_id, rows)
  ), rules as (
    select b.merchant_name, r.id, r.account_id, a.classification
      from app_private.best_category_rules(org, (select array_agg(m.merchant_name) from m where not m.is_duplicate)) b
      join app_public.category_rules r on r.id = b.rule_id
      join app_public.accounts a on a.id = r.account_id
  ), picked as (
    -- The best rule's account, when it is usable for the event (as createLedgerEvent applies it).
    select m.*, r.id rule_id, r.account_id rule_account
      from m
      left join rules r on r.merchant_name = m.merchant_name
       and app_private.category_fits(m.event_type, r.classification) and r.account_id <> payment_account_id
     where not m.is_duplicate
  ), inserted as (
    insert into app_public.ledger_events (organization_id, event_type, direction, merchant_name, functional_amount,
        functional_currency, transaction_date, memo, reference, category_id, payment_account_id, source, import_batch_id)
      select org, p.event_type, p.direction, p.merchant_name, p.amount, v_currency, p.transaction_date, p.memo,
             p.reference, p.rule_account, payment_account_id, 'bank_import', v_batch
        from picked p order by p.row_index
      returning 1
  ), counted as (
    update app_public.category_rules r set match_count = r.match_count + c.n
      from (select p.rule_id, count(*) n from picked p where p.rule_id is not null group by p.rule_id) c
     where r.id = c.rule_id
  )
  select (select count(*) from inserted), (select count(*) from m),
         (select coalesce(jsonb_agg(app_private.duplicate_check_json(m.row_index, m.is_duplicate, m.is_possible_duplicate,
                  m.matching_event_id) order by m.row_index), '[]') from m)
    into v_imported, v_total, v_results;

  perform app_private.record_webhook_event(org, 'bank_import.completed', v_batch, jsonb_build_object('batchId', v_batch,
    'paymentAccountId', payment_account_id, 'fileName', file_name, 'importedCount', v_imported, 'skippedCount', v_total - v_imported));
  -- The flags each row was imported or skipped by (the operator's preview shows them).
  return jsonb_build_object('importedCount', v_imported, 'skippedCount', v_total - v_imported, 'batchId', v_batch,
    'results', v_results);
end $$;
grant execute on function app_private.import_bank_statement(org uuid, payment_account_id uuid, currency text, rows jsonb, file_name text) to accounting_visitor;

create or replace function app_private.check_statement_size(rows jsonb) returns void
  language plpgsql immutable as
$$
begin
  if rows is not null and jsonb_typeof(rows) = 'array' and jsonb_array_length(rows) > app_private.max_statement_rows() then
    perform app_private.fail(format('At most %s rows per call.', to_char(app_private.max_statement_rows(), 'FM9,999')));
  end if;
end $$;
grant execute on function app_private.check_statement_size(rows jsonb) to accounting_visitor;

create or replace function app_public.check_bank_statement_dups(organization_id uuid, payment_account_id uuid, rows jsonb) returns jsonb
  language plpgsql volatile as
$$
begin
  perform app_private.assert_org_access(organization_id, false);
  perform app_private.check_statement_size(rows);
  return jsonb_build_object('success', true, 'error', null,
    'results', app_private.check_bank_statement_dups(organization_id, payment_account_id, rows));
end $$;
grant execute on function app_public.check_bank_statement_dups(organization_id uuid, payment_account_id uuid, rows jsonb) to accounting_visitor;

create or replace function app_public.import_bank_statement(organization_id uuid, payment_account_id uuid, rows jsonb,
    currency text default null) returns jsonb
  language plpgsql volatile as
$$
declare r jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  perform app_private.check_statement_size(rows);
  r := app_private.import_bank_statement(organization_id, payment_account_id, currency, rows);
  return jsonb_build_object('success', true, 'error', null, 'importedCount', r -> 'importedCount',
    'skippedCount', r -> 'skippedCount', 'batchId', r -> 'batchId');
end $$;
grant execute on function app_public.import_bank_statement(organization_id uuid, payment_account_id uuid, rows jsonb, currency text) to accounting_visitor;
--! EndIncluded imports/bank-statements.sql
--! Included imports/processor-balance.sql
-- Processor balance imports (contract: Server-side commands, CSV row mapping; decisions §10).
-- The CLI and the worker stream a CSV into a per-transaction staging table in chunks
-- (processor_import_begin, processor_import_stage), then one set-based call posts everything
-- (processor_import_post); delete_processor_imports takes a batch, or all of them, back out.
-- These are the operator's (owner connection) functions: each puts the organization it is given in
-- scope, so none is granted to the API's role. The pure helpers are.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- What a row of the export is, from its classifier: layout A's `Type` (the balance transaction
-- type, real exports' names included) or layout B's `reporting_category`. Anything else is
-- 'unsupported': counted and listed by id, never dropped silently.
create or replace function app_private.processor_row_kind(layout text, row_type text) returns text
  language sql immutable parallel safe as
$$
  select case when layout = 'A' then
      case lower(btrim(row_type))
        when 'charge' then 'charge' when 'payment' then 'charge'
        when 'refund' then 'refund' when 'payment_refund' then 'refund'
        when 'transfer' then 'transfer'
        when 'processor_fee' then 'processor_fee' when 'stripe_fee' then 'processor_fee'
        when 'payout' then 'payout'
        when 'application_fee' then 'application_fee'
        else 'unsupported' end
    else
      case lower(btrim(row_type))
        when 'charge' then 'charge'
        when 'refund' then 'refund'
        when 'transfer' then 'transfer'
        when 'fee' then 'processor_fee'
        when 'platform_earning' then 'application_fee'
        when 'payout' then 'payout'
        else 'unsupported' end
    end
$$;
grant execute on function app_private.processor_row_kind(layout text, row_type text) to accounting_visitor;

-- The event type of each kind of row (the contract's mapping table); a row's fee is an expense.
create or replace function app_private.processor_event_type(kind text) returns text
  language sql immutable parallel safe as
$$
  select case kind when 'charge' then 'income' when 'refund' then 'refund' when 'transfer' then 'expense'
    when 'processor_fee' then 'expense' when 'payout' then 'transfer' when 'fee' then 'expense' end
$$;
grant execute on function app_private.processor_event_type(kind text) to accounting_visitor;

-- The account an import books to, by role: found, else created as the starter chart has it.
-- The clearing account is any active account of type `clearing` (Processor Clearing first); the
-- others are found by name. An account that exists but cannot take the role is an error.
create or replace function app_private.processor_import_account(org uuid, role text) returns uuid
  language plpgsql volatile as
$$
declare
  spec record;
  a app_public.accounts;
begin
  select * into spec from (values
      ('clearing', 'Processor Clearing', 'clearing', 'asset', '1007'),
      ('sales', 'Sales Revenue', 'income', 'revenue', '8000'),
      ('fees', 'Bank Fees & Charges', 'expense', 'expense', '8715'),
      ('cogs', 'Cost of Goods Sold', 'cost_of_goods_sold', 'expense', '8320'),
      ('chequing', 'Chequing', 'bank', 'asset', '1002')
    ) v (role, name, account_type, classification, code)
   where v.role = processor_import_account.role;
  if not found then perform app_private.fail(format('Unknown account role %s.', role)); end if;
  if role = 'clearing' then
    select * into a from app_public.accounts x
     where x.organization_id = org and x.account_type = 'clearing' and x.active
     order by lower(x.name) = lower(spec.name) desc, x.created, x.id limit 1;
    if found then return a.id; end if;
  end if;
  -- Two imports at once create it once (the name is unique per organization).
  insert into app_public.accounts (organization_id, name, account_type, classification, tax_code_id)
    select org, spec.name, spec.account_type, spec.classification, t.id
      from app_public.tax_codes t where t.code = spec.code
    on conflict (organization_id, lower(name)) do nothing;
  select * into a from app_public.accounts x where x.organization_id = org and lower(x.name) = lower(spec.name);
  if not found then perform app_private.fail(format('Account "%s" could not be created.', spec.name)); end if;
  if not a.active then
    perform app_private.fail(format('Account "%s" is inactive; reactivate it before importing.', a.name));
  end if;
  if a.classification <> spec.classification or (role in ('clearing', 'chequing') and a.account_type <> spec.account_type) then
    perform app_private.fail(format('Account "%s" must be a%s %s account for processor imports.', a.name,
      case when role in ('clearing', 'chequing') then '' else 'n' end,
      case when role in ('clearing', 'chequing') then spec.account_type else spec.classification end));
  end if;
  return a.id;
end $$;

-- Starts an import in the caller's transaction: the organization in scope and an empty staging
-- table (dropped at the end of the transaction).
create or replace function app_private.processor_import_begin(org uuid) returns void
  language plpgsql volatile as
$$
begin
  perform set_config('app.organization_id', org::text, true);
  if not exists (select 1 from app_public.organizations o where o.id = org) then
    perform app_private.fail('Organization not found.', 'AP404');
  end if;
  if to_regclass('pg_temp.processor_import_rows') is not null then drop table pg_temp.processor_import_rows; end if;
  create temp table processor_import_rows (
    line integer not null,
    id text not null,
    row_type text not null,
    amount numeric(20,2) not null,
    fee numeric(20,2) not null,
    created date not null,
    description text not null,
    source_ref text not null,
    currency text not null
  ) on commit drop;
end $$;

-- One chunk of parsed rows (the reader checked every value's form and names the line of a bad one).
create or replace function app_private.processor_import_stage(lines integer[], ids text[], row_types text[],
    amounts numeric[], fees numeric[], dates date[], descriptions text[], sources text[], currencies text[]) returns integer
  language plpgsql volatile as
$$
begin
  insert into pg_temp.processor_import_rows (line, id, row_type, amount, fee, created, description, source_ref, currency)
    select * from unnest(lines, ids, row_types, amounts, fees, dates, descriptions, sources, currencies);
  return coalesce(cardinality(lines), 0);
end $$;

-- Posts the staged rows, set-based whatever their number (decisions §10, gross revenue method):
-- one import batch row; one insert of every event (a charge at its gross amount, a nonzero fee
-- as a second event to Bank Fees & Charges), skipping ids imported before by any batch, also by
-- an import running at the same time (the unique source index: the later insert waits for the
-- earlier transaction, then skips), already confirmed with their entries' ids unless `review`;
-- then one call that posts their journal entries. Returns the counts.
create or replace function app_private.processor_import_post(org uuid, layout text, file_name text,
    review boolean default false) returns jsonb
  language plpgsql volatile as
$$
declare
  cur text;
  v_ts timestamptz := clock_timestamp();
  v_key text;
  v_batch uuid;
  n_rows integer; n_app integer; n_unsupported integer; n_zero integer; n_eligible integer;
  v_unsupported jsonb;
  v_ids uuid[];
  n_created integer; n_rows_created integer;
  has_kind text[];
  a_clearing uuid; a_sales uuid; a_fees uuid; a_cogs uuid; a_chequing uuid;
begin
  perform set_config('app.organization_id', org::text, true);
  perform set_config('app.audit_action', 'import', true);
  -- Sorts of 100,000s of rows in memory; no JIT compilation (it costs more than it saves here).
  perform set_config('work_mem', '64MB', true);
  perform set_config('jit', 'off', true);
  if layout not in ('A', 'B') then perform app_private.fail('Layout must be A or B.'); end if;
  select o.functional_currency into cur from app_public.organizations o where o.id = org;
  if not found then perform app_private.fail('Organization not found.', 'AP404'); end if;
  -- Every row in the organization's currency: amounts are booked as they stand, never converted.
  perform app_private.fail(format('Line %s, column %s: "%s" is not the organization''s currency (%s).',
      r.line, case layout when 'A' then 'Currency' else 'currency' end, r.currency, cur))
    from (select x.line, x.currency from pg_temp.processor_import_rows x
           where upper(x.currency) <> cur order by x.line limit 1) r;

  -- What the file holds, in one pass.
  select count(*),
         count(*) filter (where k.kind = 'application_fee'),
         count(*) filter (where k.kind = 'unsupported'),
         count(*) filter (where k.kind not in ('application_fee', 'unsupported') and r.amount = 0 and r.fee = 0),
         count(*) filter (where k.kind not in ('application_fee', 'unsupported') and (r.amount <> 0 or r.fee <> 0)),
         coalesce(jsonb_agg(jsonb_build_object('line', r.line, 'id', r.id, 'type', r.row_type) order by r.line)
                    filter (where k.kind = 'unsupported'), '[]'::jsonb),
         array_agg(distinct k.kind)
    into n_rows, n_app, n_unsupported, n_zero, n_eligible, v_unsupported, has_kind
    from pg_temp.processor_import_rows r
    cross join lateral (select app_private.processor_row_kind(layout, r.row_type) as kind) k;

  -- The accounts the rows need, found or created.
  if n_eligible > 0 then
    a_clearing := app_private.processor_import_account(org, 'clearing');
    a_fees := app_private.processor_import_account(org, 'fees');
    if has_kind && array['charge', 'refund'] then a_sales := app_private.processor_import_account(org, 'sales'); end if;
    if has_kind && array['transfer'] then a_cogs := app_private.processor_import_account(org, 'cogs'); end if;
    if has_kind && array['payout'] then a_chequing := app_private.processor_import_account(org, 'chequing'); end if;
  end if;

  -- One batch per run, `processor:<UTC timestamp>`; runs in the same millisecond take the next one.
  loop
    v_key := 'processor:' || to_char(v_ts at time zone 'UTC', 'YYYYMMDD"T"HH24MISSMS"Z"');
    insert into app_public.import_batches (organization_id, source, batch_key, payment_account_id, file_name)
      values (org, 'processor_import', v_key, a_clearing, left(file_name, 500))
      on conflict (organization_id, batch_key) do nothing
      returning id into v_batch;
    exit when v_batch is not null;
    v_ts := v_ts + interval '1 millisecond';
  end loop;

  with rows as (
    -- The first line of each id; a repeated id in the same file is a duplicate.
    select distinct on (r.id) r.*, app_private.processor_row_kind(layout, r.row_type) as kind
      from pg_temp.processor_import_rows r
     order by r.id, r.line
  ),
  candidates as (
    select r.id as row_id, r.line, r.id as source_id, r.kind, r.amount as signed, r.row_type, r.description, r.source_ref, r.created
      from rows r where r.kind not in ('application_fee', 'unsupported') and r.amount <> 0
    union all
    -- A fee is an expense (direction out); a negative fee is a fee given back (direction in).
    select r.id, r.line, r.id || ':fee', 'fee', -r.fee, r.row_type, r.description, r.source_ref, r.created
      from rows r where r.kind not in ('application_fee', 'unsupported') and r.fee <> 0
  ),
  inserted as (
    insert into app_public.ledger_events (organization_id, event_type, direction, merchant_name, functional_amount,
        functional_currency, transaction_date, memo, category_id, payment_account_id, status,
        source, source_id, import_batch_id, backfill_id, journal_entry_id)
      select org, app_private.processor_event_type(c.kind), case when c.signed > 0 then 'in' else 'out' end,
             left(coalesce(case when c.kind <> 'fee' then nullif(app_private.clean_text(c.description), '') end,
                           case c.kind when 'charge' then 'Processor charge' when 'refund' then 'Processor refund'
                             when 'transfer' then 'Processor transfer' when 'payout' then 'Processor payout'
                             else 'Processor fee' end), 500),
             abs(c.signed), cur, c.created,
             left(case when c.kind = 'fee' then format('Processor fee on %s %s', c.row_type, c.row_id)
                       else format('Processor %s %s', c.row_type, c.row_id) end
                  || case when c.source_ref <> '' then format(' (%s)', c.source_ref) else '' end, 5000),
             case c.kind when 'charge' then a_sales when 'refund' then a_sales when 'transfer' then a_cogs
                         when 'payout' then a_chequing else a_fees end,
             a_clearing, case when review then 'needs_review' else 'confirmed' end,
             'processor_import', c.source_id, v_batch, v_key || ':' || c.source_id,
             -- Confirmed as they are written, with the id of the entry posted below: no update of
             -- every event afterwards (post_journal_entries takes such events).
             case when not review then app_private.uuid_v7() end
        from candidates c
       -- One global order: imports running at once wait for each other instead of deadlocking.
       order by c.source_id
      on conflict (organization_id, source, source_id) where source_id is not null do nothing
      returning id, source_id
  )
  select (select array_agg(i.id) from inserted i),
         (select count(*) from inserted),
         (select count(distinct c.row_id) from candidates c join inserted i on i.source_id = c.source_id)
    into v_ids, n_created, n_rows_created;

  if not review and n_created > 0 then
    perform app_private.post_journal_entries(v_ids);
  end if;

  perform app_private.record_webhook_event(org, 'processor_import.completed', null, jsonb_build_object(
    'batchId', v_key, 'layout', layout, 'fileName', file_name, 'rows', n_rows, 'created', n_created,
    'status', case when review then 'needs_review' else 'confirmed' end));
  return jsonb_build_object(
    'batchId', v_key,
    'layout', layout,
    'rows', n_rows,
    'created', n_created,
    'createdRows', n_rows_created,
    'skippedApplicationFee', n_app,
    'skippedDuplicate', n_eligible - n_rows_created,
    'skippedUnsupported', n_unsupported,
    'unsupported', v_unsupported,
    'skippedZeroAmount', n_zero,
    'status', case when review then 'needs_review' else 'confirmed' end);
end $$;

-- Removes processor imports of an organization: one batch (its key) or all of them, with their
-- events, journal entries and lines, in the caller's transaction; `dry_run` counts only.
create or replace function app_private.delete_processor_imports(org uuid, batch_key text default null,
    dry_run boolean default false) returns jsonb
  language plpgsql volatile as
$$
declare
  v_batches uuid[];
  v_keys jsonb;
  n_events integer; n_entries integer; n_lines integer;
begin
  perform set_config('app.organization_id', org::text, true);
  perform set_config('app.audit_action', 'delete_import', true);
  if not exists (select 1 from app_public.organizations o where o.id = org) then
    perform app_private.fail('Organization not found.', 'AP404');
  end if;
  -- Locked: a concurrent delete of the same batch waits, then finds nothing left.
  with b as (
    select x.id, x.batch_key from app_public.import_batches x
     where x.organization_id = org and x.source = 'processor_import'
       and (delete_processor_imports.batch_key is null or x.batch_key = delete_processor_imports.batch_key)
     order by x.batch_key
     for update
  )
  select coalesce(array_agg(b.id order by b.batch_key), '{}'), coalesce(jsonb_agg(b.batch_key order by b.batch_key), '[]')
    into v_batches, v_keys from b;
  if batch_key is not null and cardinality(v_batches) = 0 then
    perform app_private.fail(format('No processor import batch "%s".', batch_key), 'AP404');
  end if;

  select (select count(*) from app_public.ledger_events e
           where e.organization_id = org and e.source = 'processor_import' and e.import_batch_id = any (v_batches)),
         (select count(*) from app_public.journal_entries je join app_public.ledger_events e on e.id = je.event_id
           where e.organization_id = org and e.source = 'processor_import' and e.import_batch_id = any (v_batches)),
         (select count(*) from app_public.journal_lines l
            join app_public.journal_entries je on je.id = l.entry_id join app_public.ledger_events e on e.id = je.event_id
           where e.organization_id = org and e.source = 'processor_import' and e.import_batch_id = any (v_batches))
    into n_events, n_entries, n_lines;

  if not dry_run then
    -- Each deleted row has its foreign keys checked by a query planned from the statistics; right
    -- after a large import they may not know its rows yet, and a check would then read all of the
    -- organization's rows instead of one (minutes instead of seconds for 100,000 events).
    if n_events > 1000 then
      analyze app_public.ledger_events;
      analyze app_public.journal_entries;
      analyze app_public.journal_lines;
    end if;
    -- Linked receipts first: receipt, then event, is the order every link takes its locks in.
    perform 1 from app_public.receipts r join app_public.ledger_events e on e.id = r.event_id
     where e.organization_id = org and e.source = 'processor_import' and e.import_batch_id = any (v_batches)
     order by r.id for update of r;
    delete from app_public.journal_lines l
     using app_public.journal_entries je, app_public.ledger_events e
     where l.entry_id = je.id and je.event_id = e.id
       and e.organization_id = org and e.source = 'processor_import' and e.import_batch_id = any (v_batches);
    delete from app_public.journal_entries je
     using app_public.ledger_events e
     where je.event_id = e.id
       and e.organization_id = org and e.source = 'processor_import' and e.import_batch_id = any (v_batches);
    delete from app_public.ledger_events e
     where e.organization_id = org and e.source = 'processor_import' and e.import_batch_id = any (v_batches);
    delete from app_public.import_batches x where x.id = any (v_batches);
  end if;

  return jsonb_build_object('batches', cardinality(v_batches), 'batchIds', v_keys, 'events', n_events,
    'journalEntries', n_entries, 'journalLines', n_lines, 'dryRun', dry_run);
end $$;
--! EndIncluded imports/processor-balance.sql
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
drop trigger if exists _800_audit_insert on app_public.ledger_events;
create trigger _800_audit_insert after insert on app_public.ledger_events
  referencing new table as new_rows for each statement execute function app_private.tg_ledger_events__audit();

drop trigger if exists _800_audit_update on app_public.ledger_events;
create trigger _800_audit_update after update on app_public.ledger_events
  referencing old table as old_rows new table as new_rows for each statement execute function app_private.tg_ledger_events__audit();

drop trigger if exists _800_audit_delete on app_public.ledger_events;
create trigger _800_audit_delete after delete on app_public.ledger_events
  referencing old table as old_rows for each statement execute function app_private.tg_ledger_events__audit();

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

-- Receipts linked to an event, oldest first (contract: receipts `{id, filename, objectKey, uploadedAt}`).
create or replace function app_private.event_receipts(event_id uuid) returns jsonb
  language sql stable as
$$ select coalesce(jsonb_agg(jsonb_build_object('id', r.id, 'filename', r.filename, 'objectKey', r.object_key,
     'uploadedAt', app_private.iso(r.uploaded_at), 'contentType', r.content_type, 'status', r.status)
     order by r.uploaded_at, r.id), '[]'::jsonb)
     from app_public.receipts r where r.event_id = event_receipts.event_id $$;
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
    'source', e.source, 'importBatchId', e.import_batch_id, 'reference', e.reference,
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
  perform app_private.record_webhook_event(organization_id, 'ledger_event.created', v_id);
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

-- One event's memo against a search pattern, read from the table by id. A function, not a
-- subquery: the planner would hash a subquery over every memo of the table instead of reading
-- the few events of the page's range that have one.
create or replace function app_private.memo_matches(event_id uuid, pattern text) returns boolean
  language plpgsql stable as
$$
begin
  return exists (select 1 from app_public.ledger_events m where m.id = event_id and m.memo ilike pattern);
end $$;
grant execute on function app_private.memo_matches(event_id uuid, pattern text) to accounting_visitor;

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
    -- Answered from the date index (merchant_name and has_memo are in it); only events that have
    -- a memo are read from the table (a memo of up to 5,000 characters cannot ride in an index).
    v_where := v_where || ' and (e.merchant_name ilike $11 or (e.has_memo and app_private.memo_matches(e.id, $11)))';
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
  select p.entry_id into v_entry from app_private.post_journal_entries(array[e.id]) p;
  perform app_private.record_webhook_event(organization_id, 'ledger_event.confirmed', e.id);
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
  perform app_private.record_webhook_event(organization_id, 'ledger_event.rejected', e.id);
  return jsonb_build_object('success', true, 'error', null, 'eventId', e.id);
end $$;
grant execute on function app_public.reject_ledger_event(organization_id uuid, event_id uuid) to accounting_visitor;
--! EndIncluded ledger/transitions.sql
--! Included receipts/receipts.sql
-- Receipts: the record of a stored file, its lifecycle, and the operations a person uses on it
-- (contract: Receipt; decisions §9, §12). Intake is in intake.sql, matching in matching.sql.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.receipts
drop policy if exists receipts_tenant on app_public.receipts;
create policy receipts_tenant on app_public.receipts
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select, insert on app_public.receipts to accounting_visitor;
grant update (status, match_status, event_id, linked_by, linked_at, match_details, receipt_date, updated) on app_public.receipts to accounting_visitor;

-- app_public.receipt_unlinked_pairs
drop policy if exists receipt_unlinked_pairs_tenant on app_public.receipt_unlinked_pairs;
create policy receipt_unlinked_pairs_tenant on app_public.receipt_unlinked_pairs
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select, insert on app_public.receipt_unlinked_pairs to accounting_visitor;

-- An event removed under a linked receipt (a processor import deleted) sets only event_id null:
-- the link's other columns follow, so the receipt reads unmatched rather than linked to nothing.
create or replace function app_private.tg_receipts__link_state() returns trigger
  language plpgsql as
$$
begin
  if new.event_id is null and old.event_id is not null then
    new.linked_by := null;
    new.linked_at := null;
    if new.match_status = 'matched' then new.match_status := 'unmatched'; end if;
    -- The person's link is gone with its event: the receipt waits for review (and matching) again.
    if new.status = 'reviewed' then new.status := case when new.extracted_at is null then 'draft' else 'processed' end; end if;
  end if;
  return new;
end $$;

-- hasDocument is true while a receipt is linked: kept by the database, whoever links or unlinks.
create or replace function app_private.tg_receipts__has_document() returns trigger
  language plpgsql as
$$
declare ids uuid[];
begin
  if tg_op = 'INSERT' then ids := array[new.event_id];
  elsif tg_op = 'DELETE' then ids := array[old.event_id];
  elsif new.event_id is distinct from old.event_id then ids := array[old.event_id, new.event_id];
  else return null;
  end if;
  -- Locked first, in id order: a concurrent link or unlink of the same event waits here, and the
  -- update below (a new statement) then sees what it committed.
  perform 1 from app_public.ledger_events e where e.id = any (ids) order by e.id for no key update;
  update app_public.ledger_events e
     set has_document = exists (select 1 from app_public.receipts r where r.event_id = e.id)
   where e.id = any (ids)
     and e.has_document is distinct from exists (select 1 from app_public.receipts r where r.event_id = e.id);
  return null;
end $$;
grant execute on function app_private.tg_receipts__has_document() to accounting_visitor;

drop trigger if exists _100_touch_updated on app_public.receipts;
create trigger _100_touch_updated before update on app_public.receipts
  for each row execute function app_private.tg__touch_updated();

drop trigger if exists _200_link_state on app_public.receipts;
create trigger _200_link_state before update of event_id on app_public.receipts
  for each row execute function app_private.tg_receipts__link_state();

drop trigger if exists _500_has_document on app_public.receipts;
create trigger _500_has_document after insert or update of event_id or delete on app_public.receipts
  for each row execute function app_private.tg_receipts__has_document();

------------------------------------------------------------------------------------------------

-- The receipt as the API shows it. imageUrl is signed by the server from objectKey and contentType.
create or replace function app_private.receipt_json(r app_public.receipts, e app_public.ledger_events, full_text boolean default false)
  returns jsonb
  language sql stable as
$$
  select jsonb_build_object(
    'id', r.id, 'vendorName', r.vendor_name, 'amount', r.amount, 'currency', r.currency,
    'receiptDate', to_char(r.receipt_date, 'YYYY-MM-DD'),
    'dateReadings', (select coalesce(jsonb_agg(to_char(d, 'YYYY-MM-DD') order by d), '[]'::jsonb) from unnest(r.date_readings) d),
    'status', r.status, 'source', r.source, 'matchStatus', r.match_status,
    'filename', r.filename, 'contentType', r.content_type, 'size', r.size, 'objectKey', r.object_key,
    'uploadedAt', app_private.iso(r.uploaded_at), 'extractedAt', app_private.iso(r.extracted_at),
    'extractionMethod', r.extraction_method, 'extractionError', r.extraction_error,
    'extractedText', case when full_text then r.extracted_text end,
    'linkedBy', r.linked_by, 'linkedAt', app_private.iso(r.linked_at),
    'event', case when e.id is null then null else jsonb_build_object('id', e.id, 'merchantName', e.merchant_name,
      'status', e.status, 'transactionDate', to_char(e.transaction_date, 'YYYY-MM-DD'),
      'functionalAmount', app_private.money(e.functional_amount)) end,
    'created', app_private.iso(r.created), 'updated', app_private.iso(r.updated))
$$;
grant execute on function app_private.receipt_json(r app_public.receipts, e app_public.ledger_events, full_text boolean) to accounting_visitor;

create or replace function app_private.receipt_json_by_id(receipt_id uuid, full_text boolean default false) returns jsonb
  language sql stable as
$$ select app_private.receipt_json(r, e, full_text) from app_public.receipts r
     left join app_public.ledger_events e on e.id = r.event_id where r.id = receipt_json_by_id.receipt_id $$;
grant execute on function app_private.receipt_json_by_id(receipt_id uuid, full_text boolean) to accounting_visitor;

-- A receipt of the organization in scope, locked for a change; a clear error when there is none.
create or replace function app_private.receipt_for_update(receipt_id uuid) returns app_public.receipts
  language plpgsql volatile as
$$
declare r app_public.receipts;
begin
  select * into r from app_public.receipts x where x.id = receipt_id for update;
  if not found then perform app_private.fail('Receipt not found.', 'AP404'); end if;
  return r;
end $$;
grant execute on function app_private.receipt_for_update(receipt_id uuid) to accounting_visitor;

-- An event a receipt may be linked to, locked: links to one event are made one at a time.
create or replace function app_private.event_for_link(event_id uuid) returns app_public.ledger_events
  language plpgsql volatile as
$$
declare e app_public.ledger_events;
begin
  select * into e from app_public.ledger_events x where x.id = event_id for no key update;
  if not found then perform app_private.fail('Ledger event not found.', 'AP404'); end if;
  if e.status = 'ignored' then perform app_private.fail('A receipt cannot be linked to a rejected event.'); end if;
  return e;
end $$;
grant execute on function app_private.event_for_link(event_id uuid) to accounting_visitor;

-- The receipt a stored file becomes (decisions §12): the same bytes twice in one organization give
-- back the first receipt. A new one is queued for extraction in the same transaction.
create or replace function app_private.store_receipt(org uuid, source text, object_key text, filename text,
    content_type text, size bigint, sha256 text, intake_message_id uuid default null)
  returns jsonb
  language plpgsql volatile as
$$
#variable_conflict use_column
declare
  v_id uuid;
begin
  insert into app_public.receipts (organization_id, source, object_key, filename, content_type, size, sha256, intake_message_id)
    values (org, source, object_key, left(coalesce(filename, ''), 255), content_type, size, sha256, intake_message_id)
    on conflict (organization_id, sha256) do nothing
    returning id into v_id;
  if v_id is null then
    select r.id into v_id from app_public.receipts r where r.organization_id = org and r.sha256 = store_receipt.sha256;
    return jsonb_build_object('receiptId', v_id, 'duplicate', true);
  end if;
  perform app_private.queue_receipt_extraction(org, v_id);
  perform app_private.record_webhook_event(org, 'receipt.received', v_id);
  return jsonb_build_object('receiptId', v_id, 'duplicate', false);
end $$;
grant execute on function app_private.store_receipt(org uuid, source text, object_key text, filename text, content_type text, size bigint, sha256 text, intake_message_id uuid) to accounting_visitor;

-- A web upload of this organization, by its key (another organization's key is not found).
create or replace function app_private.upload_by_key(object_key text) returns app_public.uploads
  language plpgsql stable as
$$
declare u app_public.uploads;
begin
  select * into u from app_public.uploads x where x.object_key = upload_by_key.object_key
     and x.organization_id = app_public.current_organization_id();
  if not found then perform app_private.fail('Upload not found: upload the file with POST /uploads first.', 'AP404'); end if;
  return u;
end $$;
grant execute on function app_private.upload_by_key(object_key text) to accounting_visitor;

-- The web upload under this key (of the organization in scope) as a receipt, named `filename` or
-- as uploaded: {receiptId, duplicate}.
create or replace function app_private.store_upload_receipt(object_key text, filename text) returns jsonb
  language plpgsql volatile as
$$
declare u app_public.uploads := app_private.upload_by_key(object_key);
begin
  return app_private.store_receipt(u.organization_id, 'web_upload', u.object_key,
    coalesce(nullif(app_private.clean_text(filename), ''), u.filename), u.content_type, u.size, u.sha256);
end $$;
grant execute on function app_private.store_upload_receipt(object_key text, filename text) to accounting_visitor;

create or replace function app_public.create_receipt(organization_id uuid, object_key text, filename text default null) returns jsonb
  language plpgsql volatile as
$$
declare stored jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  stored := app_private.store_upload_receipt(object_key, filename);
  return jsonb_build_object('success', true, 'error', null, 'receiptId', stored->'receiptId', 'duplicate', stored->'duplicate',
    'receipt', app_private.receipt_json_by_id((stored->>'receiptId')::uuid));
end $$;
grant execute on function app_public.create_receipt(organization_id uuid, object_key text, filename text) to accounting_visitor;

-- A person's link (decisions §12): the receipt is reviewed, matched, and linked to this event
-- only; a link made by matching to this event is confirmed.
create or replace function app_private.link_receipt(r app_public.receipts, e app_public.ledger_events) returns void
  language plpgsql volatile as
$$
begin
  if r.status = 'rejected' then perform app_private.fail('A rejected receipt cannot be linked.'); end if;
  update app_public.receipts x set event_id = e.id, linked_by = 'person', linked_at = now(), status = 'reviewed',
         match_status = 'matched', receipt_date = coalesce(app_private.reading_nearest(x.date_readings, e.transaction_date), x.receipt_date)
   where x.id = r.id;
  -- Linked anew: a person confirming matching's link to the same event is no new match.
  if r.event_id is distinct from e.id then
    perform app_private.record_webhook_event(r.organization_id, 'receipt.matched', r.id);
  end if;
end $$;
grant execute on function app_private.link_receipt(r app_public.receipts, e app_public.ledger_events) to accounting_visitor;

create or replace function app_public.attach_receipt_to_event(organization_id uuid, event_id uuid, object_key text, filename text default null)
  returns jsonb
  language plpgsql volatile as
$$
declare
  e app_public.ledger_events;
  r app_public.receipts;
begin
  perform app_private.assert_org_access(organization_id, false);
  -- The receipt, then the event: the order every link takes its locks in.
  r := app_private.receipt_for_update((app_private.store_upload_receipt(object_key, filename)->>'receiptId')::uuid);
  e := app_private.event_for_link(event_id);
  if r.event_id is not null and r.event_id <> e.id and r.linked_by = 'person' then
    perform app_private.fail('This file is already attached to another transaction; unlink it first.');
  end if;
  perform app_private.link_receipt(r, e);
  return jsonb_build_object('success', true, 'error', null, 'receiptId', r.id);
end $$;
grant execute on function app_public.attach_receipt_to_event(organization_id uuid, event_id uuid, object_key text, filename text) to accounting_visitor;

create or replace function app_public.link_receipt_to_event(organization_id uuid, receipt_id uuid, event_id uuid) returns jsonb
  language plpgsql volatile as
$$
declare
  r app_public.receipts;
  e app_public.ledger_events;
begin
  perform app_private.assert_org_access(organization_id, false);
  -- The receipt, then the event: the order matching locks them in.
  r := app_private.receipt_for_update(receipt_id);
  e := app_private.event_for_link(event_id);
  perform app_private.link_receipt(r, e);
  return jsonb_build_object('success', true, 'error', null, 'receipt', app_private.receipt_json_by_id(r.id));
end $$;
grant execute on function app_public.link_receipt_to_event(organization_id uuid, receipt_id uuid, event_id uuid) to accounting_visitor;

-- Unlinking remembers the pair (never linked again automatically) and leaves the receipt to
-- matching for any other event.
create or replace function app_private.unlink_receipt(r app_public.receipts, new_status text) returns void
  language plpgsql volatile as
$$
begin
  if r.event_id is not null then
    insert into app_public.receipt_unlinked_pairs (organization_id, receipt_id, event_id)
      values (r.organization_id, r.id, r.event_id) on conflict do nothing;
  end if;
  update app_public.receipts x set event_id = null, linked_by = null, linked_at = null, status = new_status,
         match_status = case when new_status = 'draft' then 'pending' else 'unmatched' end, match_details = null
   where x.id = r.id;
  -- A link removed; a receipt never linked (rejected unread, say) changes no match.
  if r.event_id is not null then
    perform app_private.record_webhook_event(r.organization_id, 'receipt.unmatched', r.id);
  end if;
end $$;
grant execute on function app_private.unlink_receipt(r app_public.receipts, new_status text) to accounting_visitor;

create or replace function app_public.unlink_receipt(organization_id uuid, receipt_id uuid) returns jsonb
  language plpgsql volatile as
$$
declare r app_public.receipts;
begin
  perform app_private.assert_org_access(organization_id, false);
  r := app_private.receipt_for_update(receipt_id);
  if r.event_id is null then perform app_private.fail('Receipt is not linked to a transaction.'); end if;
  if r.status = 'rejected' then perform app_private.fail('Receipt is rejected.'); end if;
  perform app_private.unlink_receipt(r, case when r.extracted_at is null then 'draft' else 'processed' end);
  if r.extracted_at is not null then
    perform app_private.queue_receipt_matching(r.organization_id, array[r.id]);
  end if;
  return jsonb_build_object('success', true, 'error', null, 'receipt', app_private.receipt_json_by_id(r.id));
end $$;
grant execute on function app_public.unlink_receipt(organization_id uuid, receipt_id uuid) to accounting_visitor;

create or replace function app_public.reject_receipt(organization_id uuid, receipt_id uuid) returns jsonb
  language plpgsql volatile as
$$
declare r app_public.receipts;
begin
  perform app_private.assert_org_access(organization_id, false);
  r := app_private.receipt_for_update(receipt_id);
  if r.status = 'rejected' then perform app_private.fail('Receipt is already rejected.'); end if;
  perform app_private.unlink_receipt(r, 'rejected');
  return jsonb_build_object('success', true, 'error', null, 'receipt', app_private.receipt_json_by_id(r.id));
end $$;
grant execute on function app_public.reject_receipt(organization_id uuid, receipt_id uuid) to accounting_visitor;

create or replace function app_public.get_receipt(organization_id uuid, receipt_id uuid) returns jsonb
  language plpgsql stable as
$$
declare result jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  result := app_private.receipt_json_by_id(receipt_id, true);
  if result is null then perform app_private.fail('Receipt not found.', 'AP404'); end if;
  return result;
end $$;
grant execute on function app_public.get_receipt(organization_id uuid, receipt_id uuid) to accounting_visitor;

-- Newest first (by arrival), filtered; the paginated envelope (decisions §5).
create or replace function app_public.list_receipts(organization_id uuid, "limit" integer default null, "offset" integer default null,
    search text default null, status text default null, source text default null, match_status text default null,
    event_id uuid default null) returns jsonb
  language plpgsql stable as
$$
declare
  lim integer;
  off integer;
  pattern text := app_private.like_pattern(nullif(app_private.clean_text(search), ''));
begin
  perform app_private.assert_org_access(organization_id, false);
  lim := app_private.page_size("limit");
  off := app_private.page_offset("offset");
  if status is not null and status not in ('draft', 'processed', 'reviewed', 'rejected') then
    perform app_private.fail('status must be one of: draft, processed, reviewed, rejected.');
  end if;
  if source is not null and source not in ('web_upload', 'email', 'sms', 'mailbox', 'cloud_drive') then
    perform app_private.fail('source must be one of: web_upload, email, sms, mailbox, cloud_drive.');
  end if;
  if match_status is not null and match_status not in ('pending', 'matched', 'unmatched') then
    perform app_private.fail('matchStatus must be one of: pending, matched, unmatched.');
  end if;
  return (
    with f as (
      select r from app_public.receipts r
       where r.organization_id = list_receipts.organization_id
         and (pattern is null or r.vendor_name ilike pattern)
         and (list_receipts.status is null or r.status = list_receipts.status)
         and (list_receipts.source is null or r.source = list_receipts.source)
         and (list_receipts.match_status is null or r.match_status = list_receipts.match_status)
         and (list_receipts.event_id is null or r.event_id = list_receipts.event_id)
    ), page as (
      select f.r, row_number() over (order by (f.r).uploaded_at desc, (f.r).id desc) as rn
        from f order by (f.r).uploaded_at desc, (f.r).id desc limit lim offset off
    )
    select jsonb_build_object(
      'items', coalesce((select jsonb_agg(app_private.receipt_json(page.r, e) order by page.rn)
                           from page left join app_public.ledger_events e on e.id = (page.r).event_id), '[]'::jsonb),
      'totalCount', (select count(*) from f), 'pageSize', lim, 'offset', off));
end $$;
grant execute on function app_public.list_receipts(organization_id uuid, "limit" integer, "offset" integer, search text, status text, source text, match_status text, event_id uuid) to accounting_visitor;

-- What the extraction job read (worker). A receipt a person already reviewed or rejected keeps
-- its status; a draft becomes processed, with empty fields when nothing could be read.
create or replace function app_private.record_receipt_extraction(receipt_id uuid, extraction jsonb) returns void
  language plpgsql volatile as
$$
declare
  r app_public.receipts;
  readings date[];
  v_amount numeric(20,2);
begin
  select * into r from app_public.receipts x where x.id = receipt_id for update;
  if not found then return; end if;  -- deleted meanwhile: nothing to record
  perform app_private.scope_organization(r.organization_id);
  select coalesce(array_agg(d order by d), '{}') into readings
    from (select distinct app_private.try_date(t) d from jsonb_array_elements_text(coalesce(extraction->'dateReadings', '[]'::jsonb)) t
           where app_private.try_date(t) is not null limit 2) x;
  v_amount := case when extraction->>'amount' ~ '^-?\d{1,15}(\.\d{1,2})?$' then (extraction->>'amount')::numeric end;
  update app_public.receipts x set
      vendor_name = left(nullif(btrim(extraction->>'vendorName'), ''), 500),
      amount = v_amount,
      currency = case when extraction->>'currency' ~ '^[A-Z]{3}$' then extraction->>'currency' end,
      date_readings = readings,
      -- Until matching picks a reading: the one nearest the arrival day and not after it.
      receipt_date = case when x.linked_by = 'person' then coalesce(app_private.reading_nearest(readings, (select e.transaction_date from app_public.ledger_events e where e.id = x.event_id)), x.receipt_date)
                          else app_private.reading_before(readings, (x.uploaded_at at time zone 'UTC')::date) end,
      extracted_text = left(extraction->>'text', 100000),
      extraction_method = left(extraction->>'method', 50),
      extraction_error = left(extraction->>'error', 2000),
      extracted_at = now(),
      status = case when x.status = 'draft' then 'processed' else x.status end
   where x.id = r.id;
  if r.status in ('draft', 'processed') and r.event_id is null then
    perform app_private.queue_receipt_matching(r.organization_id, array[r.id]);
  end if;
end $$;

-- A YYYY-MM-DD day that exists, else null (an extractor's reading is never trusted to be one).
create or replace function app_private.try_date(day text) returns date
  language plpgsql immutable as
$$
begin
  if day !~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' then return null; end if;
  return make_date(substr(day, 1, 4)::int, substr(day, 6, 2)::int, substr(day, 9, 2)::int);
exception when others then
  return null;
end $$;

-- Of a receipt's date readings, the one nearest a day (a linked event's date).
create or replace function app_private.reading_nearest(readings date[], day date) returns date
  language sql immutable parallel safe as
$$ select d from unnest(readings) d order by abs(d - day) nulls last, d limit 1 $$;
grant execute on function app_private.reading_nearest(readings date[], day date) to accounting_visitor;

-- Of a receipt's date readings, the one nearest the arrival day and not after it (else the earliest).
create or replace function app_private.reading_before(readings date[], arrived date) returns date
  language sql immutable parallel safe as
$$ select d from unnest(readings) d order by d > arrived, abs(d - arrived), d limit 1 $$;
grant execute on function app_private.reading_before(readings date[], arrived date) to accounting_visitor;
--! EndIncluded receipts/receipts.sql
--! Included receipts/matching.sql
-- Matching receipts to ledger events (decisions §9, §12): candidates in one query, a link only for
-- a unique confident match, precision first. Thresholds measured on the evaluation corpus
-- (`npm run eval:receipts`, README "Receipt matching").
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Matching for an organization's waiting receipts of these amounts (null: any), when it has any.
-- Drafts count too: their extraction's own matching may run before the event's transaction commits.
create or replace function app_private.queue_waiting_receipt_matching(org uuid, amounts numeric[]) returns void
  language plpgsql volatile security definer set search_path = pg_catalog, app_public, pg_temp as
$$
begin
  if exists (select 1 from app_public.receipts r where r.organization_id = org and r.event_id is null
                and r.status in ('draft', 'processed')) then
    perform app_private.queue_receipt_matching(org, null, amounts);
  end if;
end $$;
grant execute on function app_private.queue_waiting_receipt_matching(org uuid, amounts numeric[]) to accounting_visitor;

-- Per organization, the amounts now on new or changed events; past 500 distinct amounts, all of
-- the organization's waiting receipts.
create or replace function app_private.tg_ledger_events__rematch_receipts() returns trigger
  language plpgsql as
$$
declare c record;
begin
  if tg_op = 'INSERT' then
    for c in select n.organization_id as org, array_agg(distinct n.functional_amount) as amounts,
                    count(distinct n.functional_amount) as n
               from new_rows n group by 1 loop
      perform app_private.queue_waiting_receipt_matching(c.org, case when c.n <= 500 then c.amounts end);
    end loop;
  else
    for c in select n.organization_id as org, array_agg(distinct n.functional_amount) as amounts,
                    count(distinct n.functional_amount) as n
               from new_rows n join old_rows o on o.id = n.id
              where n.functional_amount <> o.functional_amount or n.transaction_date <> o.transaction_date
              group by 1 loop
      perform app_private.queue_waiting_receipt_matching(c.org, case when c.n <= 500 then c.amounts end);
    end loop;
  end if;
  return null;
end $$;
grant execute on function app_private.tg_ledger_events__rematch_receipts() to accounting_visitor;

-- Events changed in amount or date, or new (bank imports, createLedgerEvent, processor imports):
-- the organization's unmatched receipts are matched again, in one job per organization.
drop trigger if exists _900_rematch_receipts_insert on app_public.ledger_events;
create trigger _900_rematch_receipts_insert after insert on app_public.ledger_events
  referencing new table as new_rows for each statement execute function app_private.tg_ledger_events__rematch_receipts();

drop trigger if exists _900_rematch_receipts_update on app_public.ledger_events;
create trigger _900_rematch_receipts_update after update on app_public.ledger_events
  referencing old table as old_rows new table as new_rows for each statement execute function app_private.tg_ledger_events__rematch_receipts();

------------------------------------------------------------------------------------------------

-- The thresholds: a link needs this vendor similarity, and this lead over the runner-up.
create or replace function app_private.receipt_match_thresholds(out min_similarity real, out min_lead real)
  language sql immutable parallel safe as
$$ select 0.35::real, 0.15::real $$;
grant execute on function app_private.receipt_match_thresholds() to accounting_visitor;

-- A vendor or merchant name reduced to its words: lower case, accents dropped, letters only,
-- without legal suffixes, store words and province codes (bank lines add store numbers, cities
-- and "#"). Shorter than 3 letters in all (an OCR fragment), it is no name: ''.
create or replace function app_private.vendor_key(name text) returns text
  language sql immutable parallel safe as
$$
  select case when length(replace(k, ' ', '')) < 3 then '' else k end
    from (select array_to_string(array(
            select w from regexp_split_to_table(
              translate(lower(coalesce(name, '')), 'àâäáãåçéèêëíìîïñóòôöõúùûüýÿœæ', 'aaaaaaceeeeiiiinooooouuuuyyoa'), '[^a-z]+') w
             where w <> '' and w <> all (array['inc', 'ltd', 'llc', 'llp', 'corp', 'co', 'sdn', 'bhd', 'the', 'store', 'shop',
                                                'ca', 'on', 'qc', 'bc', 'ab', 'mb', 'sk', 'ns', 'nb', 'nl', 'pe', 'pos', 'purchase'])), ' ') as k) x
$$;
grant execute on function app_private.vendor_key(name text) to accounting_visitor;

-- How alike a receipt's vendor and a bank line's merchant are (0 to 1): trigram similarity of one
-- name with the whole words of the other that fit it best (strict word similarity), either way
-- round, since either may carry words the other lacks (a bank line's city, a shop's branch).
create or replace function app_private.vendor_similarity(vendor text, merchant text) returns real
  language plpgsql immutable parallel safe as
$$
declare
  -- PL/pgSQL: its statements are planned once per session (an SQL function with a FROM is not
  -- inlined and was planned again for every candidate).
  a text := app_private.vendor_key(vendor);
  b text := app_private.vendor_key(merchant);
begin
  if a = '' or b = '' then return 0; end if;
  return greatest(public.strict_word_similarity(a, b), public.strict_word_similarity(b, a));
end $$;
grant execute on function app_private.vendor_similarity(vendor text, merchant text) to accounting_visitor;

-- The events a receipt could belong to, in one query: the organization's events that are not
-- ignored, of the same amount (and currency, when the receipt names one), dated within 3 days of
-- a reading of the receipt's date, with no receipt yet and not unlinked from it by a person;
-- best first. A definer so that the amount and date reach the index under RLS (numeric equality
-- is not leakproof); it answers only for a receipt of the organization in scope.
create or replace function app_private.receipt_candidates(receipt_id uuid)
  returns table (event_id uuid, merchant_name text, transaction_date date, functional_amount numeric, status text,
                 similarity real, day_distance integer, reading date)
  language sql stable security definer set search_path = pg_catalog, app_public, pg_temp as
$$
  with hits as (
    -- Each reading's week, by the index on (organization, amount, date); an event near both
    -- readings counts once, with the nearer.
    select distinct on (e.id) e.id, e.merchant_name, e.transaction_date, e.functional_amount, e.status,
           r.vendor_name, abs(e.transaction_date - d.reading) as dist, d.reading
      from app_public.receipts r
     cross join lateral unnest(r.date_readings) as d(reading)
     -- Per reading, so that amount and date both bound the index scan (offset 0 keeps it so).
     cross join lateral (select * from app_public.ledger_events x
                          where x.organization_id = r.organization_id
                            and x.functional_amount = abs(r.amount)
                            and x.transaction_date between d.reading - 3 and d.reading + 3
                         offset 0) e
     where r.id = receipt_candidates.receipt_id
       and r.organization_id = app_public.current_organization_id()
       and r.amount is not null and r.amount <> 0
       and e.status <> 'ignored'
       and (r.currency is null or r.currency = e.functional_currency)
       and not exists (select 1 from app_public.receipts x where x.event_id = e.id)
       and not exists (select 1 from app_public.receipt_unlinked_pairs u where u.receipt_id = r.id and u.event_id = e.id)
     order by e.id, dist, d.reading
  )
  select h.id, h.merchant_name, h.transaction_date, h.functional_amount, h.status,
         app_private.vendor_similarity(h.vendor_name, h.merchant_name) as similarity, h.dist, h.reading
    from hits h
   order by 6 desc, 7, 3, 1
   limit 20
$$;
grant execute on function app_private.receipt_candidates(receipt_id uuid) to accounting_visitor;

-- Links each waiting receipt (processed, not linked) of the organization (these ones, or those of
-- these amounts) that has a unique confident match; the others are unmatched and keep their
-- candidates as suggestions. One run at a time per organization; receipts, then events, are locked
-- as they are linked (the order every link takes): concurrent runs never link two receipts to one
-- event (the partial unique index receipts_matched_event_key stands behind that) or one receipt twice.
create or replace function app_private.match_receipts(org uuid, receipt_ids uuid[] default null, amounts numeric[] default null)
  returns jsonb
  language plpgsql volatile as
$$
declare
  r app_public.receipts;
  c record;
  best_event uuid;
  best_similarity real;
  best_distance integer;
  best_reading date;
  runner_up_similarity real;
  n_candidates integer;
  t record := app_private.receipt_match_thresholds();
  matched integer := 0;
  unmatched integer := 0;
  linked boolean;
begin
  perform app_private.scope_organization(org);
  -- Two runs locking events in different orders could deadlock.
  perform pg_advisory_xact_lock(hashtext('match_receipts:' || org));
  for r in
    select * from app_public.receipts x
     where x.organization_id = org and x.status = 'processed' and x.event_id is null
       and (receipt_ids is null or x.id = any (receipt_ids))
       and (amounts is null or abs(x.amount) = any (amounts))
     order by x.uploaded_at, x.id
     for update skip locked
  loop
    linked := false; n_candidates := 0; best_event := null; best_similarity := null; runner_up_similarity := null;
    -- The candidates once, best first: the first two decide.
    for c in select * from app_private.receipt_candidates(r.id) loop
      n_candidates := n_candidates + 1;
      if n_candidates = 1 then
        best_event := c.event_id; best_similarity := c.similarity; best_distance := c.day_distance; best_reading := c.reading;
      elsif n_candidates = 2 then
        runner_up_similarity := c.similarity;
      end if;
    end loop;
    if best_similarity >= t.min_similarity
       and (runner_up_similarity is null or best_similarity - runner_up_similarity >= t.min_lead) then
      -- The event is locked, then checked again: a person may have linked it meanwhile.
      perform 1 from app_public.ledger_events e where e.id = best_event and e.status <> 'ignored' for no key update;
      if found and not exists (select 1 from app_public.receipts x where x.event_id = best_event) then
        update app_public.receipts x set event_id = best_event, linked_by = 'matching', linked_at = now(),
               match_status = 'matched', receipt_date = best_reading,
               match_details = jsonb_build_object('similarity', round(best_similarity::numeric, 3), 'dayDistance', best_distance,
                 'runnerUpSimilarity', round(runner_up_similarity::numeric, 3))
         where x.id = r.id;
        linked := true;
        perform app_private.record_webhook_event(org, 'receipt.matched', r.id);
      end if;
    end if;
    if linked then
      matched := matched + 1;
    else
      unmatched := unmatched + 1;
      update app_public.receipts x set match_status = 'unmatched',
             match_details = jsonb_build_object('candidates', n_candidates,
               'bestSimilarity', round(best_similarity::numeric, 3), 'runnerUpSimilarity', round(runner_up_similarity::numeric, 3))
       where x.id = r.id;
      -- Once when it is found to have no match, not at each later run that still finds none.
      if r.match_status is distinct from 'unmatched' then
        perform app_private.record_webhook_event(org, 'receipt.unmatched', r.id);
      end if;
    end if;
  end loop;
  return jsonb_build_object('matched', matched, 'unmatched', unmatched);
end $$;

-- The ranked candidates of a receipt with their scores, for a person to choose from.
create or replace function app_public.receipt_match_suggestions(organization_id uuid, receipt_id uuid) returns jsonb
  language plpgsql stable as
$$
begin
  perform app_private.assert_org_access(organization_id, false);
  if not exists (select 1 from app_public.receipts r where r.id = receipt_id) then
    perform app_private.fail('Receipt not found.', 'AP404');
  end if;
  return coalesce((
    select jsonb_agg(jsonb_build_object(
        'event', jsonb_build_object('id', c.event_id, 'merchantName', c.merchant_name,
          'transactionDate', to_char(c.transaction_date, 'YYYY-MM-DD'), 'functionalAmount', app_private.money(c.functional_amount),
          'status', c.status),
        'vendorSimilarity', round(c.similarity::numeric, 3), 'dayDistance', c.day_distance,
        'receiptDate', to_char(c.reading, 'YYYY-MM-DD'))
      order by c.similarity desc, c.day_distance, c.transaction_date, c.event_id)
    from app_private.receipt_candidates(receipt_id) c), '[]'::jsonb);
end $$;
grant execute on function app_public.receipt_match_suggestions(organization_id uuid, receipt_id uuid) to accounting_visitor;
--! EndIncluded receipts/matching.sql
