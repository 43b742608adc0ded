-- Bench data: for each organization of public.bench_tenants (org, events), that many events over
-- three years (about 80% confirmed), set-based (generate_series), triggers off while loading; the
-- derived tables (journal, daily totals, daily counts, merchant counts, the change feed) are then
-- computed in bulk, exactly as the triggers would have kept them. One organization for
-- `npm run bench -- ledger`, ten thousand for `npm run bench -- tenants` (bench/support.ts,
-- generateLedgers). Each organization needs the accounts named below (its chart, with Office
-- Supplies and Travel added).
set session_replication_role = replica;  -- no triggers (and so no FK checks) while loading
select setseed(0.42);

-- Each organization's accounts, one row per organization.
create temporary table bench_accounts as
  select t.org,
         max(a.id::text) filter (where a.name = 'Sales Revenue')::uuid as sales,
         max(a.id::text) filter (where a.name = 'Cost of Goods Sold')::uuid as cogs,
         max(a.id::text) filter (where a.name = 'Bank Fees & Charges')::uuid as fees,
         max(a.id::text) filter (where a.name = 'Office Supplies')::uuid as office,
         max(a.id::text) filter (where a.name = 'Travel')::uuid as travel,
         max(a.id::text) filter (where a.name = 'Chequing')::uuid as chequing,
         max(a.id::text) filter (where a.name = 'Processor Clearing')::uuid as clearing,
         max(a.id::text) filter (where a.name = 'GST/HST Payable')::uuid as hst
    from public.bench_tenants t join app_public.accounts a on a.organization_id = t.org
   group by t.org;

-- Merchants: 2,000 names, so that a search matches a small share.
create temporary table bench_merchants as
  select i, (array['Staples', 'Shell', 'Esso', 'Costco', 'Amazon', 'Uber', 'Telus', 'Rogers', 'Tim Hortons', 'Home Depot',
                   'Best Buy', 'Loblaws', 'Sobeys', 'Metro', 'IKEA', 'Air Canada', 'WestJet', 'Canada Post', 'FedEx', 'Purolator'])[1 + i % 20]
            || ' #' || i as name
    from generate_series(0, 1999) i;

create temporary table bench_events as
  select gen_random_uuid() as id, s.org, g as n,
         case when r1 < 0.85 then 'expense' else 'income' end as event_type,
         (current_date - (g % 1095))::date as transaction_date,
         round((1 + random() * 900)::numeric, 2) as amount,
         case when r2 < 0.80 then 'confirmed' when r2 < 0.92 then 'needs_review' when r2 < 0.97 then 'ignored' else 'pending' end as status,
         (g::bigint * 7919) % 2000 as merchant,
         -- A confirmed event's journal entry, named here so that the event is written once with it.
         case when r2 < 0.80 then gen_random_uuid() end as entry_id,
         r1, r2, random() as r3
    from (select t.org, g, random() as r1, random() as r2
            from public.bench_tenants t cross join lateral generate_series(1, t.events) g) s;

insert into app_public.ledger_events (id, organization_id, event_type, direction, merchant_name, functional_amount,
    functional_currency, transaction_date, status, memo, has_document, category_id, payment_account_id, journal_entry_id,
    created, updated, tax_code, tax_amount, tax_account_id)
  select e.id, e.org, e.event_type, case e.event_type when 'income' then 'in' else 'out' end, m.name, e.amount, 'CAD',
         e.transaction_date, e.status, case when e.r3 < 0.1 then 'memo ' || e.n else '' end, e.r3 < 0.3,
         -- classified: confirmed ones, and half of the rest
         case when e.status = 'confirmed' or e.r3 < 0.5 then
           case when e.event_type = 'income' then a.sales when e.r1 < 0.3 then a.cogs when e.r1 < 0.5 then a.fees
                when e.r1 < 0.7 then a.office else a.travel end end,
         case when e.status = 'confirmed' or e.r3 < 0.5 then case when e.r3 < 0.7 then a.chequing else a.clearing end end,
         e.entry_id, now() - (e.n % 1095) * interval '1 day', now(),
         -- Ontario HST on 60% of the classified events (the sales tax return reads their tax lines).
         case when e.taxed then 'HST_ON' end,
         case when e.taxed then app_private.round_half_even(e.amount * 13 / 113) end,
         case when e.taxed then a.hst end
    from (select e.*, (e.status = 'confirmed' or e.r3 < 0.5) and e.n % 5 < 3 as taxed from bench_events e) e
    join bench_accounts a on a.org = e.org
    join bench_merchants m on m.i = e.merchant;

