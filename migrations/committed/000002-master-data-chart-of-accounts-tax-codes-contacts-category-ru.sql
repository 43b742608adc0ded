--! Previous: sha1:9d56b26f35ffb3af97b10d6b77c817b1c454b788
--! Hash: sha1:acfaab348bff0cd40c622e3e3c196ab425fc19e7
--! Message: master data: chart of accounts, tax codes, contacts, category rules, intake addresses

-- Master data: GIFI tax codes and sales tax codes (global reference data), the chart of accounts
-- with a starter chart for every new organization, contacts, category rules and intake addresses.
-- Contract: accounting-api.md (Account, Contact, CategoryRule, IntakeAddress); decisions §5, §7, §9.

drop table if exists app_public.intake_addresses cascade;
drop table if exists app_public.category_rules cascade;
drop table if exists app_public.contacts cascade;
drop table if exists app_public.accounts cascade;
drop table if exists app_public.sales_tax_codes cascade;
drop table if exists app_public.tax_codes cascade;
drop function if exists app_private.tg_accounts__no_cycle() cascade;
drop function if exists app_private.tax_code_json(app_public.tax_codes);
drop function if exists app_private.account_balances(uuid, date);
drop function if exists app_private.contact_balances(uuid);
drop function if exists app_private.check_account_type(text);
drop function if exists app_private.resolve_parent(uuid, uuid, text);
drop function if exists app_private.insert_account(uuid, text, uuid, text, text, text, text, uuid);
drop function if exists app_private.account_json(app_public.accounts, numeric);
drop function if exists app_private.account_by_id(uuid, uuid);
drop function if exists app_private.insert_contact(uuid, text, text, text, text);
drop function if exists app_private.contact_json(app_public.contacts, numeric);
drop function if exists app_private.contact_by_id(uuid, uuid);
drop function if exists app_private.clean_email(text);
drop function if exists app_private.clean_phone(text);
drop function if exists app_private.category_rule_json(app_public.category_rules);
drop function if exists app_private.check_vendor_pattern(text);
drop function if exists app_private.rule_account(uuid, uuid);
drop function if exists app_private.best_category_rule(uuid, text);
drop function if exists app_private.intake_address_json(app_public.intake_addresses);
drop function if exists app_private.create_starter_chart(uuid);
drop function if exists app_public.list_tax_codes(uuid, text, integer, integer, text, text);
drop function if exists app_public.list_sales_tax_codes(uuid);
drop function if exists app_public.create_account(uuid, text, uuid, text, text, text, text, uuid);
drop function if exists app_public.batch_create_accounts(uuid, jsonb);
drop function if exists app_public.list_accounts(uuid, integer, integer, text, text, text, boolean, text);
drop function if exists app_public.update_account(uuid, uuid, text, text, uuid, boolean, uuid, text);
drop function if exists app_public.deactivate_account(uuid, uuid);
drop function if exists app_public.reactivate_account(uuid, uuid);
drop function if exists app_public.create_contact(uuid, text, text, text, text);
drop function if exists app_public.batch_create_contacts(uuid, jsonb);
drop function if exists app_public.list_contacts(uuid, integer, integer, text, text, text, text, boolean);
drop function if exists app_public.update_contact(uuid, uuid, text, text, text, text);
drop function if exists app_public.deactivate_contact(uuid, uuid);
drop function if exists app_public.reactivate_contact(uuid, uuid);
drop function if exists app_public.create_category_rule(uuid, text, uuid);
drop function if exists app_public.list_category_rules(uuid, integer, integer, text, text, text);
drop function if exists app_public.update_category_rule(uuid, uuid, text, uuid);
drop function if exists app_public.delete_category_rule(uuid, uuid);
drop function if exists app_public.create_intake_address(uuid, text, text, text);
drop function if exists app_public.list_intake_addresses(uuid);
drop function if exists app_public.delete_intake_address(uuid, uuid);

------------------------------------------------------------------------------------------------
-- Global reference data: no organization, read-only for the API.

-- CRA GIFI codes (data/gifi.csv). `account_type` is the suggested ledger account type; `total`
-- marks computed totals, which no account may use.
create table app_public.tax_codes (
  id uuid primary key default gen_random_uuid(),
  code text not null unique check (code ~ '^[0-9]{4}$'),
  name text not null,
  classification text not null check (classification in ('asset', 'liability', 'equity', 'revenue', 'expense')),
  account_type text not null
);
create index tax_codes_account_type_idx on app_public.tax_codes (account_type);
grant select on app_public.tax_codes to accounting_visitor, reporting_reader;

-- Canadian sales tax codes (data/sales_tax_codes.csv); `rate` is a percentage (5 = 5 %).
create table app_public.sales_tax_codes (
  code text primary key,
  name text not null,
  rate numeric(7,3) not null check (rate >= 0 and rate < 100),
  jurisdiction text not null check (jurisdiction ~ '^[A-Z]{2}$'),
  recoverable text not null check (recoverable in ('yes', 'no', 'partial', 'n/a'))
);
grant select on app_public.sales_tax_codes to accounting_visitor, reporting_reader;

------------------------------------------------------------------------------------------------
-- Chart of accounts. Payment accounts are account_type bank, credit_card or clearing.
create table app_public.accounts (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app_public.organizations on delete cascade,
  name text not null check (length(name) between 1 and 200 and name = btrim(name)),
  account_type text not null check (account_type ~ '^[a-z_]+$' and account_type <> 'total'),
  classification text not null check (classification in ('asset', 'liability', 'equity', 'revenue', 'expense')),
  sub_type text not null default '' check (length(sub_type) <= 100),
  last_four text check (last_four ~ '^[0-9]{4}$'),
  parent_id uuid check (parent_id <> id),
  tax_code_id uuid references app_public.tax_codes,
  active boolean not null default true,
  created timestamptz not null default now(),
  updated timestamptz not null default now(),
  unique (organization_id, id),
  foreign key (organization_id, parent_id) references app_public.accounts (organization_id, id)
);
-- Names are unique per organization, case-insensitively (decisions §7).
create unique index accounts_name_key on app_public.accounts (organization_id, lower(name));
create index accounts_parent_idx on app_public.accounts (organization_id, parent_id) where parent_id is not null;
create index accounts_tax_code_idx on app_public.accounts (tax_code_id);
alter table app_public.accounts enable row level security;
alter table app_public.accounts force row level security;
create policy accounts_tenant on app_public.accounts
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select on app_public.accounts to accounting_visitor;
grant insert (organization_id, name, account_type, classification, sub_type, last_four, parent_id, tax_code_id, active)
  on app_public.accounts to accounting_visitor;
grant update (name, sub_type, last_four, parent_id, tax_code_id, active, updated) on app_public.accounts to accounting_visitor;
create trigger _100_touch_updated before update on app_public.accounts
  for each row execute function app_private.tg__touch_updated();

-- No cycles in parent_id. Changes of parent serialize per organization (advisory lock), and each
-- check runs on a fresh snapshot after the lock, so two concurrent moves cannot close a loop.
-- A new row cannot close one (nothing points at it yet), so only updates are checked.
create function app_private.tg_accounts__no_cycle() returns trigger
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
create trigger _200_no_cycle before update of parent_id on app_public.accounts
  for each row when (new.parent_id is not null and new.parent_id is distinct from old.parent_id)
  execute function app_private.tg_accounts__no_cycle();

-- Balances of the posted books, per account (decisions §6). The ledger replaces this function;
-- until then nothing is posted and every balance is 0.
create function app_private.account_balances(org uuid, as_of date default current_date)
  returns table (account_id uuid, balance numeric)
  language sql stable as
$$ select null::uuid, null::numeric where false $$;
grant execute on function app_private.account_balances(uuid, date) to accounting_visitor, reporting_reader;

------------------------------------------------------------------------------------------------
create table app_public.contacts (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app_public.organizations on delete cascade,
  contact_type text not null check (contact_type in ('vendor', 'customer')),
  display_name text not null check (length(display_name) between 1 and 200 and display_name = btrim(display_name)),
  email text check (email ~ '^[^@\s]+@[^@\s]+\.[^@\s]+$' and length(email) <= 254),
  phone text check (phone ~ '^\+?[0-9 ().-]{3,30}$'),
  active boolean not null default true,
  created timestamptz not null default now(),
  updated timestamptz not null default now(),
  unique (organization_id, id)
);
-- Display names are unique per organization and type, case-insensitively (decisions §7).
create unique index contacts_name_key on app_public.contacts (organization_id, contact_type, lower(display_name));
alter table app_public.contacts enable row level security;
alter table app_public.contacts force row level security;
create policy contacts_tenant on app_public.contacts
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select on app_public.contacts to accounting_visitor;
grant insert (organization_id, contact_type, display_name, email, phone, active) on app_public.contacts to accounting_visitor;
grant update (contact_type, display_name, email, phone, active, updated) on app_public.contacts to accounting_visitor;
create trigger _100_touch_updated before update on app_public.contacts
  for each row execute function app_private.tg__touch_updated();

-- What each contact owes or is owed. Nothing posts to contacts yet, so every balance is 0; a
-- later issue replaces this function.
create function app_private.contact_balances(org uuid)
  returns table (contact_id uuid, balance numeric)
  language sql stable as
$$ select null::uuid, null::numeric where false $$;
grant execute on function app_private.contact_balances(uuid) to accounting_visitor, reporting_reader;

------------------------------------------------------------------------------------------------
-- Category rules: a merchant name matching vendor_pattern (ILIKE) gets account_id as category.
create table app_public.category_rules (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app_public.organizations on delete cascade,
  vendor_pattern text not null check (length(vendor_pattern) between 1 and 200),
  account_id uuid not null,
  match_count integer not null default 0 check (match_count >= 0),
  created timestamptz not null default now(),
  updated timestamptz not null default now(),
  unique (organization_id, id),
  foreign key (organization_id, account_id) references app_public.accounts (organization_id, id)
);
-- One rule per pattern and organization, case-insensitively (ILIKE ignores case anyway).
create unique index category_rules_pattern_key on app_public.category_rules (organization_id, lower(vendor_pattern));
create index category_rules_account_idx on app_public.category_rules (organization_id, account_id);
alter table app_public.category_rules enable row level security;
alter table app_public.category_rules force row level security;
create policy category_rules_tenant on app_public.category_rules
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select, delete on app_public.category_rules to accounting_visitor;
grant insert (organization_id, vendor_pattern, account_id) on app_public.category_rules to accounting_visitor;
grant update (vendor_pattern, account_id, match_count, updated) on app_public.category_rules to accounting_visitor;
create trigger _100_touch_updated before update on app_public.category_rules
  for each row execute function app_private.tg__touch_updated();

-- The rule for a merchant name: among rules whose pattern matches and whose account is active,
-- the longest pattern wins, then the oldest rule (decisions §8). Null when none matches.
create function app_private.best_category_rule(org uuid, merchant_name text) returns uuid
  language sql stable as
$$
  select r.id
    from app_public.category_rules r
    join app_public.accounts a on a.organization_id = r.organization_id and a.id = r.account_id
   where r.organization_id = org and a.active and merchant_name ilike r.vendor_pattern
   order by length(r.vendor_pattern) desc, r.created, r.id
   limit 1
$$;
grant execute on function app_private.best_category_rule(uuid, text) to accounting_visitor;

