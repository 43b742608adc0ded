-- After review: completing a reconciliation locks its ticked events before it sums them; voiding a
-- journal entry in the locked period is refused too; a lockDate the caller gave comes as JSON, so
-- that no string can pass for "not given".
drop function if exists app_public.update_organization_settings(uuid, text, text, text);

--!include ledger/reconciliations.sql
--!include ledger/lock-date.sql
--!include organizations/organizations.sql
