-- Saved layouts of bank statement files: the reading flags of a payment account's files.
create table if not exists app_public.bank_import_layouts (
  organization_id uuid not null references app_public.organizations on delete cascade,
  payment_account_id uuid not null,
  name text not null check (length(name) between 1 and 100),
  flags jsonb not null check (jsonb_typeof(flags) = 'object'),
  updated timestamptz not null default now(),
  primary key (organization_id, payment_account_id),
  foreign key (organization_id, payment_account_id) references app_public.accounts (organization_id, id)
);
alter table app_public.bank_import_layouts enable row level security;
alter table app_public.bank_import_layouts force row level security;

--!include imports/bank-layouts.sql