------------------------------------------------------------------------------------------------
-- Receipt intake addresses. An address belongs to one organization at a time: the unique index
-- spans every organization's active rows, and RLS does not hide a row from a unique check, so a
-- second organization's insert fails there. The mutation answers with one fixed message that
-- names no owner. Deleting deactivates (kept for audit), which frees the address.
create table app_public.intake_addresses (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app_public.organizations on delete cascade,
  address_type text not null check (address_type in ('email', 'sms')),
  address text not null check (
    (address_type = 'email' and address = lower(address) and address ~ '^[^@\s]+@[^@\s]+\.[^@\s]+$' and length(address) <= 254)
    or (address_type = 'sms' and address ~ '^[0-9]{7,15}$')),
  label text not null default '' check (length(label) <= 200),
  active boolean not null default true,
  created timestamptz not null default now(),
  deleted_at timestamptz,
  check (active = (deleted_at is null))
);
create unique index intake_addresses_address_key on app_public.intake_addresses (address) where active;
create index intake_addresses_org_idx on app_public.intake_addresses (organization_id, created);
alter table app_public.intake_addresses enable row level security;
alter table app_public.intake_addresses force row level security;
create policy intake_addresses_tenant on app_public.intake_addresses
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select on app_public.intake_addresses to accounting_visitor;
grant insert (organization_id, address_type, address, label) on app_public.intake_addresses to accounting_visitor;
grant update (label, active, deleted_at) on app_public.intake_addresses to accounting_visitor;

