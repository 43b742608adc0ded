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

--!include webhooks/endpoints.sql
--!include webhooks/events.sql
--!include webhooks/deliveries.sql
--!include imports/bank-statements.sql
--!include imports/processor-balance.sql
--!include ledger/events.sql
--!include ledger/transitions.sql
--!include receipts/receipts.sql
--!include receipts/matching.sql
