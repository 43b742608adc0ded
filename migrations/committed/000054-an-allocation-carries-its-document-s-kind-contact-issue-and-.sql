--! Previous: sha1:b5eb7d221be0ad4be082c441fdbb4c0e89d88aba
--! Hash: sha1:87ce8f7919f091db21d651ed5baa648ef1e81f13
--! Message: An allocation carries its document's kind, contact, issue and due dates, so that the aging report of a past day adds back later payments from one index

-- An allocation carries its document's kind, contact, issue and due dates (fixed once the
-- document is approved), so that the aging report of a past day adds back the later payments from
-- one index without reading a document.
alter table app_public.payment_allocations add column if not exists kind text;
alter table app_public.payment_allocations add column if not exists contact_id uuid;
alter table app_public.payment_allocations add column if not exists issue_date date;
alter table app_public.payment_allocations add column if not exists due_date date;
update app_public.payment_allocations p set kind = d.kind, contact_id = d.contact_id, issue_date = d.issue_date, due_date = d.due_date
  from app_public.documents d where d.id = p.document_id and p.kind is null;
alter table app_public.payment_allocations alter column kind set not null, alter column contact_id set not null,
  alter column issue_date set not null, alter column due_date set not null;
drop index if exists app_public.payment_allocations_paid_idx;
create index if not exists payment_allocations_paid_idx on app_public.payment_allocations (organization_id, kind, paid_on)
  include (contact_id, issue_date, due_date, amount);

--! Included receivables/payments.sql
-- Payments of invoices and bills (docs/api.md, Invoices, bills and contact balances): a payment is
-- a ledger event between the payment account and Accounts Receivable or Payable, whose
-- allocations say what it pays of each document; recorded directly or applied to a bank line
-- already imported. The documents' amounts paid and statuses follow in the same transaction.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- Row-level security, grants and triggers of this feature's tables.

-- app_public.payment_allocations
drop policy if exists payment_allocations_tenant on app_public.payment_allocations;
create policy payment_allocations_tenant on app_public.payment_allocations
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());
grant select, insert, delete on app_public.payment_allocations to accounting_visitor;
grant select on app_public.payment_allocations to reporting_reader;

------------------------------------------------------------------------------------------------

-- A document's status from what is paid of it.
create or replace function app_private.paid_status(amount_paid numeric, total numeric) returns text
  language sql immutable parallel safe as
$$ select case when amount_paid = 0 then 'open' when amount_paid < total then 'partially_paid' else 'paid' end $$;
grant execute on function app_private.paid_status(amount_paid numeric, total numeric) to accounting_visitor;

-- The documents a payment's allocations name, locked in id order before anything else of the
-- payment is written: every path that changes what is paid of a document (recording, applying,
-- giving back) takes the documents first, so that two of them never wait on each other.
create or replace function app_private.lock_allocated_documents(allocations jsonb) returns void
  language plpgsql volatile as