------------------------------------------------------------------------------------------------
-- Reference data, generated from data/gifi.csv and data/sales_tax_codes.csv by
-- `npx tsx scripts/reference-data-sql.ts` (do not edit by hand; regenerate instead).
-- 719 GIFI codes from data/gifi.csv
insert into app_public.tax_codes (code, name, classification, account_type) values
  ('1000', 'Cash and deposits', 'asset', 'bank'),
  ('1001', 'Cash', 'asset', 'bank'),
  ('1002', 'Deposits in Canadian banks and institutions - Canadian currency', 'asset', 'bank'),
  ('1003', 'Deposits in Canadian banks and institutions - foreign currency', 'asset', 'bank'),
  ('1004', 'Deposits in foreign banks - Canadian currency', 'asset', 'bank'),
  ('1005', 'Deposits in foreign banks - foreign currency', 'asset', 'bank'),
  ('1006', 'Credit union central deposits', 'asset', 'bank'),
  ('1007', 'Other cash like instruments', 'asset', 'other_current_asset'),
  ('1060', 'Accounts receivable', 'asset', 'accounts_receivable'),
  ('1061', 'Allowance for doubtful accounts', 'asset', 'contra_asset'),
  ('1062', 'Trade accounts receivable', 'asset', 'accounts_receivable'),
  ('1063', 'Allowance for doubtful trade accounts receivable', 'asset', 'contra_asset'),
  ('1064', 'Trade accounts receivable from related parties', 'asset', 'accounts_receivable'),
  ('1065', 'Allowance for doubtful trade accounts receivable from related parties', 'asset', 'contra_asset'),
  ('1066', 'Taxes receivable', 'asset', 'tax_receivable'),
  ('1067', 'Interest receivable', 'asset', 'other_current_asset'),
  ('1068', 'Holdbacks receivable', 'asset', 'other_current_asset'),
  ('1069', 'Leases receivable', 'asset', 'other_current_asset'),
  ('1070', 'Allowance for doubtful amounts contained in leases receivable', 'asset', 'contra_asset'),
  ('1071', 'Accounts receivable from employees', 'asset', 'other_current_asset'),
  ('1072', 'Allowance for doubtful accounts receivable from employees', 'asset', 'contra_asset'),
  ('1073', 'Amounts receivable from members of NPOs', 'asset', 'other_current_asset'),
  ('1120', 'Inventories', 'asset', 'inventory'),
  ('1121', 'Inventory of goods for sale', 'asset', 'inventory'),
  ('1122', 'Inventory parts and supplies', 'asset', 'inventory'),
  ('1123', 'Inventory properties', 'asset', 'inventory'),
  ('1124', 'Inventory of aggregates', 'asset', 'inventory'),
  ('1125', 'Work in progress', 'asset', 'inventory'),
  ('1126', 'Raw materials', 'asset', 'inventory'),
  ('1127', 'Inventory of securities', 'asset', 'inventory'),
  ('1180', 'Short-term investments', 'asset', 'other_current_asset'),
  ('1181', 'Canadian term deposits', 'asset', 'other_current_asset'),
  ('1182', 'Canadian shares', 'asset', 'other_current_asset'),
  ('1183', 'Canadian bonds', 'asset', 'other_current_asset'),
  ('1184', 'Canadian treasury bills', 'asset', 'other_current_asset'),
  ('1185', 'Securities purchased under resale agreements', 'asset', 'other_current_asset'),
  ('1186', 'Other short-term Canadian investments', 'asset', 'other_current_asset'),
  ('1187', 'Short-term foreign investments', 'asset', 'other_current_asset'),
  ('1240', 'Loans and notes receivable', 'asset', 'other_current_asset'),
  ('1241', 'Demand loans receivable', 'asset', 'other_current_asset'),
  ('1242', 'Other loans receivable', 'asset', 'other_current_asset'),
  ('1243', 'Notes receivable', 'asset', 'other_current_asset'),
  ('1244', 'Mortgages receivable', 'asset', 'other_current_asset'),
  ('1300', 'Due from shareholder(s)/director(s)', 'asset', 'due_from_shareholder'),
  ('1301', 'Due from individual shareholder(s)', 'asset', 'due_from_shareholder'),
  ('1302', 'Due from corporate shareholder(s)', 'asset', 'due_from_shareholder'),
  ('1303', 'Due from director(s)', 'asset', 'due_from_shareholder'),
  ('1360', 'Investment in joint venture(s)/partnership(s)', 'asset', 'other_current_asset'),
  ('1380', 'Due from joint venture(s)/partnership(s)', 'asset', 'other_current_asset'),
  ('1400', 'Due from/investment in related parties', 'asset', 'other_current_asset'),
  ('1401', 'Demand notes from related parties', 'asset', 'other_current_asset'),
  ('1402', 'Interest receivable from related parties', 'asset', 'other_current_asset'),
  ('1403', 'Loans/advances due from related parties', 'asset', 'other_current_asset'),
  ('1460', 'Customers'' liability under acceptances', 'asset', 'other_current_asset'),
  ('1480', 'Other current assets', 'asset', 'other_current_asset'),
  ('1481', 'Deferred income taxes', 'asset', 'other_current_asset'),
  ('1482', 'Accrued investment income', 'asset', 'other_current_asset'),
  ('1483', 'Taxes recoverable/refundable', 'asset', 'tax_receivable'),
  ('1484', 'Prepaid expenses', 'asset', 'other_current_asset'),
  ('1485', 'Drilling advances', 'asset', 'other_current_asset'),
  ('1486', 'Security/tender deposits', 'asset', 'other_current_asset'),
  ('1599', 'Total current assets', 'asset', 'total'),
  ('1600', 'Land', 'asset', 'fixed_asset'),
  ('1601', 'Land improvements', 'asset', 'fixed_asset'),
  ('1602', 'Accumulated amortization of land improvements', 'asset', 'accumulated_amortization'),
  ('1620', 'Depletable assets', 'asset', 'fixed_asset'),
  ('1621', 'Accumulated amortization of depletable assets', 'asset', 'accumulated_amortization'),
  ('1622', 'Petroleum and natural gas properties', 'asset', 'fixed_asset'),
  ('1623', 'Accumulated amortization of petroleum and natural gas properties', 'asset', 'accumulated_amortization'),
  ('1624', 'Mining properties', 'asset', 'fixed_asset'),
  ('1625', 'Accumulated amortization of mining properties', 'asset', 'accumulated_amortization'),
  ('1626', 'Deferred exploration and development charges', 'asset', 'fixed_asset'),
  ('1627', 'Accumulated amortization of deferred exploration and development charges', 'asset', 'accumulated_amortization'),
  ('1628', 'Quarries', 'asset', 'fixed_asset'),
  ('1629', 'Accumulated amortization of quarries', 'asset', 'accumulated_amortization'),
  ('1630', 'Gravel pits', 'asset', 'fixed_asset'),
  ('1631', 'Accumulated amortization of gravel pits', 'asset', 'accumulated_amortization'),
  ('1632', 'Timber limits', 'asset', 'fixed_asset'),
  ('1633', 'Accumulated amortization of timber limits', 'asset', 'accumulated_amortization'),
  ('1680', 'Buildings', 'asset', 'fixed_asset'),
  ('1681', 'Accumulated amortization of buildings', 'asset', 'accumulated_amortization'),
  ('1682', 'Manufacturing and processing plant', 'asset', 'fixed_asset'),
  ('1683', 'Accumulated amortization of manufacturing and processing plant', 'asset', 'accumulated_amortization'),
  ('1684', 'Buildings under construction', 'asset', 'fixed_asset'),
  ('1740', 'Machinery, equipment, furniture, and fixtures', 'asset', 'fixed_asset'),
  ('1741', 'Accumulated amortization of machinery, equipment, furniture, and fixtures', 'asset', 'accumulated_amortization'),
  ('1742', 'Motor vehicles', 'asset', 'fixed_asset'),
  ('1743', 'Accumulated amortization of motor vehicles', 'asset', 'accumulated_amortization'),
  ('1744', 'Tools and dies', 'asset', 'fixed_asset'),
  ('1745', 'Accumulated amortization of tools and dies', 'asset', 'accumulated_amortization'),
  ('1746', 'Construction and excavating equipment', 'asset', 'fixed_asset'),
  ('1747', 'Accumulated amortization of construction and excavating equipment', 'asset', 'accumulated_amortization'),
  ('1748', 'Forestry and logging equipment', 'asset', 'fixed_asset'),
  ('1749', 'Accumulated amortization of forestry and logging equipment', 'asset', 'accumulated_amortization'),
  ('1750', 'Fishing gear and nets', 'asset', 'fixed_asset'),
  ('1751', 'Accumulated amortization of fishing gear and nets', 'asset', 'accumulated_amortization'),
  ('1752', 'Mining equipment', 'asset', 'fixed_asset'),
  ('1753', 'Accumulated amortization of mining equipment', 'asset', 'accumulated_amortization'),
  ('1754', 'Oil and gas systems', 'asset', 'fixed_asset'),
  ('1755', 'Accumulated amortization of oil and gas systems', 'asset', 'accumulated_amortization'),
  ('1756', 'Production equipment for resource industries', 'asset', 'fixed_asset'),
  ('1757', 'Accumulated amortization of production equipment for resource industries', 'asset', 'accumulated_amortization'),
  ('1758', 'Production equipment for other than resource industries', 'asset', 'fixed_asset'),
  ('1759', 'Accumulated amortization of production equipment for other than resource industries', 'asset', 'accumulated_amortization'),
  ('1760', 'Exploration equipment', 'asset', 'fixed_asset'),
  ('1761', 'Accumulated amortization of exploration equipment', 'asset', 'accumulated_amortization'),
  ('1762', 'Shipping equipment', 'asset', 'fixed_asset'),
  ('1763', 'Accumulated amortization of shipping equipment', 'asset', 'accumulated_amortization'),
  ('1764', 'Ships and boats', 'asset', 'fixed_asset'),
  ('1765', 'Accumulated amortization of ships and boats', 'asset', 'accumulated_amortization'),
  ('1766', 'Aircraft', 'asset', 'fixed_asset'),
  ('1767', 'Accumulated amortization of aircraft', 'asset', 'accumulated_amortization'),
  ('1768', 'Signs', 'asset', 'fixed_asset'),
  ('1769', 'Accumulated amortization of signs', 'asset', 'accumulated_amortization'),
  ('1770', 'Small tools', 'asset', 'fixed_asset'),
  ('1771', 'Accumulated amortization of small tools', 'asset', 'accumulated_amortization'),
  ('1772', 'Radio and communication equipment', 'asset', 'fixed_asset'),
  ('1773', 'Accumulated amortization of radio and communication equipment', 'asset', 'accumulated_amortization'),
  ('1774', 'Computer equipment/software', 'asset', 'fixed_asset'),
  ('1775', 'Accumulated amortization of computer equipment/software', 'asset', 'accumulated_amortization'),
  ('1776', 'Musical instruments', 'asset', 'fixed_asset'),
  ('1777', 'Accumulated amortization of musical instruments', 'asset', 'accumulated_amortization'),
  ('1778', 'Satellites', 'asset', 'fixed_asset'),
  ('1779', 'Accumulated amortization of satellites', 'asset', 'accumulated_amortization'),
  ('1780', 'Earth stations', 'asset', 'fixed_asset'),
  ('1781', 'Accumulated amortization of earth stations', 'asset', 'accumulated_amortization'),
  ('1782', 'Machinery and equipment under construction', 'asset', 'fixed_asset'),
  ('1783', 'Transportation equipment', 'asset', 'fixed_asset'),
  ('1784', 'Accumulated amortization of transportation equipment', 'asset', 'accumulated_amortization'),
  ('1785', 'Other machinery and equipment', 'asset', 'fixed_asset'),
  ('1786', 'Accumulated amortization of other machinery and equipment', 'asset', 'accumulated_amortization'),
  ('1787', 'Furniture and fixtures', 'asset', 'fixed_asset'),
  ('1788', 'Accumulated amortization of furniture and fixtures', 'asset', 'accumulated_amortization'),
  ('1900', 'Other tangible capital assets', 'asset', 'fixed_asset'),
  ('1901', 'Accumulated amortization of other tangible capital assets', 'asset', 'accumulated_amortization'),
  ('1902', 'Logging roads', 'asset', 'fixed_asset'),
  ('1903', 'Accumulated amortization of logging roads', 'asset', 'accumulated_amortization'),
  ('1904', 'Asphalt and parking areas', 'asset', 'fixed_asset'),
  ('1905', 'Accumulated amortization of asphalt and parking areas', 'asset', 'accumulated_amortization'),
  ('1906', 'Wharves', 'asset', 'fixed_asset'),
  ('1907', 'Accumulated amortization of wharves', 'asset', 'accumulated_amortization'),
  ('1908', 'Fences', 'asset', 'fixed_asset'),
  ('1909', 'Accumulated amortization of fences', 'asset', 'accumulated_amortization'),
  ('1910', 'Capital leases - buildings', 'asset', 'fixed_asset'),
  ('1911', 'Accumulated amortization of capital leases - buildings', 'asset', 'accumulated_amortization'),
  ('1912', 'Capital leases - equipment', 'asset', 'fixed_asset'),
  ('1913', 'Accumulated amortization of capital leases - equipment', 'asset', 'accumulated_amortization'),
  ('1914', 'Capital leases - vehicles', 'asset', 'fixed_asset'),
  ('1915', 'Accumulated amortization of capital leases - vehicles', 'asset', 'accumulated_amortization'),
  ('1916', 'Capital leases - others', 'asset', 'fixed_asset'),
  ('1917', 'Accumulated amortization of capital leases - others', 'asset', 'accumulated_amortization'),
  ('1918', 'Leasehold improvements', 'asset', 'fixed_asset'),
  ('1919', 'Accumulated amortization of leasehold improvements', 'asset', 'accumulated_amortization'),
  ('1920', 'Other capital assets under construction', 'asset', 'fixed_asset'),
  ('1921', 'Campsites', 'asset', 'fixed_asset'),
  ('1922', 'Accumulated amortization of campsites', 'asset', 'accumulated_amortization'),
  ('2008', 'Total tangible capital assets', 'asset', 'total'),
  ('2009', 'Total accumulated amortization of tangible capital assets', 'asset', 'total'),
  ('2010', 'Intangible assets', 'asset', 'intangible_asset'),
  ('2011', 'Accumulated amortization of intangible assets', 'asset', 'accumulated_amortization'),
  ('2012', 'Goodwill', 'asset', 'intangible_asset'),
  ('2013', 'Accumulated amortization of goodwill', 'asset', 'accumulated_amortization'),
  ('2014', 'Quota', 'asset', 'intangible_asset'),
  ('2015', 'Accumulated amortization of quota', 'asset', 'accumulated_amortization'),
  ('2016', 'Licences', 'asset', 'intangible_asset'),
  ('2017', 'Accumulated amortization of licences', 'asset', 'accumulated_amortization'),
  ('2018', 'Incorporation costs', 'asset', 'intangible_asset'),
  ('2019', 'Accumulated amortization of incorporation costs', 'asset', 'accumulated_amortization'),
  ('2020', 'Trademarks/patents', 'asset', 'intangible_asset'),
  ('2021', 'Accumulated amortization of trademarks/patents', 'asset', 'accumulated_amortization'),
  ('2022', 'Customer lists', 'asset', 'intangible_asset'),
  ('2023', 'Accumulated amortization of customer lists', 'asset', 'accumulated_amortization'),
  ('2024', 'Rights', 'asset', 'intangible_asset'),
  ('2025', 'Accumulated amortization of rights', 'asset', 'accumulated_amortization'),
  ('2026', 'Research and development', 'asset', 'intangible_asset'),
  ('2027', 'Accumulated amortization of research and development', 'asset', 'accumulated_amortization'),
  ('2070', 'Resource rights', 'asset', 'intangible_asset'),
  ('2071', 'Accumulated amortization of resource rights', 'asset', 'accumulated_amortization'),
  ('2072', 'Timber rights', 'asset', 'intangible_asset'),
  ('2073', 'Accumulated amortization of timber rights', 'asset', 'accumulated_amortization'),
  ('2074', 'Mining rights', 'asset', 'intangible_asset'),
  ('2075', 'Accumulated amortization of mining rights', 'asset', 'accumulated_amortization'),
  ('2076', 'Oil and gas rights', 'asset', 'intangible_asset'),
  ('2077', 'Accumulated amortization of oil and gas rights', 'asset', 'accumulated_amortization'),
  ('2178', 'Total intangible capital assets', 'asset', 'total'),
  ('2179', 'Total accumulated amortization of intangible capital assets', 'asset', 'total'),
  ('2180', 'Due from shareholder(s)/director(s)', 'asset', 'due_from_shareholder'),
  ('2181', 'Due from individual shareholder(s)', 'asset', 'due_from_shareholder'),
  ('2182', 'Due from corporate shareholder(s)', 'asset', 'due_from_shareholder'),
  ('2183', 'Due from director(s)', 'asset', 'due_from_shareholder'),
  ('2190', 'Due from members', 'asset', 'other_asset'),
  ('2200', 'Investment in joint venture(s)/partnership(s)', 'asset', 'other_asset'),
  ('2220', 'Due from joint venture(s)/partnership(s)', 'asset', 'other_asset'),
  ('2240', 'Due from/investment in related parties', 'asset', 'other_asset'),
  ('2241', 'Due from/investment in Canadian related parties', 'asset', 'other_asset'),
  ('2242', 'Shares in Canadian related corporations', 'asset', 'other_asset'),
  ('2243', 'Loans/advances to Canadian related corporations', 'asset', 'other_asset'),
  ('2244', 'Investment in Canadian related corporations at cost', 'asset', 'other_asset'),
  ('2245', 'Investment in Canadian related corporations at equity', 'asset', 'other_asset'),
  ('2246', 'Due from/investment in foreign related parties', 'asset', 'other_asset'),
  ('2247', 'Shares in foreign related corporations', 'asset', 'other_asset'),
  ('2248', 'Loans/advances to foreign related corporations', 'asset', 'other_asset'),
  ('2249', 'Investment in foreign related corporations at cost', 'asset', 'other_asset'),
  ('2250', 'Investment in foreign related corporations at equity', 'asset', 'other_asset'),
  ('2280', 'Investment in co-tenancy', 'asset', 'other_asset'),
  ('2300', 'Long term investments', 'asset', 'other_asset'),
  ('2301', 'Foreign shares', 'asset', 'other_asset'),
  ('2302', 'Other types of foreign investments', 'asset', 'other_asset'),
  ('2303', 'Canadian shares', 'asset', 'other_asset'),
  ('2304', 'Government of Canada debt', 'asset', 'other_asset'),
  ('2305', 'Canadian, provincial, and municipal government debt', 'asset', 'other_asset'),
  ('2306', 'Canadian corporate bonds and debentures', 'asset', 'other_asset'),
  ('2307', 'Debt securities', 'asset', 'other_asset'),
  ('2308', 'Equity securities', 'asset', 'other_asset'),
  ('2309', 'Securities purchased under resale agreements', 'asset', 'other_asset'),
  ('2310', 'Central credit union shares', 'asset', 'other_asset'),
  ('2311', 'Other Canadian long-term investments', 'asset', 'other_asset'),
  ('2360', 'Long-term loans', 'asset', 'other_asset'),
  ('2361', 'Mortgages', 'asset', 'other_asset'),
  ('2362', 'Personal and credit card loans', 'asset', 'other_asset'),
  ('2363', 'Business and government loans', 'asset', 'other_asset'),
  ('2364', 'Line of credit', 'asset', 'other_asset'),
  ('2420', 'Other long-term assets', 'asset', 'other_asset'),
  ('2421', 'Deferred income taxes', 'asset', 'other_asset'),
  ('2422', 'Deferred pension charges', 'asset', 'other_asset'),
  ('2423', 'Deferred unrealized exchange losses', 'asset', 'other_asset'),
  ('2424', 'Other deferred items/charges', 'asset', 'other_asset'),
  ('2425', 'Accumulated amortization of deferred charges', 'asset', 'accumulated_amortization'),
  ('2426', 'Reserve fund', 'asset', 'other_asset'),
  ('2427', 'Cash surrender value of life insurance', 'asset', 'other_asset'),
  ('2589', 'Total long-term assets', 'asset', 'total'),
  ('2590', 'Assets held in trust', 'asset', 'other_asset'),
  ('2599', 'Total assets', 'asset', 'total'),
  ('2600', 'Bank overdraft', 'liability', 'bank_overdraft'),
  ('2620', 'Amounts payable and accrued liabilities', 'liability', 'accounts_payable'),
  ('2621', 'Trade payables', 'liability', 'accounts_payable'),
  ('2622', 'Trade payables to related parties', 'liability', 'accounts_payable'),
  ('2623', 'Holdbacks payable', 'liability', 'accounts_payable'),
  ('2624', 'Wages payable', 'liability', 'payroll_liability'),
  ('2625', 'Management fees payable', 'liability', 'other_current_liability'),
  ('2626', 'Bonuses payable', 'liability', 'payroll_liability'),
  ('2627', 'Employee deductions payable', 'liability', 'payroll_liability'),
  ('2628', 'Withholding taxes payable', 'liability', 'payroll_liability'),
  ('2629', 'Interest payable', 'liability', 'other_current_liability'),
  ('2630', 'Amounts payable to members of NPOs', 'liability', 'other_current_liability'),
  ('2680', 'Taxes payable', 'liability', 'tax_payable'),
  ('2700', 'Short term debt', 'liability', 'other_current_liability'),
  ('2701', 'Loans from Canadian banks', 'liability', 'other_current_liability'),
  ('2702', 'Liability for securities sold short', 'liability', 'other_current_liability'),
  ('2703', 'Liability for securities sold under repurchase agreements', 'liability', 'other_current_liability'),
  ('2704', 'Gold and silver certificates', 'liability', 'other_current_liability'),
  ('2705', 'Cheques and other items in transit', 'liability', 'other_current_liability'),
  ('2706', 'Lien notes', 'liability', 'other_current_liability'),
  ('2770', 'Deferred income', 'liability', 'deferred_revenue'),
  ('2780', 'Due to shareholder(s)/director(s)', 'liability', 'due_to_shareholder'),
  ('2781', 'Due to individual shareholder(s)', 'liability', 'due_to_shareholder'),
  ('2782', 'Due to corporate shareholder(s)', 'liability', 'due_to_shareholder'),
  ('2783', 'Due to director(s)', 'liability', 'due_to_shareholder'),
  ('2840', 'Due to joint venture(s)/partnership(s)', 'liability', 'other_current_liability'),
  ('2860', 'Due to related parties', 'liability', 'other_current_liability'),
  ('2861', 'Demand notes due to related parties', 'liability', 'other_current_liability'),
  ('2862', 'Interest payable to related parties', 'liability', 'other_current_liability'),
  ('2863', 'Advances due to related parties', 'liability', 'other_current_liability'),
  ('2920', 'Current portion of long-term liability', 'liability', 'other_current_liability'),
  ('2940', 'Bankers'' acceptances', 'liability', 'other_current_liability'),
  ('2960', 'Other current liabilities', 'liability', 'other_current_liability'),
  ('2961', 'Deposits received', 'liability', 'other_current_liability'),
  ('2962', 'Dividends payable', 'liability', 'other_current_liability'),
  ('2963', 'Deferred income taxes', 'liability', 'other_current_liability'),
  ('2964', 'Reserves for guarantees, warranties, or indemnities', 'liability', 'other_current_liability'),
  ('2965', 'General provisions/reserves', 'liability', 'other_current_liability'),
  ('2966', 'Crew shares', 'liability', 'other_current_liability'),
  ('3139', 'Total current liabilities', 'liability', 'total'),
  ('3140', 'Long-term debt', 'liability', 'long_term_liability'),
  ('3141', 'Mortgages', 'liability', 'long_term_liability'),
  ('3142', 'Farm credit corporation loan', 'liability', 'long_term_liability'),
  ('3143', 'Chartered bank loan', 'liability', 'long_term_liability'),
  ('3144', 'Credit Union/Caisse Populaire loan', 'liability', 'long_term_liability'),
  ('3145', 'Provincial government loan', 'liability', 'long_term_liability'),
  ('3146', 'Supply company loan', 'liability', 'long_term_liability'),
  ('3147', 'Private loan', 'liability', 'long_term_liability'),
  ('3148', 'Central, league, and federation loans', 'liability', 'long_term_liability'),
  ('3149', 'Line of credit', 'liability', 'long_term_liability'),
  ('3150', 'Liability for securities sold short', 'liability', 'long_term_liability'),
  ('3151', 'Liability for securities sold under repurchase agreements', 'liability', 'long_term_liability'),
  ('3152', 'Lien notes', 'liability', 'long_term_liability'),
  ('3200', 'Deposit liabilities of financial institutions', 'liability', 'long_term_liability'),
  ('3210', 'Bonds and debentures', 'liability', 'long_term_liability'),
  ('3220', 'Deferred income', 'liability', 'deferred_revenue'),
  ('3240', 'Deferred income taxes', 'liability', 'long_term_liability'),
  ('3260', 'Due to shareholder(s)/director(s)', 'liability', 'due_to_shareholder'),
  ('3261', 'Due to individual shareholder(s)', 'liability', 'due_to_shareholder'),
  ('3262', 'Due to corporate shareholder(s)', 'liability', 'due_to_shareholder'),
  ('3263', 'Due to director(s)', 'liability', 'due_to_shareholder'),
  ('3270', 'Due to members', 'liability', 'long_term_liability'),
  ('3280', 'Due to joint venture(s)/partnership(s)', 'liability', 'long_term_liability'),
  ('3300', 'Due to related parties', 'liability', 'long_term_liability'),
  ('3301', 'Amounts owing to related Canadian parties', 'liability', 'long_term_liability'),
  ('3302', 'Amounts owing to related foreign parties', 'liability', 'long_term_liability'),
  ('3320', 'Other long-term liabilities', 'liability', 'long_term_liability'),
  ('3321', 'Long-term obligations/commitments/capital leases', 'liability', 'long_term_liability'),
  ('3322', 'Reserves for guarantees, warranties, or indemnities', 'liability', 'long_term_liability'),
  ('3323', 'Provision for site restoration', 'liability', 'long_term_liability'),
  ('3324', 'Contributions to qualifying environmental trust', 'liability', 'long_term_liability'),
  ('3325', 'General provisions/reserves', 'liability', 'long_term_liability'),
  ('3326', 'Preference shares restated', 'liability', 'long_term_liability'),
  ('3327', 'Member allocations', 'liability', 'long_term_liability'),
  ('3328', 'Deferred revenue from incomplete contracts', 'liability', 'deferred_revenue'),
  ('3450', 'Total long-term liabilities', 'liability', 'total'),
  ('3460', 'Subordinated debt', 'liability', 'long_term_liability'),
  ('3470', 'Amounts held in trust', 'liability', 'long_term_liability'),
  ('3499', 'Total liabilities', 'liability', 'total'),
  ('3500', 'Common shares', 'equity', 'share_capital'),
  ('3520', 'Preferred shares', 'equity', 'share_capital'),
  ('3540', 'Contributed and other surplus', 'equity', 'equity'),
  ('3541', 'Contributed surplus', 'equity', 'equity'),
  ('3542', 'Appraisal surplus', 'equity', 'equity'),
  ('3543', 'General reserve', 'equity', 'equity'),
  ('3570', 'Head office account', 'equity', 'equity'),
  ('3600', 'Retained earnings/deficit', 'equity', 'retained_earnings'),
  ('3620', 'Total shareholder equity', 'equity', 'total'),
  ('3640', 'Total liabilities and shareholder equity', 'equity', 'total'),
  ('3660', 'Retained earnings/deficit - start', 'equity', 'retained_earnings'),
  ('3680', 'Net income/loss', 'equity', 'total'),
  ('3700', 'Dividends declared', 'equity', 'dividends'),
  ('3701', 'Cash dividends', 'equity', 'dividends'),
  ('3702', 'Patronage dividends', 'equity', 'dividends'),
  ('3720', 'Prior period adjustments', 'equity', 'equity'),
  ('3740', 'Other items affecting retained earnings', 'equity', 'equity'),
  ('3741', 'Share redemptions', 'equity', 'equity'),
  ('3742', 'Special reserves', 'equity', 'equity'),
  ('3743', 'Currency adjustments', 'equity', 'equity'),
  ('3744', 'Unusual revenue items', 'equity', 'equity'),
  ('3745', 'Interfund transfer', 'equity', 'equity'),
  ('3849', 'Retained earnings/deficit - end', 'equity', 'total'),
  ('8000', 'Trade sales of goods and services', 'revenue', 'income'),
  ('8020', 'Sales of goods and services to related parties', 'revenue', 'income'),
  ('8030', 'Interdivisional sales', 'revenue', 'income'),
  ('8040', 'Sales from resource properties', 'revenue', 'income'),
  ('8041', 'Petroleum and natural gas sales', 'revenue', 'income'),
  ('8042', 'Petroleum and natural gas sales to related parties', 'revenue', 'income'),
  ('8043', 'Gas marketing', 'revenue', 'income'),
  ('8044', 'Processing revenue', 'revenue', 'income'),
  ('8045', 'Pipeline revenue', 'revenue', 'income'),
  ('8046', 'Seismic sales', 'revenue', 'income'),
  ('8047', 'Mining revenue', 'revenue', 'income'),
  ('8048', 'Coal revenue', 'revenue', 'income'),
  ('8049', 'Oil sands revenue', 'revenue', 'income'),
  ('8050', 'Royalty income', 'revenue', 'income'),
  ('8051', 'Oil and gas partnership/joint venture income/loss', 'revenue', 'income'),
  ('8052', 'Mining partnership/joint venture income/loss', 'revenue', 'income'),
  ('8053', 'Other production revenue', 'revenue', 'income'),
  ('8089', 'Total sales of goods and services', 'revenue', 'total'),
  ('8090', 'Investment revenue', 'revenue', 'other_income'),
  ('8091', 'Interest from foreign sources', 'revenue', 'other_income'),
  ('8092', 'Interest from Canadian bonds and debentures', 'revenue', 'other_income'),
  ('8093', 'Interest from Canadian mortgage loans', 'revenue', 'other_income'),
  ('8094', 'Interest from other Canadian sources', 'revenue', 'other_income'),
  ('8095', 'Dividend income', 'revenue', 'other_income'),
  ('8096', 'Dividends from Canadian sources', 'revenue', 'other_income'),
  ('8097', 'Dividends from foreign sources', 'revenue', 'other_income'),
  ('8100', 'Interest income (financial institutions)', 'revenue', 'other_income'),
  ('8101', 'Loan interest', 'revenue', 'other_income'),
  ('8102', 'Securities interest', 'revenue', 'other_income'),
  ('8103', 'Deposits with banks interest', 'revenue', 'other_income'),
  ('8120', 'Commission revenue', 'revenue', 'income'),
  ('8121', 'Commission income on real estate transactions', 'revenue', 'income'),
  ('8140', 'Rental revenue', 'revenue', 'income'),
  ('8141', 'Real estate rental revenue', 'revenue', 'income'),
  ('8142', 'Film rental revenue', 'revenue', 'income'),
  ('8150', 'Vehicle leasing', 'revenue', 'income'),
  ('8160', 'Fishing revenue', 'revenue', 'income'),
  ('8161', 'Fish products', 'revenue', 'income'),
  ('8162', 'Other marine products', 'revenue', 'income'),
  ('8163', 'Fishing grants, credits, and rebates', 'revenue', 'income'),
  ('8164', 'Fishing subsidies', 'revenue', 'income'),
  ('8165', 'Compensation for loss of fishing income or property', 'revenue', 'income'),
  ('8166', 'Sharesman income', 'revenue', 'income'),
  ('8210', 'Realized gains/losses on disposal of assets', 'revenue', 'other_income'),
  ('8211', 'Realized gains/losses on sale of investments', 'revenue', 'other_income'),
  ('8212', 'Realized gains/losses on sale of resource properties', 'revenue', 'other_income'),
  ('8220', 'NPO amounts received', 'revenue', 'other_income'),
  ('8221', 'Membership fees', 'revenue', 'other_income'),
  ('8222', 'Assessments', 'revenue', 'other_income'),
  ('8223', 'Gifts', 'revenue', 'other_income'),
  ('8224', 'Gross sales and revenues from organizational activities', 'revenue', 'other_income'),
  ('8230', 'Other revenue', 'revenue', 'other_income'),
  ('8231', 'Foreign exchange gains/losses', 'revenue', 'other_income'),
  ('8232', 'Income/loss of subsidiaries/affiliates', 'revenue', 'other_income'),
  ('8233', 'Income/loss of other divisions', 'revenue', 'other_income'),
  ('8234', 'Income/loss of joint ventures', 'revenue', 'other_income'),
  ('8235', 'Income/loss of partnerships', 'revenue', 'other_income'),
  ('8236', 'Realization of deferred revenues', 'revenue', 'other_income'),
  ('8237', 'Royalty income other than resource', 'revenue', 'other_income'),
  ('8238', 'Alberta royalty tax credits', 'revenue', 'other_income'),
  ('8239', 'Management and administration fees', 'revenue', 'other_income'),
  ('8240', 'Telecommunications revenue', 'revenue', 'other_income'),
  ('8241', 'Consulting fees', 'revenue', 'other_income'),
  ('8242', 'Subsidies and grants', 'revenue', 'other_income'),
  ('8243', 'Sale of by-products', 'revenue', 'other_income'),
  ('8244', 'Deposit services', 'revenue', 'other_income'),
  ('8245', 'Credit services', 'revenue', 'other_income'),
  ('8246', 'Card services', 'revenue', 'other_income'),
  ('8247', 'Patronage dividends', 'revenue', 'other_income'),
  ('8248', 'Insurance recoveries', 'revenue', 'other_income'),
  ('8249', 'Expense recoveries', 'revenue', 'other_income'),
  ('8250', 'Bad debt recoveries', 'revenue', 'other_income'),
  ('8299', 'Total revenue', 'revenue', 'total'),
  ('8300', 'Opening inventory', 'expense', 'cost_of_goods_sold'),
  ('8301', 'Opening inventory - finished goods', 'expense', 'cost_of_goods_sold'),
  ('8302', 'Opening inventory - raw materials', 'expense', 'cost_of_goods_sold'),
  ('8303', 'Opening inventory - goods in process', 'expense', 'cost_of_goods_sold'),
  ('8320', 'Purchases/cost of materials', 'expense', 'cost_of_goods_sold'),
  ('8340', 'Direct wages', 'expense', 'cost_of_goods_sold'),
  ('8350', 'Benefits on direct wages', 'expense', 'cost_of_goods_sold'),
  ('8360', 'Trades and sub-contracts', 'expense', 'cost_of_goods_sold'),
  ('8370', 'Production costs other than resource', 'expense', 'cost_of_goods_sold'),
  ('8400', 'Resource production costs', 'expense', 'cost_of_goods_sold'),
  ('8401', 'Pipeline operations', 'expense', 'cost_of_goods_sold'),
  ('8402', 'Drilling', 'expense', 'cost_of_goods_sold'),
  ('8403', 'Site restoration costs', 'expense', 'cost_of_goods_sold'),
  ('8404', 'Gross overriding royalty', 'expense', 'cost_of_goods_sold'),
  ('8405', 'Freehold royalties', 'expense', 'cost_of_goods_sold'),
  ('8406', 'Other producing properties rental', 'expense', 'cost_of_goods_sold'),
  ('8407', 'Prospect/geological', 'expense', 'cost_of_goods_sold'),
  ('8408', 'Well operating, fuel and equipment', 'expense', 'cost_of_goods_sold'),
  ('8409', 'Well abandonment and dry holes', 'expense', 'cost_of_goods_sold'),
  ('8410', 'Other lease rentals', 'expense', 'cost_of_goods_sold'),
  ('8411', 'Exploration expenses', 'expense', 'cost_of_goods_sold'),
  ('8412', 'Development expenses', 'expense', 'cost_of_goods_sold'),
  ('8435', 'Crown charges', 'expense', 'cost_of_goods_sold'),
  ('8436', 'Crown royalties', 'expense', 'cost_of_goods_sold'),
  ('8437', 'Crown lease rentals', 'expense', 'cost_of_goods_sold'),
  ('8438', 'Freehold mineral tax', 'expense', 'cost_of_goods_sold'),
  ('8439', 'Mining taxes', 'expense', 'cost_of_goods_sold'),
  ('8440', 'Oil sand leases', 'expense', 'cost_of_goods_sold'),
  ('8441', 'Saskatchewan resource surcharge', 'expense', 'cost_of_goods_sold'),
  ('8450', 'Other direct costs', 'expense', 'cost_of_goods_sold'),
  ('8451', 'Equipment hire and operation', 'expense', 'cost_of_goods_sold'),
  ('8452', 'Log yard', 'expense', 'cost_of_goods_sold'),
  ('8453', 'Forestry costs', 'expense', 'cost_of_goods_sold'),
  ('8454', 'Logging road costs', 'expense', 'cost_of_goods_sold'),
  ('8455', 'Stumpage costs', 'expense', 'cost_of_goods_sold'),
  ('8456', 'Royalty costs', 'expense', 'cost_of_goods_sold'),
  ('8457', 'Freight in and duty', 'expense', 'cost_of_goods_sold'),
  ('8458', 'Inventory write down', 'expense', 'cost_of_goods_sold'),
  ('8459', 'Direct cost amortization of tangible assets', 'expense', 'cost_of_goods_sold'),
  ('8460', 'Direct cost amortization of natural resource assets', 'expense', 'cost_of_goods_sold'),
  ('8461', 'Overhead expenses allocated to cost of sales', 'expense', 'cost_of_goods_sold'),
  ('8500', 'Closing inventory', 'expense', 'cost_of_goods_sold'),
  ('8501', 'Closing inventory - finished goods', 'expense', 'cost_of_goods_sold'),
  ('8502', 'Closing inventory - raw materials', 'expense', 'cost_of_goods_sold'),
  ('8503', 'Closing inventory - goods in process', 'expense', 'cost_of_goods_sold'),
  ('8518', 'Cost of sales', 'expense', 'total'),
  ('8519', 'Gross profit/loss', 'expense', 'total'),
  ('8520', 'Advertising and promotion', 'expense', 'expense'),
  ('8521', 'Advertising', 'expense', 'expense'),
  ('8522', 'Donations', 'expense', 'expense'),
  ('8523', 'Meals and entertainment', 'expense', 'expense'),
  ('8524', 'Promotion', 'expense', 'expense'),
  ('8570', 'Amortization of intangible assets', 'expense', 'depreciation_amortization'),
  ('8590', 'Bad debt expense', 'expense', 'expense'),
  ('8610', 'Loan losses', 'expense', 'expense'),
  ('8611', 'Provision for loan losses', 'expense', 'expense'),
  ('8620', 'Employee benefits', 'expense', 'expense'),
  ('8621', 'Group insurance benefits', 'expense', 'expense'),
  ('8622', 'Employer''s portion of employee benefits', 'expense', 'expense'),
  ('8623', 'Contributions to deferred income plans', 'expense', 'expense'),
  ('8650', 'Amortization of natural resource assets', 'expense', 'depreciation_amortization'),
  ('8670', 'Amortization of tangible assets', 'expense', 'depreciation_amortization'),
  ('8690', 'Insurance', 'expense', 'expense'),
  ('8691', 'Life insurance on executives', 'expense', 'expense'),
  ('8710', 'Interest and bank charges', 'expense', 'expense'),
  ('8711', 'Interest on short-term debt', 'expense', 'expense'),
  ('8712', 'Interest on bonds and debentures', 'expense', 'expense'),
  ('8713', 'Interest on mortgages', 'expense', 'expense'),
  ('8714', 'Interest on long-term debt', 'expense', 'expense'),
  ('8715', 'Bank charges', 'expense', 'expense'),
  ('8716', 'Credit card charges', 'expense', 'expense'),
  ('8717', 'Collection and credit costs', 'expense', 'expense'),
  ('8740', 'Interest paid (financial institutions)', 'expense', 'expense'),
  ('8741', 'Interest paid on deposits', 'expense', 'expense'),
  ('8742', 'Interest paid on bonds and debentures', 'expense', 'expense'),
  ('8760', 'Business taxes, licences, and memberships', 'expense', 'expense'),
  ('8761', 'Memberships', 'expense', 'expense'),
  ('8762', 'Business taxes', 'expense', 'expense'),
  ('8763', 'Franchise fees', 'expense', 'expense'),
  ('8764', 'Government fees', 'expense', 'expense'),
  ('8780', 'New Brunswick tax on large corporations', 'expense', 'expense'),
  ('8790', 'Nova Scotia tax on large corporations', 'expense', 'expense'),
  ('8810', 'Office expenses', 'expense', 'expense'),
  ('8811', 'Office stationery and supplies', 'expense', 'expense'),
  ('8812', 'Office utilities', 'expense', 'expense'),
  ('8813', 'Data processing', 'expense', 'expense'),
  ('8860', 'Professional fees', 'expense', 'expense'),
  ('8861', 'Legal fees', 'expense', 'expense'),
  ('8862', 'Accounting fees', 'expense', 'expense'),
  ('8863', 'Consulting fees', 'expense', 'expense'),
  ('8864', 'Architect fees', 'expense', 'expense'),
  ('8865', 'Appraisal fees', 'expense', 'expense'),
  ('8866', 'Laboratory fees', 'expense', 'expense'),
  ('8867', 'Medical fees', 'expense', 'expense'),
  ('8868', 'Veterinary fees', 'expense', 'expense'),
  ('8869', 'Brokerage fees', 'expense', 'expense'),
  ('8870', 'Transfer fees', 'expense', 'expense'),
  ('8871', 'Management and administration fees', 'expense', 'expense'),
  ('8872', 'Refining and assay', 'expense', 'expense'),
  ('8873', 'Registrar and transfer agent fees', 'expense', 'expense'),
  ('8874', 'Restructuring costs', 'expense', 'expense'),
  ('8875', 'Security commission fees', 'expense', 'expense'),
  ('8876', 'Training expense', 'expense', 'expense'),
  ('8877', 'Studio and recording', 'expense', 'expense'),
  ('8910', 'Rental', 'expense', 'expense'),
  ('8911', 'Real estate rental', 'expense', 'expense'),
  ('8912', 'Occupancy costs', 'expense', 'expense'),
  ('8913', 'Condominium fees', 'expense', 'expense'),
  ('8914', 'Equipment rental', 'expense', 'expense'),
  ('8915', 'Motor vehicle rentals', 'expense', 'expense'),
  ('8916', 'Moorage (boat)', 'expense', 'expense'),
  ('8917', 'Storage', 'expense', 'expense'),
  ('8918', 'Quota rental', 'expense', 'expense'),
  ('8960', 'Repairs and maintenance', 'expense', 'expense'),
  ('8961', 'Repairs and maintenance - buildings', 'expense', 'expense'),
  ('8962', 'Repairs and maintenance - vehicles', 'expense', 'expense'),
  ('8963', 'Repairs and maintenance - boats', 'expense', 'expense'),
  ('8964', 'Repairs and maintenance - machinery and equipment', 'expense', 'expense'),
  ('9010', 'Other repairs and maintenance', 'expense', 'expense'),
  ('9011', 'Machine shop expense', 'expense', 'expense'),
  ('9012', 'Road costs', 'expense', 'expense'),
  ('9013', 'Security', 'expense', 'expense'),
  ('9014', 'Garbage removal', 'expense', 'expense'),
  ('9060', 'Salaries and wages', 'expense', 'expense'),
  ('9061', 'Commissions', 'expense', 'expense'),
  ('9062', 'Crew share', 'expense', 'expense'),
  ('9063', 'Bonuses', 'expense', 'expense'),
  ('9064', 'Directors fees', 'expense', 'expense'),
  ('9065', 'Management salaries', 'expense', 'expense'),
  ('9066', 'Employee salaries', 'expense', 'expense'),
  ('9110', 'Sub-contracts', 'expense', 'expense'),
  ('9130', 'Supplies', 'expense', 'expense'),
  ('9131', 'Small tools', 'expense', 'expense'),
  ('9132', 'Shop expense', 'expense', 'expense'),
  ('9133', 'Uniforms', 'expense', 'expense'),
  ('9134', 'Laundry', 'expense', 'expense'),
  ('9135', 'Food and catering', 'expense', 'expense'),
  ('9136', 'Fishing gear', 'expense', 'expense'),
  ('9137', 'Nets and traps', 'expense', 'expense'),
  ('9138', 'Salt, bait, and ice', 'expense', 'expense'),
  ('9139', 'Camp supplies', 'expense', 'expense'),
  ('9150', 'Computer-related expenses', 'expense', 'expense'),
  ('9151', 'Upgrade', 'expense', 'expense'),
  ('9152', 'Internet', 'expense', 'expense'),
  ('9180', 'Property taxes', 'expense', 'expense'),
  ('9200', 'Travel expenses', 'expense', 'expense'),
  ('9201', 'Meetings and conventions', 'expense', 'expense'),
  ('9220', 'Utilities', 'expense', 'expense'),
  ('9221', 'Electricity', 'expense', 'expense'),
  ('9222', 'Water', 'expense', 'expense'),
  ('9223', 'Heat', 'expense', 'expense'),
  ('9224', 'Fuel costs', 'expense', 'expense'),
  ('9225', 'Telephone and telecommunications', 'expense', 'expense'),
  ('9270', 'Other expenses', 'expense', 'expense'),
  ('9271', 'Cash over/short', 'expense', 'expense'),
  ('9272', 'Reimbursement of parent company expense', 'expense', 'expense'),
  ('9273', 'Selling expenses', 'expense', 'expense'),
  ('9274', 'Shipping and warehouse expense', 'expense', 'expense'),
  ('9275', 'Delivery, freight and express', 'expense', 'expense'),
  ('9276', 'Warranty expenses', 'expense', 'expense'),
  ('9277', 'Royalty expenses - resident', 'expense', 'expense'),
  ('9278', 'Royalty expenses - non-resident', 'expense', 'expense'),
  ('9279', 'Dumping charges', 'expense', 'expense'),
  ('9280', 'Land fill fees', 'expense', 'expense'),
  ('9281', 'Vehicle expenses', 'expense', 'expense'),
  ('9282', 'Research and development', 'expense', 'expense'),
  ('9283', 'Withholding taxes', 'expense', 'expense'),
  ('9284', 'General and administrative expenses', 'expense', 'expense'),
  ('9285', 'Interdivisional expenses', 'expense', 'expense'),
  ('9286', 'Interfund transfer', 'expense', 'expense'),
  ('9367', 'Total operating expenses', 'expense', 'total'),
  ('9368', 'Total expenses', 'expense', 'total'),
  ('9369', 'Net non-farming income', 'expense', 'total'),
  ('9370', 'Grains and oilseeds', 'revenue', 'income'),
  ('9371', 'Wheat', 'revenue', 'income'),
  ('9372', 'Oats', 'revenue', 'income'),
  ('9373', 'Barley', 'revenue', 'income'),
  ('9374', 'Mixed grains', 'revenue', 'income'),
  ('9375', 'Corn', 'revenue', 'income'),
  ('9376', 'Canola', 'revenue', 'income'),
  ('9377', 'Flaxseed', 'revenue', 'income'),
  ('9378', 'Soya beans', 'revenue', 'income'),
  ('9379', 'Wheat board payments', 'revenue', 'income'),
  ('9420', 'Other crop revenues', 'revenue', 'income'),
  ('9421', 'Fruit', 'revenue', 'income'),
  ('9422', 'Potatoes', 'revenue', 'income'),
  ('9423', 'Vegetables', 'revenue', 'income'),
  ('9424', 'Tobacco', 'revenue', 'income'),
  ('9425', 'Greenhouse and nursery products', 'revenue', 'income'),
  ('9426', 'Forage crops', 'revenue', 'income'),
  ('9470', 'Livestock and animal products revenue', 'revenue', 'income'),
  ('9471', 'Cattle', 'revenue', 'income'),
  ('9472', 'Swine', 'revenue', 'income'),
  ('9473', 'Poultry', 'revenue', 'income'),
  ('9474', 'Sheep and lambs', 'revenue', 'income'),
  ('9475', 'Pregnant mare urine (PMU)', 'revenue', 'income'),
  ('9476', 'Milk and cream (excluding dairy subsidies)', 'revenue', 'income'),
  ('9477', 'Eggs for consumption', 'revenue', 'income'),
  ('9478', 'Hatching eggs', 'revenue', 'income'),
  ('9479', 'Aquaculture (hatching and raising)', 'revenue', 'income'),
  ('9480', 'Horses (breeding and meat)', 'revenue', 'income'),
  ('9520', 'Other commodities', 'revenue', 'income'),
  ('9521', 'Maple products', 'revenue', 'income'),
  ('9522', 'Artificial insemination', 'revenue', 'income'),
  ('9523', 'Semen production', 'revenue', 'income'),
  ('9524', 'Embryo production', 'revenue', 'income'),
  ('9540', 'Program payment revenues', 'revenue', 'income'),
  ('9541', 'Dairy subsidies', 'revenue', 'income'),
  ('9542', 'Crop insurance', 'revenue', 'income'),
  ('9543', 'NISA payments', 'revenue', 'income'),
  ('9544', 'Disaster Assistance Program payments', 'revenue', 'income'),
  ('9570', 'Rebates', 'revenue', 'income'),
  ('9571', 'Rebates - fuel', 'revenue', 'income'),
  ('9572', 'Rebates - interest', 'revenue', 'income'),
  ('9573', 'Rebates - property taxes', 'revenue', 'income'),
  ('9574', 'Resales, rebates, GST for NISA eligible expenses', 'revenue', 'income'),
  ('9575', 'Rebates, GST for NISA non-eligible expenses', 'revenue', 'income'),
  ('9600', 'Other farm revenues/losses', 'revenue', 'income'),
  ('9601', 'Custom or contract work', 'revenue', 'income'),
  ('9602', 'Wood sales', 'revenue', 'income'),
  ('9603', 'Horse racing', 'revenue', 'income'),
  ('9604', 'Insurance proceeds', 'revenue', 'income'),
  ('9605', 'Patronage dividends', 'revenue', 'income'),
  ('9606', 'Rental income', 'revenue', 'income'),
  ('9607', 'Interest income', 'revenue', 'income'),
  ('9608', 'Dividend income', 'revenue', 'income'),
  ('9609', 'Gains/losses on disposal of assets', 'revenue', 'income'),
  ('9610', 'Gravel', 'revenue', 'income'),
  ('9611', 'Trucking', 'revenue', 'income'),
  ('9612', 'Resale of commodities purchased', 'revenue', 'income'),
  ('9613', 'Leases (gas, oil, well, surface, etc.)', 'revenue', 'income'),
  ('9614', 'Machine rentals', 'revenue', 'income'),
  ('9615', 'Farming partnership income/loss', 'revenue', 'income'),
  ('9616', 'Farming joint venture income/loss', 'revenue', 'income'),
  ('9650', 'Non-farming income', 'revenue', 'income'),
  ('9659', 'Total farm revenue', 'revenue', 'total'),
  ('9660', 'Crop expenses', 'expense', 'expense'),
  ('9661', 'Containers, twine and baling wire', 'expense', 'expense'),
  ('9662', 'Fertilizers and lime', 'expense', 'expense'),
  ('9663', 'Pesticides', 'expense', 'expense'),
  ('9664', 'Seeds and plants', 'expense', 'expense'),
  ('9665', 'Insurance premiums (crop) NISA ACS', 'expense', 'expense'),
  ('9710', 'Livestock expenses', 'expense', 'expense'),
  ('9711', 'Feed, supplements, straw, and bedding', 'expense', 'expense'),
  ('9712', 'Livestock purchases', 'expense', 'expense'),
  ('9713', 'Veterinary fees, medicine, and breeding fees', 'expense', 'expense'),
  ('9714', 'Minerals and salts', 'expense', 'expense'),
  ('9760', 'Machinery expenses', 'expense', 'expense'),
  ('9761', 'Machinery insurance', 'expense', 'expense'),
  ('9762', 'Machinery licences', 'expense', 'expense'),
  ('9763', 'Machinery repairs', 'expense', 'expense'),
  ('9764', 'Machinery fuel', 'expense', 'expense'),
  ('9765', 'Machinery lease', 'expense', 'expense'),
  ('9790', 'General farm expenses', 'expense', 'expense'),
  ('9791', 'Amortization of tangible assets', 'expense', 'depreciation_amortization'),
  ('9792', 'Advertising, marketing costs, and promotion', 'expense', 'expense'),
  ('9793', 'Bad debt', 'expense', 'expense'),
  ('9794', 'Benefits related to employee salaries', 'expense', 'expense'),
  ('9795', 'Building repairs and maintenance', 'expense', 'expense'),
  ('9796', 'Clearing, levelling, and draining land', 'expense', 'expense'),
  ('9797', 'Crop insurance, Revenue Protection Program, and stabilization premiums', 'expense', 'expense'),
  ('9798', 'Custom or contract work', 'expense', 'expense'),
  ('9799', 'Electricity', 'expense', 'expense'),
  ('9800', 'Fence repairs and maintenance', 'expense', 'expense'),
  ('9801', 'Freight and trucking', 'expense', 'expense'),
  ('9802', 'Heating fuel and curing fuel', 'expense', 'expense'),
  ('9803', 'Insurance program overpayment recapture', 'expense', 'expense'),
  ('9804', 'Other insurance premiums', 'expense', 'expense'),
  ('9805', 'Interest and bank charges', 'expense', 'expense'),
  ('9806', 'Marketing board fees', 'expense', 'expense'),
  ('9807', 'Memberships/subscription fees', 'expense', 'expense'),
  ('9808', 'Office expenses', 'expense', 'expense'),
  ('9809', 'Professional fees', 'expense', 'expense'),
  ('9810', 'Property taxes', 'expense', 'expense'),
  ('9811', 'Rent - land and buildings', 'expense', 'expense'),
  ('9812', 'Rent - machinery', 'expense', 'expense'),
  ('9813', 'Other rental expenses', 'expense', 'expense'),
  ('9814', 'Salaries and wages', 'expense', 'expense'),
  ('9815', 'Salaries and wages other than spouse or dependants', 'expense', 'expense'),
  ('9816', 'Salaries and wages paid to dependants', 'expense', 'expense'),
  ('9817', 'Selling costs', 'expense', 'expense'),
  ('9818', 'Supplies', 'expense', 'expense'),
  ('9819', 'Motor vehicle expenses', 'expense', 'expense'),
  ('9820', 'Small tools', 'expense', 'expense'),
  ('9821', 'Soil testing', 'expense', 'expense'),
  ('9822', 'Storage/drying', 'expense', 'expense'),
  ('9823', 'Licences/permits', 'expense', 'expense'),
  ('9824', 'Telephone', 'expense', 'expense'),
  ('9825', 'Quota rental (tobacco, dairy)', 'expense', 'expense'),
  ('9826', 'Gravel', 'expense', 'expense'),
  ('9827', 'Purchases of commodities resold', 'expense', 'expense'),
  ('9828', 'Salaries and wages paid to spouse', 'expense', 'expense'),
  ('9829', 'Motor vehicle interest and leasing costs', 'expense', 'expense'),
  ('9830', 'Prepared feed', 'expense', 'expense'),
  ('9831', 'Custom feed', 'expense', 'expense'),
  ('9832', 'Amortization of intangible assets', 'expense', 'depreciation_amortization'),
  ('9833', 'Amortization of milk quota', 'expense', 'depreciation_amortization'),
  ('9834', 'Travel expenses', 'expense', 'expense'),
  ('9835', 'Capital/business taxes', 'expense', 'expense'),
  ('9850', 'Non-farming expenses', 'expense', 'expense'),
  ('9870', 'Net inventory adjustment', 'expense', 'expense'),
  ('9898', 'Total farm expenses', 'expense', 'total'),
  ('9899', 'Net farm income', 'expense', 'total'),
  ('9970', 'Net income/loss before taxes and extraordinary items', 'expense', 'total'),
  ('9975', 'Extraordinary item(s)', 'expense', 'other_expense'),
  ('9976', 'Legal settlements', 'expense', 'other_expense'),
  ('9980', 'Unrealized gains/losses', 'expense', 'other_expense'),
  ('9985', 'Unusual items', 'expense', 'other_expense'),
  ('9990', 'Current income taxes', 'expense', 'income_tax'),
  ('9995', 'Deferred income tax provision', 'expense', 'income_tax'),
  ('9999', 'Net income/loss after taxes and extraordinary items', 'expense', 'total');
