--! Previous: sha1:bcb0c17cd2058faa29077d88859ee12632d9d5ad
--! Hash: sha1:6a52d8d66a3cd2dbf7a46055ed6f7f55d3b6b04d
--! Message: A saved layout may hold --money-out (a card export that writes purchases positive) and --account (one account of a file of several)

--! Included imports/bank-layouts.sql
-- Saved layouts of bank statement files (docs/api.md, From a bank's file): the reading flags a
-- payment account's files need (`import_bank_csv --save-layout NAME`), used by its next imports
-- when they give none. One layout per payment account; saving again replaces it.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security and grants of this feature's table.

-- app_public.bank_import_layouts
drop policy if exists bank_import_layouts_tenant on app_public.bank_import_layouts;
create policy bank_import_layouts_tenant on app_public.bank_import_layouts
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select, insert, update, delete on app_public.bank_import_layouts to accounting_visitor;

------------------------------------------------------------------------------------------------

-- The flags a layout may hold, by the name the reader's options use.
create or replace function app_private.bank_import_layout_flags() returns text[]
  language sql immutable parallel safe as
$$ select array['preset', 'map', 'dateFormat', 'delimiter', 'decimal', 'moneyOut', 'account'] $$;
grant execute on function app_private.bank_import_layout_flags() to accounting_visitor;

create or replace function app_private.save_bank_import_layout(org uuid, payment_account_id uuid, name text, flags jsonb)
  returns jsonb
  language plpgsql volatile as
$$
#variable_conflict use_column
declare
  v_name text := app_private.clean_text(name);
  v_unknown text;
begin
  perform app_private.scope_organization(org);
  if v_name is null or v_name = '' or length(v_name) > 100 then
    perform app_private.fail('The layout''s name must be 1 to 100 characters.');
  end if;
  if save_bank_import_layout.flags is null or jsonb_typeof(save_bank_import_layout.flags) <> 'object' or save_bank_import_layout.flags = '{}'::jsonb then
    perform app_private.fail('A layout needs at least one reading flag: --preset, --map, --date-format, --delimiter, --decimal, --money-out or --account.');
  end if;
  select k into v_unknown from jsonb_object_keys(save_bank_import_layout.flags) k where not (k = any (app_private.bank_import_layout_flags())) limit 1;
  if v_unknown is not null then perform app_private.fail(format('A layout cannot hold "%s".', v_unknown)); end if;
  if exists (select 1 from jsonb_each(save_bank_import_layout.flags) f where jsonb_typeof(f.value) <> 'string' or length(f.value #>> '{}') > 1000) then
    perform app_private.fail('A layout''s flags are strings of at most 1000 characters.');
  end if;
  perform app_private.check_payment_account(save_bank_import_layout.payment_account_id);
  insert into app_public.bank_import_layouts as l (organization_id, payment_account_id, name, flags)
    values (org, save_bank_import_layout.payment_account_id, v_name, save_bank_import_layout.flags)
    on conflict (organization_id, payment_account_id) do update set name = excluded.name, flags = excluded.flags, updated = now();
  return jsonb_build_object('name', v_name, 'flags', save_bank_import_layout.flags);
end $$;
grant execute on function app_private.save_bank_import_layout(org uuid, payment_account_id uuid, name text, flags jsonb) to accounting_visitor;

-- The account's saved layout ({name, flags}), or null.
create or replace function app_private.bank_import_layout(org uuid, payment_account_id uuid) returns jsonb
  language plpgsql volatile as
$$
begin
  perform app_private.scope_organization(org);
  return (select jsonb_build_object('name', l.name, 'flags', l.flags) from app_public.bank_import_layouts l
           where l.organization_id = org and l.payment_account_id = bank_import_layout.payment_account_id);
end $$;
grant execute on function app_private.bank_import_layout(org uuid, payment_account_id uuid) to accounting_visitor;
--! EndIncluded imports/bank-layouts.sql
