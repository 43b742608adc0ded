-- Bench data for `npm run bench -- documents`: one organization, :documents invoices (and a tenth as
-- many bills) over two years to 1,000 customers and 100 vendors, set-based, triggers off while
-- loading. Each approved document has its posting (control account against a revenue or expense
-- account). As a business's books are: of those issued in the last 60 days a quarter are paid and
-- some in part; of older ones 97% are paid, each by a payment (a confirmed transfer event with its
-- allocation). Variables: :org (organization id), :documents (invoices).
set session_replication_role = replica;  -- no triggers (and so no FK checks) while loading
select setseed(0.29);

insert into app_public.contacts (organization_id, contact_type, display_name)
  select :'org', case when i <= 1000 then 'customer' else 'vendor' end, case when i <= 1000 then 'Customer ' else 'Vendor ' end || i
    from generate_series(1, 1100) i;
insert into app_public.accounts (organization_id, name, account_type, classification)
  values (:'org', 'Accounts Receivable', 'accounts_receivable', 'asset'), (:'org', 'Accounts Payable', 'accounts_payable', 'liability'),
         (:'org', 'Office Supplies', 'expense', 'expense');

create temporary table bench_accounts as select name, id from app_public.accounts where organization_id = :'org';
create temporary table bench_contacts as
  select id, contact_type, row_number() over (partition by contact_type order by display_name) as n
    from app_public.contacts where organization_id = :'org';

create temporary table bench_documents as
  select app_private.uuid_v7() as id, g,
         case when g % 11 = 0 then 'bill' else 'invoice' end as kind,
         (current_date - (g % 730))::date as issue_date,
         round((20 + random() * 2000)::numeric, 2) as total,
         random() as r
    from generate_series(1, :documents + :documents / 10) g;

insert into app_public.documents (id, organization_id, kind, contact_id, number, issue_date, due_date, status, subtotal, tax_total,
    total, amount_paid, journal_entry_id, approved_at, created, updated)
  select d.id, :'org', d.kind,
         (select c.id from bench_contacts c where c.contact_type = case d.kind when 'invoice' then 'customer' else 'vendor' end
             and c.n = 1 + d.g % case d.kind when 'invoice' then 1000 else 100 end),
         case d.kind when 'invoice' then 'INV-' else 'B-' end || d.g, d.issue_date, d.issue_date + 30,
         d.status, d.total, 0, d.total,
         case d.status when 'paid' then d.total when 'partially_paid' then round(d.total / 2, 2) else 0 end,
         case when d.status <> 'draft' then app_private.uuid_v7() end, now(), now(), now()
    from (select d.*, case
            when d.r < 0.02 then 'draft'
            -- Issued in the last 60 days: a quarter paid, some in part, most still open.
            when current_date - d.issue_date <= 60 then case when d.r < 0.27 then 'paid' when d.r < 0.42 then 'partially_paid' else 'open' end
            -- Older: nearly all paid; 3% left owing, in part or whole.
            else case when d.r < 0.97 then 'paid' when d.r < 0.985 then 'partially_paid' else 'open' end end as status
          from bench_documents d) d;

-- Postings: one entry each, two lines (control account against revenue or expense).
insert into app_public.journal_entries (id, organization_id, document_id, txn_date, total_amount)
  select d.journal_entry_id, :'org', d.id, d.issue_date, d.total from app_public.documents d
   where d.organization_id = :'org' and d.journal_entry_id is not null;
insert into app_public.journal_lines (organization_id, entry_id, account_id, txn_date, debit, credit)
  select :'org', d.journal_entry_id, x.account_id, d.issue_date, x.debit, x.credit
    from app_public.documents d
    cross join lateral (values
      ((select id from bench_accounts where name = case d.kind when 'invoice' then 'Accounts Receivable' else 'Accounts Payable' end),
       case d.kind when 'invoice' then d.total else 0 end, case d.kind when 'invoice' then 0 else d.total end),
      ((select id from bench_accounts where name = case d.kind when 'invoice' then 'Sales Revenue' else 'Office Supplies' end),
       case d.kind when 'invoice' then 0 else d.total end, case d.kind when 'invoice' then d.total else 0 end)) x (account_id, debit, credit)
   where d.organization_id = :'org' and d.journal_entry_id is not null;

-- Payments: a confirmed transfer event for each paid or partly paid document, 0 to 60 days after issue.
create temporary table bench_payments as
  select app_private.uuid_v7() as event_id, app_private.uuid_v7() as entry_id, d.id as document_id, d.kind, d.contact_id, d.amount_paid,
         least(d.issue_date + (random() * 60)::integer, current_date) as day
    from app_public.documents d where d.organization_id = :'org' and d.amount_paid > 0;
insert into app_public.ledger_events (id, organization_id, event_type, direction, merchant_name, functional_amount, functional_currency,
    transaction_date, status, category_id, payment_account_id, journal_entry_id, contact_id, created, updated)
  select p.event_id, :'org', 'transfer', case p.kind when 'invoice' then 'in' else 'out' end, 'Payment', p.amount_paid, 'CAD', p.day,
         'confirmed', (select id from bench_accounts where name = case p.kind when 'invoice' then 'Accounts Receivable' else 'Accounts Payable' end),
         (select id from bench_accounts where name = 'Chequing'), p.entry_id, p.contact_id, now(), now()
    from bench_payments p;
insert into app_public.payment_allocations (organization_id, event_id, document_id, amount, paid_on, kind, contact_id, issue_date, due_date)
  select :'org', p.event_id, p.document_id, p.amount_paid, p.day, d.kind, d.contact_id, d.issue_date, d.due_date
    from bench_payments p join app_public.documents d on d.id = p.document_id;
insert into app_public.journal_entries (id, organization_id, event_id, txn_date, total_amount)
  select p.entry_id, :'org', p.event_id, p.day, p.amount_paid from bench_payments p;
insert into app_public.journal_lines (organization_id, entry_id, account_id, txn_date, debit, credit)
  select :'org', p.entry_id, x.account_id, p.day, x.debit, x.credit
    from bench_payments p
    cross join lateral (values
      ((select id from bench_accounts where name = 'Chequing'), case p.kind when 'invoice' then p.amount_paid else 0 end, case p.kind when 'invoice' then 0 else p.amount_paid end),
      ((select id from bench_accounts where name = case p.kind when 'invoice' then 'Accounts Receivable' else 'Accounts Payable' end),
       case p.kind when 'invoice' then 0 else p.amount_paid end, case p.kind when 'invoice' then p.amount_paid else 0 end)) x (account_id, debit, credit);

-- Derived tables, as the triggers keep them.
insert into app_public.account_daily_totals (organization_id, account_id, day, debit, credit)
  select organization_id, account_id, txn_date, sum(debit), sum(credit)
    from app_public.journal_lines where organization_id = :'org' and not voided group by 1, 2, 3;
insert into app_public.ledger_event_daily_counts (organization_id, day, status, n)
  select organization_id, transaction_date, status, count(*) from app_public.ledger_events where organization_id = :'org' group by 1, 2, 3;

set session_replication_role = origin;
vacuum analyze app_public.documents;
vacuum analyze app_public.payment_allocations;
vacuum analyze app_public.ledger_events;
vacuum analyze app_public.contacts;