-- 16 sales tax codes from data/sales_tax_codes.csv
insert into app_public.sales_tax_codes (code, name, rate, jurisdiction, recoverable) values
  ('GST', 'GST 5%', 5, 'CA', 'yes'),
  ('HST_ON', 'HST Ontario 13%', 13, 'ON', 'yes'),
  ('HST_NS', 'HST Nova Scotia 14% (from 2025-04-01; 15% before)', 14, 'NS', 'yes'),
  ('HST_NB', 'HST New Brunswick 15%', 15, 'NB', 'yes'),
  ('HST_NL', 'HST Newfoundland and Labrador 15%', 15, 'NL', 'yes'),
  ('HST_PE', 'HST Prince Edward Island 15%', 15, 'PE', 'yes'),
  ('QST', 'QST Quebec 9.975%', 9.975, 'QC', 'yes'),
  ('PST_BC', 'PST British Columbia 7%', 7, 'BC', 'no'),
  ('RST_MB', 'RST Manitoba 7%', 7, 'MB', 'no'),
  ('PST_SK', 'PST Saskatchewan 6%', 6, 'SK', 'no'),
  ('GST_QST', 'GST 5% + QST 9.975% (Quebec)', 14.975, 'QC', 'yes'),
  ('GST_PST_BC', 'GST 5% + PST 7% (British Columbia)', 12, 'BC', 'partial'),
  ('GST_RST_MB', 'GST 5% + RST 7% (Manitoba)', 12, 'MB', 'partial'),
  ('GST_PST_SK', 'GST 5% + PST 6% (Saskatchewan)', 11, 'SK', 'partial'),
  ('ZERO', 'Zero-rated supply (0%)', 0, 'CA', 'n/a'),
  ('EXEMPT', 'Exempt supply (no tax)', 0, 'CA', 'n/a');