-- Journal: one entry per confirmed event, two lines each (category and payment account), and a
-- third, tagged GST/HST, for its tax. The events already point at their entries: a second pass
-- setting journal_entry_id would write every confirmed event again with all its index entries
-- (at 10,000,000 events, more than 27 of the generation's 64 minutes) and leave over a third of
-- the table empty.
insert into app_public.journal_entries (id, organization_id, event_id, txn_date, total_amount)
  select e.entry_id, e.org, e.id, e.transaction_date, e.amount
    from bench_events e where e.status = 'confirmed';
insert into app_public.journal_lines (organization_id, entry_id, account_id, txn_date, debit, credit, tax_type, tax_on_sale)
  select j.organization_id, j.id, x.account_id, j.txn_date, case when x.debit_side then x.amount else 0 end, case when x.debit_side then 0 else x.amount end,
         x.tax_type, x.on_sale
    from app_public.journal_entries j
    join app_public.ledger_events e on e.id = j.event_id
    cross join lateral (values
      (e.category_id, e.functional_amount - coalesce(e.tax_amount, 0), e.direction = 'out', null, null),
      (e.tax_account_id, coalesce(e.tax_amount, 0), e.direction = 'out', 'GST_HST', e.event_type = 'income'),
      (e.payment_account_id, e.functional_amount, e.direction = 'in', null, null)
    ) x (account_id, amount, debit_side, tax_type, on_sale)
   where j.organization_id in (select org from public.bench_tenants) and x.amount > 0;

-- Derived tables, as the triggers keep them.
insert into app_public.account_daily_totals (organization_id, account_id, day, debit, credit)
  select organization_id, account_id, txn_date, sum(debit), sum(credit)
    from app_public.journal_lines where organization_id in (select org from public.bench_tenants) and not voided group by 1, 2, 3;
insert into app_public.sales_tax_daily_totals (organization_id, day, tax_type, collected, input_tax_credits, events)
  select organization_id, txn_date, tax_type, sum(case when tax_on_sale then credit - debit else 0 end),
         sum(case when tax_on_sale then 0 else debit - credit end), count(distinct entry_id)
    from app_public.journal_lines where organization_id in (select org from public.bench_tenants) and tax_type is not null and not voided
   group by 1, 2, 3;
insert into app_public.ledger_event_daily_counts (organization_id, day, status, n)
  select organization_id, transaction_date, status, count(*)
    from app_public.ledger_events where organization_id in (select org from public.bench_tenants) group by 1, 2, 3;

-- What confirmed events tell the suggestions (merchant_category_counts), as the trigger keeps it.
insert into app_public.merchant_category_counts (organization_id, merchant, category_id, confirmations)
  select organization_id, app_private.merchant_family(merchant_name), category_id, count(*)
    from app_public.ledger_events
   where organization_id in (select org from public.bench_tenants) and status in ('confirmed', 'synced', 'reconciled') and category_id is not null
   group by 1, 2, 3;
-- The change feed as an integration finds it after the books came in within the last 30 days: each
-- event's creation and, when confirmed, its confirmation; 40 changes to a transaction (more on a
-- database whose transaction ids have not reached the feed's count). Their transaction ids are
-- real past ones, below this script's: a page reads only changes older than every running
-- transaction, and ids past the database's own would leave every page empty.
select pg_current_xact_id()::text::bigint as feed_xid \gset
insert into app_public.ledger_change_feed (organization_id, txid, event_id, kind, at)
  select c.org, :feed_xid - 1 - (c.last - c.ord) / c.per, c.id, c.kind,
         now() - interval '29 days' + c.ord * interval '1 millisecond'
    from (select e.org, e.id, x.kind, 2 * e.n + x.k ord, 2 * max(e.n) over (partition by e.org) + 1 last,
                 greatest(40, ceil((2 * max(e.n) over (partition by e.org) + 2) / (:feed_xid - 10.0)))::bigint per
            from bench_events e
            cross join lateral (values (0, 'created'), (1, 'confirmed')) x (k, kind)
           where x.k = 0 or e.status = 'confirmed') c
   order by 2, c.ord;

set session_replication_role = origin;
vacuum analyze app_public.ledger_change_feed;
vacuum analyze app_public.ledger_events;
vacuum analyze app_public.journal_entries;
vacuum analyze app_public.journal_lines;
analyze app_public.account_daily_totals;
analyze app_public.sales_tax_daily_totals;
analyze app_public.ledger_event_daily_counts;
