--! Previous: sha1:ad2f0c186f1ad27378f364c5d2387659d2ecbf84
--! Hash: sha1:c1b8fc10e60021edb7887aca8b2dfcc8cd268156
--! Message: Receipts: a field and its confidence are present together (constraint); fields read before confidences were kept count as medium

-- A field read before confidences were kept is of unknown trust: medium, so that matching treats
-- those receipts as it did when they were read (re-extraction gives them their own). From now on a
-- field and its confidence are present together (record_receipt_extraction writes both).
update app_public.receipts set
    vendor_confidence = case when vendor_name is not null then coalesce(vendor_confidence, 'medium') end,
    amount_confidence = case when amount is not null then coalesce(amount_confidence, 'medium') end,
    date_confidence = case when cardinality(date_readings) > 0 then coalesce(date_confidence, 'medium') end
  where (vendor_name is null) <> (vendor_confidence is null) or (amount is null) <> (amount_confidence is null)
     or (cardinality(date_readings) = 0) <> (date_confidence is null);
alter table app_public.receipts drop constraint if exists receipts_confidence_with_value_check;
alter table app_public.receipts add constraint receipts_confidence_with_value_check
  check ((vendor_name is null) = (vendor_confidence is null) and (amount is null) = (amount_confidence is null)
     and (cardinality(date_readings) = 0) = (date_confidence is null));