------------------------------------------------------------------------------------------------
-- JSON shapes and shared rules.

create function app_private.tax_code_json(t app_public.tax_codes) returns jsonb
  language sql immutable as
$$ select case when t.id is null then null else jsonb_build_object('id', t.id, 'code', t.code, 'name', t.name,
     'classification', t.classification, 'accountType', t.account_type) end $$;

-- currentBalance is a JSON number (contract); the balance stays numeric until here.
create function app_private.account_json(a app_public.accounts, balance numeric) returns jsonb
  language sql stable as
$$ select jsonb_build_object('id', a.id, 'name', a.name, 'accountType', a.account_type,
     'classification', a.classification, 'subType', a.sub_type, 'lastFour', a.last_four, 'parentId', a.parent_id,
     'currentBalance', coalesce(balance, 0), 'active', a.active,
     'taxCode', (select app_private.tax_code_json(t) from app_public.tax_codes t where t.id = a.tax_code_id),
     'created', app_private.iso(a.created), 'updated', app_private.iso(a.updated)) $$;

create function app_private.account_by_id(org uuid, account uuid) returns jsonb
  language sql stable as
$$ select app_private.account_json(a, (select b.balance from app_private.account_balances(org) b where b.account_id = a.id))
     from app_public.accounts a where a.organization_id = org and a.id = account $$;

