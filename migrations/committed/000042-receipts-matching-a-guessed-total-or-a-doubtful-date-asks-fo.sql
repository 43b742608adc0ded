--! Previous: sha1:e076f4d125ec568b450c115d80f6d12642034141
--! Hash: sha1:ad2f0c186f1ad27378f364c5d2387659d2ecbf84
--! Message: Receipts matching: a guessed total or a doubtful date asks for a nearer name, a vendor taken from the email's sender for the event within a day

--! Included receipts/matching.sql
-- Matching receipts to ledger events (docs/api.md, Matching): candidates in one query, a link only
-- for a unique confident match, precision first. Thresholds measured on the evaluation corpus
-- (`npm run eval:receipts`; bench/README.md, "Receipts: extraction and matching quality").
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

-- What a link asks of a receipt with a low-confidence field. A total no arithmetic or label
-- confirms may be a subtotal another purchase happens to equal, and a date mended from broken
-- digits or merely the first seen may be another day: either asks for the vendor this near the
-- merchant's (the top of the plateau where precision stays 100% on the evaluation corpus). A vendor
-- taken from a forwarded email's sender may be a payment processor's name: it asks for the event
-- within this many days of the receipt's date, not the usual 3.
create or replace function app_private.receipt_match_strict_thresholds(out min_similarity real, out max_day_distance integer)
  language sql immutable parallel safe as
$$ select 0.55::real, 1 $$;
grant execute on function app_private.receipt_match_strict_thresholds() to accounting_visitor;

-- The receipt's fields read with low confidence (src/receipts/extraction/types.ts), by their API names.
create or replace function app_private.receipt_low_confidence_fields(r app_public.receipts) returns text[]
  language sql immutable parallel safe as
$$
  select array_remove(array[case when r.vendor_confidence = 'low' then 'vendor' end,
                            case when r.amount_confidence = 'low' then 'amount' end,
                            case when r.date_confidence = 'low' then 'date' end], null)
$$;
grant execute on function app_private.receipt_low_confidence_fields(r app_public.receipts) to accounting_visitor;

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
  s record := app_private.receipt_match_strict_thresholds();
  low_fields text[];
  min_similarity real;
  max_distance integer;
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
    low_fields := app_private.receipt_low_confidence_fields(r);
    min_similarity := case when low_fields && array['amount', 'date'] then greatest(t.min_similarity, s.min_similarity) else t.min_similarity end;
    max_distance := case when 'vendor' = any (low_fields) then s.max_day_distance end;
    -- The candidates once, best first: the first two decide.
    for c in select * from app_private.receipt_candidates(r.id) loop
      n_candidates := n_candidates + 1;
      if n_candidates = 1 then
        best_event := c.event_id; best_similarity := c.similarity; best_distance := c.day_distance; best_reading := c.reading;
      elsif n_candidates = 2 then
        runner_up_similarity := c.similarity;
      end if;
    end loop;
    if best_similarity >= min_similarity
       and (max_distance is null or best_distance <= max_distance)
       and (runner_up_similarity is null or best_similarity - runner_up_similarity >= t.min_lead) then
      -- The event is locked, then checked again: a person may have linked it meanwhile.
      perform 1 from app_public.ledger_events e where e.id = best_event and e.status <> 'ignored' for no key update;
      if found and not exists (select 1 from app_public.receipts x where x.event_id = best_event) then
        update app_public.receipts x set event_id = best_event, linked_by = 'matching', linked_at = now(),
               match_status = 'matched', receipt_date = best_reading,
               match_details = jsonb_build_object('similarity', round(best_similarity::numeric, 3), 'dayDistance', best_distance,
                 'runnerUpSimilarity', round(runner_up_similarity::numeric, 3), 'lowConfidence', to_jsonb(low_fields))
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
               'bestSimilarity', round(best_similarity::numeric, 3), 'runnerUpSimilarity', round(runner_up_similarity::numeric, 3),
               'lowConfidence', to_jsonb(low_fields))
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