$$
begin
  -- PERFORM reads every row (a SQL function would stop at the first, locking only it).
  perform 1 from app_public.documents d
   where d.id in (select (x->>'documentId')::uuid from jsonb_array_elements(case when jsonb_typeof(allocations) = 'array' then allocations end) x
                   where x->>'documentId' ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$')
   order by d.id for update;
end $$;
grant execute on function app_private.lock_allocated_documents(allocations jsonb) to accounting_visitor;

-- Allocates payment event `e` to the documents of `allocations` ([{documentId, amount}]): each
-- document of the payment's contact and kind, open or partly paid, and never more than is due on
-- it; together exactly the payment's amount. The documents are locked in id order, so that two
-- payments of one document's last dollar run one after the other and the second is refused.
create or replace function app_private.allocate_payment(e app_public.ledger_events, kind text, allocations jsonb) returns void
  language plpgsql volatile as
$$
declare
  max_allocations constant integer := 100;
  a record;
  d app_public.documents;
  noun text := case kind when 'invoice' then 'invoice' else 'bill' end;
begin
  if jsonb_typeof(allocations) is distinct from 'array' or jsonb_array_length(allocations) = 0 then
    perform app_private.fail('Allocations must be a list of at least one document.');
  end if;
  if jsonb_array_length(allocations) > max_allocations then perform app_private.fail(format('At most %s allocations.', max_allocations)); end if;
  if exists (select 1 from jsonb_array_elements(allocations) x
              where x->>'documentId' is null or x->>'documentId' !~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$') then
    perform app_private.fail('Each allocation needs a documentId.');
  end if;
  if (select count(distinct x->>'documentId') from jsonb_array_elements(allocations) x) < jsonb_array_length(allocations) then
    perform app_private.fail('Each document at most once in allocations.');
  end if;
  for a in
    select (x->>'documentId')::uuid as document_id,
           app_private.parse_amount(x->>'amount', 'An allocation''s amount must be a positive decimal string.') as amount
      from jsonb_array_elements(allocations) x
     order by (x->>'documentId')::uuid
  loop
    select * into d from app_public.documents x where x.id = a.document_id for update;
    if not found then perform app_private.fail(format('No %s %s.', noun, a.document_id)); end if;
    if d.kind <> allocate_payment.kind then
      perform app_private.fail(format('%s is %s: money %s pays %ss.', d.number, case d.kind when 'invoice' then 'an invoice' else 'a bill' end,
        case kind when 'invoice' then 'in' else 'out' end, noun));
    end if;
    if e.contact_id is not null and d.contact_id <> e.contact_id then
      perform app_private.fail(format('%s is another contact''s %s: a payment is from one contact.', d.number, noun));
    end if;
    e.contact_id := d.contact_id;
    if d.status not in ('open', 'partially_paid') then
      perform app_private.fail(format('%s is %s: only an open %s takes a payment.', d.number, replace(d.status, '_', ' '), noun));
    end if;
    if a.amount > d.total - d.amount_paid then
      perform app_private.fail(format('%s exceeds the %s due on %s.', app_private.money(a.amount), app_private.money(d.total - d.amount_paid), d.number));
    end if;
    insert into app_public.payment_allocations (organization_id, event_id, document_id, amount, paid_on, kind, contact_id,
        issue_date, due_date)
      values (e.organization_id, e.id, d.id, a.amount, e.transaction_date, d.kind, d.contact_id, d.issue_date, d.due_date);
    update app_public.documents x set amount_paid = x.amount_paid + a.amount, status = app_private.paid_status(x.amount_paid + a.amount, x.total)
     where x.id = d.id;
    if d.amount_paid + a.amount = d.total then
      perform app_private.record_webhook_event(e.organization_id, kind || '.paid', d.id,
        (select app_private.document_json(x) from app_public.documents x where x.id = d.id));
    end if;
  end loop;
  if (select sum(app_private.parse_amount(x->>'amount', 'An allocation''s amount must be a positive decimal string.'))
        from jsonb_array_elements(allocations) x) <> e.functional_amount then
    perform app_private.fail('Allocations must add up to the amount.');
  end if;
  update app_public.ledger_events x set contact_id = e.contact_id where x.id = e.id and x.contact_id is distinct from e.contact_id;
end $$;
grant execute on function app_private.allocate_payment(e app_public.ledger_events, kind text, allocations jsonb) to accounting_visitor;

-- What a payment paid, given back when its entry is voided (rejected) or reversed: its documents
-- are owed again.
create or replace function app_private.release_allocations(event_id uuid) returns void
  language plpgsql volatile as
$$
begin
  perform 1 from app_public.documents d
   where d.id in (select p.document_id from app_public.payment_allocations p where p.event_id = release_allocations.event_id)
   order by d.id for update;
  with released as (
    delete from app_public.payment_allocations p where p.event_id = release_allocations.event_id
    returning p.document_id, p.amount
  )
  update app_public.documents d set amount_paid = d.amount_paid - r.amount, status = app_private.paid_status(d.amount_paid - r.amount, d.total)
    from released r where r.document_id = d.id;
end $$;
grant execute on function app_private.release_allocations(event_id uuid) to accounting_visitor;

create or replace function app_private.payment_result(event_id uuid) returns jsonb
  language sql stable as
$$
  select jsonb_build_object('success', true, 'error', null, 'eventId', e.id, 'journalEntryId', e.journal_entry_id,
    'documents', coalesce((select jsonb_agg(app_private.document_json(d) order by d.number, d.id)
      from app_public.payment_allocations p join app_public.documents d on d.id = p.document_id where p.event_id = e.id), '[]'::jsonb))
    from app_public.ledger_events e where e.id = payment_result.event_id
$$;
grant execute on function app_private.payment_result(event_id uuid) to accounting_visitor;

-- A customer's payment in (it credits Accounts Receivable) or a payment to a vendor out (it debits
-- Accounts Payable), booked and confirmed at once: a ledger event of type transfer between the
-- payment account and the control account, carrying the contact.
create or replace function app_public.record_payment(organization_id uuid, contact_id uuid, payment_account_id uuid,
    amount text, date text, allocations jsonb) returns jsonb
  language plpgsql volatile as
$$
declare
  c app_public.contacts;
  v_kind text;
  v_amount numeric;
  v_date date;
  e app_public.ledger_events;
begin
  perform app_private.assert_org_access(organization_id, false);
  perform set_config('app.audit_action', 'create', true);
  select * into c from app_public.contacts x where x.id = record_payment.contact_id;
  if not found then perform app_private.fail('Contact not found.'); end if;
  v_kind := case c.contact_type when 'customer' then 'invoice' else 'bill' end;
  perform app_private.check_payment_account(payment_account_id);
  v_amount := app_private.parse_amount(amount, 'Amount must be a positive decimal string.');
  v_date := app_private.parse_date(date, 'Date must be a date in YYYY-MM-DD format.');
  perform app_private.lock_allocated_documents(allocations);
  insert into app_public.ledger_events (organization_id, event_type, direction, merchant_name, functional_amount,
      functional_currency, transaction_date, category_id, payment_account_id, contact_id)
    select record_payment.organization_id, 'transfer', case v_kind when 'invoice' then 'in' else 'out' end, c.display_name, v_amount,
           o.functional_currency, v_date, app_private.control_account(record_payment.organization_id, v_kind), payment_account_id, c.id
      from app_public.organizations o where o.id = record_payment.organization_id
    returning * into e;
  perform app_private.allocate_payment(e, v_kind, allocations);
  perform app_private.post_journal_entries(array[e.id]);
  perform app_private.record_webhook_event(organization_id, 'ledger_event.created', e.id);
  perform app_private.record_webhook_event(organization_id, 'ledger_event.confirmed', e.id);
  return app_private.payment_result(e.id);
end $$;
grant execute on function app_public.record_payment(organization_id uuid, contact_id uuid, payment_account_id uuid, amount text, date text, allocations jsonb) to accounting_visitor;

-- A bank line already imported pays documents: money in pays invoices, money out bills. Its type
-- becomes transfer and its category Accounts Receivable or Payable (its splits and tax go), its
-- contact the documents', and it is confirmed.
create or replace function app_public.apply_ledger_event_to_documents(organization_id uuid, event_id uuid, allocations jsonb)
  returns jsonb
  language plpgsql volatile as
$$
declare
  e app_public.ledger_events;
  v_kind text;
begin
  perform app_private.assert_org_access(organization_id, false);
  perform set_config('app.audit_action', 'classify', true);
  perform app_private.lock_allocated_documents(allocations);
  select * into e from app_public.ledger_events x where x.id = event_id for update;
  if not found then perform app_private.fail('Ledger event not found.', 'AP404'); end if;
  if e.status not in ('needs_review', 'pending') then
    perform app_private.fail('Only an event in needs_review or pending can pay documents.');
  end if;
  if e.payment_account_id is null then perform app_private.fail('A payment account is required.'); end if;
  perform app_private.check_payment_account(e.payment_account_id);
  v_kind := case e.direction when 'in' then 'invoice' else 'bill' end;
  update app_public.ledger_events x set event_type = 'transfer', category_id = app_private.control_account(e.organization_id, v_kind),
      splits = null, tax_amount = null, tax_code = null
    where x.id = e.id
    returning * into e;
  perform app_private.allocate_payment(e, v_kind, allocations);
  perform app_private.post_journal_entries(array[e.id]);
  perform app_private.record_webhook_event(organization_id, 'ledger_event.confirmed', e.id);
  return app_private.payment_result(e.id);
end $$;
grant execute on function app_public.apply_ledger_event_to_documents(organization_id uuid, event_id uuid, allocations jsonb) to accounting_visitor;

-- The open documents a bank line might pay: of the kind its direction pays (in: invoices; out:
-- bills), whose number is in its description or reference, then those whose amount due equals its
-- amount, the earliest due first; at most 10.
create or replace function app_public.document_match_suggestions(organization_id uuid, event_id uuid) returns jsonb
  language plpgsql stable as
$$
declare e app_public.ledger_events;
begin
  perform app_private.assert_org_access(organization_id, false);
  select * into e from app_public.ledger_events x where x.id = event_id;
  if not found then perform app_private.fail('Ledger event not found.', 'AP404'); end if;
  -- A booked event pays nothing more.
  if e.status not in ('needs_review', 'pending') then return '[]'::jsonb; end if;
  return coalesce((
    select jsonb_agg(jsonb_build_object('document', app_private.document_json(s.d), 'reason', s.reason) order by s.rank, (s.d).due_date, (s.d).id)
      from (
        select d, case when by_number then 'number' else 'amount' end as reason, case when by_number then 0 else 1 end as rank
          -- A number of fewer than 3 characters is in too many descriptions to say anything.
          -- As a word: INV-1 is not in INV-10.
          from (select d, (length(d.number) >= 3
                           and (e.merchant_name || ' ' || coalesce(e.reference, '') || ' ' || e.memo)
                               ~* ('(^|[^[:alnum:]])' || regexp_replace(d.number, '([^[:alnum:]])', '\\\1', 'g') || '($|[^[:alnum:]])')) as by_number
                  from app_public.documents d
                 where d.organization_id = e.organization_id and d.kind = case e.direction when 'in' then 'invoice' else 'bill' end
                   and d.status in ('open', 'partially_paid')) m
         where by_number or (d).total - (d).amount_paid = e.functional_amount
         order by 3, (d).due_date, (d).id
         limit 10) s), '[]'::jsonb);
end $$;
grant execute on function app_public.document_match_suggestions(organization_id uuid, event_id uuid) to accounting_visitor;
--! EndIncluded receivables/payments.sql
--! Included receivables/aging.sql
-- The aging report (docs/api.md, Invoices, bills and contact balances): what each contact owed on
-- a day, by how long past due.
-- Re-runnable: `create or replace`, and drop-if-exists before each policy and trigger.

-- As of `as_of` (default today): each approved document issued by then, less what payments dated
-- by then paid of it (a payment dated later is added back), in the bucket of its days past due
-- (as_of - due date: 0 or less current, then 1-30, 31-60, 61-90, over 90). A voided document is
-- out, whenever it was voided. Contacts by name; totals of every bucket.
create or replace function app_public.aging_report(organization_id uuid, as_of text default null, kind text default null)
  returns jsonb
  language plpgsql stable as
$$
declare
  v_as_of date := current_date;
  v_kind text := coalesce(kind, 'receivable');
  v_doc text;
begin
  perform app_private.assert_org_access(organization_id, false);
  if v_kind not in ('receivable', 'payable') then perform app_private.fail('kind must be receivable or payable.'); end if;
  v_doc := case v_kind when 'receivable' then 'invoice' else 'bill' end;
  if as_of is not null then v_as_of := app_private.parse_date(as_of, 'asOf must be a date in YYYY-MM-DD format.'); end if;
  return (
    with owed as (
      -- What is owed now, read from the index of documents still owed alone, and what payments
      -- dated later paid, added back from the allocations' own index (each carries its document's
      -- contact and dates), both in the document's bucket.
      select d.contact_id, v_as_of - d.due_date as late, d.total - d.amount_paid as due
        from app_public.documents d
       where d.organization_id = aging_report.organization_id and d.kind = v_doc and d.issue_date <= v_as_of
         and d.status in ('open', 'partially_paid')
      union all
      select p.contact_id, v_as_of - p.due_date, p.amount
        from app_public.payment_allocations p
       where p.organization_id = aging_report.organization_id and p.kind = v_doc and p.paid_on > v_as_of
         and p.issue_date <= v_as_of
    ), rows as (
      select o.contact_id,
             coalesce(sum(o.due) filter (where o.late <= 0), 0) as current,
             coalesce(sum(o.due) filter (where o.late between 1 and 30), 0) as d30,
             coalesce(sum(o.due) filter (where o.late between 31 and 60), 0) as d60,
             coalesce(sum(o.due) filter (where o.late between 61 and 90), 0) as d90,
             coalesce(sum(o.due) filter (where o.late > 90), 0) as over90,
             sum(o.due) as total
        from owed o group by o.contact_id having sum(o.due) <> 0
    )
    select jsonb_build_object('asOf', to_char(v_as_of, 'YYYY-MM-DD'), 'kind', v_kind,
      'rows', coalesce((select jsonb_agg(jsonb_build_object('contact', jsonb_build_object('id', c.id, 'displayName', c.display_name),
          'current', app_private.money(r.current), 'days1to30', app_private.money(r.d30), 'days31to60', app_private.money(r.d60),
          'days61to90', app_private.money(r.d90), 'over90', app_private.money(r.over90), 'total', app_private.money(r.total))
          order by lower(c.display_name), c.id)
        from rows r join app_public.contacts c on c.id = r.contact_id), '[]'::jsonb),
      'totals', (select jsonb_build_object('current', app_private.money(coalesce(sum(r.current), 0)),
          'days1to30', app_private.money(coalesce(sum(r.d30), 0)), 'days31to60', app_private.money(coalesce(sum(r.d60), 0)),
          'days61to90', app_private.money(coalesce(sum(r.d90), 0)), 'over90', app_private.money(coalesce(sum(r.over90), 0)),
          'total', app_private.money(coalesce(sum(r.total), 0))) from rows r)));
end $$;
grant execute on function app_public.aging_report(organization_id uuid, as_of text, kind text) to accounting_visitor;
--! EndIncluded receivables/aging.sql