-- Allowed account types: the GIFI suggestions except `total`, plus credit_card and clearing.
create function app_private.check_account_type(account_type text) returns void
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

-- The parent of a (sub-)account: of this organization and of the same classification.
create function app_private.resolve_parent(org uuid, parent uuid, classification text) returns uuid
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

-- Creates one account: either from a GIFI tax code (type and classification follow from it) or
-- from accountType + classification; both together link the code, whose classification must agree.
-- A duplicate name raises unique_violation (23505); callers turn it into the contract's message.
create function app_private.insert_account(org uuid, name text, tax_code_id uuid, account_type text,
    classification text, sub_type text, last_four text, parent_id uuid) returns app_public.accounts
  language plpgsql volatile as
$$
declare
  t app_public.tax_codes;
  r app_public.accounts;
  nm text := btrim(name);
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
  if length(coalesce(sub_type, '')) > 100 then perform app_private.fail('subType must be at most 100 characters.'); end if;
  insert into app_public.accounts (organization_id, name, account_type, classification, sub_type, last_four, parent_id, tax_code_id)
    values (org, nm, typ, cls, coalesce(btrim(sub_type), ''), four,
            app_private.resolve_parent(org, insert_account.parent_id, cls), t.id)
    returning * into r;
  return r;
end $$;

