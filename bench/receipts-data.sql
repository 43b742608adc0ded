-- Bench data for `npm run bench -- receipts` (matching part): :events bank-line expenses of one
-- organization (:org), in ONE insert … select from generate_series, with every trigger, index and
-- constraint in place (nothing dropped or disabled).
--   dates:      uniform over the last 3 years (1,095 days, about 913 events a day);
--   amounts:    85% log-normal spending (median about $20, many distinct cents values, $0.50 to
--               $25,000), 15% one of 20 common prices ($9.99, $4.50, $25.00 …) so that some
--               amounts repeat thousands of times, as subscriptions, coffees and fuel fills do;
--   merchants:  300 names (60 brands × 5 stores, "STAPLES #0417 TORONTO ON"), skewed so that the
--               popular ones get most lines;
--   status:     70% confirmed, 30% needs_review; all 'expense' / 'out' / CAD, source bank_import.
select setseed(0.42);

insert into app_public.ledger_events (organization_id, event_type, direction, merchant_name, functional_amount,
    functional_currency, transaction_date, status, source)
  select :'org', 'expense', 'out',
         upper(brands[1 + s.m % 60]) || ' #' || lpad(((s.m * 7919) % 9000 + 100)::text, 4, '0') || ' '
           || cities[1 + (s.m / 60) % 5],
         case when s.r1 < 0.15 then common[1 + floor(s.r2 * 20)::int]
              else least(25000, greatest(0.50,
                     round(exp(3.0 + 1.1 * sqrt(-2 * ln(1 - s.r2)) * cos(2 * pi() * s.r3))::numeric, 2))) end,
         'CAD',
         current_date - floor(s.r4 * 1095)::int,
         case when s.r5 < 0.7 then 'confirmed' else 'needs_review' end,
         'bank_import'
    from (select g, random() r1, random() r2, random() r3, random() r4, random() r5,
                 floor(300 * power(random(), 2))::int m
            from generate_series(1, :events) g) s,
         (select array['Staples', 'Shell', 'Esso', 'Petro-Canada', 'Costco', 'Amazon', 'Uber', 'Telus', 'Rogers',
                       'Tim Hortons', 'Starbucks', 'Home Depot', 'Canadian Tire', 'Best Buy', 'Loblaws', 'Sobeys',
                       'Metro', 'IKEA', 'Air Canada', 'WestJet', 'Canada Post', 'FedEx', 'Purolator', 'Walmart',
                       'Shoppers Drug Mart', 'Rona', 'Lowes', 'Indigo', 'Second Cup', 'McDonalds', 'Subway',
                       'A&W', 'Harveys', 'Swiss Chalet', 'Boston Pizza', 'Dollarama', 'Winners', 'Sport Chek',
                       'Mark''s', 'Bureau en Gros', 'Jean Coutu', 'Pharmaprix', 'Couche-Tard', 'Circle K',
                       'Ultramar', 'Husky', 'Irving', 'No Frills', 'FreshCo', 'Farm Boy', 'Longos', 'Save-On-Foods',
                       'London Drugs', 'Visions', 'The Source', 'Apple Store', 'Microsoft', 'Adobe', 'Zoom',
                       'Dropbox'] brands,
                 array['TORONTO ON', 'MONTREAL QC', 'VANCOUVER BC', 'CALGARY AB', 'OTTAWA ON'] cities,
                 array[9.99, 4.50, 25.00, 12.99, 50.00, 2.25, 100.00, 19.99, 15.00, 5.00, 29.99, 1.99, 60.00, 7.49,
                       14.95, 40.00, 3.75, 20.00, 75.00, 10.00]::numeric[] common) v;

vacuum analyze app_public.ledger_events;
analyze app_public.ledger_event_daily_counts;
