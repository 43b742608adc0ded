--! Previous: sha1:4ae508c19d274c72078d7cc764e8549f50e87512
--! Hash: sha1:3854489b5f3829ce2d2759b73bcc7b90eca05c0e
--! Message: The webhook delivery log's index follows its order (seq)

-- The delivery log lists an endpoint's deliveries by seq (the order their events were made), not
-- by created: its index follows.
drop index if exists app_public.webhook_deliveries_endpoint_idx;
create index if not exists webhook_deliveries_endpoint_seq_idx on app_public.webhook_deliveries (webhook_endpoint_id, seq);