grant execute on function app_private.tax_code_json(app_public.tax_codes), app_private.account_json(app_public.accounts, numeric),
  app_private.account_by_id(uuid, uuid), app_private.check_account_type(text), app_private.resolve_parent(uuid, uuid, text),
  app_private.insert_account(uuid, text, uuid, text, text, text, text, uuid)
  to accounting_visitor;

------------------------------------------------------------------------------------------------
-- Tax codes.

create function app_public.list_tax_codes(organization_id uuid, search text default null,
    "limit" integer default null, "offset" integer default null, classification text default null,
    account_type text default null) returns jsonb
  language plpgsql stable as
$$
declare
  lim integer := app_private.page_size("limit");
  off integer := app_private.page_offset("offset");
begin
  perform app_private.assert_org_access(organization_id, false);
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

-- The rate is a percentage as a decimal string with 3 decimals ("9.975").
create function app_public.list_sales_tax_codes(organization_id uuid) returns jsonb
  language plpgsql stable as
$$
begin
  perform app_private.assert_org_access(organization_id, false);
  return coalesce((select jsonb_agg(jsonb_build_object('code', s.code, 'name', s.name, 'rate', s.rate::text,
      'jurisdiction', s.jurisdiction, 'recoverable', s.recoverable) order by s.jurisdiction <> 'CA', s.jurisdiction, s.code)
    from app_public.sales_tax_codes s), '[]'::jsonb);
end $$;

------------------------------------------------------------------------------------------------
-- Accounts.

