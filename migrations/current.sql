-- After review: an event is cleared on each payment account it moves money on (both sides of a
-- transfer), once per account; voiding a journal entry in the locked period is refused too; a
-- lockDate the caller gave comes as JSON, so that no string can pass for "not given"; a posting
-- and a lock change serialize on the organization's row (key share against for update).
drop function if exists app_public.update_organization_settings(uuid, text, text, text);

alter table app_public.reconciliation_clearings add column if not exists account_id uuid;
update app_public.reconciliation_clearings c set account_id = r.payment_account_id
  from app_public.reconciliations r where r.id = c.reconciliation_id and c.account_id is null;
alter table app_public.reconciliation_clearings alter column account_id set not null;
alter table app_public.reconciliation_clearings drop constraint if exists reconciliation_clearings_pkey;
alter table app_public.reconciliation_clearings add constraint reconciliation_clearings_pkey primary key (event_id, account_id);
alter table app_public.reconciliation_clearings drop constraint if exists reconciliation_clearings_account_fkey;
alter table app_public.reconciliation_clearings add constraint reconciliation_clearings_account_fkey
  foreign key (organization_id, account_id) references app_public.accounts (organization_id, id);

--!include ledger/reconciliations.sql
--!include ledger/lock-date.sql
--!include ledger/events.sql
--!include ledger/transitions.sql
--!include organizations/organizations.sql