create function app_public.create_account(organization_id uuid, name text, tax_code_id uuid default null,
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

-- Each item in its own savepoint (the exception block); failures are listed by 0-based index.
create function app_public.batch_create_accounts(organization_id uuid, items jsonb) returns jsonb
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
      perform app_private.insert_account(batch_create_accounts.organization_id, item->>'name', (item->>'taxCodeId')::uuid,
        item->>'accountType', item->>'classification', item->>'subType', item->>'lastFour', (item->>'parentId')::uuid);
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

create function app_public.list_accounts(organization_id uuid, "limit" integer default null, "offset" integer default null,
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

-- Changes name, lastFour ("" clears it), parent (clearParent: true makes it top-level), tax code
-- and subType. Type and classification never change: journal lines depend on them.
create function app_public.update_account(organization_id uuid, account_id uuid, name text default null,
    last_four text default null, parent_id uuid default null, clear_parent boolean default null,
    tax_code_id uuid default null, sub_type text default null) returns jsonb
  language plpgsql volatile as
$$
declare
  a app_public.accounts;
  t app_public.tax_codes;
  nm text := btrim(name);
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
  if sub_type is not null then
    if length(sub_type) > 100 then perform app_private.fail('subType must be at most 100 characters.'); end if;
    a.sub_type := btrim(sub_type);
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

-- Accounts are never deleted; deactivating hides them from new use (category rules pointing at
-- them stop matching). The ledger adds: an account with posted lines keeps them.
create function app_public.deactivate_account(organization_id uuid, account_id uuid) returns jsonb
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

create function app_public.reactivate_account(organization_id uuid, account_id uuid) returns jsonb
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

------------------------------------------------------------------------------------------------
-- Starter chart (decisions §7), each account tied to its GIFI code.
create function app_private.create_starter_chart(org uuid) returns void
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

create or replace function app_private.create_organization(name text, currency text default 'CAD')
  returns app_public.organizations
  language plpgsql security definer set search_path = pg_catalog, app_public as
$$
declare
  o app_public.organizations;
  scope text := current_setting('app.organization_id', true);
begin
  if exists (select 1 from app_public.organizations x where lower(x.name) = lower(btrim(create_organization.name))) then
    perform app_private.fail('An organization with this name already exists.');
  end if;
  insert into app_public.organizations (name, functional_currency)
    values (btrim(create_organization.name), upper(coalesce(currency, 'CAD'))) returning * into o;
  -- The new organization in scope while its starter chart is written (RLS is forced), then back.
  perform set_config('app.organization_id', o.id::text, true);
  perform app_private.create_starter_chart(o.id);
  perform set_config('app.organization_id', coalesce(scope, ''), true);
  return o;
end $$;

------------------------------------------------------------------------------------------------
-- Contacts.

create function app_private.clean_email(email text) returns text
  language plpgsql immutable as
$$
declare e text := nullif(btrim(email), '');
begin
  if e is not null and (e !~ '^[^@\s]+@[^@\s]+\.[^@\s]+$' or length(e) > 254) then
    perform app_private.fail('Email must look like an email address.');
  end if;
  return e;
end $$;

create function app_private.clean_phone(phone text) returns text
  language plpgsql immutable as
$$
declare p text := nullif(btrim(phone), '');
begin
  if p is not null and p !~ '^\+?[0-9 ().-]{3,30}$' then
    perform app_private.fail('Phone must be 3 to 30 characters: digits, spaces, a leading + and ( ) - . only.');
  end if;
  return p;
end $$;

-- email and phone are "" when absent; balance is a JSON number (contract).
create function app_private.contact_json(c app_public.contacts, balance numeric) returns jsonb
  language sql stable as
$$ select jsonb_build_object('id', c.id, 'contactType', c.contact_type, 'displayName', c.display_name,
     'email', coalesce(c.email, ''), 'phone', coalesce(c.phone, ''), 'balance', coalesce(balance, 0),
     'active', c.active, 'created', app_private.iso(c.created), 'updated', app_private.iso(c.updated)) $$;

create function app_private.contact_by_id(org uuid, contact uuid) returns jsonb
  language sql stable as
$$ select app_private.contact_json(c, (select b.balance from app_private.contact_balances(org) b where b.contact_id = c.id))
     from app_public.contacts c where c.organization_id = org and c.id = contact $$;

create function app_private.insert_contact(org uuid, contact_type text, display_name text, email text, phone text)
  returns app_public.contacts
  language plpgsql volatile as
$$
declare
  r app_public.contacts;
  typ text := lower(btrim(contact_type));
  nm text := btrim(display_name);
begin
  if typ is null or typ not in ('vendor', 'customer') then perform app_private.fail('Contact type must be vendor or customer.'); end if;
  if nm is null or nm = '' then perform app_private.fail('Display name is required.'); end if;
  if length(nm) > 200 then perform app_private.fail('Display name must be at most 200 characters.'); end if;
  insert into app_public.contacts (organization_id, contact_type, display_name, email, phone)
    values (org, typ, nm, app_private.clean_email(email), app_private.clean_phone(phone))
    returning * into r;
  return r;
end $$;

grant execute on function app_private.clean_email(text), app_private.clean_phone(text),
  app_private.contact_json(app_public.contacts, numeric), app_private.contact_by_id(uuid, uuid),
  app_private.insert_contact(uuid, text, text, text, text) to accounting_visitor;

create function app_public.create_contact(organization_id uuid, contact_type text, display_name text,
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

create function app_public.batch_create_contacts(organization_id uuid, items jsonb) returns jsonb
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
      perform app_private.insert_contact(batch_create_contacts.organization_id, item->>'contactType', item->>'displayName',
        item->>'email', item->>'phone');
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

create function app_public.list_contacts(organization_id uuid, "limit" integer default null, "offset" integer default null,
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

-- Null arguments leave a field unchanged; email or phone "" clears it.
create function app_public.update_contact(organization_id uuid, contact_id uuid, contact_type text default null,
    display_name text default null, email text default null, phone text default null) returns jsonb
  language plpgsql volatile as
$$
declare c app_public.contacts;
begin
  perform app_private.assert_org_access(organization_id, false);
  select * into c from app_public.contacts x
   where x.organization_id = update_contact.organization_id and x.id = update_contact.contact_id for no key update;
  if not found then perform app_private.fail('Contact not found.', 'AP404'); end if;
  if contact_type is not null then
    if lower(btrim(contact_type)) not in ('vendor', 'customer') then perform app_private.fail('Contact type must be vendor or customer.'); end if;
    c.contact_type := lower(btrim(contact_type));
  end if;
  if display_name is not null then
    if btrim(display_name) = '' then perform app_private.fail('Display name is required.'); end if;
    if length(btrim(display_name)) > 200 then perform app_private.fail('Display name must be at most 200 characters.'); end if;
    c.display_name := btrim(display_name);
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

create function app_public.deactivate_contact(organization_id uuid, contact_id uuid) returns jsonb
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

create function app_public.reactivate_contact(organization_id uuid, contact_id uuid) returns jsonb
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

------------------------------------------------------------------------------------------------
-- Category rules.

create function app_private.category_rule_json(r app_public.category_rules) returns jsonb
  language sql stable as
$$ select jsonb_build_object('id', r.id, 'vendorPattern', r.vendor_pattern,
     'account', (select jsonb_build_object('id', a.id, 'name', a.name, 'accountType', a.account_type, 'active', a.active)
                   from app_public.accounts a where a.organization_id = r.organization_id and a.id = r.account_id),
     'matchCount', r.match_count, 'created', app_private.iso(r.created), 'updated', app_private.iso(r.updated)) $$;

-- A usable ILIKE pattern: not blank, at most 200 characters, no dangling escape.
create function app_private.check_vendor_pattern(pattern text) returns text
  language plpgsql immutable as
$$
declare p text := btrim(pattern);
begin
  if p is null or p = '' then perform app_private.fail('Vendor pattern is required.'); end if;
  if length(p) > 200 then perform app_private.fail('Vendor pattern must be at most 200 characters.'); end if;
  -- An odd number of trailing backslashes leaves the escape character dangling.
  if p ~ '(^|[^\\])(\\\\)*\\$' then perform app_private.fail('Vendor pattern is not a valid ILIKE pattern.'); end if;
  return p;
end $$;

-- The target of a rule: an active account of this organization.
create function app_private.rule_account(org uuid, account uuid) returns uuid
  language plpgsql stable as
$$
declare a app_public.accounts;
begin
  select * into a from app_public.accounts x where x.organization_id = org and x.id = account;
  if not found then perform app_private.fail('Category account not found.'); end if;
  if not a.active then perform app_private.fail('Category account is inactive.'); end if;
  return a.id;
end $$;

grant execute on function app_private.category_rule_json(app_public.category_rules), app_private.check_vendor_pattern(text),
  app_private.rule_account(uuid, uuid) to accounting_visitor;

create function app_public.create_category_rule(organization_id uuid, vendor_pattern text, category_id uuid) returns jsonb
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
  return jsonb_build_object('success', true, 'error', null, 'categoryRule', app_private.category_rule_json(r));
end $$;

create function app_public.list_category_rules(organization_id uuid, "limit" integer default null, "offset" integer default null,
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

create function app_public.update_category_rule(organization_id uuid, category_rule_id uuid, vendor_pattern text default null,
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

create function app_public.delete_category_rule(organization_id uuid, category_rule_id uuid) returns jsonb
  language plpgsql volatile as
$$
begin
  perform app_private.assert_org_access(organization_id, false);
  delete from app_public.category_rules x
   where x.organization_id = delete_category_rule.organization_id and x.id = category_rule_id;
  if not found then perform app_private.fail('Category rule not found.', 'AP404'); end if;
  return jsonb_build_object('success', true, 'error', null);
end $$;

------------------------------------------------------------------------------------------------
-- Intake addresses.

create function app_private.intake_address_json(i app_public.intake_addresses) returns jsonb
  language sql stable as
$$ select jsonb_build_object('id', i.id, 'addressType', i.address_type, 'address', i.address, 'label', i.label,
     'active', i.active, 'created', app_private.iso(i.created)) $$;
grant execute on function app_private.intake_address_json(app_public.intake_addresses) to accounting_visitor;

create function app_public.create_intake_address(organization_id uuid, address_type text, address text, label text default null)
  returns jsonb
  language plpgsql volatile as
$$
declare
  typ text := lower(btrim(address_type));
  addr text := btrim(address);
  r app_public.intake_addresses;
begin
  perform app_private.assert_org_access(organization_id, false);
  if typ is null or typ not in ('email', 'sms') then perform app_private.fail('Address type must be email or sms.'); end if;
  if addr is null or addr = '' then perform app_private.fail('Address is required.'); end if;
  if typ = 'email' then
    addr := lower(addr);
    if addr !~ '^[^@\s]+@[^@\s]+\.[^@\s]+$' or length(addr) > 254 then
      perform app_private.fail('Email must look like an email address.');
    end if;
  elsif addr !~ '^[0-9]+$' then
    perform app_private.fail('An SMS address must contain digits only.');
  elsif length(addr) not between 7 and 15 then
    perform app_private.fail('An SMS address must have 7 to 15 digits.');
  end if;
  if length(coalesce(label, '')) > 200 then perform app_private.fail('Label must be at most 200 characters.'); end if;
  begin
    insert into app_public.intake_addresses (organization_id, address_type, address, label)
      values (create_intake_address.organization_id, typ, addr, coalesce(btrim(label), ''))
      returning * into r;
  exception when unique_violation then
    -- The same words whoever holds it (this organization or another): nothing about the owner.
    perform app_private.fail('This address is already registered.');
  end;
  return jsonb_build_object('success', true, 'error', null, 'intakeAddress', app_private.intake_address_json(r));
end $$;

-- Active addresses only (a deleted one is deactivated and no longer listed), oldest first.
create function app_public.list_intake_addresses(organization_id uuid) returns jsonb
  language plpgsql stable as
$$
begin
  perform app_private.assert_org_access(organization_id, false);
  return coalesce((select jsonb_agg(app_private.intake_address_json(i) order by i.created, i.id)
    from app_public.intake_addresses i where i.organization_id = list_intake_addresses.organization_id and i.active), '[]'::jsonb);
end $$;

create function app_public.delete_intake_address(organization_id uuid, intake_address_id uuid) returns jsonb
  language plpgsql volatile as
$$
begin
  perform app_private.assert_org_access(organization_id, false);
  update app_public.intake_addresses x set active = false, deleted_at = now()
   where x.organization_id = delete_intake_address.organization_id and x.id = intake_address_id and x.active;
  if not found then perform app_private.fail('Intake address not found.', 'AP404'); end if;
  return jsonb_build_object('success', true, 'error', null);
end $$;

grant execute on function
  app_public.list_tax_codes(uuid, text, integer, integer, text, text), app_public.list_sales_tax_codes(uuid),
  app_public.create_account(uuid, text, uuid, text, text, text, text, uuid), app_public.batch_create_accounts(uuid, jsonb),
  app_public.list_accounts(uuid, integer, integer, text, text, text, boolean, text),
  app_public.update_account(uuid, uuid, text, text, uuid, boolean, uuid, text),
  app_public.deactivate_account(uuid, uuid), app_public.reactivate_account(uuid, uuid),
  app_public.create_contact(uuid, text, text, text, text), app_public.batch_create_contacts(uuid, jsonb),
  app_public.list_contacts(uuid, integer, integer, text, text, text, text, boolean),
  app_public.update_contact(uuid, uuid, text, text, text, text),
  app_public.deactivate_contact(uuid, uuid), app_public.reactivate_contact(uuid, uuid),
  app_public.create_category_rule(uuid, text, uuid), app_public.list_category_rules(uuid, integer, integer, text, text, text),
  app_public.update_category_rule(uuid, uuid, text, uuid), app_public.delete_category_rule(uuid, uuid),
  app_public.create_intake_address(uuid, text, text, text), app_public.list_intake_addresses(uuid),
  app_public.delete_intake_address(uuid, uuid)
  to accounting_visitor;

-- Organizations created before this migration get the starter chart too.
do $$
declare o uuid;
begin
  for o in select id from app_public.organizations loop
    perform set_config('app.organization_id', o::text, true);
    perform app_private.create_starter_chart(o);
  end loop;
  perform set_config('app.organization_id', '', true);
end $$;
