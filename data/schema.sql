-- The migrated schema, as the catalog describes it. Made by `npm run schema:dump`; do not edit.

schema app_private
  grants: <owner>: CREATE, USAGE; accounting_visitor: USAGE; accounting_authenticator: USAGE

schema app_public
  grants: <owner>: CREATE, USAGE; accounting_visitor: USAGE; accounting_authenticator: USAGE; reporting_reader: USAGE

schema reporting
  grants: <owner>: CREATE, USAGE; accounting_visitor: USAGE; reporting_reader: USAGE

table app_private.job_outbox
  column id bigint not null identity a
  column task text not null
  column payload json not null
  column queue_name text
  column run_at timestamp with time zone
  column max_attempts integer
  column job_key text
  column queued_at timestamp with time zone not null default now()
  column preserve_run_at boolean not null default false
  constraint job_outbox_pkey PRIMARY KEY (id)
  CREATE UNIQUE INDEX job_outbox_pkey ON app_private.job_outbox USING btree (id)
  grants: none

table app_private.job_results (row-level security, forced)
  column id bigint not null identity a
  column job_name text not null
  column job_id text
  column attempt integer
  column organization_id uuid
  column payload jsonb not null default '{}'::jsonb
  column status text not null
  column result jsonb
  column error text
  column started_at timestamp with time zone not null
  column finished_at timestamp with time zone not null default clock_timestamp()
  constraint job_results_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES app_public.organizations(id) ON DELETE CASCADE
  constraint job_results_pkey PRIMARY KEY (id)
  constraint job_results_status_check CHECK ((status = ANY (ARRAY['succeeded'::text, 'failed'::text])))
  CREATE INDEX job_results_job_idx ON app_private.job_results USING btree (job_name, finished_at)
  CREATE UNIQUE INDEX job_results_pkey ON app_private.job_results USING btree (id)
  grants: none

table app_private.worker_heartbeats
  column pool_id text not null
  column beat_at timestamp with time zone not null default now()
  column beating_since timestamp with time zone not null default now()
  constraint worker_heartbeats_pkey PRIMARY KEY (pool_id)
  CREATE UNIQUE INDEX worker_heartbeats_pkey ON app_private.worker_heartbeats USING btree (pool_id)
  grants: none

table app_public.account_daily_totals (row-level security, forced)
  column organization_id uuid not null
  column account_id uuid not null
  column day date not null
  column debit numeric(20,2) not null default 0
  column credit numeric(20,2) not null default 0
  constraint account_daily_totals_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES app_public.organizations(id) ON DELETE CASCADE
  constraint account_daily_totals_pkey PRIMARY KEY (organization_id, account_id, day)
  CREATE INDEX account_daily_totals_day_idx ON app_public.account_daily_totals USING btree (organization_id, day)
  CREATE UNIQUE INDEX account_daily_totals_pkey ON app_public.account_daily_totals USING btree (organization_id, account_id, day)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: SELECT; reporting_reader: SELECT

table app_public.account_monthly_totals (row-level security, forced)
  column organization_id uuid not null
  column account_id uuid not null
  column month date not null
  column debit numeric(20,2) not null default 0
  column credit numeric(20,2) not null default 0
  constraint account_monthly_totals_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES app_public.organizations(id) ON DELETE CASCADE
  constraint account_monthly_totals_pkey PRIMARY KEY (organization_id, account_id, month)
  CREATE UNIQUE INDEX account_monthly_totals_pkey ON app_public.account_monthly_totals USING btree (organization_id, account_id, month)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: SELECT; reporting_reader: SELECT

table app_public.accounts (row-level security, forced)
  column id uuid not null default gen_random_uuid()
  column organization_id uuid not null  grants: accounting_visitor: INSERT
  column name text not null  grants: accounting_visitor: INSERT, UPDATE
  column account_type text not null  grants: accounting_visitor: INSERT
  column classification text not null  grants: accounting_visitor: INSERT
  column sub_type text not null default ''::text  grants: accounting_visitor: INSERT, UPDATE
  column last_four text  grants: accounting_visitor: INSERT, UPDATE
  column parent_id uuid  grants: accounting_visitor: INSERT, UPDATE
  column tax_code_id uuid  grants: accounting_visitor: INSERT, UPDATE
  column active boolean not null default true  grants: accounting_visitor: INSERT, UPDATE
  column created timestamp with time zone not null default now()
  column updated timestamp with time zone not null default now()  grants: accounting_visitor: UPDATE
  constraint accounts_account_type_check CHECK (((account_type ~ '^[a-z_]+$'::text) AND (account_type <> 'total'::text)))
  constraint accounts_check CHECK ((parent_id <> id))
  constraint accounts_classification_check CHECK ((classification = ANY (ARRAY['asset'::text, 'liability'::text, 'equity'::text, 'revenue'::text, 'expense'::text])))
  constraint accounts_last_four_check CHECK ((last_four ~ '^[0-9]{4}$'::text))
  constraint accounts_name_check CHECK ((((length(name) >= 1) AND (length(name) <= 200)) AND (name = btrim(name))))
  constraint accounts_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES app_public.organizations(id) ON DELETE CASCADE
  constraint accounts_organization_id_id_key UNIQUE (organization_id, id)
  constraint accounts_organization_id_parent_id_fkey FOREIGN KEY (organization_id, parent_id) REFERENCES app_public.accounts(organization_id, id)
  constraint accounts_pkey PRIMARY KEY (id)
  constraint accounts_sub_type_check CHECK ((length(sub_type) <= 100))
  constraint accounts_tax_code_id_fkey FOREIGN KEY (tax_code_id) REFERENCES app_public.tax_codes(id)
  CREATE INDEX accounts_parent_idx ON app_public.accounts USING btree (organization_id, parent_id) WHERE (parent_id IS NOT NULL)
  CREATE INDEX accounts_tax_code_idx ON app_public.accounts USING btree (tax_code_id)
  CREATE UNIQUE INDEX accounts_name_key ON app_public.accounts USING btree (organization_id, lower(name))
  CREATE UNIQUE INDEX accounts_organization_id_id_key ON app_public.accounts USING btree (organization_id, id)
  CREATE UNIQUE INDEX accounts_pkey ON app_public.accounts USING btree (id)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: SELECT; reporting_reader: SELECT

table app_public.api_keys (row-level security, forced)
  column id uuid not null default gen_random_uuid()  grants: accounting_visitor: SELECT
  column organization_id uuid not null  grants: accounting_visitor: SELECT
  column digest text not null
  column prefix text not null  grants: accounting_visitor: SELECT
  column label text not null default ''::text  grants: accounting_visitor: SELECT
  column created_by uuid  grants: accounting_visitor: SELECT
  column created timestamp with time zone not null default now()  grants: accounting_visitor: SELECT
  column last_used_at timestamp with time zone  grants: accounting_visitor: SELECT
  column revoked_at timestamp with time zone  grants: accounting_visitor: SELECT, UPDATE
  constraint api_keys_created_by_fkey FOREIGN KEY (created_by) REFERENCES app_public.users(id) ON DELETE SET NULL
  constraint api_keys_digest_check CHECK ((digest ~ '^[0-9a-f]{64}$'::text))
  constraint api_keys_digest_key UNIQUE (digest)
  constraint api_keys_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES app_public.organizations(id) ON DELETE CASCADE
  constraint api_keys_pkey PRIMARY KEY (id)
  CREATE INDEX api_keys_org_idx ON app_public.api_keys USING btree (organization_id, created)
  CREATE UNIQUE INDEX api_keys_digest_key ON app_public.api_keys USING btree (digest)
  CREATE UNIQUE INDEX api_keys_pkey ON app_public.api_keys USING btree (id)
  grants: none

table app_public.bank_import_layouts (row-level security, forced)
  column organization_id uuid not null
  column payment_account_id uuid not null
  column name text not null
  column flags jsonb not null
  column updated timestamp with time zone not null default now()
  constraint bank_import_layouts_flags_check CHECK ((jsonb_typeof(flags) = 'object'::text))
  constraint bank_import_layouts_name_check CHECK (((length(name) >= 1) AND (length(name) <= 100)))
  constraint bank_import_layouts_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES app_public.organizations(id) ON DELETE CASCADE
  constraint bank_import_layouts_organization_id_payment_account_id_fkey FOREIGN KEY (organization_id, payment_account_id) REFERENCES app_public.accounts(organization_id, id)
  constraint bank_import_layouts_pkey PRIMARY KEY (organization_id, payment_account_id)
  CREATE UNIQUE INDEX bank_import_layouts_pkey ON app_public.bank_import_layouts USING btree (organization_id, payment_account_id)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: DELETE, INSERT, SELECT, UPDATE

table app_public.category_rules (row-level security, forced)
  column id uuid not null default gen_random_uuid()
  column organization_id uuid not null  grants: accounting_visitor: INSERT
  column vendor_pattern text not null  grants: accounting_visitor: INSERT, UPDATE
  column account_id uuid not null  grants: accounting_visitor: INSERT, UPDATE
  column match_count integer not null default 0  grants: accounting_visitor: UPDATE
  column created timestamp with time zone not null default now()
  column updated timestamp with time zone not null default now()  grants: accounting_visitor: UPDATE
  column priority integer not null default 100  grants: accounting_visitor: INSERT, UPDATE
  column direction text  grants: accounting_visitor: INSERT, UPDATE
  column amount_min numeric(20,2)  grants: accounting_visitor: INSERT, UPDATE
  column amount_max numeric(20,2)  grants: accounting_visitor: INSERT, UPDATE
  column payment_account_id uuid  grants: accounting_visitor: INSERT, UPDATE
  column contact_id uuid  grants: accounting_visitor: INSERT, UPDATE
  column tax_code text  grants: accounting_visitor: INSERT, UPDATE
  column splits jsonb  grants: accounting_visitor: INSERT, UPDATE
  constraint category_rules_amount_range CHECK (((amount_min >= (0)::numeric) AND (amount_max >= (0)::numeric) AND (amount_min <= amount_max)))
  constraint category_rules_contact_fkey FOREIGN KEY (organization_id, contact_id) REFERENCES app_public.contacts(organization_id, id)
  constraint category_rules_direction_check CHECK ((direction = ANY (ARRAY['in'::text, 'out'::text])))
  constraint category_rules_match_count_check CHECK ((match_count >= 0))
  constraint category_rules_organization_id_account_id_fkey FOREIGN KEY (organization_id, account_id) REFERENCES app_public.accounts(organization_id, id)
  constraint category_rules_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES app_public.organizations(id) ON DELETE CASCADE
  constraint category_rules_organization_id_id_key UNIQUE (organization_id, id)
  constraint category_rules_payment_account_fkey FOREIGN KEY (organization_id, payment_account_id) REFERENCES app_public.accounts(organization_id, id)
  constraint category_rules_pkey PRIMARY KEY (id)
  constraint category_rules_priority_check CHECK (((priority >= 0) AND (priority <= 1000000)))
  constraint category_rules_splits_check CHECK (((splits IS NULL) OR ((jsonb_typeof(splits) = 'array'::text) AND (tax_code IS NULL))))
  constraint category_rules_tax_code_fkey FOREIGN KEY (tax_code) REFERENCES app_public.sales_tax_codes(code)
  constraint category_rules_vendor_pattern_check CHECK (((length(vendor_pattern) >= 1) AND (length(vendor_pattern) <= 200)))
  CREATE INDEX category_rules_account_idx ON app_public.category_rules USING btree (organization_id, account_id)
  CREATE INDEX category_rules_contact_idx ON app_public.category_rules USING btree (organization_id, contact_id) WHERE (contact_id IS NOT NULL)
  CREATE UNIQUE INDEX category_rules_conditions_key ON app_public.category_rules USING btree (organization_id, lower(vendor_pattern), direction, amount_min, amount_max, payment_account_id) NULLS NOT DISTINCT
  CREATE UNIQUE INDEX category_rules_organization_id_id_key ON app_public.category_rules USING btree (organization_id, id)
  CREATE UNIQUE INDEX category_rules_pkey ON app_public.category_rules USING btree (id)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: DELETE, SELECT

table app_public.cloud_drive_objects (row-level security, forced)
  column organization_id uuid not null
  column receipt_source_id uuid not null
  column object_key text not null
  column etag text not null
  column outcome text not null
  column read_at timestamp with time zone not null default now()
  constraint cloud_drive_objects_etag_check CHECK ((length(etag) <= 200))
  constraint cloud_drive_objects_object_key_check CHECK (((length(object_key) >= 1) AND (length(object_key) <= 1024)))
  constraint cloud_drive_objects_outcome_check CHECK ((outcome = ANY (ARRAY['created'::text, 'duplicate'::text, 'refused'::text])))
  constraint cloud_drive_objects_pkey PRIMARY KEY (receipt_source_id, object_key)
  constraint cloud_drive_objects_source_fkey FOREIGN KEY (organization_id, receipt_source_id) REFERENCES app_public.receipt_sources(organization_id, id) ON DELETE CASCADE
  CREATE UNIQUE INDEX cloud_drive_objects_pkey ON app_public.cloud_drive_objects USING btree (receipt_source_id, object_key)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: DELETE, SELECT

table app_public.contacts (row-level security, forced)
  column id uuid not null default gen_random_uuid()  grants: reporting_reader: SELECT
  column organization_id uuid not null  grants: accounting_visitor: INSERT; reporting_reader: SELECT
  column contact_type text not null  grants: accounting_visitor: INSERT, UPDATE; reporting_reader: SELECT
  column display_name text not null  grants: accounting_visitor: INSERT, UPDATE; reporting_reader: SELECT
  column email text  grants: accounting_visitor: INSERT, UPDATE
  column phone text  grants: accounting_visitor: INSERT, UPDATE
  column active boolean not null default true  grants: accounting_visitor: INSERT, UPDATE; reporting_reader: SELECT
  column created timestamp with time zone not null default now()
  column updated timestamp with time zone not null default now()  grants: accounting_visitor: UPDATE
  constraint contacts_contact_type_check CHECK ((contact_type = ANY (ARRAY['vendor'::text, 'customer'::text])))
  constraint contacts_display_name_check CHECK ((((length(display_name) >= 1) AND (length(display_name) <= 200)) AND (display_name = btrim(display_name))))
  constraint contacts_email_check CHECK (((email ~ '^[^@\s]+@[^@\s]+\.[^@\s]+$'::text) AND (length(email) <= 254)))
  constraint contacts_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES app_public.organizations(id) ON DELETE CASCADE
  constraint contacts_organization_id_id_key UNIQUE (organization_id, id)
  constraint contacts_phone_check CHECK ((phone ~ '^\+?[0-9 ().-]{3,30}$'::text))
  constraint contacts_pkey PRIMARY KEY (id)
  CREATE INDEX contacts_name_trgm_idx ON app_public.contacts USING gin (display_name gin_trgm_ops)
  CREATE UNIQUE INDEX contacts_name_key ON app_public.contacts USING btree (organization_id, contact_type, lower(display_name))
  CREATE UNIQUE INDEX contacts_organization_id_id_key ON app_public.contacts USING btree (organization_id, id)
  CREATE UNIQUE INDEX contacts_pkey ON app_public.contacts USING btree (id)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: SELECT

table app_public.document_lines (row-level security, forced)
  column organization_id uuid not null
  column document_id uuid not null
  column position smallint not null
  column description text not null
  column quantity numeric(20,4) not null
  column unit_price numeric(20,4) not null
  column amount numeric(20,2) not null
  column category_id uuid not null
  column tax_code text
  column tax_amount numeric(20,2) not null default 0
  constraint document_lines_amount_check CHECK ((amount >= (0)::numeric))
  constraint document_lines_description_check CHECK (((length(description) >= 1) AND (length(description) <= 500)))
  constraint document_lines_organization_id_category_id_fkey FOREIGN KEY (organization_id, category_id) REFERENCES app_public.accounts(organization_id, id)
  constraint document_lines_organization_id_document_id_fkey FOREIGN KEY (organization_id, document_id) REFERENCES app_public.documents(organization_id, id) ON DELETE CASCADE
  constraint document_lines_pkey PRIMARY KEY (document_id, "position")
  constraint document_lines_position_check CHECK ((("position" >= 1) AND ("position" <= 200)))
  constraint document_lines_quantity_check CHECK ((quantity > (0)::numeric))
  constraint document_lines_tax_amount_check CHECK ((tax_amount >= (0)::numeric))
  constraint document_lines_tax_code_fkey FOREIGN KEY (tax_code) REFERENCES app_public.sales_tax_codes(code)
  constraint document_lines_unit_price_check CHECK ((unit_price >= (0)::numeric))
  CREATE UNIQUE INDEX document_lines_pkey ON app_public.document_lines USING btree (document_id, "position")
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: INSERT, SELECT; reporting_reader: SELECT

table app_public.documents (row-level security, forced)
  column id uuid not null default app_private.uuid_v7()
  column organization_id uuid not null  grants: accounting_visitor: INSERT
  column kind text not null  grants: accounting_visitor: INSERT
  column contact_id uuid not null  grants: accounting_visitor: INSERT
  column number text not null  grants: accounting_visitor: INSERT
  column issue_date date not null  grants: accounting_visitor: INSERT
  column due_date date not null  grants: accounting_visitor: INSERT
  column memo text not null default ''::text  grants: accounting_visitor: INSERT
  column status text not null default 'draft'::text  grants: accounting_visitor: UPDATE
  column subtotal numeric(20,2) not null  grants: accounting_visitor: INSERT
  column tax_total numeric(20,2) not null  grants: accounting_visitor: INSERT
  column total numeric(20,2) not null  grants: accounting_visitor: INSERT
  column amount_paid numeric(20,2) not null default 0  grants: accounting_visitor: UPDATE
  column journal_entry_id uuid  grants: accounting_visitor: UPDATE
  column void_entry_id uuid  grants: accounting_visitor: UPDATE
  column approved_at timestamp with time zone  grants: accounting_visitor: UPDATE
  column voided_at timestamp with time zone  grants: accounting_visitor: UPDATE
  column created timestamp with time zone not null default now()
  column updated timestamp with time zone not null default now()  grants: accounting_visitor: UPDATE
  constraint documents_check CHECK (((amount_paid >= (0)::numeric) AND (amount_paid <= total)))
  constraint documents_check1 CHECK ((due_date >= issue_date))
  constraint documents_check2 CHECK ((total = (subtotal + tax_total)))
  constraint documents_kind_check CHECK ((kind = ANY (ARRAY['invoice'::text, 'bill'::text])))
  constraint documents_memo_check CHECK ((length(memo) <= 5000))
  constraint documents_number_check CHECK ((((length(number) >= 1) AND (length(number) <= 50)) AND (number = btrim(number))))
  constraint documents_organization_id_contact_id_fkey FOREIGN KEY (organization_id, contact_id) REFERENCES app_public.contacts(organization_id, id)
  constraint documents_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES app_public.organizations(id) ON DELETE CASCADE
  constraint documents_organization_id_id_key UNIQUE (organization_id, id)
  constraint documents_organization_id_journal_entry_id_fkey FOREIGN KEY (organization_id, journal_entry_id) REFERENCES app_public.journal_entries(organization_id, id) DEFERRABLE INITIALLY DEFERRED
  constraint documents_organization_id_void_entry_id_fkey FOREIGN KEY (organization_id, void_entry_id) REFERENCES app_public.journal_entries(organization_id, id) DEFERRABLE INITIALLY DEFERRED
  constraint documents_pkey PRIMARY KEY (id)
  constraint documents_status_check CHECK ((status = ANY (ARRAY['draft'::text, 'open'::text, 'partially_paid'::text, 'paid'::text, 'void'::text])))
  constraint documents_status_follows_postings CHECK (
CASE status
    WHEN 'draft'::text THEN ((journal_entry_id IS NULL) AND (amount_paid = (0)::numeric))
    WHEN 'void'::text THEN ((voided_at IS NOT NULL) AND (amount_paid = (0)::numeric))
    WHEN 'open'::text THEN ((journal_entry_id IS NOT NULL) AND (amount_paid = (0)::numeric))
    WHEN 'partially_paid'::text THEN ((journal_entry_id IS NOT NULL) AND (amount_paid > (0)::numeric) AND (amount_paid < total))
    ELSE ((journal_entry_id IS NOT NULL) AND (amount_paid = total))
END)
  constraint documents_tax_total_check CHECK ((tax_total >= (0)::numeric))
  constraint documents_total_check CHECK ((total > (0)::numeric))
  CREATE INDEX documents_contact_idx ON app_public.documents USING btree (organization_id, contact_id, issue_date)
  CREATE INDEX documents_issued_idx ON app_public.documents USING btree (organization_id, kind, issue_date, id)
  CREATE INDEX documents_journal_entry_idx ON app_public.documents USING btree (journal_entry_id) WHERE (journal_entry_id IS NOT NULL)
  CREATE INDEX documents_number_trgm_idx ON app_public.documents USING gin (number gin_trgm_ops)
  CREATE INDEX documents_owed_idx ON app_public.documents USING btree (organization_id, kind) INCLUDE (contact_id, issue_date, due_date, total, amount_paid) WHERE (status = ANY (ARRAY['open'::text, 'partially_paid'::text]))
  CREATE INDEX documents_void_entry_idx ON app_public.documents USING btree (void_entry_id) WHERE (void_entry_id IS NOT NULL)
  CREATE UNIQUE INDEX documents_bill_number_key ON app_public.documents USING btree (organization_id, contact_id, lower(number)) WHERE (kind = 'bill'::text)
  CREATE UNIQUE INDEX documents_invoice_number_key ON app_public.documents USING btree (organization_id, lower(number)) WHERE (kind = 'invoice'::text)
  CREATE UNIQUE INDEX documents_organization_id_id_key ON app_public.documents USING btree (organization_id, id)
  CREATE UNIQUE INDEX documents_pkey ON app_public.documents USING btree (id)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: SELECT; reporting_reader: SELECT

table app_public.idempotency_records (row-level security, forced)
  column organization_id uuid
  column credential text not null
  column idempotency_key text not null
  column request_digest text not null
  column response_status integer
  column response_body text
  column created timestamp with time zone not null default now()
  constraint idempotency_records_idempotency_key_check CHECK (((length(idempotency_key) >= 1) AND (length(idempotency_key) <= 255)))
  constraint idempotency_records_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES app_public.organizations(id) ON DELETE CASCADE
  constraint idempotency_records_pkey PRIMARY KEY (credential, idempotency_key)
  CREATE INDEX idempotency_records_created_idx ON app_public.idempotency_records USING btree (created)
  CREATE UNIQUE INDEX idempotency_records_pkey ON app_public.idempotency_records USING btree (credential, idempotency_key)
  grants: none

table app_public.import_batches (row-level security, forced)
  column id uuid not null default app_private.uuid_v7()
  column organization_id uuid not null
  column source text not null
  column batch_key text not null
  column payment_account_id uuid
  column file_name text
  column actor_api_key_id uuid
  column actor_user_id uuid
  column created timestamp with time zone not null default now()
  constraint import_batches_batch_key_check CHECK (((length(batch_key) >= 1) AND (length(batch_key) <= 200)))
  constraint import_batches_file_name_check CHECK ((length(file_name) <= 500))
  constraint import_batches_organization_id_batch_key_key UNIQUE (organization_id, batch_key)
  constraint import_batches_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES app_public.organizations(id) ON DELETE CASCADE
  constraint import_batches_organization_id_id_key UNIQUE (organization_id, id)
  constraint import_batches_organization_id_payment_account_id_fkey FOREIGN KEY (organization_id, payment_account_id) REFERENCES app_public.accounts(organization_id, id)
  constraint import_batches_pkey PRIMARY KEY (id)
  constraint import_batches_source_check CHECK ((source = ANY (ARRAY['bank_import'::text, 'processor_import'::text])))
  CREATE UNIQUE INDEX import_batches_organization_id_batch_key_key ON app_public.import_batches USING btree (organization_id, batch_key)
  CREATE UNIQUE INDEX import_batches_organization_id_id_key ON app_public.import_batches USING btree (organization_id, id)
  CREATE UNIQUE INDEX import_batches_pkey ON app_public.import_batches USING btree (id)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: INSERT, SELECT; reporting_reader: SELECT

table app_public.intake_addresses (row-level security, forced)
  column id uuid not null default gen_random_uuid()
  column organization_id uuid not null  grants: accounting_visitor: INSERT
  column address_type text not null  grants: accounting_visitor: INSERT
  column address text not null  grants: accounting_visitor: INSERT
  column label text not null default ''::text  grants: accounting_visitor: INSERT, UPDATE
  column active boolean not null default true  grants: accounting_visitor: UPDATE
  column created timestamp with time zone not null default now()
  column deleted_at timestamp with time zone  grants: accounting_visitor: UPDATE
  constraint intake_addresses_address_type_check CHECK ((address_type = ANY (ARRAY['email'::text, 'sms'::text])))
  constraint intake_addresses_check CHECK ((((address_type = 'email'::text) AND (address = lower(address)) AND (address ~ '^[^@\s]+@[^@\s]+\.[^@\s]+$'::text) AND (length(address) <= 254)) OR ((address_type = 'sms'::text) AND (address ~ '^[0-9]{7,15}$'::text))))
  constraint intake_addresses_check1 CHECK ((active = (deleted_at IS NULL)))
  constraint intake_addresses_label_check CHECK ((length(label) <= 200))
  constraint intake_addresses_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES app_public.organizations(id) ON DELETE CASCADE
  constraint intake_addresses_pkey PRIMARY KEY (id)
  CREATE INDEX intake_addresses_org_idx ON app_public.intake_addresses USING btree (organization_id, created)
  CREATE UNIQUE INDEX intake_addresses_address_key ON app_public.intake_addresses USING btree (address) WHERE active
  CREATE UNIQUE INDEX intake_addresses_pkey ON app_public.intake_addresses USING btree (id)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: SELECT

table app_public.intake_messages (row-level security, forced)
  column id uuid not null default app_private.uuid_v7()
  column organization_id uuid not null
  column channel text not null
  column message_id text not null
  column sender text not null default ''::text
  column received_at timestamp with time zone not null default now()
  constraint intake_messages_channel_check CHECK ((channel = ANY (ARRAY['email'::text, 'sms'::text, 'mailbox'::text, 'cloud_drive'::text])))
  constraint intake_messages_message_id_check CHECK (((length(message_id) >= 1) AND (length(message_id) <= 998)))
  constraint intake_messages_message_key UNIQUE (organization_id, channel, message_id)
  constraint intake_messages_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES app_public.organizations(id) ON DELETE CASCADE
  constraint intake_messages_organization_id_id_key UNIQUE (organization_id, id)
  constraint intake_messages_pkey PRIMARY KEY (id)
  constraint intake_messages_sender_check CHECK ((length(sender) <= 998))
  CREATE UNIQUE INDEX intake_messages_message_key ON app_public.intake_messages USING btree (organization_id, channel, message_id)
  CREATE UNIQUE INDEX intake_messages_organization_id_id_key ON app_public.intake_messages USING btree (organization_id, id)
  CREATE UNIQUE INDEX intake_messages_pkey ON app_public.intake_messages USING btree (id)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: SELECT

table app_public.journal_entries (row-level security, forced)
  column id uuid not null default app_private.uuid_v7()
  column organization_id uuid not null
  column event_id uuid
  column txn_date date not null
  column total_amount numeric(20,2) not null
  column voided_at timestamp with time zone  grants: accounting_visitor: UPDATE
  column created timestamp with time zone not null default now()
  column reverses_entry_id uuid
  column document_id uuid
  constraint journal_entries_document_fkey FOREIGN KEY (organization_id, document_id) REFERENCES app_public.documents(organization_id, id) ON DELETE CASCADE
  constraint journal_entries_organization_id_event_id_fkey FOREIGN KEY (organization_id, event_id) REFERENCES app_public.ledger_events(organization_id, id) ON DELETE CASCADE
  constraint journal_entries_organization_id_id_key UNIQUE (organization_id, id)
  constraint journal_entries_pkey PRIMARY KEY (id)
  constraint journal_entries_reverses_fkey FOREIGN KEY (organization_id, reverses_entry_id) REFERENCES app_public.journal_entries(organization_id, id) ON DELETE CASCADE
  constraint journal_entries_source_check CHECK ((num_nonnulls(event_id, document_id) = 1))
  constraint journal_entries_total_amount_check CHECK ((total_amount > (0)::numeric))
  CREATE INDEX journal_entries_document_idx ON app_public.journal_entries USING btree (document_id) WHERE (document_id IS NOT NULL)
  CREATE INDEX journal_entries_event_idx ON app_public.journal_entries USING btree (event_id)
  CREATE UNIQUE INDEX journal_entries_document_live_key ON app_public.journal_entries USING btree (document_id) WHERE ((document_id IS NOT NULL) AND (voided_at IS NULL) AND (reverses_entry_id IS NULL))
  CREATE UNIQUE INDEX journal_entries_live_key ON app_public.journal_entries USING btree (event_id) WHERE ((voided_at IS NULL) AND (reverses_entry_id IS NULL))
  CREATE UNIQUE INDEX journal_entries_organization_id_id_key ON app_public.journal_entries USING btree (organization_id, id)
  CREATE UNIQUE INDEX journal_entries_pkey ON app_public.journal_entries USING btree (id)
  CREATE UNIQUE INDEX journal_entries_reversal_key ON app_public.journal_entries USING btree (reverses_entry_id) WHERE (reverses_entry_id IS NOT NULL)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: INSERT, SELECT; reporting_reader: SELECT

table app_public.journal_lines (row-level security, forced)
  column id uuid not null default app_private.uuid_v7()
  column organization_id uuid not null
  column entry_id uuid not null
  column account_id uuid not null
  column txn_date date not null
  column debit numeric(20,2) not null default 0
  column credit numeric(20,2) not null default 0
  column voided boolean not null default false  grants: accounting_visitor: UPDATE
  column tax_type text
  column tax_on_sale boolean
  constraint journal_lines_check CHECK (((debit = (0)::numeric) <> (credit = (0)::numeric)))
  constraint journal_lines_credit_check CHECK ((credit >= (0)::numeric))
  constraint journal_lines_debit_check CHECK ((debit >= (0)::numeric))
  constraint journal_lines_organization_id_account_id_fkey FOREIGN KEY (organization_id, account_id) REFERENCES app_public.accounts(organization_id, id)
  constraint journal_lines_organization_id_entry_id_fkey FOREIGN KEY (organization_id, entry_id) REFERENCES app_public.journal_entries(organization_id, id) ON DELETE CASCADE
  constraint journal_lines_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES app_public.organizations(id) ON DELETE CASCADE
  constraint journal_lines_pkey PRIMARY KEY (id)
  constraint journal_lines_tax_type_check CHECK ((((tax_type = ANY (ARRAY['GST_HST'::text, 'QST'::text, 'PST'::text])) AND (tax_on_sale IS NOT NULL)) OR ((tax_type IS NULL) AND (tax_on_sale IS NULL))))
  CREATE INDEX journal_lines_account_idx ON app_public.journal_lines USING btree (organization_id, account_id, txn_date)
  CREATE INDEX journal_lines_entry_idx ON app_public.journal_lines USING btree (entry_id)
  CREATE UNIQUE INDEX journal_lines_pkey ON app_public.journal_lines USING btree (id)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: INSERT, SELECT; reporting_reader: SELECT

table app_public.ledger_change_feed (row-level security, forced)
  column organization_id uuid not null
  column txid bigint not null default ((pg_current_xact_id())::text)::bigint
  column id bigint not null identity a
  column event_id uuid not null
  column kind text not null
  column at timestamp with time zone not null default now()
  constraint ledger_change_feed_kind_check CHECK ((kind = ANY (ARRAY['created'::text, 'updated'::text, 'classified'::text, 'confirmed'::text, 'reconciled'::text, 'ignored'::text, 'reversed'::text, 'synced'::text, 'deleted'::text])))
  constraint ledger_change_feed_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES app_public.organizations(id) ON DELETE CASCADE
  constraint ledger_change_feed_pkey PRIMARY KEY (organization_id, txid, id)
  CREATE INDEX ledger_change_feed_at_idx ON app_public.ledger_change_feed USING brin (at)
  CREATE UNIQUE INDEX ledger_change_feed_pkey ON app_public.ledger_change_feed USING btree (organization_id, txid, id)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: INSERT, SELECT

table app_public.ledger_event_audit (row-level security, forced)
  column id bigint not null identity a
  column organization_id uuid not null
  column event_id uuid not null
  column action text not null
  column actor_api_key_id uuid
  column actor_user_id uuid
  column occurred_at timestamp with time zone not null default clock_timestamp()
  column changes jsonb not null
  constraint ledger_event_audit_pkey PRIMARY KEY (id)
  CREATE INDEX ledger_event_audit_event_idx ON app_public.ledger_event_audit USING btree (organization_id, event_id, id)
  CREATE UNIQUE INDEX ledger_event_audit_pkey ON app_public.ledger_event_audit USING btree (id)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: SELECT

table app_public.ledger_event_daily_counts (row-level security, forced)
  column organization_id uuid not null
  column day date not null
  column status text not null
  column n bigint not null default 0
  constraint ledger_event_daily_counts_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES app_public.organizations(id) ON DELETE CASCADE
  constraint ledger_event_daily_counts_pkey PRIMARY KEY (organization_id, day, status)
  CREATE UNIQUE INDEX ledger_event_daily_counts_pkey ON app_public.ledger_event_daily_counts USING btree (organization_id, day, status)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: SELECT

table app_public.ledger_event_external_refs (row-level security, forced)
  column organization_id uuid not null
  column event_id uuid not null
  column external_system text not null
  column external_id text not null
  column synced_at timestamp with time zone not null default now()
  constraint ledger_event_external_refs_external_id_check CHECK (((length(external_id) >= 1) AND (length(external_id) <= 255)))
  constraint ledger_event_external_refs_external_system_check CHECK (((length(external_system) >= 1) AND (length(external_system) <= 100)))
  constraint ledger_event_external_refs_organization_id_event_id_fkey FOREIGN KEY (organization_id, event_id) REFERENCES app_public.ledger_events(organization_id, id) ON DELETE CASCADE
  constraint ledger_event_external_refs_pkey PRIMARY KEY (organization_id, event_id, external_system)
  CREATE UNIQUE INDEX ledger_event_external_refs_external_key ON app_public.ledger_event_external_refs USING btree (organization_id, external_system, external_id)
  CREATE UNIQUE INDEX ledger_event_external_refs_pkey ON app_public.ledger_event_external_refs USING btree (organization_id, event_id, external_system)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: INSERT, SELECT, UPDATE; reporting_reader: SELECT

table app_public.ledger_event_monthly_counts (row-level security, forced)
  column organization_id uuid not null
  column month date not null
  column status text not null
  column n bigint not null default 0
  constraint ledger_event_monthly_counts_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES app_public.organizations(id) ON DELETE CASCADE
  constraint ledger_event_monthly_counts_pkey PRIMARY KEY (organization_id, month, status)
  CREATE UNIQUE INDEX ledger_event_monthly_counts_pkey ON app_public.ledger_event_monthly_counts USING btree (organization_id, month, status)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: SELECT

table app_public.ledger_events (row-level security, forced)
  column id uuid not null default app_private.uuid_v7()
  column organization_id uuid not null
  column event_type text not null  grants: accounting_visitor: UPDATE
  column direction text not null  grants: accounting_visitor: UPDATE
  column merchant_name text not null  grants: accounting_visitor: UPDATE
  column functional_amount numeric(20,2) not null  grants: accounting_visitor: UPDATE
  column functional_currency text not null
  column transaction_date date not null  grants: accounting_visitor: UPDATE
  column status text not null default 'needs_review'::text  grants: accounting_visitor: UPDATE
  column memo text not null default ''::text  grants: accounting_visitor: UPDATE
  column has_document boolean not null default false  grants: accounting_visitor: UPDATE
  column category_id uuid  grants: accounting_visitor: UPDATE
  column payment_account_id uuid  grants: accounting_visitor: UPDATE
  column tax_amount numeric(20,2)  grants: accounting_visitor: UPDATE
  column tax_account_id uuid  grants: accounting_visitor: UPDATE
  column tax_code text  grants: accounting_visitor: UPDATE
  column journal_entry_id uuid  grants: accounting_visitor: UPDATE
  column reference text  grants: accounting_visitor: UPDATE
  column backfill_id text
  column created timestamp with time zone not null default now()
  column updated timestamp with time zone not null default now()  grants: accounting_visitor: UPDATE
  column has_memo boolean generated default (memo <> ''::text)
  column source text not null default 'manual'::text
  column import_batch_id uuid
  column source_id text
  column reversal_entry_id uuid  grants: accounting_visitor: UPDATE
  column splits jsonb  grants: accounting_visitor: UPDATE
  column contact_id uuid  grants: accounting_visitor: UPDATE
  constraint ledger_events_contact_fkey FOREIGN KEY (organization_id, contact_id) REFERENCES app_public.contacts(organization_id, id)
  constraint ledger_events_direction_check CHECK ((direction = ANY (ARRAY['in'::text, 'out'::text])))
  constraint ledger_events_event_type_check CHECK ((event_type = ANY (ARRAY['expense'::text, 'income'::text, 'transfer'::text, 'refund'::text])))
  constraint ledger_events_functional_amount_check CHECK ((functional_amount > (0)::numeric))
  constraint ledger_events_functional_currency_check CHECK ((functional_currency ~ '^[A-Z]{3}$'::text))
  constraint ledger_events_import_batch_fkey FOREIGN KEY (organization_id, import_batch_id) REFERENCES app_public.import_batches(organization_id, id)
  constraint ledger_events_memo_check CHECK ((length(memo) <= 5000))
  constraint ledger_events_merchant_name_check CHECK (((length(merchant_name) >= 1) AND (length(merchant_name) <= 500)))
  constraint ledger_events_organization_id_category_id_fkey FOREIGN KEY (organization_id, category_id) REFERENCES app_public.accounts(organization_id, id)
  constraint ledger_events_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES app_public.organizations(id) ON DELETE CASCADE
  constraint ledger_events_organization_id_id_key UNIQUE (organization_id, id)
  constraint ledger_events_organization_id_journal_entry_id_fkey FOREIGN KEY (organization_id, journal_entry_id) REFERENCES app_public.journal_entries(organization_id, id) DEFERRABLE INITIALLY DEFERRED
  constraint ledger_events_organization_id_payment_account_id_fkey FOREIGN KEY (organization_id, payment_account_id) REFERENCES app_public.accounts(organization_id, id)
  constraint ledger_events_organization_id_tax_account_id_fkey FOREIGN KEY (organization_id, tax_account_id) REFERENCES app_public.accounts(organization_id, id)
  constraint ledger_events_pkey PRIMARY KEY (id)
  constraint ledger_events_reversal_entry_fkey FOREIGN KEY (organization_id, reversal_entry_id) REFERENCES app_public.journal_entries(organization_id, id) DEFERRABLE INITIALLY DEFERRED
  constraint ledger_events_source_check CHECK ((source = ANY (ARRAY['manual'::text, 'bank_import'::text, 'processor_import'::text])))
  constraint ledger_events_source_id_check CHECK (((length(source_id) >= 1) AND (length(source_id) <= 300)))
  constraint ledger_events_splits_add_up CHECK (((splits IS NULL) OR ((jsonb_typeof(splits) = 'array'::text) AND (app_private.splits_total(splits) = functional_amount))))
  constraint ledger_events_status_check CHECK ((status = ANY (ARRAY['needs_review'::text, 'confirmed'::text, 'synced'::text, 'reconciled'::text, 'pending'::text, 'ignored'::text])))
  constraint ledger_events_tax_amount_check CHECK ((tax_amount >= (0)::numeric))
  constraint ledger_events_tax_code_fkey FOREIGN KEY (tax_code) REFERENCES app_public.sales_tax_codes(code)
  CREATE INDEX ledger_events_amount_idx ON app_public.ledger_events USING btree (organization_id, functional_amount, id)
  CREATE INDEX ledger_events_category_idx ON app_public.ledger_events USING btree (organization_id, category_id, transaction_date)
  CREATE INDEX ledger_events_contact_idx ON app_public.ledger_events USING btree (organization_id, contact_id, transaction_date) WHERE (contact_id IS NOT NULL)
  CREATE INDEX ledger_events_date_idx ON app_public.ledger_events USING btree (organization_id, transaction_date, id) INCLUDE (status, merchant_name, has_document, has_memo)
  CREATE INDEX ledger_events_duplicate_idx ON app_public.ledger_events USING btree (organization_id, functional_amount, transaction_date)
  CREATE INDEX ledger_events_import_batch_idx ON app_public.ledger_events USING btree (import_batch_id) WHERE (import_batch_id IS NOT NULL)
  CREATE INDEX ledger_events_journal_entry_idx ON app_public.ledger_events USING btree (journal_entry_id) WHERE (journal_entry_id IS NOT NULL)
  CREATE INDEX ledger_events_memo_idx ON app_public.ledger_events USING btree (organization_id, transaction_date) WHERE has_memo
  CREATE INDEX ledger_events_payment_idx ON app_public.ledger_events USING btree (organization_id, payment_account_id, transaction_date)
  CREATE INDEX ledger_events_pending_idx ON app_public.ledger_events USING btree (organization_id, payment_account_id, transaction_date) WHERE (status = 'pending'::text)
  CREATE INDEX ledger_events_reference_idx ON app_public.ledger_events USING btree (organization_id, payment_account_id, reference) WHERE (reference IS NOT NULL)
  CREATE INDEX ledger_events_reversal_entry_idx ON app_public.ledger_events USING btree (reversal_entry_id) WHERE (reversal_entry_id IS NOT NULL)
  CREATE UNIQUE INDEX ledger_events_backfill_key ON app_public.ledger_events USING btree (organization_id, backfill_id) WHERE (backfill_id IS NOT NULL)
  CREATE UNIQUE INDEX ledger_events_organization_id_id_key ON app_public.ledger_events USING btree (organization_id, id)
  CREATE UNIQUE INDEX ledger_events_pkey ON app_public.ledger_events USING btree (id)
  CREATE UNIQUE INDEX ledger_events_source_key ON app_public.ledger_events USING btree (organization_id, source, source_id) WHERE (source_id IS NOT NULL)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: INSERT, SELECT; reporting_reader: SELECT

table app_public.memberships (row-level security, forced)
  column organization_id uuid not null
  column user_id uuid not null
  column role text not null
  column created timestamp with time zone not null default now()
  constraint memberships_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES app_public.organizations(id) ON DELETE CASCADE
  constraint memberships_pkey PRIMARY KEY (organization_id, user_id)
  constraint memberships_role_check CHECK ((role = ANY (ARRAY['owner'::text, 'admin'::text, 'member'::text])))
  constraint memberships_user_id_fkey FOREIGN KEY (user_id) REFERENCES app_public.users(id) ON DELETE CASCADE
  CREATE INDEX memberships_user_idx ON app_public.memberships USING btree (user_id)
  CREATE UNIQUE INDEX memberships_pkey ON app_public.memberships USING btree (organization_id, user_id)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: SELECT

table app_public.merchant_category_counts (row-level security, forced)
  column organization_id uuid not null
  column merchant text not null
  column category_id uuid not null
  column confirmations integer not null
  column shard smallint not null default 0
  constraint merchant_category_counts_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES app_public.organizations(id) ON DELETE CASCADE
  constraint merchant_category_counts_pkey PRIMARY KEY (organization_id, merchant, category_id, shard)
  CREATE UNIQUE INDEX merchant_category_counts_pkey ON app_public.merchant_category_counts USING btree (organization_id, merchant, category_id, shard)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: SELECT

table app_public.organizations (row-level security, forced)
  column id uuid not null default gen_random_uuid()
  column name text not null
  column functional_currency text not null default 'CAD'::text
  column created timestamp with time zone not null default now()
  column date_order text not null default 'auto'::text  grants: accounting_visitor: UPDATE
  column lock_date date  grants: accounting_visitor: UPDATE
  column fiscal_year_start text not null default '01-01'::text  grants: accounting_visitor: UPDATE
  column totals_rolled_through date
  constraint organizations_date_order_check CHECK ((date_order = ANY (ARRAY['auto'::text, 'DMY'::text, 'MDY'::text])))
  constraint organizations_fiscal_year_start_check CHECK (((fiscal_year_start ~ '^(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$'::text) AND ((substr(fiscal_year_start, 4))::integer <=
CASE substr(fiscal_year_start, 1, 2)
    WHEN '02'::text THEN 28
    WHEN '04'::text THEN 30
    WHEN '06'::text THEN 30
    WHEN '09'::text THEN 30
    WHEN '11'::text THEN 30
    ELSE 31
END)))
  constraint organizations_functional_currency_check CHECK ((functional_currency ~ '^[A-Z]{3}$'::text))
  constraint organizations_name_check CHECK (((length(btrim(name)) >= 1) AND (length(btrim(name)) <= 200)))
  constraint organizations_pkey PRIMARY KEY (id)
  constraint organizations_totals_rolled_through_check CHECK ((totals_rolled_through = (date_trunc('month'::text, (totals_rolled_through)::timestamp without time zone))::date))
  CREATE UNIQUE INDEX organizations_name_key ON app_public.organizations USING btree (lower(name))
  CREATE UNIQUE INDEX organizations_pkey ON app_public.organizations USING btree (id)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: SELECT

table app_public.payment_allocations (row-level security, forced)
  column organization_id uuid not null
  column event_id uuid not null
  column document_id uuid not null
  column amount numeric(20,2) not null
  column created timestamp with time zone not null default now()
  column paid_on date not null
  column kind text not null
  column contact_id uuid not null
  column issue_date date not null
  column due_date date not null
  constraint payment_allocations_amount_check CHECK ((amount > (0)::numeric))
  constraint payment_allocations_organization_id_document_id_fkey FOREIGN KEY (organization_id, document_id) REFERENCES app_public.documents(organization_id, id)
  constraint payment_allocations_organization_id_event_id_fkey FOREIGN KEY (organization_id, event_id) REFERENCES app_public.ledger_events(organization_id, id) ON DELETE CASCADE
  constraint payment_allocations_pkey PRIMARY KEY (event_id, document_id)
  CREATE INDEX payment_allocations_document_idx ON app_public.payment_allocations USING btree (document_id)
  CREATE INDEX payment_allocations_paid_idx ON app_public.payment_allocations USING btree (organization_id, kind, paid_on) INCLUDE (contact_id, issue_date, due_date, amount)
  CREATE UNIQUE INDEX payment_allocations_pkey ON app_public.payment_allocations USING btree (event_id, document_id)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: DELETE, INSERT, SELECT; reporting_reader: SELECT

table app_public.rate_limit_windows (row-level security, forced)
  column api_key_id uuid not null
  column organization_id uuid not null
  column window_start timestamp with time zone not null
  column request_count integer not null
  constraint rate_limit_windows_api_key_id_fkey FOREIGN KEY (api_key_id) REFERENCES app_public.api_keys(id) ON DELETE CASCADE
  constraint rate_limit_windows_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES app_public.organizations(id) ON DELETE CASCADE
  constraint rate_limit_windows_pkey PRIMARY KEY (api_key_id)
  CREATE UNIQUE INDEX rate_limit_windows_pkey ON app_public.rate_limit_windows USING btree (api_key_id)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: SELECT

table app_public.receipt_sources (row-level security, forced)
  column id uuid not null default app_private.uuid_v7()  grants: accounting_visitor: INSERT, SELECT
  column organization_id uuid not null  grants: accounting_visitor: INSERT, SELECT
  column kind text not null  grants: accounting_visitor: INSERT, SELECT
  column settings jsonb not null  grants: accounting_visitor: INSERT, SELECT
  column secret_sealed text not null  grants: accounting_visitor: INSERT
  column last_error text  grants: accounting_visitor: SELECT
  column last_scanned_at timestamp with time zone  grants: accounting_visitor: SELECT
  column failures integer not null default 0
  column next_scan_at timestamp with time zone not null default now()
  column cursor jsonb not null default '{}'::jsonb
  column created timestamp with time zone not null default now()  grants: accounting_visitor: SELECT
  column status text not null generated default 
CASE
    WHEN (last_error IS NULL) THEN 'connected'::text
    ELSE 'error'::text
END  grants: accounting_visitor: SELECT
  constraint receipt_sources_failures_check CHECK ((failures >= 0))
  constraint receipt_sources_kind_check CHECK ((kind = ANY (ARRAY['mailbox'::text, 'cloud_drive'::text])))
  constraint receipt_sources_last_error_check CHECK ((length(last_error) <= 2000))
  constraint receipt_sources_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES app_public.organizations(id) ON DELETE CASCADE
  constraint receipt_sources_organization_id_id_key UNIQUE (organization_id, id)
  constraint receipt_sources_pkey PRIMARY KEY (id)
  constraint receipt_sources_secret_sealed_check CHECK ((secret_sealed ~ '^v1:'::text))
  constraint receipt_sources_settings_check CHECK ((jsonb_typeof(settings) = 'object'::text))
  CREATE INDEX receipt_sources_due_idx ON app_public.receipt_sources USING btree (next_scan_at)
  CREATE UNIQUE INDEX receipt_sources_organization_id_id_key ON app_public.receipt_sources USING btree (organization_id, id)
  CREATE UNIQUE INDEX receipt_sources_pkey ON app_public.receipt_sources USING btree (id)
  CREATE UNIQUE INDEX receipt_sources_settings_key ON app_public.receipt_sources USING btree (organization_id, kind, md5((settings)::text))
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: DELETE

table app_public.receipt_unlinked_pairs (row-level security, forced)
  column organization_id uuid not null
  column receipt_id uuid not null
  column event_id uuid not null
  column unlinked_at timestamp with time zone not null default now()
  constraint receipt_unlinked_pairs_event_fkey FOREIGN KEY (organization_id, event_id) REFERENCES app_public.ledger_events(organization_id, id) ON DELETE CASCADE
  constraint receipt_unlinked_pairs_pkey PRIMARY KEY (receipt_id, event_id)
  constraint receipt_unlinked_pairs_receipt_fkey FOREIGN KEY (organization_id, receipt_id) REFERENCES app_public.receipts(organization_id, id) ON DELETE CASCADE
  CREATE INDEX receipt_unlinked_pairs_event_idx ON app_public.receipt_unlinked_pairs USING btree (event_id)
  CREATE UNIQUE INDEX receipt_unlinked_pairs_pkey ON app_public.receipt_unlinked_pairs USING btree (receipt_id, event_id)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: INSERT, SELECT

table app_public.receipts (row-level security, forced)
  column id uuid not null default app_private.uuid_v7()
  column organization_id uuid not null
  column source text not null
  column status text not null default 'draft'::text  grants: accounting_visitor: UPDATE
  column match_status text not null default 'pending'::text  grants: accounting_visitor: UPDATE
  column object_key text not null
  column filename text not null default ''::text
  column content_type text not null
  column size bigint not null
  column sha256 text not null
  column uploaded_at timestamp with time zone not null default now()
  column intake_message_id uuid
  column vendor_name text
  column amount numeric(20,2)
  column currency text
  column date_readings date[] not null default '{}'::date[]
  column receipt_date date  grants: accounting_visitor: UPDATE
  column extracted_text text
  column extraction_method text
  column extraction_error text
  column extracted_at timestamp with time zone
  column event_id uuid  grants: accounting_visitor: UPDATE
  column linked_by text  grants: accounting_visitor: UPDATE
  column linked_at timestamp with time zone  grants: accounting_visitor: UPDATE
  column match_details jsonb  grants: accounting_visitor: UPDATE
  column created timestamp with time zone not null default now()
  column updated timestamp with time zone not null default now()  grants: accounting_visitor: UPDATE
  column vendor_confidence text
  column amount_confidence text
  column date_confidence text
  constraint receipts_confidence_with_value_check CHECK ((((vendor_name IS NULL) = (vendor_confidence IS NULL)) AND ((amount IS NULL) = (amount_confidence IS NULL)) AND ((cardinality(date_readings) = 0) = (date_confidence IS NULL))))
  constraint receipts_currency_check CHECK ((currency ~ '^[A-Z]{3}$'::text))
  constraint receipts_date_readings_check CHECK ((cardinality(date_readings) <= 2))
  constraint receipts_event_fkey FOREIGN KEY (organization_id, event_id) REFERENCES app_public.ledger_events(organization_id, id) ON DELETE SET NULL (event_id)
  constraint receipts_field_confidence_check CHECK (((vendor_confidence = ANY (ARRAY['high'::text, 'medium'::text, 'low'::text])) AND (amount_confidence = ANY (ARRAY['high'::text, 'medium'::text, 'low'::text])) AND (date_confidence = ANY (ARRAY['high'::text, 'medium'::text, 'low'::text]))))
  constraint receipts_filename_check CHECK ((length(filename) <= 255))
  constraint receipts_intake_message_fkey FOREIGN KEY (organization_id, intake_message_id) REFERENCES app_public.intake_messages(organization_id, id) ON DELETE SET NULL (intake_message_id)
  constraint receipts_linked_by_check CHECK ((linked_by = ANY (ARRAY['person'::text, 'matching'::text])))
  constraint receipts_match_status_check CHECK ((match_status = ANY (ARRAY['pending'::text, 'matched'::text, 'unmatched'::text])))
  constraint receipts_object_key_check CHECK (((length(object_key) >= 1) AND (length(object_key) <= 1024)))
  constraint receipts_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES app_public.organizations(id) ON DELETE CASCADE
  constraint receipts_organization_id_id_key UNIQUE (organization_id, id)
  constraint receipts_pkey PRIMARY KEY (id)
  constraint receipts_sha256_check CHECK ((sha256 ~ '^[0-9a-f]{64}$'::text))
  constraint receipts_size_check CHECK ((size >= 0))
  constraint receipts_source_check CHECK ((source = ANY (ARRAY['web_upload'::text, 'email'::text, 'sms'::text, 'mailbox'::text, 'cloud_drive'::text])))
  constraint receipts_status_check CHECK ((status = ANY (ARRAY['draft'::text, 'processed'::text, 'reviewed'::text, 'rejected'::text])))
  constraint receipts_vendor_name_check CHECK ((length(vendor_name) <= 500))
  CREATE INDEX receipts_event_idx ON app_public.receipts USING btree (event_id) WHERE (event_id IS NOT NULL)
  CREATE INDEX receipts_intake_message_idx ON app_public.receipts USING btree (intake_message_id) WHERE (intake_message_id IS NOT NULL)
  CREATE INDEX receipts_list_idx ON app_public.receipts USING btree (organization_id, uploaded_at DESC, id DESC)
  CREATE INDEX receipts_to_match_idx ON app_public.receipts USING btree (organization_id) WHERE ((status = 'processed'::text) AND (event_id IS NULL))
  CREATE INDEX receipts_vendor_trgm_idx ON app_public.receipts USING gin (vendor_name gin_trgm_ops)
  CREATE UNIQUE INDEX receipts_matched_event_key ON app_public.receipts USING btree (event_id) WHERE (linked_by = 'matching'::text)
  CREATE UNIQUE INDEX receipts_organization_id_id_key ON app_public.receipts USING btree (organization_id, id)
  CREATE UNIQUE INDEX receipts_pkey ON app_public.receipts USING btree (id)
  CREATE UNIQUE INDEX receipts_sha256_key ON app_public.receipts USING btree (organization_id, sha256)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: INSERT, SELECT

table app_public.reconciliation_clearings (row-level security, forced)
  column event_id uuid not null
  column organization_id uuid not null
  column reconciliation_id uuid not null
  column account_id uuid not null
  constraint reconciliation_clearings_account_fkey FOREIGN KEY (organization_id, account_id) REFERENCES app_public.accounts(organization_id, id)
  constraint reconciliation_clearings_organization_id_event_id_fkey FOREIGN KEY (organization_id, event_id) REFERENCES app_public.ledger_events(organization_id, id) ON DELETE CASCADE
  constraint reconciliation_clearings_organization_id_reconciliation_id_fkey FOREIGN KEY (organization_id, reconciliation_id) REFERENCES app_public.reconciliations(organization_id, id) ON DELETE CASCADE
  constraint reconciliation_clearings_pkey PRIMARY KEY (event_id, account_id)
  CREATE INDEX reconciliation_clearings_reconciliation_idx ON app_public.reconciliation_clearings USING btree (reconciliation_id)
  CREATE UNIQUE INDEX reconciliation_clearings_pkey ON app_public.reconciliation_clearings USING btree (event_id, account_id)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: DELETE, INSERT, SELECT; reporting_reader: SELECT

table app_public.reconciliations (row-level security, forced)
  column id uuid not null default app_private.uuid_v7()
  column organization_id uuid not null
  column payment_account_id uuid not null
  column statement_date date not null
  column opening_balance numeric(20,2) not null
  column closing_balance numeric(20,2) not null
  column cleared_balance numeric(20,2)  grants: accounting_visitor: UPDATE
  column status text not null default 'open'::text  grants: accounting_visitor: UPDATE
  column previous_id uuid
  column created timestamp with time zone not null default now()
  column completed_at timestamp with time zone  grants: accounting_visitor: UPDATE
  column undone_at timestamp with time zone  grants: accounting_visitor: UPDATE
  constraint reconciliations_completed_at CHECK ((((status = 'open'::text) = (completed_at IS NULL)) OR (status = 'undone'::text)))
  constraint reconciliations_completed_difference CHECK (((status <> 'completed'::text) OR (cleared_balance = closing_balance)))
  constraint reconciliations_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES app_public.organizations(id) ON DELETE CASCADE
  constraint reconciliations_organization_id_id_key UNIQUE (organization_id, id)
  constraint reconciliations_organization_id_payment_account_id_fkey FOREIGN KEY (organization_id, payment_account_id) REFERENCES app_public.accounts(organization_id, id)
  constraint reconciliations_organization_id_previous_id_fkey FOREIGN KEY (organization_id, previous_id) REFERENCES app_public.reconciliations(organization_id, id)
  constraint reconciliations_pkey PRIMARY KEY (id)
  constraint reconciliations_status_check CHECK ((status = ANY (ARRAY['open'::text, 'completed'::text, 'undone'::text])))
  CREATE INDEX reconciliations_account_idx ON app_public.reconciliations USING btree (organization_id, payment_account_id, created DESC, id DESC)
  CREATE UNIQUE INDEX reconciliations_chain_key ON app_public.reconciliations USING btree (organization_id, payment_account_id, COALESCE(previous_id, '00000000-0000-0000-0000-000000000000'::uuid)) WHERE (status <> 'undone'::text)
  CREATE UNIQUE INDEX reconciliations_open_key ON app_public.reconciliations USING btree (organization_id, payment_account_id) WHERE (status = 'open'::text)
  CREATE UNIQUE INDEX reconciliations_organization_id_id_key ON app_public.reconciliations USING btree (organization_id, id)
  CREATE UNIQUE INDEX reconciliations_pkey ON app_public.reconciliations USING btree (id)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: INSERT, SELECT; reporting_reader: SELECT

table app_public.sales_tax_code_parts
  column code text not null
  column part text not null
  constraint sales_tax_code_parts_code_fkey FOREIGN KEY (code) REFERENCES app_public.sales_tax_codes(code)
  constraint sales_tax_code_parts_part_fkey FOREIGN KEY (part) REFERENCES app_public.sales_tax_codes(code)
  constraint sales_tax_code_parts_pkey PRIMARY KEY (code, part)
  CREATE UNIQUE INDEX sales_tax_code_parts_pkey ON app_public.sales_tax_code_parts USING btree (code, part)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: SELECT; reporting_reader: SELECT

table app_public.sales_tax_codes
  column code text not null
  column name text not null
  column rate numeric(7,3) not null
  column jurisdiction text not null
  column recoverable text not null
  column tax_type text
  constraint sales_tax_codes_jurisdiction_check CHECK ((jurisdiction ~ '^[A-Z]{2}$'::text))
  constraint sales_tax_codes_pkey PRIMARY KEY (code)
  constraint sales_tax_codes_rate_check CHECK (((rate >= (0)::numeric) AND (rate < (100)::numeric)))
  constraint sales_tax_codes_recoverable_check CHECK ((recoverable = ANY (ARRAY['yes'::text, 'no'::text, 'partial'::text, 'n/a'::text])))
  constraint sales_tax_codes_tax_type_check CHECK ((tax_type = ANY (ARRAY['GST_HST'::text, 'QST'::text, 'PST'::text])))
  CREATE UNIQUE INDEX sales_tax_codes_pkey ON app_public.sales_tax_codes USING btree (code)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: SELECT; reporting_reader: SELECT

table app_public.sales_tax_daily_totals (row-level security, forced)
  column organization_id uuid not null
  column day date not null
  column tax_type text not null
  column collected numeric(20,2) not null default 0
  column input_tax_credits numeric(20,2) not null default 0
  column events integer not null default 0
  constraint sales_tax_daily_totals_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES app_public.organizations(id) ON DELETE CASCADE
  constraint sales_tax_daily_totals_pkey PRIMARY KEY (organization_id, tax_type, day)
  constraint sales_tax_daily_totals_tax_type_check CHECK ((tax_type = ANY (ARRAY['GST_HST'::text, 'QST'::text, 'PST'::text])))
  CREATE UNIQUE INDEX sales_tax_daily_totals_pkey ON app_public.sales_tax_daily_totals USING btree (organization_id, tax_type, day)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: SELECT; reporting_reader: SELECT

table app_public.sales_tax_rates_before
  column code text not null
  column before date not null
  column rate numeric(6,3) not null
  constraint sales_tax_rates_before_code_fkey FOREIGN KEY (code) REFERENCES app_public.sales_tax_codes(code)
  constraint sales_tax_rates_before_pkey PRIMARY KEY (code, before)
  constraint sales_tax_rates_before_rate_check CHECK ((rate >= (0)::numeric))
  CREATE UNIQUE INDEX sales_tax_rates_before_pkey ON app_public.sales_tax_rates_before USING btree (code, before)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: SELECT; reporting_reader: SELECT

table app_public.tax_codes
  column id uuid not null default gen_random_uuid()
  column code text not null
  column name text not null
  column classification text not null
  column account_type text not null
  constraint tax_codes_classification_check CHECK ((classification = ANY (ARRAY['asset'::text, 'liability'::text, 'equity'::text, 'revenue'::text, 'expense'::text])))
  constraint tax_codes_code_check CHECK ((code ~ '^[0-9]{4}$'::text))
  constraint tax_codes_code_key UNIQUE (code)
  constraint tax_codes_pkey PRIMARY KEY (id)
  CREATE INDEX tax_codes_account_type_idx ON app_public.tax_codes USING btree (account_type)
  CREATE UNIQUE INDEX tax_codes_code_key ON app_public.tax_codes USING btree (code)
  CREATE UNIQUE INDEX tax_codes_pkey ON app_public.tax_codes USING btree (id)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: SELECT; reporting_reader: SELECT

table app_public.uploads (row-level security, forced)
  column id uuid not null default app_private.uuid_v7()
  column organization_id uuid not null
  column object_key text not null
  column filename text not null
  column content_type text not null
  column size bigint not null
  column sha256 text not null
  column uploaded_at timestamp with time zone not null default now()
  constraint uploads_filename_check CHECK ((length(filename) <= 255))
  constraint uploads_object_key_check CHECK (((length(object_key) >= 1) AND (length(object_key) <= 1024)))
  constraint uploads_object_key_key UNIQUE (object_key)
  constraint uploads_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES app_public.organizations(id) ON DELETE CASCADE
  constraint uploads_pkey PRIMARY KEY (id)
  constraint uploads_sha256_check CHECK ((sha256 ~ '^[0-9a-f]{64}$'::text))
  constraint uploads_size_check CHECK ((size >= 0))
  CREATE INDEX uploads_organization_idx ON app_public.uploads USING btree (organization_id, uploaded_at)
  CREATE UNIQUE INDEX uploads_object_key_key ON app_public.uploads USING btree (object_key)
  CREATE UNIQUE INDEX uploads_pkey ON app_public.uploads USING btree (id)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: INSERT, SELECT

table app_public.users (row-level security, forced)
  column id uuid not null default gen_random_uuid()
  column email text not null
  column name text
  column created timestamp with time zone not null default now()
  constraint users_email_check CHECK ((email ~ '^[^@\s]+@[^@\s]+\.[^@\s]+$'::text))
  constraint users_pkey PRIMARY KEY (id)
  CREATE UNIQUE INDEX users_email_key ON app_public.users USING btree (lower(email))
  CREATE UNIQUE INDEX users_pkey ON app_public.users USING btree (id)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: SELECT

table app_public.webhook_deliveries (row-level security, forced)
  column id uuid not null default app_private.uuid_v7()
  column organization_id uuid not null
  column webhook_endpoint_id uuid not null
  column webhook_event_id uuid not null
  column status text not null default 'pending'::text
  column attempts integer not null default 0
  column response_code integer
  column last_error text
  column first_attempt_at timestamp with time zone
  column last_attempt_at timestamp with time zone
  column next_attempt_at timestamp with time zone default now()
  column delivered_at timestamp with time zone
  column seq bigint not null identity a
  column created timestamp with time zone not null default now()
  constraint webhook_deliveries_attempts_check CHECK ((attempts >= 0))
  constraint webhook_deliveries_endpoint_fkey FOREIGN KEY (organization_id, webhook_endpoint_id) REFERENCES app_public.webhook_endpoints(organization_id, id) ON DELETE CASCADE
  constraint webhook_deliveries_event_fkey FOREIGN KEY (organization_id, webhook_event_id) REFERENCES app_public.webhook_events(organization_id, id) ON DELETE CASCADE
  constraint webhook_deliveries_last_error_check CHECK ((length(last_error) <= 2000))
  constraint webhook_deliveries_pkey PRIMARY KEY (id)
  constraint webhook_deliveries_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'succeeded'::text, 'failed'::text])))
  CREATE INDEX webhook_deliveries_due_idx ON app_public.webhook_deliveries USING btree (webhook_endpoint_id, seq) WHERE (status = 'pending'::text)
  CREATE INDEX webhook_deliveries_endpoint_seq_idx ON app_public.webhook_deliveries USING btree (webhook_endpoint_id, seq)
  CREATE INDEX webhook_deliveries_event_idx ON app_public.webhook_deliveries USING btree (webhook_event_id)
  CREATE INDEX webhook_deliveries_last_attempt_idx ON app_public.webhook_deliveries USING btree (last_attempt_at)
  CREATE INDEX webhook_deliveries_retry_idx ON app_public.webhook_deliveries USING btree (webhook_endpoint_id, next_attempt_at) WHERE ((status = 'pending'::text) AND (attempts > 0))
  CREATE UNIQUE INDEX webhook_deliveries_pkey ON app_public.webhook_deliveries USING btree (id)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: SELECT

table app_public.webhook_endpoints (row-level security, forced)
  column id uuid not null default app_private.uuid_v7()  grants: accounting_visitor: INSERT, SELECT
  column organization_id uuid not null  grants: accounting_visitor: INSERT, SELECT
  column url text not null  grants: accounting_visitor: INSERT, SELECT, UPDATE
  column events text[] not null  grants: accounting_visitor: INSERT, SELECT, UPDATE
  column description text  grants: accounting_visitor: INSERT, SELECT, UPDATE
  column secret_sealed text not null  grants: accounting_visitor: INSERT
  column status text not null default 'enabled'::text  grants: accounting_visitor: SELECT, UPDATE
  column disabled_reason text  grants: accounting_visitor: SELECT, UPDATE
  column failing_since timestamp with time zone  grants: accounting_visitor: SELECT, UPDATE
  column created timestamp with time zone not null default now()  grants: accounting_visitor: SELECT
  column updated timestamp with time zone not null default now()  grants: accounting_visitor: SELECT, UPDATE
  constraint webhook_endpoints_description_check CHECK ((length(description) <= 500))
  constraint webhook_endpoints_disabled_reason_check CHECK ((length(disabled_reason) <= 500))
  constraint webhook_endpoints_events_check CHECK (((cardinality(events) >= 1) AND (cardinality(events) <= 20)))
  constraint webhook_endpoints_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES app_public.organizations(id) ON DELETE CASCADE
  constraint webhook_endpoints_organization_id_id_key UNIQUE (organization_id, id)
  constraint webhook_endpoints_pkey PRIMARY KEY (id)
  constraint webhook_endpoints_secret_sealed_check CHECK ((secret_sealed ~ '^v1:'::text))
  constraint webhook_endpoints_status_check CHECK ((status = ANY (ARRAY['enabled'::text, 'disabled'::text])))
  constraint webhook_endpoints_url_check CHECK (((url ~ '^https?://'::text) AND (length(url) <= 2048)))
  CREATE INDEX webhook_endpoints_organization_idx ON app_public.webhook_endpoints USING btree (organization_id) WHERE (status = 'enabled'::text)
  CREATE UNIQUE INDEX webhook_endpoints_organization_id_id_key ON app_public.webhook_endpoints USING btree (organization_id, id)
  CREATE UNIQUE INDEX webhook_endpoints_pkey ON app_public.webhook_endpoints USING btree (id)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: DELETE

table app_public.webhook_events (row-level security, forced)
  column id uuid not null default app_private.uuid_v7()
  column organization_id uuid not null
  column type text not null
  column object jsonb not null
  column created timestamp with time zone not null default clock_timestamp()
  constraint webhook_events_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES app_public.organizations(id) ON DELETE CASCADE
  constraint webhook_events_organization_id_id_key UNIQUE (organization_id, id)
  constraint webhook_events_pkey PRIMARY KEY (id)
  constraint webhook_events_type_check CHECK ((length(type) <= 100))
  CREATE UNIQUE INDEX webhook_events_organization_id_id_key ON app_public.webhook_events USING btree (organization_id, id)
  CREATE UNIQUE INDEX webhook_events_pkey ON app_public.webhook_events USING btree (id)
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: SELECT

view reporting.documents with (security_invoker=true) as
 SELECT d.id,
    d.organization_id,
    d.kind,
    d.number,
    d.contact_id,
    c.display_name AS contact_name,
    d.issue_date,
    d.due_date,
    d.status,
    d.subtotal,
    d.tax_total,
    d.total,
    d.amount_paid,
    (
        CASE
            WHEN (d.status = ANY (ARRAY['open'::text, 'partially_paid'::text])) THEN (d.total - d.amount_paid)
            ELSE (0)::numeric
        END)::numeric(20,2) AS amount_due,
        CASE
            WHEN (d.status = ANY (ARRAY['open'::text, 'partially_paid'::text])) THEN GREATEST((CURRENT_DATE - d.due_date), 0)
            ELSE 0
        END AS days_past_due
   FROM (app_public.documents d
     JOIN app_public.contacts c ON ((c.id = d.contact_id)));
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; reporting_reader: SELECT

view reporting.general_ledger with (security_invoker=true) as
 SELECT l.id,
    l.organization_id,
    l.entry_id,
    e.id AS event_id,
    l.txn_date,
    (date_trunc('month'::text, (l.txn_date)::timestamp with time zone))::date AS month,
    l.account_id,
    a.name AS account_name,
    a.account_type,
    a.classification,
    l.debit,
    l.credit,
        CASE
            WHEN (a.classification = ANY (ARRAY['asset'::text, 'expense'::text])) THEN (l.debit - l.credit)
            ELSE (l.credit - l.debit)
        END AS amount,
    e.merchant_name,
    e.memo,
    e.event_type,
    e.status AS event_status,
    j.reverses_entry_id,
    l.tax_type,
    l.tax_on_sale,
    j.document_id
   FROM (((app_public.journal_lines l
     JOIN app_public.journal_entries j ON (((j.id = l.entry_id) AND (j.voided_at IS NULL))))
     LEFT JOIN app_public.ledger_events e ON ((e.id = j.event_id)))
     JOIN app_public.accounts a ON ((a.id = l.account_id)))
  WHERE (NOT l.voided);
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; accounting_visitor: SELECT; reporting_reader: SELECT

view reporting.income_statement_monthly with (security_invoker=true) as
 SELECT t.organization_id,
    (date_trunc('month'::text, (t.day)::timestamp with time zone))::date AS month,
    a.id AS account_id,
    a.name AS account_name,
    a.classification,
    (
        CASE
            WHEN (a.classification = 'revenue'::text) THEN (sum(t.credit) - sum(t.debit))
            ELSE (sum(t.debit) - sum(t.credit))
        END)::numeric(20,2) AS total
   FROM (app_public.account_daily_totals t
     JOIN app_public.accounts a ON ((a.id = t.account_id)))
  WHERE (a.classification = ANY (ARRAY['revenue'::text, 'expense'::text]))
  GROUP BY t.organization_id, (date_trunc('month'::text, (t.day)::timestamp with time zone)), a.id, a.name, a.classification
 HAVING ((sum(t.debit) <> (0)::numeric) OR (sum(t.credit) <> (0)::numeric));
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; reporting_reader: SELECT

view reporting.ledger_event_splits with (security_invoker=true) as
 SELECT e.organization_id,
    e.id AS event_id,
    s.n AS "position",
    e.transaction_date,
    e.status AS event_status,
    e.merchant_name,
    ((s.v ->> 'category_id'::text))::uuid AS category_id,
    a.name AS category_name,
    ((s.v ->> 'amount'::text))::numeric(20,2) AS amount,
    (s.v ->> 'tax_code'::text) AS tax_code,
    ((s.v ->> 'tax_amount'::text))::numeric(20,2) AS tax_amount,
    (s.v ->> 'memo'::text) AS memo
   FROM ((app_public.ledger_events e
     CROSS JOIN LATERAL jsonb_array_elements(e.splits) WITH ORDINALITY s(v, n))
     LEFT JOIN app_public.accounts a ON ((a.id = ((s.v ->> 'category_id'::text))::uuid)))
  WHERE (e.splits IS NOT NULL);
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; reporting_reader: SELECT

view reporting.reconciliations with (security_invoker=true) as
 SELECT r.id,
    r.organization_id,
    r.payment_account_id,
    a.name AS payment_account_name,
    r.statement_date,
    r.opening_balance,
    r.closing_balance,
    (
        CASE
            WHEN (r.status = 'open'::text) THEN app_private.reconciliation_cleared_balance(r.*)
            ELSE r.cleared_balance
        END)::numeric(20,2) AS cleared_balance,
    ((r.closing_balance -
        CASE
            WHEN (r.status = 'open'::text) THEN app_private.reconciliation_cleared_balance(r.*)
            ELSE r.cleared_balance
        END))::numeric(20,2) AS difference,
    ( SELECT count(*) AS count
           FROM app_public.reconciliation_clearings c
          WHERE (c.reconciliation_id = r.id)) AS cleared_events,
    r.status,
    r.created,
    r.completed_at,
    r.undone_at
   FROM (app_public.reconciliations r
     JOIN app_public.accounts a ON ((a.id = r.payment_account_id)));
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; reporting_reader: SELECT

view reporting.sales_tax_return_monthly with (security_invoker=true) as
 WITH sales AS (
         SELECT t_1.organization_id,
            (date_trunc('month'::text, (t_1.day)::timestamp with time zone))::date AS month,
            (sum(t_1.credit) - sum(t_1.debit)) AS sales
           FROM (app_public.account_daily_totals t_1
             JOIN app_public.accounts a ON ((a.id = t_1.account_id)))
          WHERE (a.classification = 'revenue'::text)
          GROUP BY t_1.organization_id, ((date_trunc('month'::text, (t_1.day)::timestamp with time zone))::date)
        ), taxes AS (
         SELECT t_1.organization_id,
            (date_trunc('month'::text, (t_1.day)::timestamp with time zone))::date AS month,
            t_1.tax_type,
            sum(t_1.collected) AS collected,
            sum(t_1.input_tax_credits) AS itcs,
            sum(t_1.events) AS events
           FROM app_public.sales_tax_daily_totals t_1
          WHERE (t_1.tax_type = ANY (ARRAY['GST_HST'::text, 'QST'::text]))
          GROUP BY t_1.organization_id, ((date_trunc('month'::text, (t_1.day)::timestamp with time zone))::date), t_1.tax_type
        ), months AS (
         SELECT sales.organization_id,
            sales.month
           FROM sales
        UNION
         SELECT taxes.organization_id,
            taxes.month
           FROM taxes
        )
 SELECT m.organization_id,
    m.month,
    x.tax_type,
    (COALESCE(s.sales, (0)::numeric))::numeric(20,2) AS sales_and_revenue,
    (COALESCE(t.collected, (0)::numeric))::numeric(20,2) AS tax_collected,
    (COALESCE(t.itcs, (0)::numeric))::numeric(20,2) AS input_tax_credits,
    ((COALESCE(t.collected, (0)::numeric) - COALESCE(t.itcs, (0)::numeric)))::numeric(20,2) AS net_tax,
    COALESCE(t.events, (0)::bigint) AS events
   FROM (((months m
     CROSS JOIN ( VALUES ('GST_HST'::text), ('QST'::text)) x(tax_type))
     LEFT JOIN sales s ON (((s.organization_id = m.organization_id) AND (s.month = m.month))))
     LEFT JOIN taxes t ON (((t.organization_id = m.organization_id) AND (t.month = m.month) AND (t.tax_type = x.tax_type))));
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; reporting_reader: SELECT

view reporting.trial_balance with (security_invoker=true) as
 SELECT a.organization_id,
    a.id AS account_id,
    a.name AS account_name,
    a.account_type,
    a.classification,
    (COALESCE(sum(t.debit), (0)::numeric))::numeric(20,2) AS debit,
    (COALESCE(sum(t.credit), (0)::numeric))::numeric(20,2) AS credit,
    (
        CASE
            WHEN (a.classification = ANY (ARRAY['asset'::text, 'expense'::text])) THEN (COALESCE(sum(t.debit), (0)::numeric) - COALESCE(sum(t.credit), (0)::numeric))
            ELSE (COALESCE(sum(t.credit), (0)::numeric) - COALESCE(sum(t.debit), (0)::numeric))
        END)::numeric(20,2) AS balance
   FROM (app_public.accounts a
     LEFT JOIN app_public.account_daily_totals t ON ((t.account_id = a.id)))
  GROUP BY a.organization_id, a.id, a.name, a.account_type, a.classification;
  grants: <owner>: DELETE, INSERT, REFERENCES, SELECT, TRIGGER, TRUNCATE, UPDATE; reporting_reader: SELECT

CREATE OR REPLACE FUNCTION app_private.account_balances(org uuid, as_of date DEFAULT CURRENT_DATE)
 RETURNS TABLE(account_id uuid, balance numeric)
 LANGUAGE sql
 STABLE
AS $function$
  select t.account_id,
         case when a.classification in ('asset', 'expense') then t.debit - t.credit else t.credit - t.debit end
    from app_private.account_totals(org, null, as_of) t
    join app_public.accounts a on a.id = t.account_id
$function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE; reporting_reader: EXECUTE

CREATE OR REPLACE FUNCTION app_private.account_by_id(org uuid, account uuid)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$ select app_private.account_json(a, (select b.balance from app_private.account_balances(org) b where b.account_id = a.id))
     from app_public.accounts a where a.organization_id = org and a.id = account $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.account_json(a app_public.accounts, balance numeric)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$ select jsonb_build_object('id', a.id, 'name', a.name, 'accountType', a.account_type,
     'classification', a.classification, 'subType', a.sub_type, 'lastFour', a.last_four, 'parentId', a.parent_id,
     'currentBalance', coalesce(balance, 0), 'active', a.active,
     'taxCode', (select app_private.tax_code_json(t) from app_public.tax_codes t where t.id = a.tax_code_id),
     'created', app_private.iso(a.created), 'updated', app_private.iso(a.updated)) $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.account_totals(org uuid, first_day date, last_day date)
 RETURNS TABLE(account_id uuid, debit numeric, credit numeric)
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
declare
  p record;
begin
  select * into p from app_private.rolled_period(org, account_totals.first_day, account_totals.last_day);
  return query
    select x.account_id, sum(x.debit), sum(x.credit) from (
      select m.account_id, m.debit, m.credit from app_public.account_monthly_totals m
       where m.organization_id = org and m.month >= p.rolled_from and m.month < p.rolled_to
      union all
      select t.account_id, t.debit, t.credit from app_public.account_daily_totals t
       where t.organization_id = org and t.day >= p.first_day and t.day < p.rolled_from
      union all
      select t.account_id, t.debit, t.credit from app_public.account_daily_totals t
       where t.organization_id = org and t.day >= p.rolled_to and t.day <= p.last_day
    ) x
    group by x.account_id;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE; reporting_reader: EXECUTE

CREATE OR REPLACE FUNCTION app_private.add_member(org uuid, member_email text, member_role text)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public'
AS $function$
declare
  u app_public.users;
  m app_public.memberships;
begin
  if member_role is null or member_role not in ('owner', 'admin', 'member') then
    perform app_private.fail('Role must be one of: owner, admin, member.');
  end if;
  select * into u from app_public.users where lower(email) = lower(app_private.clean_text(member_email));
  if not found then perform app_private.fail('User not found.', 'AP404'); end if;
  begin
    insert into app_public.memberships (organization_id, user_id, role) values (org, u.id, member_role) returning * into m;
  exception when unique_violation then
    perform app_private.fail('User is already a member of this organization.');
  end;
  return app_private.membership_json(m, u);
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.add_monthly_account_totals(orgs uuid[], accounts uuid[], days date[], debits numeric[], credits numeric[])
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public'
AS $function$
begin
  perform 1 from app_public.organizations o where o.id = any (orgs) order by o.id for share;
  insert into app_public.account_monthly_totals as t (organization_id, account_id, month, debit, credit)
    select c.organization_id, c.account_id, date_trunc('month', c.day::timestamp)::date, sum(c.debit), sum(c.credit)
      from unnest(orgs, accounts, days, debits, credits) c (organization_id, account_id, day, debit, credit)
      join app_public.organizations o on o.id = c.organization_id and c.day < o.totals_rolled_through
     group by 1, 2, 3 having sum(c.debit) <> 0 or sum(c.credit) <> 0 order by 1, 2, 3
    on conflict (organization_id, account_id, month) do update
      set debit = t.debit + excluded.debit, credit = t.credit + excluded.credit;
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.add_monthly_event_counts(orgs uuid[], days date[], statuses text[], counts bigint[])
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public'
AS $function$
begin
  perform 1 from app_public.organizations o where o.id = any (orgs) order by o.id for share;
  insert into app_public.ledger_event_monthly_counts as t (organization_id, month, status, n)
    select c.organization_id, date_trunc('month', c.day::timestamp)::date, c.status, sum(c.n)
      from unnest(orgs, days, statuses, counts) c (organization_id, day, status, n)
      join app_public.organizations o on o.id = c.organization_id and c.day < o.totals_rolled_through
     group by 1, 2, 3 having sum(c.n) <> 0 order by 1, 2, 3
    on conflict (organization_id, month, status) do update set n = t.n + excluded.n;
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.add_receipt_source(organization_id uuid, kind text, settings jsonb, receipt_source_id uuid, secret_sealed text)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare v_id uuid; v_created timestamptz;
begin
  begin
    insert into app_public.receipt_sources (id, organization_id, kind, settings, secret_sealed)
      values (receipt_source_id, add_receipt_source.organization_id, kind, settings, secret_sealed)
      returning receipt_sources.id, receipt_sources.created into v_id, v_created;
  exception when unique_violation then
    perform app_private.fail(format('This %s is already connected.', lower(app_private.source_noun(kind))));
  end;
  -- Its first scan runs now.
  perform app_private.queue_source_scan(add_receipt_source.organization_id, v_id);
  return app_private.receipt_source_json(v_id, settings, 'connected', null, null, v_created);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.add_sales_tax_totals(lines app_public.journal_lines[], sign integer)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public'
AS $function$
begin
  insert into app_public.sales_tax_daily_totals as t (organization_id, day, tax_type, collected, input_tax_credits, events)
    select x.organization_id, x.txn_date, x.tax_type, sum(x.collected), sum(x.itcs),
           sum(sign * case when j.reverses_entry_id is null then 1 else -1 end)
      from (select l.organization_id, l.txn_date, l.tax_type, l.entry_id,
                   sign * sum(case when l.tax_on_sale then l.credit - l.debit else 0 end) as collected,
                   sign * sum(case when l.tax_on_sale then 0 else l.debit - l.credit end) as itcs
              from unnest(lines) l
             where l.tax_type is not null and not l.voided
               -- Rows of an organization being deleted go with it.
               and exists (select 1 from app_public.organizations o where o.id = l.organization_id)
             group by 1, 2, 3, 4) x
      left join app_public.journal_entries j on j.id = x.entry_id
     group by 1, 2, 3
     order by 1, 2, 3
    on conflict (organization_id, day, tax_type) do update
      set collected = t.collected + excluded.collected, input_tax_credits = t.input_tax_credits + excluded.input_tax_credits,
          events = t.events + excluded.events;
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.advance_source_cursor(receipt_source_id uuid, cursor jsonb)
 RETURNS boolean
 LANGUAGE sql
AS $function$
  with kept as (update app_public.receipt_sources s set cursor = advance_source_cursor.cursor where s.id = receipt_source_id returning 1)
  select exists (select 1 from kept)
$function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.allocate_payment(e app_public.ledger_events, kind text, allocations jsonb)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
declare
  max_allocations constant integer := 100;
  a record;
  d app_public.documents;
  noun text := case kind when 'invoice' then 'invoice' else 'bill' end;
  v_total numeric := 0;
begin
  if jsonb_typeof(allocations) is distinct from 'array' or jsonb_array_length(allocations) = 0 then
    perform app_private.fail('Allocations must be a list of at least one document.');
  end if;
  if jsonb_array_length(allocations) > max_allocations then perform app_private.fail(format('At most %s allocations.', max_allocations)); end if;
  if exists (select 1 from jsonb_array_elements(allocations) x where x->>'documentId' is null) then
    perform app_private.fail('Each allocation needs a documentId.');
  end if;
  if (select count(distinct app_private.parse_uuid(x->>'documentId', 'Each allocation needs a documentId.')) from jsonb_array_elements(allocations) x)
     < jsonb_array_length(allocations) then
    perform app_private.fail('Each document at most once in allocations.');
  end if;
  for a in
    select app_private.parse_uuid(x->>'documentId', 'Each allocation needs a documentId.') as document_id,
           app_private.parse_amount(x->>'amount', 'An allocation''s amount must be a positive decimal string.') as amount
      from jsonb_array_elements(allocations) x
     order by 1
  loop
    v_total := v_total + a.amount;
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
  if v_total <> e.functional_amount then
    perform app_private.fail('Allocations must add up to the amount.');
  end if;
  update app_public.ledger_events x set contact_id = e.contact_id where x.id = e.id and x.contact_id is distinct from e.contact_id;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.api_key_json(id uuid, label text, prefix text, created timestamp with time zone, last_used_at timestamp with time zone, revoked_at timestamp with time zone)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$ select jsonb_build_object('id', id, 'label', label, 'prefix', prefix, 'created', app_private.iso(created),
     'lastUsedAt', app_private.iso(last_used_at), 'revokedAt', app_private.iso(revoked_at)) $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.apply_rule(r app_public.category_rules, only_unclassified boolean)
 RETURNS integer
 LANGUAGE plpgsql
AS $function$
declare n integer;
begin
  perform set_config('app.audit_action', 'rule', true);
  -- The changes worked out once; their events locked in id order, as every writer of several
  -- events locks them; an event no longer waiting by then is left as it is.
  with c as materialized (
    select * from app_private.rule_changes(r, only_unclassified)
  ), locked as (
    select e.id from app_public.ledger_events e where e.id in (select c.event_id from c) order by e.id for no key update
  )
  update app_public.ledger_events e set category_id = c.category_id, splits = c.splits, tax_amount = c.tax_amount,
      tax_code = c.tax_code, tax_account_id = c.tax_account_id, contact_id = c.contact_id
    from c
   where e.id = c.event_id and e.id in (select l.id from locked l) and e.status = 'needs_review';
  get diagnostics n = row_count;
  if n > 0 then
    update app_public.category_rules x set match_count = x.match_count + n where x.id = r.id;
  end if;
  return n;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.approve_document(org uuid, kind text, id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  d app_public.documents;
  v_entry uuid := app_private.uuid_v7();
  v_control uuid;
  v_tax_account uuid;
  sale boolean := kind = 'invoice';
begin
  perform app_private.assert_org_access(org, false);
  d := app_private.document_for_update(kind, id);
  if d.status <> 'draft' then perform app_private.fail('Only a draft can be approved.'); end if;
  perform app_private.check_category(l.category_id, case kind when 'invoice' then 'income' else 'expense' end)
     from app_public.document_lines l where l.document_id = d.id;
  v_control := app_private.control_account(org, kind);
  v_tax_account := app_private.tax_account_or_default(org, (select sum(t.portion) from app_public.document_lines l
    cross join lateral app_private.tax_excluded_parts(l.amount, l.tax_code, d.issue_date) t
     where l.document_id = d.id and (sale or t.recoverable)), null);
  insert into app_public.journal_entries (id, organization_id, document_id, txn_date, total_amount)
    values (v_entry, org, d.id, d.issue_date, d.total);
  insert into app_public.journal_lines (organization_id, entry_id, account_id, txn_date, debit, credit, tax_type, tax_on_sale)
    select org, v_entry, x.account_id, d.issue_date, case when x.debit_side then x.amount else 0 end,
           case when x.debit_side then 0 else x.amount end, x.tax_type, x.on_sale
      from (
        select v_control as account_id, d.total as amount, sale as debit_side, null::text as tax_type, null::boolean as on_sale
        union all
        select l.category_id, sum(l.amount + coalesce(kept.tax, 0)), not sale, null, null
          from app_public.document_lines l
          left join lateral (select sum(t.portion) as tax from app_private.tax_excluded_parts(l.amount, l.tax_code, d.issue_date) t
                              where not sale and not t.recoverable) kept on true
         where l.document_id = d.id
         group by l.category_id
        union all
        select app_private.tax_leg_account(org, t.tax_type, v_tax_account), sum(t.portion), not sale, t.tax_type, sale
          from app_public.document_lines l
          cross join lateral app_private.tax_excluded_parts(l.amount, l.tax_code, d.issue_date) t
         where l.document_id = d.id and (sale or t.recoverable)
         group by 1, t.tax_type
      ) x
     where x.amount > 0
     order by x.account_id;
  update app_public.documents x set status = 'open', journal_entry_id = v_entry, approved_at = now() where x.id = d.id;
  perform app_private.record_webhook_event(org, kind || '.approved', d.id,
    (select app_private.document_json(x) from app_public.documents x where x.id = d.id));
  return jsonb_build_object('success', true, 'error', null,
    'document', (select app_private.document_json(x) from app_public.documents x where x.id = d.id));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.as_of_date(as_of text)
 RETURNS date
 LANGUAGE sql
 STABLE
AS $function$ select case when as_of is null then current_date else app_private.parse_date(as_of, 'asOf must be a date in YYYY-MM-DD format.') end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.assert_org_access(org uuid, admin boolean DEFAULT false)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public'
AS $function$
declare
  key_id uuid := app_public.current_api_key_id();
  uid uuid := app_public.current_user_id();
  key_org uuid;
  member_role text;
begin
  if key_id is null and uid is null then
    perform app_private.fail('Authentication Required.', 'AU401');
  end if;
  if admin and key_id is not null then
    perform app_private.fail('API Keys Cannot Perform Admin Operations.', 'AU403');
  end if;
  if org is null or not exists (select 1 from app_public.organizations where id = org) then
    perform app_private.fail('Organization Not Found.', 'AU404');
  end if;
  if key_id is not null then
    select k.organization_id into key_org from app_public.api_keys k where k.id = key_id and k.revoked_at is null;
    if key_org is distinct from org then
      perform app_private.fail('API Key Not Authorized For This Organization.', 'AU403');
    end if;
  else
    select m.role into member_role from app_public.memberships m where m.organization_id = org and m.user_id = uid;
    if member_role is null then
      perform app_private.fail('Not A Member Of This Organization.', 'AU403');
    end if;
    if admin and member_role not in ('owner', 'admin') then
      perform app_private.fail('Must Be Owner Or Admin.', 'AU403');
    end if;
  end if;
  perform set_config('app.organization_id', org::text, true);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.authenticate_api_key(key_digest text, quota integer)
 RETURNS TABLE(api_key_id uuid, organization_id uuid, request_count integer, window_end timestamp with time zone)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public'
AS $function$
declare k app_public.api_keys;
begin
  perform set_config('synchronous_commit', 'off', true);
  select * into k from app_public.api_keys where digest = key_digest and revoked_at is null;
  if not found then return; end if;
  if k.last_used_at is null or k.last_used_at < now() - interval '1 minute' then
    update app_public.api_keys set last_used_at = now() where id = k.id;
  end if;
  return query
  insert into app_public.rate_limit_windows as w (api_key_id, organization_id, window_start, request_count)
    values (k.id, k.organization_id, clock_timestamp(), 1)
  on conflict on constraint rate_limit_windows_pkey do update set
    window_start = case when w.window_start + interval '1 hour' <= clock_timestamp()
                        then clock_timestamp() else w.window_start end,
    request_count = case when w.window_start + interval '1 hour' <= clock_timestamp()
                         then 1 else w.request_count + 1 end
  returning w.api_key_id, w.organization_id, w.request_count, w.window_start + interval '1 hour';
end $function$
-- grants: <owner>: EXECUTE; accounting_authenticator: EXECUTE

CREATE OR REPLACE FUNCTION app_private.authenticate_user_in(user_id uuid, org uuid)
 RETURNS text
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public'
AS $function$
begin
  return case
    when not exists (select 1 from app_public.users u where u.id = authenticate_user_in.user_id) then 'invalid_user'
    when org is null then 'ok'
    when not exists (select 1 from app_public.organizations o where o.id = org) then 'organization_not_found'
    when not exists (select 1 from app_public.memberships m where m.organization_id = org and m.user_id = authenticate_user_in.user_id) then 'not_member'
    else 'ok'
  end;
end $function$
-- grants: <owner>: EXECUTE; accounting_authenticator: EXECUTE

CREATE OR REPLACE FUNCTION app_private.bank_import_layout(org uuid, payment_account_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
begin
  perform app_private.scope_organization(org);
  return (select jsonb_build_object('name', l.name, 'flags', l.flags) from app_public.bank_import_layouts l
           where l.organization_id = org and l.payment_account_id = bank_import_layout.payment_account_id);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.bank_import_layout_flags()
 RETURNS text[]
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ select array['preset', 'map', 'dateFormat', 'delimiter', 'decimal', 'moneyOut', 'account'] $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.bank_statement_matches(org uuid, payment_account uuid, rows jsonb)
 RETURNS TABLE(row_index integer, transaction_date date, amount numeric, direction text, merchant_name text, event_type text, memo text, reference text, pending boolean, is_duplicate boolean, is_possible_duplicate boolean, matching_event_id uuid, settles_pending boolean)
 LANGUAGE plpgsql
 SET jit TO 'off'
AS $function$
declare
  v_with_reference boolean;
begin
  if org is distinct from app_public.current_organization_id() then perform app_private.fail('Organization Not Found.', 'AU404'); end if;
  if rows is null or jsonb_typeof(rows) <> 'array' then perform app_private.fail('rows must be a list of statement rows.'); end if;
  drop table if exists pg_temp.statement_rows;
  create temporary table statement_rows (
    row_index integer primary key, transaction_date date, amount numeric, direction text, merchant_name text,
    merchant_key text, event_type text, memo text, reference text, pending boolean,
    event_id uuid, full_match boolean not null default false, settles boolean not null default false) on commit drop;
  insert into pg_temp.statement_rows (row_index, transaction_date, amount, direction, merchant_name, merchant_key,
      event_type, memo, reference, pending)
    select (r.n - 1)::integer, x.transaction_date, x.amount, x.direction, x.merchant_name,
           app_private.merchant_key(x.merchant_name), x.event_type, x.memo, x.reference, x.pending
      from jsonb_array_elements(rows) with ordinality r (item, n)
      cross join lateral app_private.bank_statement_row(r.item, (r.n - 1)::integer) x;
  analyze pg_temp.statement_rows;
  drop table if exists pg_temp.statement_candidates;
  create temporary table statement_candidates on commit drop as
    select c.*, app_private.merchant_key(c.merchant_name) merchant_key
      from app_private.statement_candidates(org, payment_account,
             (select array_agg(s.transaction_date) from pg_temp.statement_rows s),
             (select array_agg(s.amount) from pg_temp.statement_rows s)) c;
  analyze pg_temp.statement_candidates;


  -- 1. References: the k-th row of a reference takes the k-th event of it on this account.
  with r as (
    select s.row_index, s.reference, s.pending, s.direction,
           row_number() over (partition by s.reference, s.pending, s.direction order by s.row_index) k
      from pg_temp.statement_rows s where s.reference is not null
  ), e as (
    select e.id, e.reference, x.waiting, e.direction,
           row_number() over (partition by e.reference, x.waiting, e.direction order by e.created, e.id) k
      from app_public.ledger_events e
      cross join lateral (select e.status = 'pending' or e.status = 'ignored' and app_private.ignored_while_pending(org, e.id) waiting) x
     where e.organization_id = org and e.payment_account_id = payment_account
       and e.reference in (select s.reference from pg_temp.statement_rows s where s.reference is not null)
  )
  -- A posted row is the duplicate of a posted event, a pending row of a pending one (a pending
  -- event is settled by its posted row: step 3 below).
  update pg_temp.statement_rows s set event_id = e.id, full_match = true
    from r join e on e.reference = r.reference and e.k = r.k and e.waiting = r.pending and e.direction = r.direction
   where s.row_index = r.row_index;

  -- 2. Same day, amount, direction and merchant. Rows with a reference go first, to events
  -- without one (their only possible partners); rows without a reference take any event left.
  foreach v_with_reference in array array[true, false] loop
    with e as (
      select c.id, c.transaction_date, c.functional_amount, c.direction, c.merchant_key, c.waiting,
             row_number() over (partition by c.transaction_date, c.functional_amount, c.direction, c.merchant_key, c.waiting
                                order by c.created, c.id) k
        from pg_temp.statement_candidates c
       where not exists (select 1 from pg_temp.statement_rows t where t.event_id = c.id)
         and (not v_with_reference or c.reference is null)
    ), r as (
      select s.row_index, s.transaction_date, s.amount, s.direction, s.merchant_key, s.pending,
             row_number() over (partition by s.transaction_date, s.amount, s.direction, s.merchant_key, s.pending order by s.row_index) k
        from pg_temp.statement_rows s
       where s.event_id is null and (s.reference is not null) = v_with_reference
    )
    update pg_temp.statement_rows s set event_id = e.id, full_match = true
      from r join e on (e.transaction_date, e.functional_amount, e.direction, e.merchant_key, e.k, e.waiting)
                     = (r.transaction_date, r.amount, r.direction, r.merchant_key, r.k, r.pending)
     where s.row_index = r.row_index;
  end loop;

  -- 3. Posted rows still unmatched settle the account's pending events (pending_settlements).
  update pg_temp.statement_rows s set event_id = p.event_id, settles = true
    from app_private.pending_settlements(org, payment_account) p
   where s.row_index = p.row_index;

  -- 4. Transfers into (or out of) this account booked on another: a date window, not an equal
  -- key, so the pairs are taken greedily, each row its nearest event. Few rows get here.
  update pg_temp.statement_rows s set event_id = t.event_id, full_match = true
    from app_private.greedy_pairs((
      select array_agg(row(s.row_index, e.id)::app_private.row_event_pair
                       order by s.row_index, s.transaction_date - e.transaction_date, e.created, e.id)
        from pg_temp.statement_rows s
        join app_public.ledger_events e
          on e.organization_id = org and e.category_id = payment_account and e.event_type = 'transfer'
         and e.payment_account_id is distinct from payment_account
         and e.functional_amount = s.amount and e.direction <> s.direction
         and e.transaction_date between s.transaction_date - 5 and s.transaction_date
       where s.event_id is null
         and not exists (select 1 from pg_temp.statement_rows t where t.event_id = e.id))) t
   where s.row_index = t.row_index;

  -- 5. Possible matches: same day, amount and direction, another merchant; an event not taken by
  -- a full match first. Flagged only: the row is imported. (A further copy of a row whose events
  -- are all taken is no possible match: its merchant is the same, it is simply one more.)
  update pg_temp.statement_rows s set event_id = p.id
    from (select distinct on (r.row_index) r.row_index, c.id
            from pg_temp.statement_rows r
            join pg_temp.statement_candidates c
              on c.transaction_date = r.transaction_date and c.functional_amount = r.amount and c.direction = r.direction
             and c.merchant_key <> r.merchant_key
           where r.event_id is null
             and not (c.reference is not null and r.reference is not null and c.reference <> r.reference)
           order by r.row_index, c.id in (select t.event_id from pg_temp.statement_rows t where t.full_match), c.created, c.id) p
   where s.row_index = p.row_index;

  return query
    select s.row_index, s.transaction_date, s.amount, s.direction, s.merchant_name, s.event_type, s.memo, s.reference,
           s.pending, s.full_match, s.event_id is not null and not s.full_match and not s.settles, s.event_id, s.settles
      from pg_temp.statement_rows s order by s.row_index;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.bank_statement_row(item jsonb, row_index integer)
 RETURNS TABLE(transaction_date date, amount numeric, direction text, merchant_name text, event_type text, memo text, reference text, pending boolean)
 LANGUAGE plpgsql
 IMMUTABLE
AS $function$
declare
  k text;
  v_amount text;
  v_negative boolean;
begin
  if item is null or jsonb_typeof(item) <> 'object' then
    perform app_private.fail(format('Row %s must be an object.', row_index));
  end if;
  foreach k in array array['transactionDate', 'description', 'amount', 'eventType', 'memo', 'reference'] loop
    if jsonb_typeof(item -> k) not in ('string', 'null') then
      perform app_private.fail(format('Row %s: %s must be a string.', row_index, k));
    end if;
  end loop;
  transaction_date := app_private.parse_date(item ->> 'transactionDate',
    format('Row %s: transactionDate must be a date in YYYY-MM-DD format.', row_index));
  merchant_name := app_private.clean_text(item ->> 'description');
  if merchant_name is null or merchant_name = '' then
    perform app_private.fail(format('Row %s: description is required.', row_index));
  end if;
  if length(merchant_name) > 500 then
    perform app_private.fail(format('Row %s: description must be at most 500 characters.', row_index));
  end if;
  v_amount := btrim(item ->> 'amount');
  if v_amount !~ '^[-+]?[0-9]' then v_amount := 'x'; end if; -- a digit right after the sign
  v_negative := left(v_amount, 1) = '-';
  if left(v_amount, 1) in ('-', '+') then v_amount := substr(v_amount, 2); end if;
  amount := app_private.parse_amount(v_amount,
    format('Row %s: amount must be a non-zero decimal string with at most 2 decimals (negative for money out).', row_index));
  direction := case when v_negative then 'out' else 'in' end;
  event_type := item ->> 'eventType';
  if event_type is null or event_type not in ('expense', 'income', 'transfer') then
    perform app_private.fail(format('Row %s: eventType must be one of: expense, income, transfer.', row_index));
  end if;
  memo := coalesce(normalize(item ->> 'memo', NFC), '');
  if length(memo) > 5000 then perform app_private.fail(format('Row %s: memo must be at most 5000 characters.', row_index)); end if;
  reference := nullif(app_private.clean_text(item ->> 'reference'), '');
  if length(reference) > 255 then
    perform app_private.fail(format('Row %s: reference must be at most 255 characters.', row_index));
  end if;
  if jsonb_typeof(item -> 'pending') not in ('boolean', 'null') then
    perform app_private.fail(format('Row %s: pending must be true or false.', row_index));
  end if;
  pending := coalesce((item ->> 'pending')::boolean, false);
  return next;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.beat_worker_pools(pool_ids text[], dead_after interval)
 RETURNS void
 LANGUAGE sql
AS $function$
  insert into app_private.worker_heartbeats as h (pool_id, beat_at, beating_since)
  select distinct p, now(), now() from unnest(pool_ids) p
  on conflict (pool_id) do update
    set beat_at = excluded.beat_at,
        beating_since = case when h.beat_at < now() - dead_after then now() else h.beating_since end;
$function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.caller_role(org uuid)
 RETURNS text
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public'
AS $function$ select m.role from app_public.memberships m where m.organization_id = org and m.user_id = app_public.current_user_id() $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.category_fits(event_type text, classification text)
 RETURNS boolean
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ select case event_type
    when 'expense' then classification in ('expense', 'asset')
    when 'income' then classification = 'revenue'
    when 'refund' then classification in ('revenue', 'expense')
    when 'transfer' then classification in ('asset', 'liability', 'equity')
    else false end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.category_rule_json(r app_public.category_rules)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$ select jsonb_build_object('id', r.id, 'vendorPattern', r.vendor_pattern,
     'account', (select jsonb_build_object('id', a.id, 'name', a.name, 'accountType', a.account_type, 'active', a.active)
                   from app_public.accounts a where a.organization_id = r.organization_id and a.id = r.account_id),
     'priority', r.priority, 'direction', r.direction,
     'amountMin', app_private.money(r.amount_min), 'amountMax', app_private.money(r.amount_max),
     'paymentAccount', (select jsonb_build_object('id', a.id, 'name', a.name)
                          from app_public.accounts a where a.organization_id = r.organization_id and a.id = r.payment_account_id),
     'contact', (select jsonb_build_object('id', k.id, 'displayName', k.display_name)
                   from app_public.contacts k where k.organization_id = r.organization_id and k.id = r.contact_id),
     'taxCode', r.tax_code,
     'splits', coalesce((select jsonb_agg(jsonb_build_object('category', jsonb_build_object('id', a.id, 'name', a.name),
                   'percent', (s.v->>'percent')::numeric::text, 'taxCode', s.v->>'tax_code', 'memo', s.v->>'memo') order by s.n)
                   from jsonb_array_elements(r.splits) with ordinality s (v, n)
                   left join app_public.accounts a on a.organization_id = r.organization_id and a.id = (s.v->>'category_id')::uuid), '[]'),
     'matchCount', r.match_count, 'created', app_private.iso(r.created), 'updated', app_private.iso(r.updated)) $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.change_cursor(txid bigint, id bigint)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ select txid::text || '.' || id::text $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.change_kind(o app_public.ledger_events, n app_public.ledger_events)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  select case
    when o.id is null then 'created'
    when n.id is null then 'deleted'
    when n.reversal_entry_id is not null and o.reversal_entry_id is null then 'reversed'
    when n.status is distinct from o.status then case n.status
      when 'confirmed' then 'confirmed' when 'synced' then 'synced' when 'reconciled' then 'reconciled'
      when 'ignored' then 'ignored' else 'updated' end
    when (n.category_id, n.splits, n.tax_amount, n.tax_code, n.tax_account_id, n.contact_id, n.payment_account_id)
         is distinct from (o.category_id, o.splits, o.tax_amount, o.tax_code, o.tax_account_id, o.contact_id, o.payment_account_id)
      then 'classified'
    when (n.merchant_name, n.functional_amount, n.transaction_date, n.memo, n.event_type, n.direction, n.has_document, n.reference)
         is distinct from (o.merchant_name, o.functional_amount, o.transaction_date, o.memo, o.event_type, o.direction, o.has_document, o.reference)
      then 'updated'
  end
$function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.check_account_type(account_type text)
 RETURNS void
 LANGUAGE plpgsql
 STABLE
AS $function$
begin
  if account_type in ('credit_card', 'clearing')
     or (account_type <> 'total' and exists (select 1 from app_public.tax_codes t where t.account_type = check_account_type.account_type)) then
    return;
  end if;
  perform app_private.fail(format('Account type %s is not allowed. Allowed types: %s.', coalesce('"' || account_type || '"', '(none)'),
    (select string_agg(x, ', ' order by x) from (
       select distinct t.account_type as x from app_public.tax_codes t where t.account_type <> 'total'
       union select 'credit_card' union select 'clearing') s)));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.check_bank_statement_dups(org uuid, payment_account_id uuid, rows jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
begin
  perform app_private.scope_organization(org);
  perform app_private.check_payment_account(payment_account_id);
  return (select coalesce(jsonb_agg(app_private.duplicate_check_json(m.row_index, m.is_duplicate,
             m.is_possible_duplicate, m.matching_event_id, m.settles_pending) order by m.row_index), '[]')
            from app_private.bank_statement_matches(org, payment_account_id, rows) m);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.check_category(account uuid, event_type text)
 RETURNS void
 LANGUAGE plpgsql
 STABLE
AS $function$
declare a app_public.accounts;
begin
  select * into a from app_public.accounts where id = account;
  if not found then perform app_private.fail('Category account not found.'); end if;
  if not a.active then perform app_private.fail('Category account is inactive.'); end if;
  -- What a contact owes or is owed is what its documents say (contact_balances): nothing else posts there.
  if a.account_type in ('accounts_receivable', 'accounts_payable') then
    perform app_private.fail('Accounts Receivable and Payable take only invoices, bills and their payments.');
  end if;
  if not app_private.category_fits(event_type, a.classification) then
    perform app_private.fail(case event_type
      when 'expense' then 'Category must be an expense or asset account for an expense event.'
      when 'income' then 'Category must be a revenue account for an income event.'
      when 'refund' then 'Category must be a revenue or expense account for a refund event.'
      else 'Category must be an asset, liability or equity account for a transfer event.' end);
  end if;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.check_job_organization(org uuid)
 RETURNS void
 LANGUAGE plpgsql
 STABLE
AS $function$
begin
  if app_public.current_organization_id() is distinct from org
     and (app_public.current_api_key_id() is not null or app_public.current_user_id() is not null) then
    perform app_private.fail('Organization Not Found.', 'AU404');
  end if;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.check_payment_account(account uuid)
 RETURNS void
 LANGUAGE plpgsql
 STABLE
AS $function$
declare a app_public.accounts;
begin
  select * into a from app_public.accounts where id = account;
  if not found then perform app_private.fail('Payment account not found.'); end if;
  if not a.active then perform app_private.fail('Payment account is inactive.'); end if;
  if a.account_type not in ('bank', 'credit_card', 'clearing') then
    perform app_private.fail('Payment account must be a bank, credit card or clearing account.');
  end if;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.check_sort_by(sort_by text, allowed text[])
 RETURNS void
 LANGUAGE plpgsql
 IMMUTABLE
AS $function$
begin
  if sort_by is not null and not (sort_by = any (allowed)) then
    perform app_private.fail(format('sortBy must be one of: %s.', array_to_string(allowed, ', ')), 'AP400');
  end if;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.check_split_categories(splits jsonb, event_type text)
 RETURNS void
 LANGUAGE plpgsql
 STABLE
AS $function$
declare s jsonb;
begin
  for s in select x from jsonb_array_elements(splits) x loop
    perform app_private.check_split_category((s->>'category_id')::uuid, event_type);
  end loop;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.check_split_category(account uuid, event_type text)
 RETURNS void
 LANGUAGE plpgsql
 STABLE
AS $function$
begin
  if event_type = 'expense' and exists (select 1 from app_public.accounts a where a.id = account and a.active and a.classification = 'liability'
                                           and a.account_type <> 'accounts_payable') then
    return;
  end if;
  perform app_private.check_category(account, event_type);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.check_statement_size(rows jsonb)
 RETURNS void
 LANGUAGE plpgsql
 IMMUTABLE
AS $function$
begin
  if rows is not null and jsonb_typeof(rows) = 'array' and jsonb_array_length(rows) > app_private.max_statement_rows() then
    perform app_private.fail(format('At most %s rows per call.', to_char(app_private.max_statement_rows(), 'FM9,999')));
  end if;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.check_tax_account(account uuid)
 RETURNS void
 LANGUAGE plpgsql
 STABLE
AS $function$
declare a app_public.accounts;
begin
  select * into a from app_public.accounts where id = account;
  if not found then perform app_private.fail('Tax account not found.'); end if;
  if not a.active then perform app_private.fail('Tax account is inactive.'); end if;
  if a.classification not in ('liability', 'asset') then
    perform app_private.fail('Tax account must be a liability or asset account.');
  end if;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.check_typed_tax(tax numeric, code text, sale boolean, on_day date)
 RETURNS void
 LANGUAGE plpgsql
 STABLE
AS $function$
begin
  if code is not null and coalesce(tax, 0) > 0
     and not exists (select 1 from app_private.tax_included_parts(100, code, on_day) t where t.recoverable or sale) then
    perform app_private.fail(format('Tax code %s puts no tax in a tax account on a %s: leave taxAmount out, or give it without the code.',
      code, case when sale then 'sale' else 'purchase' end));
  end if;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.check_vendor_pattern(pattern text)
 RETURNS text
 LANGUAGE plpgsql
 IMMUTABLE
AS $function$
declare p text := app_private.clean_text(pattern);
begin
  if p is null or p = '' then perform app_private.fail('Vendor pattern is required.'); end if;
  if length(p) > 200 then perform app_private.fail('Vendor pattern must be at most 200 characters.'); end if;
  -- An odd number of trailing backslashes leaves the escape character dangling.
  if p ~ '(^|[^\\])(\\\\)*\\$' then perform app_private.fail('Vendor pattern is not a valid ILIKE pattern.'); end if;
  return p;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.checked_rule(r app_public.category_rules, vendor_pattern text, category_id uuid, priority integer, direction text, amount_min text, amount_max text, payment_account_id uuid, contact_id uuid, tax_code text, splits jsonb, clear_payment_account boolean DEFAULT false, clear_contact boolean DEFAULT false)
 RETURNS app_public.category_rules
 LANGUAGE plpgsql
 STABLE
AS $function$
begin
  if vendor_pattern is not null then r.vendor_pattern := app_private.check_vendor_pattern(vendor_pattern); end if;
  if splits is not null and category_id is not null then
    perform app_private.fail('Give categoryId or splits, not both.');
  end if;
  if category_id is not null then
    r.account_id := app_private.rule_account(r.organization_id, category_id);
    r.splits := null;
  end if;
  if splits is not null then
    r.splits := app_private.checked_rule_splits(r.organization_id, splits);
    -- Shown as the rule's account: the largest share (the first of equals).
    r.account_id := (select (l.v->>'category_id')::uuid from jsonb_array_elements(r.splits) with ordinality l (v, n)
                      order by (l.v->>'percent')::numeric desc, l.n limit 1);
    r.tax_code := null;
  end if;
  -- A new rule (r is a blank record) must be given these two; its priority defaults to 100.
  if r.vendor_pattern is null then perform app_private.fail('Vendor pattern is required.'); end if;
  if r.account_id is null then perform app_private.fail('categoryId or splits is required.'); end if;
  r.priority := coalesce(r.priority, 100);
  if priority is not null then
    if priority not between 0 and 1000000 then perform app_private.fail('priority must be between 0 and 1000000.'); end if;
    r.priority := priority;
  end if;
  if direction is not null then
    if direction not in ('in', 'out', '') then perform app_private.fail('direction must be in or out.'); end if;
    r.direction := nullif(direction, '');
  end if;
  if amount_min is not null then
    r.amount_min := case when amount_min = '' then null else app_private.parse_amount(amount_min, 'amountMin must be a decimal string of at least 0.', true) end;
  end if;
  if amount_max is not null then
    r.amount_max := case when amount_max = '' then null else app_private.parse_amount(amount_max, 'amountMax must be a decimal string of at least 0.', true) end;
  end if;
  if r.amount_min > r.amount_max then perform app_private.fail('amountMin must not be above amountMax.'); end if;
  if payment_account_id is not null and clear_payment_account then
    perform app_private.fail('Give paymentAccountId or clearPaymentAccount, not both.');
  end if;
  if payment_account_id is not null then
    perform app_private.check_payment_account(payment_account_id);
    r.payment_account_id := payment_account_id;
  end if;
  if clear_payment_account then r.payment_account_id := null; end if;
  if r.payment_account_id = r.account_id or r.payment_account_id in (select (l->>'category_id')::uuid from jsonb_array_elements(r.splits) l) then
    perform app_private.fail('Category and payment account must differ.');
  end if;
  if clear_contact then r.contact_id := null; end if;
  if contact_id is not null then
    if not exists (select 1 from app_public.contacts k where k.organization_id = r.organization_id and k.id = contact_id) then
      perform app_private.fail('Contact not found.');
    end if;
    r.contact_id := contact_id;
  end if;
  if tax_code is not null then
    if tax_code <> '' and not exists (select 1 from app_public.sales_tax_codes c where c.code = tax_code) then
      perform app_private.fail('Unknown tax code.');
    end if;
    r.tax_code := nullif(tax_code, '');
  end if;
  if r.splits is not null and r.tax_code is not null then
    perform app_private.fail('The tax of a split rule is on its splits: give each split its taxCode.');
  end if;
  return r;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.checked_rule_splits(org uuid, splits jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
declare
  max_splits constant integer := 100;
  s jsonb;
  v_percent numeric;
  v_lines jsonb := '[]';
  v_memo text;
begin
  if jsonb_typeof(splits) is distinct from 'array' or jsonb_array_length(splits) = 0 then
    perform app_private.fail('Splits must be a list of at least one line.');
  end if;
  if jsonb_array_length(splits) > max_splits then perform app_private.fail(format('At most %s splits.', max_splits)); end if;
  for s in select x from jsonb_array_elements(splits) x loop
    if jsonb_typeof(s) is distinct from 'object' or s->>'categoryId' is null or s->>'percent' is null then
      perform app_private.fail('Each split needs a categoryId and a percent.');
    end if;
    v_percent := app_private.parse_amount(s->>'percent', 'A split''s percent must be a decimal from 0.01 to 100.');
    if v_percent > 100 then perform app_private.fail('A split''s percent must be a decimal from 0.01 to 100.'); end if;
    if nullif(s->>'taxCode', '') is not null and not exists (select 1 from app_public.sales_tax_codes c where c.code = s->>'taxCode') then
      perform app_private.fail('Unknown tax code.');
    end if;
    v_memo := normalize(app_private.clean_text(s->>'memo'), NFC);
    if length(v_memo) > 1000 then perform app_private.fail('A split''s memo must be at most 1000 characters.'); end if;
    v_lines := v_lines || jsonb_build_object('category_id',
      app_private.rule_account(org, app_private.parse_uuid(s->>'categoryId', 'Category account not found.')),
      'percent', v_percent, 'tax_code', nullif(s->>'taxCode', ''), 'memo', coalesce(v_memo, ''));
  end loop;
  if (select sum((l->>'percent')::numeric) from jsonb_array_elements(v_lines) l) <> 100 then
    perform app_private.fail('Split percentages must add up to 100.');
  end if;
  return v_lines;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.checked_splits(splits jsonb, event_type text, amount numeric, on_day date)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
declare
  max_splits constant integer := 100;
  s jsonb;
  v_category uuid;
  v_memo text;
  v_lines jsonb := '[]'::jsonb;
begin
  if jsonb_typeof(splits) is distinct from 'array' or jsonb_array_length(splits) = 0 then
    perform app_private.fail('Splits must be a list of at least one line.');
  end if;
  if jsonb_array_length(splits) > max_splits then perform app_private.fail(format('At most %s splits.', max_splits)); end if;
  for s in select x from jsonb_array_elements(splits) x loop
    if jsonb_typeof(s) is distinct from 'object' or s->>'categoryId' is null or s->>'amount' is null then
      perform app_private.fail('Each split needs a categoryId and an amount.');
    end if;
    v_category := app_private.parse_uuid(s->>'categoryId', 'Category account not found.');
    perform app_private.check_split_category(v_category, event_type);
    v_memo := normalize(app_private.clean_text(s->>'memo'), NFC);
    if length(v_memo) > 1000 then perform app_private.fail('A split''s memo must be at most 1000 characters.'); end if;
    v_lines := v_lines || app_private.split_line(v_category,
      app_private.parse_amount(s->>'amount', 'A split''s amount must be a positive decimal string.'),
      nullif(s->>'taxCode', ''),
      case when s->>'taxAmount' is not null
        then app_private.parse_amount(s->>'taxAmount', 'A split''s tax amount must be a decimal string of at least 0.', true) end,
      v_memo, event_type, on_day);
  end loop;
  if app_private.splits_total(v_lines) <> amount then perform app_private.fail('Splits must add up to the amount.'); end if;
  return v_lines;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.claim_idempotency_key(credential text, idem_key text, digest text, org uuid)
 RETURNS TABLE(outcome text, response_status integer, response_body text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public'
AS $function$
declare r app_public.idempotency_records;
begin
  -- Expired after 24 hours; a claim whose request died without answering is free after 5 minutes.
  delete from app_public.idempotency_records x
    where x.credential = claim_idempotency_key.credential and x.idempotency_key = idem_key
      and (x.created < now() - interval '24 hours'
           or (x.response_status is null and x.created < now() - interval '5 minutes'));
  insert into app_public.idempotency_records (organization_id, credential, idempotency_key, request_digest)
    values (org, claim_idempotency_key.credential, idem_key, digest)
    on conflict do nothing
    returning * into r;
  if r.credential is not null then
    return query select 'claimed'::text, null::integer, null::text;
    return;
  end if;
  select * into r from app_public.idempotency_records x
    where x.credential = claim_idempotency_key.credential and x.idempotency_key = idem_key;
  return query select
    case when r.request_digest <> digest then 'mismatch'
         when r.response_status is null then 'in_progress'
         else 'replay' end,
    r.response_status, r.response_body;
end $function$
-- grants: <owner>: EXECUTE; accounting_authenticator: EXECUTE

CREATE OR REPLACE FUNCTION app_private.clean_email(email text)
 RETURNS text
 LANGUAGE plpgsql
 IMMUTABLE
AS $function$
declare e text := nullif(app_private.clean_text(email), '');
begin
  if e is not null and (e !~ '^[^@\s]+@[^@\s]+\.[^@\s]+$' or length(e) > 254) then
    perform app_private.fail('Email must look like an email address.');
  end if;
  return e;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.clean_phone(phone text)
 RETURNS text
 LANGUAGE plpgsql
 IMMUTABLE
AS $function$
declare p text := nullif(btrim(phone), '');
begin
  if p is not null and p !~ '^\+?[0-9 ().-]{3,30}$' then
    perform app_private.fail('Phone must be 3 to 30 characters: digits, spaces, a leading + and ( ) - . only.');
  end if;
  return p;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.clean_text(t text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ select btrim(normalize(t, NFC)) $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.closing_balances(org uuid, as_of date)
 RETURNS TABLE(account_id uuid, account_name text, classification text, net_debit numeric)
 LANGUAGE sql
 STABLE
AS $function$
  with year_start as (
    select app_private.fiscal_year_start(o.fiscal_year_start, as_of) as day from app_public.organizations o where o.id = org
  ),
  sums as (
    select t.account_id, t.debit - t.credit as all_time, y.debit - y.credit as this_year
      from app_private.account_totals(org, null, as_of) t
      left join app_private.account_totals(org, (select day from year_start), as_of) y on y.account_id = t.account_id
  ),
  accounts as (
    select a.id, a.name, a.classification, a.account_type,
           case when a.classification in ('revenue', 'expense') then coalesce(s.this_year, 0) else s.all_time end as net_debit,
           case when a.classification in ('revenue', 'expense') then s.all_time - coalesce(s.this_year, 0) else 0 end as earlier_years
      from sums s join app_public.accounts a on a.id = s.account_id
  ),
  retained as (
    select a.id from app_public.accounts a
     where a.organization_id = org and a.account_type = 'retained_earnings'
     order by a.active desc, a.created, a.id limit 1
  ),
  earlier as (select coalesce(sum(earlier_years), 0) as net_debit from accounts)
  select x.id, x.name, x.classification, sum(x.net_debit) from (
    select a.id, a.name, a.classification, a.net_debit from accounts a
    union all
    -- Earlier years' earnings close into retained earnings.
    select r.id, coalesce(a.name, 'Retained Earnings'), 'equity', e.net_debit
      from earlier e
      left join retained r on true
      left join app_public.accounts a on a.id = r.id
     where e.net_debit <> 0
  ) x
  group by x.id, x.name, x.classification
  having sum(x.net_debit) <> 0
$function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.cloud_drive_settings(organization_id uuid, endpoint text, bucket text, prefix text, access_key_id text, region text)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
declare
  v_endpoint text := rtrim(lower(nullif(app_private.clean_text(endpoint), '')), '/');
  v_bucket text := app_private.clean_text(bucket);
  v_prefix text := ltrim(coalesce(app_private.clean_text(prefix), ''), '/');
  v_key text := app_private.clean_text(access_key_id);
  v_region text := coalesce(nullif(lower(app_private.clean_text(region)), ''), 'us-east-1');
begin
  perform app_private.assert_org_access(organization_id, true);
  if v_endpoint is not null and (length(v_endpoint) > 300 or v_endpoint !~ '^https?://[a-z0-9.:\[\]-]+$') then
    perform app_private.fail('Endpoint must be an http(s) URL of a host, such as https://s3.example.com.');
  end if;
  if v_bucket is null or v_bucket !~ '^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$' then
    perform app_private.fail('Bucket must be 3 to 63 lower-case letters, digits, dots or hyphens.');
  end if;
  if length(v_prefix) > 1024 or v_prefix ~ '[[:cntrl:]]' then
    perform app_private.fail('Prefix must be at most 1024 characters, without control characters.');
  end if;
  if v_key is null or v_key !~ '^[[:graph:]]{1,128}$' then
    perform app_private.fail('Access key id must be 1 to 128 characters without spaces.');
  end if;
  if v_region !~ '^[a-z0-9-]{1,50}$' then perform app_private.fail('Region must look like us-east-1.'); end if;
  return jsonb_build_object('endpoint', v_endpoint, 'bucket', v_bucket, 'prefix', v_prefix, 'region', v_region,
    'accessKeyId', v_key);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.cloud_drive_unread(receipt_source_id uuid, object_keys text[], etags text[])
 RETURNS SETOF integer
 LANGUAGE sql
 STABLE
AS $function$
  select l.n::integer from unnest(object_keys, etags) with ordinality l (object_key, etag, n)
   where not exists (select 1 from app_public.cloud_drive_objects o
                      where o.receipt_source_id = cloud_drive_unread.receipt_source_id
                        and o.object_key = l.object_key and o.etag = left(l.etag, 200))
   order by l.n
$function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.connect_cloud_drive(organization_id uuid, endpoint text, bucket text, prefix text, access_key_id text, region text, receipt_source_id uuid, secret_access_key_sealed text)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
begin
  return jsonb_build_object('success', true, 'error', null, 'cloudDrive', app_private.add_receipt_source(organization_id, 'cloud_drive',
    app_private.cloud_drive_settings(organization_id, endpoint, bucket, prefix, access_key_id, region), receipt_source_id,
    secret_access_key_sealed));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.connect_mailbox(organization_id uuid, host text, port integer, secure boolean, username text, folder text, receipt_source_id uuid, password_sealed text)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
begin
  return jsonb_build_object('success', true, 'error', null, 'mailbox', app_private.add_receipt_source(organization_id, 'mailbox',
    app_private.mailbox_settings(organization_id, host, port, secure, username, folder), receipt_source_id, password_sealed));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.contact_balances(org uuid)
 RETURNS TABLE(contact_id uuid, balance numeric)
 LANGUAGE sql
 STABLE
AS $function$
  select d.contact_id, sum(d.total - d.amount_paid) from app_public.documents d
   where d.organization_id = org and d.status in ('open', 'partially_paid')
   group by d.contact_id
$function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE; reporting_reader: EXECUTE

CREATE OR REPLACE FUNCTION app_private.contact_by_id(org uuid, contact uuid)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$ select app_private.contact_json(c, (select b.balance from app_private.contact_balances(org) b where b.contact_id = c.id))
     from app_public.contacts c where c.organization_id = org and c.id = contact $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.contact_json(c app_public.contacts, balance numeric)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$ select jsonb_build_object('id', c.id, 'contactType', c.contact_type, 'displayName', c.display_name,
     'email', coalesce(c.email, ''), 'phone', coalesce(c.phone, ''), 'balance', coalesce(balance, 0),
     'active', c.active, 'created', app_private.iso(c.created), 'updated', app_private.iso(c.updated)) $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.control_account(org uuid, kind text)
 RETURNS uuid
 LANGUAGE plpgsql
AS $function$
declare
  v_type text := case kind when 'invoice' then 'accounts_receivable' else 'accounts_payable' end;
  v_name text := case kind when 'invoice' then 'Accounts Receivable' else 'Accounts Payable' end;
  a app_public.accounts;
begin
  select * into a from app_public.accounts x
   where x.organization_id = org and x.account_type = v_type order by x.active desc, x.created, x.id limit 1;
  if not found then
    perform pg_advisory_xact_lock(hashtextextended('control_account:' || org || ':' || kind, 0));
    select * into a from app_public.accounts x
     where x.organization_id = org and x.account_type = v_type order by x.active desc, x.created, x.id limit 1;
  end if;
  if not found then
    begin
      insert into app_public.accounts (organization_id, name, account_type, classification, tax_code_id)
        select org, v_name, v_type, case kind when 'invoice' then 'asset' else 'liability' end, t.id
          from app_public.tax_codes t where t.code = case kind when 'invoice' then '1060' else '2620' end
        returning * into a;
    exception when unique_violation then
      perform app_private.fail(format('An account named %s is not of type %s: rename it, so that %s can be made.', v_name, v_type, v_name));
    end;
  end if;
  if not a.active then perform app_private.fail(format('%s is inactive: reactivate it.', a.name)); end if;
  return a.id;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.counter_shard()
 RETURNS smallint
 LANGUAGE sql
 PARALLEL RESTRICTED
AS $function$ select (pg_backend_pid() % 16)::smallint $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.create_api_key(org uuid, label text, created_by uuid DEFAULT NULL::uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public'
AS $function$
declare
  secret text := app_private.new_api_key_secret();
  lbl text := coalesce(app_private.clean_text(label), '');
  k app_public.api_keys;
begin
  if length(lbl) > 200 then perform app_private.fail('Label must be at most 200 characters.'); end if;
  insert into app_public.api_keys (organization_id, digest, prefix, label, created_by)
    values (org, encode(sha256(convert_to(secret, 'UTF8')), 'hex'), left(secret, 9), lbl, created_by)
    returning * into k;
  return jsonb_build_object('apiKey', app_private.api_key_json(k.id, k.label, k.prefix, k.created, k.last_used_at, k.revoked_at),
    'secret', secret);
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.create_document(org uuid, kind text, contact uuid, number text, issue_date text, due_date text, lines jsonb, memo text)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  max_lines constant integer := 200;
  noun text := case kind when 'invoice' then 'An invoice' else 'A bill' end;
  c app_public.contacts;
  v_number text := app_private.clean_text(number);
  v_issue date;
  v_due date;
  v_memo text := coalesce(normalize(memo, NFC), '');
  v_id uuid;
  l jsonb;
  n integer := 0;
  v_qty numeric;
  v_price numeric;
  v_amount numeric;
  v_category uuid;
  v_code text;
  v_tax numeric;
  v_lines jsonb := '[]'::jsonb;
  v_total numeric;
begin
  perform app_private.assert_org_access(org, false);
  select * into c from app_public.contacts x where x.id = contact;
  if not found then perform app_private.fail('Contact not found.'); end if;
  if c.contact_type <> (case kind when 'invoice' then 'customer' else 'vendor' end) then
    perform app_private.fail(case kind when 'invoice' then 'An invoice is to a customer.' else 'A bill is from a vendor.' end);
  end if;
  if v_number is null or v_number = '' then perform app_private.fail('Number is required.'); end if;
  if length(v_number) > 50 then perform app_private.fail('Number must be at most 50 characters.'); end if;
  v_issue := app_private.parse_date(issue_date, 'issueDate must be a date in YYYY-MM-DD format.');
  v_due := app_private.parse_date(due_date, 'dueDate must be a date in YYYY-MM-DD format.');
  if v_due < v_issue then perform app_private.fail('dueDate must not be before issueDate.'); end if;
  if length(v_memo) > 5000 then perform app_private.fail('Memo must be at most 5000 characters.'); end if;
  if jsonb_typeof(lines) is distinct from 'array' or jsonb_array_length(lines) = 0 then
    perform app_private.fail(noun || ' needs at least one line.');
  end if;
  if jsonb_array_length(lines) > max_lines then perform app_private.fail(format('At most %s lines.', max_lines)); end if;
  for l in select x from jsonb_array_elements(lines) x loop
    n := n + 1;
    if nullif(app_private.clean_text(l->>'description'), '') is null then perform app_private.fail('Each line needs a description.'); end if;
    if length(app_private.clean_text(l->>'description')) > 500 then perform app_private.fail('A line''s description must be at most 500 characters.'); end if;
    v_qty := app_private.parse_decimal(l->>'quantity', 4, true, 'A line''s quantity must be a positive decimal string with at most 4 decimals.');
    v_price := app_private.parse_decimal(l->>'unitPrice', 4, false, 'A line''s unitPrice must be a decimal string of at least 0 with at most 4 decimals.');
    v_amount := app_private.round_half_even(v_qty * v_price);
    if v_amount > app_private.max_amount() then perform app_private.fail('A line''s amount must be at most 999,999,999.99.'); end if;
    v_category := app_private.parse_uuid(l->>'categoryId', 'Category account not found.');
    perform app_private.check_category(v_category, case kind when 'invoice' then 'income' else 'expense' end);
    v_code := nullif(l->>'taxCode', '');
    if v_code is not null and not exists (select 1 from app_public.sales_tax_codes s where s.code = v_code) then
      perform app_private.fail('Unknown tax code.');
    end if;
    v_tax := coalesce((select sum(t.portion) from app_private.tax_excluded_parts(v_amount, v_code, v_issue) t), 0);
    v_lines := v_lines || jsonb_build_object('position', n, 'description', app_private.clean_text(l->>'description'),
      'quantity', v_qty, 'unit_price', v_price, 'amount', v_amount, 'category_id', v_category, 'tax_code', v_code, 'tax_amount', v_tax);
  end loop;
  v_total := (select sum((x->>'amount')::numeric + (x->>'tax_amount')::numeric) from jsonb_array_elements(v_lines) x);
  if v_total <= 0 then perform app_private.fail(noun || ' must total more than 0.00.'); end if;
  if v_total > app_private.max_amount() then
    perform app_private.fail(noun || '''s total must be at most 999,999,999.99.');
  end if;
  begin
    insert into app_public.documents (organization_id, kind, contact_id, number, issue_date, due_date, memo, subtotal, tax_total, total)
      select org, kind, c.id, v_number, v_issue, v_due, v_memo, sum(x.amount), sum(x.tax_amount), sum(x.amount) + sum(x.tax_amount)
        from jsonb_to_recordset(v_lines) x (amount numeric, tax_amount numeric)
      returning id into v_id;
  exception when unique_violation then
    perform app_private.fail(case kind when 'invoice' then 'Invoice number already exists.' else 'Bill number already exists for this vendor.' end);
  end;
  insert into app_public.document_lines (organization_id, document_id, position, description, quantity, unit_price, amount,
      category_id, tax_code, tax_amount)
    select org, v_id, x.position, x.description, x.quantity, x.unit_price, x.amount, x.category_id, x.tax_code, x.tax_amount
      from jsonb_to_recordset(v_lines) x (position smallint, description text, quantity numeric, unit_price numeric, amount numeric,
           category_id uuid, tax_code text, tax_amount numeric);
  return jsonb_build_object('success', true, 'error', null,
    'document', (select app_private.document_json(d) from app_public.documents d where d.id = v_id));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.create_organization(name text, currency text DEFAULT 'CAD'::text)
 RETURNS app_public.organizations
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public'
AS $function$
declare
  o app_public.organizations;
  nm text := app_private.clean_text(create_organization.name);
  cur text := upper(btrim(coalesce(currency, 'CAD')));
  scope text := current_setting('app.organization_id', true);
begin
  if nm is null or nm = '' then perform app_private.fail('Name is required.'); end if;
  if length(nm) > 200 then perform app_private.fail('Name must be at most 200 characters.'); end if;
  if cur !~ '^[A-Z]{3}$' then perform app_private.fail('Currency must be a three-letter code such as CAD.'); end if;
  begin
    insert into app_public.organizations (name, functional_currency) values (nm, cur) returning * into o;
  exception when unique_violation then
    perform app_private.fail('An organization with this name already exists.');
  end;
  -- The new organization in scope while its starter chart is written (RLS is forced), then back.
  perform set_config('app.organization_id', o.id::text, true);
  perform app_private.create_starter_chart(o.id);
  perform set_config('app.organization_id', coalesce(scope, ''), true);
  return o;
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.create_starter_chart(org uuid)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
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
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.create_user(email text, name text DEFAULT NULL::text)
 RETURNS app_public.users
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public'
AS $function$
declare
  u app_public.users;
  em text := lower(app_private.clean_text(create_user.email));
begin
  if em is null or em !~ '^[^@\s]+@[^@\s]+\.[^@\s]+$' or length(em) > 254 then
    perform app_private.fail('Email must look like an email address.');
  end if;
  begin
    insert into app_public.users (email, name) values (em, normalize(create_user.name, NFC)) returning * into u;
  exception when unique_violation then
    perform app_private.fail('A user with this email already exists.');
  end;
  return u;
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.create_webhook_endpoint(organization_id uuid, url text, events text[], description text, webhook_endpoint_id uuid, secret_sealed text)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  s jsonb := app_private.webhook_endpoint_settings(organization_id, url, events, description);
begin
  if s->>'url' is null then perform app_private.fail('url is required.'); end if;
  if s->'events' = 'null'::jsonb then perform app_private.fail('events must name at least one event type.'); end if;
  -- Creations of one organization one at a time, so that two cannot both pass the limit.
  perform pg_advisory_xact_lock(hashtext('webhook_endpoints:' || create_webhook_endpoint.organization_id));
  if (select count(*) from app_public.webhook_endpoints x where x.organization_id = create_webhook_endpoint.organization_id) >= 20 then
    perform app_private.fail('An organization may have at most 20 webhook endpoints.');
  end if;
  insert into app_public.webhook_endpoints (id, organization_id, url, events, description, secret_sealed)
    values (webhook_endpoint_id, create_webhook_endpoint.organization_id, s->>'url',
            array(select jsonb_array_elements_text(s->'events')), s->>'description', secret_sealed);
  return jsonb_build_object('success', true, 'error', null, 'webhookEndpoint', app_private.webhook_endpoint_json(webhook_endpoint_id),
    'secret', null);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.current_month_start()
 RETURNS date
 LANGUAGE sql
AS $function$ select date_trunc('month', clock_timestamp() at time zone 'UTC')::date $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.delete_processor_imports(org uuid, batch_key text DEFAULT NULL::text, dry_run boolean DEFAULT false)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  v_batches uuid[];
  v_keys jsonb;
  n_events integer; n_entries integer; n_lines integer;
begin
  perform set_config('app.organization_id', org::text, true);
  perform set_config('app.audit_action', 'delete_import', true);
  if not exists (select 1 from app_public.organizations o where o.id = org) then
    perform app_private.fail('Organization not found.', 'AP404');
  end if;
  -- Locked: a concurrent delete of the same batch waits, then finds nothing left.
  with b as (
    select x.id, x.batch_key from app_public.import_batches x
     where x.organization_id = org and x.source = 'processor_import'
       and (delete_processor_imports.batch_key is null or x.batch_key = delete_processor_imports.batch_key)
     order by x.batch_key
     for update
  )
  select coalesce(array_agg(b.id order by b.batch_key), '{}'), coalesce(jsonb_agg(b.batch_key order by b.batch_key), '[]')
    into v_batches, v_keys from b;
  if batch_key is not null and cardinality(v_batches) = 0 then
    perform app_private.fail(format('No processor import batch "%s".', batch_key), 'AP404');
  end if;

  select (select count(*) from app_public.ledger_events e
           where e.organization_id = org and e.source = 'processor_import' and e.import_batch_id = any (v_batches)),
         (select count(*) from app_public.journal_entries je join app_public.ledger_events e on e.id = je.event_id
           where e.organization_id = org and e.source = 'processor_import' and e.import_batch_id = any (v_batches)),
         (select count(*) from app_public.journal_lines l
            join app_public.journal_entries je on je.id = l.entry_id join app_public.ledger_events e on e.id = je.event_id
           where e.organization_id = org and e.source = 'processor_import' and e.import_batch_id = any (v_batches))
    into n_events, n_entries, n_lines;

  -- An exported event is changed only by reversal: its import stays (docs/api.md, The change feed).
  -- Its events are locked first (in id order), so that none is exported between the check and the delete.
  perform 1 from app_public.ledger_events e
   where e.organization_id = org and e.source = 'processor_import' and e.import_batch_id = any (v_batches)
   order by e.id for update;
  if exists (select 1 from app_public.ledger_events e
              join app_public.ledger_event_external_refs x on x.organization_id = e.organization_id and x.event_id = e.id
              where e.organization_id = org and e.source = 'processor_import' and e.import_batch_id = any (v_batches)) then
    perform app_private.fail('The import holds synced events (exported to another system): reverse them instead of deleting the import.');
  end if;
  if not dry_run then
    -- Each deleted row has its foreign keys checked by a query planned from the statistics; right
    -- after a large import they may not know its rows yet, and a check would then read all of the
    -- organization's rows instead of one (minutes instead of seconds for 100,000 events).
    if n_events > 1000 then
      analyze app_public.ledger_events;
      analyze app_public.journal_entries;
      analyze app_public.journal_lines;
    end if;
    -- Linked receipts first: receipt, then event, is the order every link takes its locks in.
    perform 1 from app_public.receipts r join app_public.ledger_events e on e.id = r.event_id
     where e.organization_id = org and e.source = 'processor_import' and e.import_batch_id = any (v_batches)
     order by r.id for update of r;
    -- A line applied to invoices or bills paid them: they are owed again.
    perform app_private.release_allocations(e.id) from app_public.ledger_events e
     where e.organization_id = org and e.source = 'processor_import' and e.import_batch_id = any (v_batches)
       and exists (select 1 from app_public.payment_allocations p where p.event_id = e.id);
    delete from app_public.journal_lines l
     using app_public.journal_entries je, app_public.ledger_events e
     where l.entry_id = je.id and je.event_id = e.id
       and e.organization_id = org and e.source = 'processor_import' and e.import_batch_id = any (v_batches);
    delete from app_public.journal_entries je
     using app_public.ledger_events e
     where je.event_id = e.id
       and e.organization_id = org and e.source = 'processor_import' and e.import_batch_id = any (v_batches);
    delete from app_public.ledger_events e
     where e.organization_id = org and e.source = 'processor_import' and e.import_batch_id = any (v_batches);
    delete from app_public.import_batches x where x.id = any (v_batches);
  end if;

  return jsonb_build_object('batches', cardinality(v_batches), 'batchIds', v_keys, 'events', n_events,
    'journalEntries', n_entries, 'journalLines', n_lines, 'dryRun', dry_run);
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.direction_for(event_type text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ select case event_type when 'income' then 'in' else 'out' end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.disconnect_receipt_source(organization_id uuid, kind text, receipt_source_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
begin
  perform app_private.assert_org_access(organization_id, true);
  delete from app_public.receipt_sources s
   where s.organization_id = disconnect_receipt_source.organization_id and s.kind = disconnect_receipt_source.kind
     and s.id = receipt_source_id;
  if not found then perform app_private.fail(app_private.source_noun(kind) || ' not found.', 'AP404'); end if;
  return jsonb_build_object('success', true, 'error', null);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.dispatch_queued_jobs(max_jobs integer DEFAULT 500)
 RETURNS integer
 LANGUAGE plpgsql
AS $function$
declare
  -- A record, not graphile_worker.job_spec[]: a declared type is resolved when the function is
  -- made, before src/db/migrate.ts may have installed graphile-worker's schema.
  v_batch record;
begin
  if not pg_try_advisory_xact_lock(hashtext('accounting-api:job-outbox')) then return 0; end if;
  -- The batch's ids as an array, found once: the outbox is empty most of the time, and planned
  -- from statistics taken then, `o.id in (subquery)` ran the subquery once per row left (26 s
  -- for a batch of 500 with 11,000 waiting).
  with taken as (
    delete from app_private.job_outbox o
     where o.id = any (array(select x.id from app_private.job_outbox x order by x.id limit max_jobs))
    returning o.*
  ), counted as (
    select t.*, count(*) over () as taken_count,
           row_number() over (partition by t.job_key order by t.id desc) as nth_of_key,
           min(coalesce(t.run_at, t.queued_at)) over (partition by t.job_key, t.preserve_run_at) as earliest
      from taken t
  )
  select coalesce(max(c.taken_count), 0) as taken,
         array_agg(row(c.task, c.payload, c.queue_name, coalesce(c.run_at, c.queued_at), c.max_attempts, c.job_key, null, null)::graphile_worker.job_spec
                   order by c.id) filter (where not c.preserve_run_at and (c.job_key is null or c.nth_of_key = 1)) as specs,
         array_agg(row(c.task, c.payload, c.queue_name, c.earliest, c.max_attempts, c.job_key, null, null)::graphile_worker.job_spec
                   order by c.id) filter (where c.preserve_run_at and (c.job_key is null or c.nth_of_key = 1)) as preserved
    into v_batch
    from counted c;
  if v_batch.specs is not null then
    perform graphile_worker.add_jobs(v_batch.specs);
  end if;
  if v_batch.preserved is not null then
    perform graphile_worker.add_jobs(v_batch.preserved, job_key_preserve_run_at => true);
  end if;
  return v_batch.taken;
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.document_for_update(kind text, id uuid)
 RETURNS app_public.documents
 LANGUAGE plpgsql
AS $function$
declare d app_public.documents;
begin
  select * into d from app_public.documents x where x.id = document_for_update.id and x.kind = document_for_update.kind for update;
  if not found then perform app_private.fail(case kind when 'invoice' then 'Invoice not found.' else 'Bill not found.' end, 'AP404'); end if;
  return d;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.document_json(d app_public.documents)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$
  select jsonb_build_object('id', d.id, 'kind', d.kind,
    'contact', (select jsonb_build_object('id', c.id, 'displayName', c.display_name) from app_public.contacts c where c.id = d.contact_id),
    'number', d.number, 'issueDate', to_char(d.issue_date, 'YYYY-MM-DD'), 'dueDate', to_char(d.due_date, 'YYYY-MM-DD'),
    'memo', d.memo, 'status', d.status, 'subtotal', app_private.money(d.subtotal), 'taxTotal', app_private.money(d.tax_total),
    'total', app_private.money(d.total), 'amountPaid', app_private.money(d.amount_paid),
    'amountDue', app_private.money(case when d.status in ('draft', 'void') then 0 else d.total - d.amount_paid end),
    'lines', (select coalesce(jsonb_agg(jsonb_build_object('description', l.description,
        'quantity', trim_scale(l.quantity)::text, 'unitPrice', trim_scale(l.unit_price)::text, 'amount', app_private.money(l.amount),
        'category', jsonb_build_object('id', a.id, 'name', a.name), 'taxCode', l.tax_code, 'taxAmount', app_private.money(l.tax_amount))
        order by l.position), '[]'::jsonb)
      from app_public.document_lines l join app_public.accounts a on a.id = l.category_id where l.document_id = d.id),
    'journalEntryId', d.journal_entry_id, 'voidEntryId', d.void_entry_id,
    'approvedAt', app_private.iso(d.approved_at), 'voidedAt', app_private.iso(d.voided_at),
    'created', app_private.iso(d.created), 'updated', app_private.iso(d.updated))
$function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.documents_matching(kind text, pattern text)
 RETURNS SETOF uuid
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public', 'pg_temp'
AS $function$
  select x.id from app_public.documents x
   where x.organization_id = app_public.current_organization_id() and x.kind = documents_matching.kind and x.number ilike pattern
  union
  select x.id from app_public.contacts c
    join app_public.documents x on x.organization_id = c.organization_id and x.contact_id = c.id and x.kind = documents_matching.kind
   where c.organization_id = app_public.current_organization_id() and c.display_name ilike pattern
$function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.duplicate_check_json(row_index integer, is_duplicate boolean, is_possible_duplicate boolean, matching_event_id uuid, settles_pending boolean)
 RETURNS jsonb
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ select jsonb_build_object('rowIndex', row_index, 'isDuplicate', is_duplicate,
     'isPossibleDuplicate', is_possible_duplicate, 'matchingEventId', matching_event_id, 'settlesPendingEvent', settles_pending) $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.enqueue_operator_job(task text, org uuid, payload jsonb DEFAULT '{}'::jsonb)
 RETURNS bigint
 LANGUAGE plpgsql
AS $function$
declare v_id bigint;
begin
  if task is null or not task = any (app_private.operator_job_tasks()) then
    perform app_private.fail(format('Unknown task "%s": one of %s.', task, array_to_string(app_private.operator_job_tasks(), ', ')));
  end if;
  if jsonb_typeof(coalesce(payload, '{}')) <> 'object' then
    perform app_private.fail('The payload must be a JSON object.');
  end if;
  if not exists (select 1 from app_public.organizations o where o.id = org) then
    perform app_private.fail('Organization Not Found.', 'AP404');
  end if;
  -- A stored export of this organization only: a mistyped key never imports another's.
  if task = 'import_processor_balance'
     and coalesce(payload->>'objectKey', '') not like 'processor-imports/' || org || '/%' then
    perform app_private.fail(format('The objectKey must be one of this organization''s stored exports (processor-imports/%s/…).', org));
  end if;
  select (graphile_worker.add_job(task, (coalesce(payload, '{}') || jsonb_build_object('organizationId', org))::json,
      queue_name => app_private.job_queue(task, org), max_attempts => 5)).id into v_id;
  return v_id;
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.event_count(org uuid, statuses text[], first_day date, last_day date)
 RETURNS bigint
 LANGUAGE plpgsql
 STABLE
AS $function$
declare
  p record;
  n bigint;
begin
  select * into p from app_private.rolled_period(org, event_count.first_day, event_count.last_day);
  select coalesce(sum(x.n), 0)::bigint into n from (
    select m.n from app_public.ledger_event_monthly_counts m
     where m.organization_id = org and m.month >= p.rolled_from and m.month < p.rolled_to
       and (statuses is null or m.status = any (statuses))
    union all
    select c.n from app_public.ledger_event_daily_counts c
     where c.organization_id = org and c.day >= p.first_day and c.day < p.rolled_from
       and (statuses is null or c.status = any (statuses))
    union all
    select c.n from app_public.ledger_event_daily_counts c
     where c.organization_id = org and c.day >= p.rolled_to and c.day <= p.last_day
       and (statuses is null or c.status = any (statuses))
  ) x;
  return n;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.event_for_link(event_id uuid)
 RETURNS app_public.ledger_events
 LANGUAGE plpgsql
AS $function$
declare e app_public.ledger_events;
begin
  select * into e from app_public.ledger_events x where x.id = event_id for no key update;
  if not found then perform app_private.fail('Ledger event not found.', 'AP404'); end if;
  if e.status = 'ignored' then perform app_private.fail('A receipt cannot be linked to a rejected event.'); end if;
  return e;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.expire_pending_events()
 RETURNS integer
 LANGUAGE plpgsql
AS $function$
declare n integer;
begin
  perform set_config('app.audit_action', 'expire', true);
  update app_public.ledger_events e set status = 'ignored'
   where e.status = 'pending' and e.transaction_date < current_date - app_private.pending_expiry_days();
  get diagnostics n = row_count;
  return n;
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.fail(message text, code text DEFAULT 'AP400'::text)
 RETURNS void
 LANGUAGE plpgsql
AS $function$ begin raise exception using message = message, errcode = code; end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.fail_pending_webhook_deliveries(webhook_endpoint_id uuid)
 RETURNS void
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
  update app_public.webhook_deliveries x
     set status = 'failed', next_attempt_at = null, last_error = coalesce(x.last_error || ' ', '') || 'The endpoint was disabled.'
   where x.webhook_endpoint_id = fail_pending_webhook_deliveries.webhook_endpoint_id and x.status = 'pending'
     and x.organization_id = coalesce(app_public.current_organization_id(), x.organization_id)
$function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.field_confidence(value text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ select case when value in ('high', 'medium', 'low') then value else 'low' end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.field_of(message text, fallback text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ select coalesce(nullif(substring(message from '^(.+?) must '), ''), fallback) $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.finish_source_scan(receipt_source_id uuid, error text, scan_interval interval, more boolean)
 RETURNS void
 LANGUAGE sql
AS $function$
  update app_public.receipt_sources s
     set last_error = left(error, 2000),
         last_scanned_at = now(),
         failures = case when error is null then 0 else s.failures + 1 end,
         next_scan_at = case
           when error is not null then now() + least(interval '1 minute' * power(2, least(s.failures, 20)), interval '6 hours')
           when more then now()
           else now() + scan_interval end
   where s.id = receipt_source_id
$function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.fiscal_year_start(fiscal_year_start text, as_of date)
 RETURNS date
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  select make_date(extract(year from as_of)::integer
                     - (extract(month from as_of) * 100 + extract(day from as_of)
                        < substr(fiscal_year_start, 1, 2)::integer * 100 + substr(fiscal_year_start, 4, 2)::integer)::integer,
                   substr(fiscal_year_start, 1, 2)::integer, substr(fiscal_year_start, 4, 2)::integer)
$function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.forget_worker_pools(pool_ids text[])
 RETURNS void
 LANGUAGE sql
AS $function$ delete from app_private.worker_heartbeats where pool_id = any (pool_ids) $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.greedy_pairs(pairs app_private.row_event_pair[])
 RETURNS TABLE(row_index integer, event_id uuid)
 LANGUAGE plpgsql
 IMMUTABLE
AS $function$
declare
  p app_private.row_event_pair;
  v_rows integer[] := '{}';
  v_events uuid[] := '{}';
begin
  foreach p in array coalesce(pairs, '{}') loop
    if not (p.row_index = any (v_rows)) and not (p.event_id = any (v_events)) then
      v_rows := v_rows || p.row_index;
      v_events := v_events || p.event_id;
    end if;
  end loop;
  return query select * from unnest(v_rows, v_events);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.ignored_while_pending(org uuid, event_id uuid)
 RETURNS boolean
 LANGUAGE sql
 STABLE
AS $function$ select exists (select 1 from app_public.ledger_event_audit a
                   where a.organization_id = org and a.event_id = ignored_while_pending.event_id
                     and a.changes -> 'status' ->> 'old' = 'pending' and a.changes -> 'status' ->> 'new' = 'ignored') $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.import_bank_statement(org uuid, payment_account_id uuid, currency text, rows jsonb, file_name text DEFAULT NULL::text)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  v_currency text;
  v_batch uuid;
  v_imported integer;
  v_settled integer;
  v_total integer;
  v_results jsonb;
begin
  perform app_private.scope_organization(org);
  perform set_config('app.audit_action', 'import', true);
  perform app_private.check_payment_account(payment_account_id);
  select o.functional_currency into v_currency from app_public.organizations o where o.id = org;
  if currency is not null and upper(btrim(currency)) <> v_currency then
    perform app_private.fail(format('currency must be the organization''s currency (%s).', v_currency));
  end if;
  -- Later statements of this function see what a concurrent import committed before the lock
  -- (each statement takes a new snapshot at READ COMMITTED, not at a stricter level).
  if current_setting('transaction_isolation') <> 'read committed' then
    perform app_private.fail('A bank statement import must run at the READ COMMITTED isolation level.');
  end if;
  perform 1 from app_public.accounts a where a.id = payment_account_id for no key update;

  v_batch := app_private.uuid_v7();
  insert into app_public.import_batches (id, organization_id, source, batch_key, payment_account_id, file_name,
      actor_api_key_id, actor_user_id)
    values (v_batch, org, 'bank_import', 'bank:' || v_batch, payment_account_id, file_name,
      app_public.current_api_key_id(), app_public.current_user_id());

  with m as (
    select * from app_private.bank_statement_matches(org, payment_account_id, rows)
  ), fresh as (
    select m.*, app_private.uuid_v7() id from m where not m.is_duplicate and not m.settles_pending
  ), unclassified as (
    -- Pending events settled with another amount lose their classification (it was made for the
    -- old one); with those never classified, the rules are asked for them as for a new event.
    select e.id, e.merchant_name, e.direction, e.event_type, e.contact_id, e.category_id, m.amount, m.transaction_date
      from m join app_public.ledger_events e on e.id = m.matching_event_id
     where m.settles_pending and e.status = 'pending' and (e.functional_amount <> m.amount or e.category_id is null)
  ), ruled as (
    -- The rule for each new or unclassified event (rule_classifications), as createLedgerEvent
    -- applies it.
    select * from app_private.rule_classifications(org, array(
      select row(f.id, f.merchant_name, f.direction, f.amount, payment_account_id, f.event_type, f.transaction_date, null)::app_private.rule_subject
        from fresh f
      union all
      select row(u.id, u.merchant_name, u.direction, u.amount, payment_account_id, u.event_type, u.transaction_date, u.contact_id)::app_private.rule_subject
        from unclassified u))
  ), settled as (
    -- Whether the classification stays is judged on the row as it is now, not as the statement's
    -- snapshot saw it: a person may classify the pending event while the import runs. It stays
    -- when the amount is the posted one, unless it is empty and a rule has one; otherwise the
    -- rule's (none without a rule: a new amount is classified again). A rule's contact replaces
    -- the event's only when it names one.
    update app_public.ledger_events e set status = 'needs_review', transaction_date = m.transaction_date,
        functional_amount = m.amount, reference = coalesce(m.reference, e.reference),
        category_id = case when (e.functional_amount = m.amount and (e.category_id is not null or r.event_id is null)) then e.category_id else r.category_id end,
        splits = case when (e.functional_amount = m.amount and (e.category_id is not null or r.event_id is null)) then e.splits else r.splits end,
        tax_amount = case when (e.functional_amount = m.amount and (e.category_id is not null or r.event_id is null)) then e.tax_amount else r.tax_amount end,
        tax_code = case when (e.functional_amount = m.amount and (e.category_id is not null or r.event_id is null)) then e.tax_code else r.tax_code end,
        tax_account_id = case when (e.functional_amount = m.amount and (e.category_id is not null or r.event_id is null)) then e.tax_account_id else r.tax_account_id end,
        contact_id = case when (e.functional_amount = m.amount and (e.category_id is not null or r.event_id is null)) then e.contact_id else coalesce(r.contact_id, e.contact_id) end
      from m left join ruled r on r.event_id = m.matching_event_id
     where m.settles_pending and e.id = m.matching_event_id and e.status = 'pending'
     returning 1
  ), inserted as (
    insert into app_public.ledger_events (id, organization_id, event_type, direction, merchant_name, functional_amount,
        functional_currency, transaction_date, memo, reference, category_id, payment_account_id, source, import_batch_id,
        splits, tax_amount, tax_code, tax_account_id, contact_id, status)
      select f.id, org, f.event_type, f.direction, f.merchant_name, f.amount, v_currency, f.transaction_date, f.memo,
             f.reference, r.category_id, payment_account_id, 'bank_import', v_batch,
             r.splits, r.tax_amount, r.tax_code, r.tax_account_id, r.contact_id,
             case when f.pending then 'pending' else 'needs_review' end
        from fresh f left join ruled r on r.event_id = f.id order by f.row_index
      returning 1
  ), counted as (
    -- A settled event the same category again is no new match of its rule.
    update app_public.category_rules r set match_count = r.match_count + c.n
      from (select x.rule_id, count(*) n from ruled x left join unclassified u on u.id = x.event_id
             where u.category_id is distinct from x.category_id group by x.rule_id) c
     where r.id = c.rule_id
  )
  select (select count(*) from inserted), (select count(*) from settled), (select count(*) from m),
         (select coalesce(jsonb_agg(app_private.duplicate_check_json(m.row_index, m.is_duplicate, m.is_possible_duplicate,
                  m.matching_event_id, m.settles_pending) order by m.row_index), '[]') from m)
    into v_imported, v_settled, v_total, v_results;
  -- Each settling row settled its event: one changed meanwhile (expired, rejected) fails the import,
  -- which is then made again, rather than leave the row neither imported nor settled.
  if v_settled <> (select count(*) from jsonb_array_elements(v_results) r where (r->>'settlesPendingEvent')::boolean) then
    perform app_private.fail('A pending event changed during the import: import the statement again.');
  end if;

  perform app_private.record_webhook_event(org, 'bank_import.completed', v_batch, jsonb_build_object('batchId', v_batch,
    'paymentAccountId', payment_account_id, 'fileName', file_name, 'importedCount', v_imported,
    'skippedCount', v_total - v_imported - v_settled, 'settledCount', v_settled));
  -- The flags each row was imported or skipped by (the operator's preview shows them).
  return jsonb_build_object('importedCount', v_imported, 'skippedCount', v_total - v_imported - v_settled,
    'settledCount', v_settled, 'batchId', v_batch, 'results', v_results);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.insert_account(org uuid, name text, tax_code_id uuid, account_type text, classification text, sub_type text, last_four text, parent_id uuid)
 RETURNS app_public.accounts
 LANGUAGE plpgsql
AS $function$
declare
  t app_public.tax_codes;
  r app_public.accounts;
  nm text := app_private.clean_text(name);
  st text := coalesce(app_private.clean_text(sub_type), '');
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
  if length(st) > 100 then perform app_private.fail('subType must be at most 100 characters.'); end if;
  insert into app_public.accounts (organization_id, name, account_type, classification, sub_type, last_four, parent_id, tax_code_id)
    values (org, nm, typ, cls, st, four, app_private.resolve_parent(org, insert_account.parent_id, cls), t.id)
    returning * into r;
  return r;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.insert_contact(org uuid, contact_type text, display_name text, email text, phone text)
 RETURNS app_public.contacts
 LANGUAGE plpgsql
AS $function$
declare
  r app_public.contacts;
  typ text := lower(btrim(contact_type));
  nm text := app_private.clean_text(display_name);
begin
  if typ is null or typ not in ('vendor', 'customer') then perform app_private.fail('Contact type must be vendor or customer.'); end if;
  if nm is null or nm = '' then perform app_private.fail('Display name is required.'); end if;
  if length(nm) > 200 then perform app_private.fail('Display name must be at most 200 characters.'); end if;
  insert into app_public.contacts (organization_id, contact_type, display_name, email, phone)
    values (org, typ, nm, app_private.clean_email(email), app_private.clean_phone(phone))
    returning * into r;
  return r;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.intake_address_json(i app_public.intake_addresses)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$ select jsonb_build_object('id', i.id, 'addressType', i.address_type, 'address', i.address, 'label', i.label,
     'active', i.active, 'created', app_private.iso(i.created)) $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.intake_message_key(message_id text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ select nullif(left(btrim(message_id), 998), '') $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.intake_message_seen(organization_id uuid, channel text, message_id text)
 RETURNS boolean
 LANGUAGE sql
 STABLE
AS $function$ select exists (select 1 from app_public.intake_messages m
     where m.organization_id = intake_message_seen.organization_id and m.channel = intake_message_seen.channel
       and m.message_id = app_private.intake_message_key(intake_message_seen.message_id)) $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.intake_organizations(address_type text, addresses text[])
 RETURNS uuid[]
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public'
AS $function$
  select coalesce(array_agg(o.organization_id order by o.first_created), '{}') from (
    select i.organization_id, min(i.created) as first_created from app_public.intake_addresses i
     where i.active and i.address_type = intake_organizations.address_type
       and i.address = any (select case when intake_organizations.address_type = 'sms' then regexp_replace(a, '[^0-9]', '', 'g')
                                        else lower(btrim(a)) end from unnest(addresses) a)
     group by i.organization_id) o
$function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.is_sale(category uuid, event_type text)
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE
AS $function$
declare v_classification text;
begin
  select a.classification into v_classification from app_public.accounts a where a.id = category;
  return coalesce(v_classification = 'revenue', event_type = 'income');
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.iso(ts timestamp with time zone)
 RETURNS text
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$ select to_char(ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE; reporting_reader: EXECUTE

CREATE OR REPLACE FUNCTION app_private.item_text(item jsonb, key text)
 RETURNS text
 LANGUAGE plpgsql
 IMMUTABLE
AS $function$
declare v jsonb;
begin
  if item is null or jsonb_typeof(item) <> 'object' then perform app_private.fail('Each item must be an object.'); end if;
  v := item -> key;
  if v is null or jsonb_typeof(v) = 'null' then return null; end if;
  if jsonb_typeof(v) <> 'string' then perform app_private.fail(format('%s must be a string.', key)); end if;
  return v #>> '{}';
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.item_uuid(item jsonb, key text)
 RETURNS uuid
 LANGUAGE sql
 IMMUTABLE
AS $function$ select app_private.parse_uuid(app_private.item_text(item, key), format('%s must be a UUID.', key)) $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.job_queue(task text, org uuid)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE
AS $function$
  select case
    when org is null then null
    when task = 'extract_receipt' then 'reading:' || org
    when task in ('scan_mailbox', 'scan_cloud_drive', 'import_processor_balance', 'rebuild_daily_totals') then 'long:' || org
    when task = 'match_receipts' then 'matching:' || org
    when task in ('deliver_webhooks', 'deliver_webhook') then 'webhook:' || org
  end
$function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.largest_split_category(splits jsonb)
 RETURNS uuid
 LANGUAGE sql
 IMMUTABLE
AS $function$
  select (s.v->>'category_id')::uuid from jsonb_array_elements(splits) with ordinality s (v, n)
   order by (s.v->>'amount')::numeric desc, s.n limit 1
$function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.ledger_changes_retention()
 RETURNS interval
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ select interval '30 days' $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.ledger_event_json_by_id(event_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
begin
  return (select x.event from app_private.ledger_events_json(array[ledger_event_json_by_id.event_id]) x);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.ledger_events_json(event_ids uuid[])
 RETURNS TABLE(id uuid, event jsonb)
 LANGUAGE plpgsql
 STABLE
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
begin
  return query select e.id, jsonb_build_object(
    'id', e.id, 'eventType', e.event_type, 'direction', e.direction, 'merchantName', e.merchant_name,
    'functionalAmount', app_private.money(e.functional_amount), 'functionalCurrency', e.functional_currency,
    'transactionDate', to_char(e.transaction_date, 'YYYY-MM-DD'), 'status', e.status, 'memo', e.memo,
    'hasDocument', e.has_document,
    'account', case when c.id is null then null else jsonb_build_object('id', c.id, 'name', c.name, 'accountType', c.account_type) end,
    'category', case when c.id is null then null else jsonb_build_object('id', c.id, 'name', c.name) end,
    'paymentAccount', case when p.id is null then null else jsonb_build_object('id', p.id, 'name', p.name) end,
    'taxAmount', app_private.money(e.tax_amount), 'taxCode', e.tax_code,
    'taxAccount', case when t.id is null then null else jsonb_build_object('id', t.id, 'name', t.name) end,
    'splits', case when e.splits is null then '[]'::jsonb else app_private.splits_json(e.splits) end,
    'contact', case when k.id is null then null else jsonb_build_object('id', k.id, 'displayName', k.display_name) end,
    'journalEntry', case when j.id is null then null else jsonb_build_object('id', j.id,
        'txnDate', to_char(j.txn_date, 'YYYY-MM-DD'), 'totalAmount', app_private.money(j.total_amount),
        'voidedAt', app_private.iso(j.voided_at)) end,
    'reversalEntry', case when v.id is null then null else jsonb_build_object('id', v.id,
        'txnDate', to_char(v.txn_date, 'YYYY-MM-DD'), 'totalAmount', app_private.money(v.total_amount),
        'voidedAt', app_private.iso(v.voided_at)) end,
    'cleared', cl.event_id is not null,
    'suggestedCategory', case when e.status = 'needs_review' and e.category_id is null
      then app_private.suggested_category(e.organization_id, e.merchant_name, e.event_type) end,
    'externalRefs', case when e.status in ('synced', 'reconciled') then coalesce(x.refs, '[]'::jsonb) else '[]'::jsonb end,
    -- Receipts linked to it, oldest first (contract: receipts {id, filename, objectKey, uploadedAt}).
    'receipts', coalesce(r.receipts, '[]'::jsonb),
    'source', e.source, 'importBatchId', e.import_batch_id, 'reference', e.reference,
    'created', app_private.iso(e.created), 'updated', app_private.iso(e.updated))
    from app_public.ledger_events e
    left join app_public.accounts c on c.id = e.category_id
    left join app_public.accounts p on p.id = e.payment_account_id
    left join app_public.accounts t on t.id = e.tax_account_id
    left join app_public.journal_entries j on j.id = e.journal_entry_id
    left join app_public.journal_entries v on v.id = e.reversal_entry_id
    left join app_public.contacts k on k.id = e.contact_id
    left join (select distinct q.event_id from app_public.reconciliation_clearings q where q.event_id = any (event_ids)) cl
      on cl.event_id = e.id
    left join (select q.event_id, jsonb_agg(jsonb_build_object('externalSystem', q.external_system, 'externalId', q.external_id,
                      'syncedAt', app_private.iso(q.synced_at)) order by q.external_system) refs
                 from app_public.ledger_event_external_refs q where q.event_id = any (event_ids) group by q.event_id) x
      on x.event_id = e.id
    left join (select q.event_id, jsonb_agg(jsonb_build_object('id', q.id, 'filename', q.filename, 'objectKey', q.object_key,
                      'uploadedAt', app_private.iso(q.uploaded_at), 'contentType', q.content_type, 'status', q.status)
                      order by q.uploaded_at, q.id) receipts
                 from app_public.receipts q where q.event_id = any (event_ids) group by q.event_id) r
      on r.event_id = e.id
   where e.id = any (event_ids);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.like_pattern(search text)
 RETURNS text
 LANGUAGE plpgsql
 IMMUTABLE PARALLEL SAFE
AS $function$
declare b constant text := chr(92);
begin
  if length(search) > 200 then perform app_private.fail('search must be at most 200 characters.'); end if;
  return '%' || replace(replace(replace(normalize(search, NFC), b, b || b), '%', b || '%'), '_', b || '_') || '%';
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.link_receipt(r app_public.receipts, e app_public.ledger_events)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
begin
  if r.status = 'rejected' then perform app_private.fail('A rejected receipt cannot be linked.'); end if;
  update app_public.receipts x set event_id = e.id, linked_by = 'person', linked_at = now(), status = 'reviewed',
         match_status = 'matched', receipt_date = coalesce(app_private.reading_nearest(x.date_readings, e.transaction_date), x.receipt_date)
   where x.id = r.id;
  -- Linked anew: a person confirming matching's link to the same event is no new match.
  if r.event_id is distinct from e.id then
    perform app_private.record_webhook_event(r.organization_id, 'receipt.matched', r.id);
  end if;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.list_documents(org uuid, kind text, status jsonb, contact_id uuid, due_before text, search text, "limit" integer, "offset" integer)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
declare
  statuses constant text[] := array['draft', 'open', 'partially_paid', 'paid', 'void'];
  v_limit integer;
  v_offset integer;
  v_status text[];
  v_due date;
  v_pattern text;
  v_where text := '';
  v_from text := 'app_public.documents d';
  v_total bigint;
  v_items jsonb;
begin
  perform app_private.assert_org_access(org, false);
  v_limit := app_private.page_size("limit");
  v_offset := app_private.page_offset("offset");
  if status is not null then
    if jsonb_typeof(status) <> 'array' then perform app_private.fail(format('status must be any of: %s.', array_to_string(statuses, ', '))); end if;
    select coalesce(array_agg(s), '{}') into v_status from jsonb_array_elements_text(status) s;
    if not (v_status <@ statuses) then perform app_private.fail(format('status must be any of: %s.', array_to_string(statuses, ', '))); end if;
    v_where := v_where || ' and d.status = any ($3)';
  end if;
  if contact_id is not null then v_where := v_where || ' and d.contact_id = $4'; end if;
  if due_before is not null then
    v_due := app_private.parse_date(due_before, 'dueBefore must be a date in YYYY-MM-DD format.');
    v_where := v_where || ' and d.due_date < $5';
  end if;
  if search is not null and search <> '' then
    v_pattern := app_private.like_pattern(search);
    -- Two index searches (numbers and contact names by trigram), their ids joined: an OR of the two
    -- would read every document.
    v_from := v_from || ' join app_private.documents_matching($2, $6) m (id) on m.id = d.id';
  end if;
  execute 'select count(*) from ' || v_from || ' where d.organization_id = $1 and d.kind = $2' || v_where
    into v_total using org, kind, v_status, contact_id, v_due, v_pattern;
  execute 'select coalesce(jsonb_agg(app_private.document_json(p) order by p.issue_date desc, p.id desc), ''[]''::jsonb)
      from (select d.* from ' || v_from || ' where d.organization_id = $1 and d.kind = $2' || v_where || '
             order by d.issue_date desc, d.id desc limit $7 offset $8) p'
    into v_items using org, kind, v_status, contact_id, v_due, v_pattern, v_limit, v_offset;
  return jsonb_build_object('items', v_items, 'totalCount', v_total, 'pageSize', v_limit, 'offset', v_offset);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.list_job_results(task text DEFAULT NULL::text, job_id text DEFAULT NULL::text, lim integer DEFAULT 50)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$
  select coalesce(jsonb_agg(r order by r.id desc), '[]') from (
    select x.id, x.job_name as task, x.job_id as "jobId", x.attempt, x.organization_id as "organizationId",
           (select o.name from app_public.organizations o where o.id = x.organization_id) as organization,
           x.status, x.result, x.error, x.started_at as "startedAt", x.finished_at as "finishedAt"
      from app_private.job_results x
     where (list_job_results.task is null or x.job_name = list_job_results.task)
       and (list_job_results.job_id is null or x.job_id = list_job_results.job_id)
     order by x.id desc
     limit greatest(1, least(coalesce(lim, 50), 1000))) r
$function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.list_operator_jobs(failed_only boolean DEFAULT false, lim integer DEFAULT 50)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
declare v_jobs jsonb;
begin
  select coalesce(jsonb_agg(j order by j."createdAt" desc, j.id::bigint desc), '[]') into v_jobs from (
    -- The private table, not the jobs view: the view has no payload (graphile-worker 0.18).
    select x.id::text as id, t.identifier as task, x.payload->>'organizationId' as "organizationId",
           (select o.name from app_public.organizations o
             where x.payload->>'organizationId' ~ '^[0-9a-f-]{36}$' and o.id = (x.payload->>'organizationId')::uuid) as organization,
           case when x.locked_at is not null then 'running'
                when x.attempts >= x.max_attempts then 'failed'
                when x.last_error is not null then 'retrying'
                else 'waiting' end as state,
           x.attempts, x.max_attempts as "maxAttempts", x.last_error as "lastError", x.run_at as "runAt", x.created_at as "createdAt"
      from graphile_worker._private_jobs x join graphile_worker._private_tasks t on t.id = x.task_id
     where not failed_only or x.last_error is not null
     order by x.created_at desc, x.id desc
     limit greatest(1, least(coalesce(lim, 50), 1000))) j;
  return v_jobs;
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.list_receipt_sources(organization_id uuid, kind text)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
begin
  perform app_private.assert_org_access(organization_id, true);
  return coalesce((select jsonb_agg(app_private.receipt_source_json(s.id, s.settings, s.status, s.last_error, s.last_scanned_at, s.created)
                                    order by s.created, s.id)
    from app_public.receipt_sources s
   where s.organization_id = list_receipt_sources.organization_id and s.kind = list_receipt_sources.kind), '[]'::jsonb);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.list_source_scans(organization_id uuid, "limit" integer DEFAULT 50)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$
  select coalesce(jsonb_agg(x.scan order by x.started_at desc, x.id desc), '[]'::jsonb) from (
    select r.id, r.started_at, jsonb_build_object(
             'scanId', r.job_id, 'attempt', r.attempt, 'kind', case r.job_name when 'scan_mailbox' then 'mailbox' else 'cloud_drive' end,
             'receiptSourceId', r.payload->>'receiptSourceId',
             'source', case s.kind
               when 'mailbox' then (s.settings->>'username') || '@' || (s.settings->>'host') || '/' || (s.settings->>'folder')
               when 'cloud_drive' then (s.settings->>'bucket') || '/' || (s.settings->>'prefix') end,
             'status', r.status,
             'scanned', (r.result->>'scanned')::integer, 'created', (r.result->>'created')::integer,
             'duplicates', (r.result->>'duplicates')::integer, 'refused', (r.result->>'refused')::integer,
             'skipped', (r.result->>'skipped')::integer, 'failed', (r.result->>'failed')::integer, 'error', r.error,
             'startedAt', app_private.iso(r.started_at), 'finishedAt', app_private.iso(r.finished_at)) as scan
      from app_private.job_results r
      left join app_public.receipt_sources s on s.id::text = r.payload->>'receiptSourceId'
     where r.organization_id = list_source_scans.organization_id and r.job_name in ('scan_mailbox', 'scan_cloud_drive')
     order by r.started_at desc, r.id desc
     limit greatest(1, least(coalesce("limit", 50), 1000))) x
$function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.lock_allocated_documents(allocations jsonb)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
begin
  -- PERFORM reads every row (a SQL function would stop at the first, locking only it).
  perform 1 from app_public.documents d
   where d.id in (select app_private.parse_uuid(x->>'documentId', 'Each allocation needs a documentId.')
                    from jsonb_array_elements(case when jsonb_typeof(allocations) = 'array' then allocations end) x)
   order by d.id for update;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.lock_reconciliation(reconciliation_id uuid)
 RETURNS app_public.reconciliations
 LANGUAGE plpgsql
AS $function$
declare r app_public.reconciliations;
begin
  select * into r from app_public.reconciliations x where x.id = reconciliation_id for update;
  if not found then perform app_private.fail('Reconciliation not found.', 'AP404'); end if;
  return r;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.mailbox_settings(organization_id uuid, host text, port integer, secure boolean, username text, folder text)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
declare
  v_host text := rtrim(lower(app_private.clean_text(host)), '.');
  v_secure boolean := coalesce(secure, true);
  v_port integer := coalesce(port, case when coalesce(secure, true) then 993 else 143 end);
  v_username text := app_private.clean_text(username);
  v_folder text := coalesce(nullif(app_private.clean_text(folder), ''), 'INBOX');
begin
  perform app_private.assert_org_access(organization_id, true);
  if v_host is null or v_host = '' then perform app_private.fail('Host is required.'); end if;
  if length(v_host) > 253 or v_host !~ '^([a-z0-9]([a-z0-9-]*[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]*[a-z0-9])?$|^\[?[0-9a-f:.]+\]?$' then
    perform app_private.fail('Host must be a host name or an IP address.');
  end if;
  if v_port not between 1 and 65535 then perform app_private.fail('Port must be between 1 and 65535.'); end if;
  if v_username is null or v_username = '' then perform app_private.fail('Username is required.'); end if;
  if length(v_username) > 320 or v_username ~ '[[:cntrl:]]' then
    perform app_private.fail('Username must be at most 320 characters, without control characters.');
  end if;
  if length(v_folder) > 255 or v_folder ~ '[[:cntrl:]]' then
    perform app_private.fail('Folder must be at most 255 characters, without control characters.');
  end if;
  return jsonb_build_object('host', v_host, 'port', v_port, 'secure', v_secure, 'username', v_username, 'folder', v_folder);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.match_receipts(org uuid, receipt_ids uuid[] DEFAULT NULL::uuid[], amounts numeric[] DEFAULT NULL::numeric[])
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
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
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.max_amount()
 RETURNS numeric
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ select 999999999.99::numeric $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.max_date()
 RETURNS date
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ select date '2199-12-31' $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.max_statement_rows()
 RETURNS integer
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ select 5000 $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.membership_json(m app_public.memberships, u app_public.users)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$ select jsonb_build_object('userId', u.id, 'email', u.email, 'name', coalesce(u.name, ''),
     'role', m.role, 'created', app_private.iso(m.created)) $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.merchant_family(merchant_name text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ select regexp_replace(regexp_replace(lower(normalize(merchant_name, NFC)),
     '(#|\m(store|no|nr|unit|loc|location)\M\.?)\s*[0-9]+', ' ', 'g'), '[^[:alpha:]]+', '', 'g') $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.merchant_key(merchant_name text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ select btrim(lower(regexp_replace(normalize(merchant_name, NFC), '[[:space:]' || chr(160) || ']+', ' ', 'g'))) $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.min_date()
 RETURNS date
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ select date '1900-01-01' $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.money(amount numeric)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ select amount::numeric(20,2)::text $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.monthly_totals_key(org uuid)
 RETURNS bigint
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ select hashtextextended('accounting-api:monthly-totals:' || org::text, 0) $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.new_api_key_secret()
 RETURNS text
 LANGUAGE plpgsql
AS $function$
declare
  alphabet constant text := '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  out text := '';
  b integer;
  bytes bytea;
begin
  while length(out) < 40 loop
    bytes := public.gen_random_bytes(64);
    for i in 0 .. 63 loop
      b := get_byte(bytes, i);
      if b < 248 and length(out) < 40 then out := out || substr(alphabet, b % 62 + 1, 1); end if;
    end loop;
  end loop;
  return 'acct_' || out;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.operator_job_tasks()
 RETURNS text[]
 LANGUAGE sql
 IMMUTABLE
AS $function$ select array['import_processor_balance', 'match_receipts', 'reextract_receipts', 'rebuild_daily_totals'] $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.organization_by_name(name text)
 RETURNS app_public.organizations
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public'
AS $function$
declare o app_public.organizations;
begin
  select * into o from app_public.organizations x where lower(x.name) = lower(app_private.clean_text(organization_by_name.name));
  if not found then perform app_private.fail(format('No organization named "%s".', btrim(organization_by_name.name)), 'AP404'); end if;
  return o;
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.organization_settings_json(o app_public.organizations)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$ select jsonb_build_object('id', o.id, 'name', o.name, 'functionalCurrency', o.functional_currency, 'dateOrder', o.date_order,
     'lockDate', to_char(o.lock_date, 'YYYY-MM-DD'), 'fiscalYearStart', o.fiscal_year_start) $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.page_offset(off integer)
 RETURNS integer
 LANGUAGE plpgsql
 IMMUTABLE
AS $function$
begin
  if coalesce(off, 0) < 0 then perform app_private.fail('offset must not be negative.', 'AP400'); end if;
  return coalesce(off, 0);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.page_size(lim integer)
 RETURNS integer
 LANGUAGE plpgsql
 IMMUTABLE
AS $function$
begin
  if lim is null then return 25; end if;
  if lim < 1 then perform app_private.fail('limit must be at least 1.', 'AP400'); end if;
  return least(lim, 200);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.paid_status(amount_paid numeric, total numeric)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ select case when amount_paid = 0 then 'open' when amount_paid < total then 'partially_paid' else 'paid' end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.parse_amount(amount text, message text, allow_zero boolean DEFAULT false)
 RETURNS numeric
 LANGUAGE plpgsql
 IMMUTABLE
AS $function$
declare
  s text := btrim(amount);
  whole text;
  v numeric;
begin
  if s is null or s !~ '^[0-9]+(\.[0-9]{1,2})?$' then perform app_private.fail(message); end if;
  -- Leading zeros are dropped before converting, and a number with more whole digits than the
  -- maximum is refused unconverted (a 100,000-digit string never reaches numeric).
  whole := ltrim(split_part(s, '.', 1), '0');
  if length(whole) > length(trunc(app_private.max_amount())::text) then
    perform app_private.fail(format('%s must be at most %s.', app_private.field_of(message, 'Amount'),
      to_char(app_private.max_amount(), 'FM999,999,999,999,990.00')));
  end if;
  v := (coalesce(nullif(whole, ''), '0') || coalesce('.' || nullif(split_part(s, '.', 2), ''), ''))::numeric;
  if v > app_private.max_amount() then
    perform app_private.fail(format('%s must be at most %s.', app_private.field_of(message, 'Amount'),
      to_char(app_private.max_amount(), 'FM999,999,999,999,990.00')));
  end if;
  if v = 0 and not allow_zero then perform app_private.fail(message); end if;
  return v;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.parse_balance(balance text, message text)
 RETURNS numeric
 LANGUAGE plpgsql
 IMMUTABLE
AS $function$
declare s text := btrim(balance);
begin
  if s like '-%' then return -app_private.parse_amount(substr(s, 2), message, true); end if;
  return app_private.parse_amount(s, message, true);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.parse_date(day text, message text)
 RETURNS date
 LANGUAGE plpgsql
 IMMUTABLE
AS $function$
declare
  y integer;
  m integer;
  d integer;
begin
  if day is null or day !~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' then perform app_private.fail(message); end if;
  -- Checked field by field rather than by catching the cast's error: an exception block is a
  -- subtransaction, and a 5,000-row statement parses 5,000 dates.
  y := substr(day, 1, 4)::integer;
  m := substr(day, 6, 2)::integer;
  d := substr(day, 9, 2)::integer;
  if y < 1 or m not between 1 and 12 or d < 1
     or d > extract(day from make_date(y, m, 1) + interval '1 month' - interval '1 day') then
    perform app_private.fail(message);
  end if;
  if make_date(y, m, d) < app_private.min_date() or make_date(y, m, d) > app_private.max_date() then
    perform app_private.fail(format('%s must be between %s and %s.', app_private.field_of(message, 'Date'),
      to_char(app_private.min_date(), 'YYYY-MM-DD'), to_char(app_private.max_date(), 'YYYY-MM-DD')));
  end if;
  return make_date(y, m, d);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.parse_decimal(value text, places integer, positive boolean, message text)
 RETURNS numeric
 LANGUAGE plpgsql
 IMMUTABLE
AS $function$
declare v numeric;
begin
  if value is null or btrim(value) !~ ('^[0-9]{1,12}(\.[0-9]{1,' || places || '})?$') then perform app_private.fail(message); end if;
  v := btrim(value)::numeric;
  if positive and v = 0 then perform app_private.fail(message); end if;
  return v;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.parse_uuid(id text, message text)
 RETURNS uuid
 LANGUAGE plpgsql
 IMMUTABLE
AS $function$
begin
  if id is null then return null; end if;
  if id !~ '^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$' then
    perform app_private.fail(message);
  end if;
  return id::uuid;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.payment_account_by_name(org uuid, name text)
 RETURNS uuid
 LANGUAGE plpgsql
 STABLE
AS $function$
declare v_id uuid;
begin
  select a.id into v_id from app_public.accounts a
   where a.organization_id = org and lower(a.name) = lower(app_private.clean_text(payment_account_by_name.name))
     and a.active and a.account_type in ('bank', 'credit_card', 'clearing')
   order by a.created, a.id limit 1;
  if v_id is null then
    perform app_private.fail(format('No active bank, credit card or clearing account named "%s".', btrim(payment_account_by_name.name)), 'AP404');
  end if;
  return v_id;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.payment_result(event_id uuid)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$
  select jsonb_build_object('success', true, 'error', null, 'eventId', e.id, 'journalEntryId', e.journal_entry_id,
    'documents', coalesce((select jsonb_agg(app_private.document_json(d) order by d.number, d.id)
      from app_public.payment_allocations p join app_public.documents d on d.id = p.document_id where p.event_id = e.id), '[]'::jsonb))
    from app_public.ledger_events e where e.id = payment_result.event_id
$function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.pending_expiry_days()
 RETURNS integer
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ select 14 $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.pending_settle_days()
 RETURNS integer
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ select 5 $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.pending_settlements(org uuid, payment_account uuid)
 RETURNS TABLE(row_index integer, event_id uuid)
 LANGUAGE plpgsql
AS $function$
declare
  v_from date;
  v_to date;
begin
  select min(s.transaction_date) - app_private.pending_settle_days(), max(s.transaction_date) + app_private.pending_settle_days()
    into v_from, v_to from pg_temp.statement_rows s where not s.pending and s.event_id is null;
  if v_from is null then return; end if;
  return query select * from app_private.greedy_pairs((
    select array_agg(row(p.row_index, p.event_id)::app_private.row_event_pair
                     order by p.same_reference desc, p.days, p.row_index, p.created, p.event_id)
      from (
        select s.row_index, e.id event_id, true same_reference, abs(s.transaction_date - e.transaction_date) days, e.created
          from pg_temp.statement_rows s
          join app_public.ledger_events e
            on e.organization_id = org and e.payment_account_id = payment_account and e.status = 'pending'
           and e.reference = s.reference and e.direction = s.direction
         where not s.pending and s.event_id is null and s.reference is not null
        union
        select s.row_index, e.id, coalesce(e.reference = s.reference, false), abs(s.transaction_date - e.transaction_date), e.created
          from pg_temp.statement_rows s
          join app_public.ledger_events e
            on e.organization_id = org and e.payment_account_id = payment_account and e.status = 'pending'
           and e.transaction_date between v_from and v_to
           and e.direction = s.direction and e.functional_amount = s.amount
           and app_private.merchant_key(e.merchant_name) = s.merchant_key
           and abs(s.transaction_date - e.transaction_date) <= app_private.pending_settle_days()
         where not s.pending and s.event_id is null
      ) p
     where not exists (select 1 from pg_temp.statement_rows t where t.event_id = p.event_id)));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.period_totals(org uuid, period daterange)
 RETURNS TABLE(account_id uuid, account_name text, classification text, total numeric)
 LANGUAGE sql
 STABLE
AS $function$
  select a.id, a.name, a.classification,
         case when a.classification = 'revenue' then t.credit - t.debit else t.debit - t.credit end
    from app_private.account_totals(org, lower(period), upper(period) - 1) t
    join app_public.accounts a on a.id = t.account_id
   where a.classification in ('revenue', 'expense') and (t.debit <> 0 or t.credit <> 0) and not isempty(period)
$function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.post_journal_entries(event_ids uuid[], posting_date date DEFAULT NULL::date)
 RETURNS TABLE(event_id uuid, entry_id uuid)
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
begin
  update app_public.ledger_events x set status = 'confirmed', journal_entry_id = app_private.uuid_v7()
   where x.id = any (event_ids) and x.journal_entry_id is null;
  return query
  with entries as (
    insert into app_public.journal_entries (id, organization_id, event_id, txn_date, total_amount)
      select e.journal_entry_id, e.organization_id, e.id, coalesce(posting_date, e.transaction_date), e.functional_amount
        from app_public.ledger_events e where e.id = any (event_ids) order by e.journal_entry_id
      returning journal_entries.event_id, journal_entries.id, journal_entries.txn_date
  ),
  posted as materialized (
    select n.id as entry, n.txn_date, e.organization_id, e.event_type, e.transaction_date, e.category_id,
           e.payment_account_id, e.functional_amount, e.tax_amount, e.tax_code, e.tax_account_id, e.splits,
           e.direction = 'out' as out
      from entries n join app_public.ledger_events e on e.id = n.event_id
  ),
  -- Each part of an amount that has tax: the event (unsplit) or each of its splits.
  taxed as (
    select p.entry, p.txn_date, p.organization_id, p.out, p.tax_account_id, p.transaction_date,
           p.functional_amount as amount, p.tax_amount as tax, p.tax_code as code, app_private.is_sale(p.category_id, p.event_type) as sale
      from posted p where p.splits is null and p.tax_amount > 0
    union all
    select p.entry, p.txn_date, p.organization_id, p.out, p.tax_account_id, p.transaction_date,
           s.amount, s.tax_amount, s.tax_code, app_private.is_sale(s.category_id, p.event_type)
      from posted p cross join lateral jsonb_to_recordset(p.splits) s (category_id uuid, amount numeric, tax_code text, tax_amount numeric)
     where p.splits is not null and s.tax_amount > 0
  ),
  lines as (
    -- out: debit category (+ tax), credit payment; in: debit payment, credit category (+ tax).
    insert into app_public.journal_lines (organization_id, entry_id, account_id, txn_date, debit, credit, tax_type, tax_on_sale)
      select l.organization_id, l.entry, l.account_id, l.txn_date,
             case when l.debit_side then l.amount else 0 end, case when l.debit_side then 0 else l.amount end,
             l.tax_type, l.tax_on_sale
        from (
          select p.entry, p.txn_date, p.organization_id, c.account_id, c.amount, c.debit_side, null::text as tax_type, null::boolean as tax_on_sale
            from posted p
            cross join lateral (values
              (p.category_id, p.functional_amount - coalesce(p.tax_amount, 0), p.out, p.splits is null),
              (p.payment_account_id, p.functional_amount, not p.out, true)) c (account_id, amount, debit_side, kept)
           where c.kept
          union all
          select p.entry, p.txn_date, p.organization_id, s.category_id, sum(s.amount - s.tax_amount), p.out, null, null
            from posted p cross join lateral jsonb_to_recordset(p.splits) s (category_id uuid, amount numeric, tax_amount numeric)
           where p.splits is not null
           group by p.entry, p.txn_date, p.organization_id, s.category_id, p.out
          union all
          select t.entry, t.txn_date, t.organization_id, app_private.tax_leg_account(t.organization_id, g.tax_type, t.tax_account_id),
                 sum(g.portion), t.out, g.tax_type, t.sale
            from taxed t cross join lateral app_private.tax_legs(t.amount, t.tax, t.code, t.sale, t.transaction_date) g
           group by 1, 2, 3, 4, 6, 7, 8
        ) l
       where l.amount > 0
       order by l.entry, l.account_id
  )
  select n.event_id, n.id from entries n;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.processor_event_type(kind text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  select case kind when 'charge' then 'income' when 'refund' then 'refund' when 'transfer' then 'expense'
    when 'processor_fee' then 'expense' when 'payout' then 'transfer' when 'fee' then 'expense' end
$function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.processor_import_account(org uuid, role text)
 RETURNS uuid
 LANGUAGE plpgsql
AS $function$
declare
  spec record;
  a app_public.accounts;
begin
  select * into spec from (values
      ('clearing', 'Processor Clearing', 'clearing', 'asset', '1007'),
      ('sales', 'Sales Revenue', 'income', 'revenue', '8000'),
      ('fees', 'Bank Fees & Charges', 'expense', 'expense', '8715'),
      ('cogs', 'Cost of Goods Sold', 'cost_of_goods_sold', 'expense', '8320'),
      ('chequing', 'Chequing', 'bank', 'asset', '1002')
    ) v (role, name, account_type, classification, code)
   where v.role = processor_import_account.role;
  if not found then perform app_private.fail(format('Unknown account role %s.', role)); end if;
  if role = 'clearing' then
    select * into a from app_public.accounts x
     where x.organization_id = org and x.account_type = 'clearing' and x.active
     order by lower(x.name) = lower(spec.name) desc, x.created, x.id limit 1;
    if found then return a.id; end if;
  end if;
  -- Two imports at once create it once (the name is unique per organization).
  insert into app_public.accounts (organization_id, name, account_type, classification, tax_code_id)
    select org, spec.name, spec.account_type, spec.classification, t.id
      from app_public.tax_codes t where t.code = spec.code
    on conflict (organization_id, lower(name)) do nothing;
  select * into a from app_public.accounts x where x.organization_id = org and lower(x.name) = lower(spec.name);
  if not found then perform app_private.fail(format('Account "%s" could not be created.', spec.name)); end if;
  if not a.active then
    perform app_private.fail(format('Account "%s" is inactive; reactivate it before importing.', a.name));
  end if;
  if a.classification <> spec.classification or (role in ('clearing', 'chequing') and a.account_type <> spec.account_type) then
    perform app_private.fail(format('Account "%s" must be a%s %s account for processor imports.', a.name,
      case when role in ('clearing', 'chequing') then '' else 'n' end,
      case when role in ('clearing', 'chequing') then spec.account_type else spec.classification end));
  end if;
  return a.id;
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.processor_import_begin(org uuid)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
begin
  perform set_config('app.organization_id', org::text, true);
  if not exists (select 1 from app_public.organizations o where o.id = org) then
    perform app_private.fail('Organization not found.', 'AP404');
  end if;
  if to_regclass('pg_temp.processor_import_rows') is not null then drop table pg_temp.processor_import_rows; end if;
  create temp table processor_import_rows (
    line integer not null,
    id text not null,
    row_type text not null,
    amount numeric(20,2) not null,
    fee numeric(20,2) not null,
    created date not null,
    description text not null,
    source_ref text not null,
    currency text not null
  ) on commit drop;
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.processor_import_post(org uuid, layout text, file_name text, review boolean DEFAULT false)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  cur text;
  v_ts timestamptz := clock_timestamp();
  v_key text;
  v_batch uuid;
  n_rows integer; n_app integer; n_unsupported integer; n_zero integer; n_eligible integer;
  v_unsupported jsonb;
  v_ids uuid[];
  n_created integer; n_rows_created integer;
  has_kind text[];
  a_clearing uuid; a_sales uuid; a_fees uuid; a_cogs uuid; a_chequing uuid;
begin
  perform set_config('app.organization_id', org::text, true);
  perform set_config('app.audit_action', 'import', true);
  -- Sorts of 100,000s of rows in memory; no JIT compilation (it costs more than it saves here).
  perform set_config('work_mem', '64MB', true);
  perform set_config('jit', 'off', true);
  if layout not in ('A', 'B') then perform app_private.fail('Layout must be A or B.'); end if;
  select o.functional_currency into cur from app_public.organizations o where o.id = org;
  if not found then perform app_private.fail('Organization not found.', 'AP404'); end if;
  -- Every row in the organization's currency: amounts are booked as they stand, never converted.
  perform app_private.fail(format('Line %s, column %s: "%s" is not the organization''s currency (%s).',
      r.line, case layout when 'A' then 'Currency' else 'currency' end, r.currency, cur))
    from (select x.line, x.currency from pg_temp.processor_import_rows x
           where upper(x.currency) <> cur order by x.line limit 1) r;

  -- What the file holds, in one pass.
  select count(*),
         count(*) filter (where k.kind = 'application_fee'),
         count(*) filter (where k.kind = 'unsupported'),
         count(*) filter (where k.kind not in ('application_fee', 'unsupported') and r.amount = 0 and r.fee = 0),
         count(*) filter (where k.kind not in ('application_fee', 'unsupported') and (r.amount <> 0 or r.fee <> 0)),
         coalesce(jsonb_agg(jsonb_build_object('line', r.line, 'id', r.id, 'type', r.row_type) order by r.line)
                    filter (where k.kind = 'unsupported'), '[]'::jsonb),
         array_agg(distinct k.kind)
    into n_rows, n_app, n_unsupported, n_zero, n_eligible, v_unsupported, has_kind
    from pg_temp.processor_import_rows r
    cross join lateral (select app_private.processor_row_kind(layout, r.row_type) as kind) k;

  -- The accounts the rows need, found or created.
  if n_eligible > 0 then
    a_clearing := app_private.processor_import_account(org, 'clearing');
    a_fees := app_private.processor_import_account(org, 'fees');
    if has_kind && array['charge', 'refund'] then a_sales := app_private.processor_import_account(org, 'sales'); end if;
    if has_kind && array['transfer'] then a_cogs := app_private.processor_import_account(org, 'cogs'); end if;
    if has_kind && array['payout'] then a_chequing := app_private.processor_import_account(org, 'chequing'); end if;
  end if;

  -- One batch per run, `processor:<UTC timestamp>`; runs in the same millisecond take the next one.
  loop
    v_key := 'processor:' || to_char(v_ts at time zone 'UTC', 'YYYYMMDD"T"HH24MISSMS"Z"');
    insert into app_public.import_batches (organization_id, source, batch_key, payment_account_id, file_name)
      values (org, 'processor_import', v_key, a_clearing, left(file_name, 500))
      on conflict (organization_id, batch_key) do nothing
      returning id into v_batch;
    exit when v_batch is not null;
    v_ts := v_ts + interval '1 millisecond';
  end loop;

  with rows as (
    -- The first line of each id; a repeated id in the same file is a duplicate.
    select distinct on (r.id) r.*, app_private.processor_row_kind(layout, r.row_type) as kind
      from pg_temp.processor_import_rows r
     order by r.id, r.line
  ),
  candidates as (
    select r.id as row_id, r.line, r.id as source_id, r.kind, r.amount as signed, r.row_type, r.description, r.source_ref, r.created
      from rows r where r.kind not in ('application_fee', 'unsupported') and r.amount <> 0
    union all
    -- A fee is an expense (direction out); a negative fee is a fee given back (direction in).
    select r.id, r.line, r.id || ':fee', 'fee', -r.fee, r.row_type, r.description, r.source_ref, r.created
      from rows r where r.kind not in ('application_fee', 'unsupported') and r.fee <> 0
  ),
  inserted as (
    insert into app_public.ledger_events (organization_id, event_type, direction, merchant_name, functional_amount,
        functional_currency, transaction_date, memo, category_id, payment_account_id, status,
        source, source_id, import_batch_id, backfill_id, journal_entry_id)
      select org, app_private.processor_event_type(c.kind), case when c.signed > 0 then 'in' else 'out' end,
             left(coalesce(case when c.kind <> 'fee' then nullif(app_private.clean_text(c.description), '') end,
                           case c.kind when 'charge' then 'Processor charge' when 'refund' then 'Processor refund'
                             when 'transfer' then 'Processor transfer' when 'payout' then 'Processor payout'
                             else 'Processor fee' end), 500),
             abs(c.signed), cur, c.created,
             left(case when c.kind = 'fee' then format('Processor fee on %s %s', c.row_type, c.row_id)
                       else format('Processor %s %s', c.row_type, c.row_id) end
                  || case when c.source_ref <> '' then format(' (%s)', c.source_ref) else '' end, 5000),
             case c.kind when 'charge' then a_sales when 'refund' then a_sales when 'transfer' then a_cogs
                         when 'payout' then a_chequing else a_fees end,
             a_clearing, case when review then 'needs_review' else 'confirmed' end,
             'processor_import', c.source_id, v_batch, v_key || ':' || c.source_id,
             -- Confirmed as they are written, with the id of the entry posted below: no update of
             -- every event afterwards (post_journal_entries takes such events).
             case when not review then app_private.uuid_v7() end
        from candidates c
       -- One global order: imports running at once wait for each other instead of deadlocking.
       order by c.source_id
      on conflict (organization_id, source, source_id) where source_id is not null do nothing
      returning id, source_id
  )
  select (select array_agg(i.id) from inserted i),
         (select count(*) from inserted),
         (select count(distinct c.row_id) from candidates c join inserted i on i.source_id = c.source_id)
    into v_ids, n_created, n_rows_created;

  if not review and n_created > 0 then
    perform app_private.post_journal_entries(v_ids);
  end if;

  perform app_private.record_webhook_event(org, 'processor_import.completed', null, jsonb_build_object(
    'batchId', v_key, 'layout', layout, 'fileName', file_name, 'rows', n_rows, 'created', n_created,
    'status', case when review then 'needs_review' else 'confirmed' end));
  return jsonb_build_object(
    'batchId', v_key,
    'layout', layout,
    'rows', n_rows,
    'created', n_created,
    'createdRows', n_rows_created,
    'skippedApplicationFee', n_app,
    'skippedDuplicate', n_eligible - n_rows_created,
    'skippedUnsupported', n_unsupported,
    'unsupported', v_unsupported,
    'skippedZeroAmount', n_zero,
    'status', case when review then 'needs_review' else 'confirmed' end);
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.processor_import_stage(lines integer[], ids text[], row_types text[], amounts numeric[], fees numeric[], dates date[], descriptions text[], sources text[], currencies text[])
 RETURNS integer
 LANGUAGE plpgsql
AS $function$
begin
  insert into pg_temp.processor_import_rows (line, id, row_type, amount, fee, created, description, source_ref, currency)
    select * from unnest(lines, ids, row_types, amounts, fees, dates, descriptions, sources, currencies);
  return coalesce(cardinality(lines), 0);
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.processor_row_kind(layout text, row_type text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  select case when layout = 'A' then
      case lower(btrim(row_type))
        when 'charge' then 'charge' when 'payment' then 'charge'
        when 'refund' then 'refund' when 'payment_refund' then 'refund'
        when 'transfer' then 'transfer'
        when 'processor_fee' then 'processor_fee' when 'stripe_fee' then 'processor_fee'
        when 'payout' then 'payout'
        when 'application_fee' then 'application_fee'
        else 'unsupported' end
    else
      case lower(btrim(row_type))
        when 'charge' then 'charge'
        when 'refund' then 'refund'
        when 'transfer' then 'transfer'
        when 'fee' then 'processor_fee'
        when 'platform_earning' then 'application_fee'
        when 'payout' then 'payout'
        else 'unsupported' end
    end
$function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.purge_expired()
 RETURNS void
 LANGUAGE sql
AS $function$
  delete from app_public.idempotency_records where created < now() - interval '24 hours';
  delete from app_public.rate_limit_windows where window_start < now() - interval '1 hour';
  select app_private.purge_ledger_changes();
  select app_private.expire_pending_events();
$function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.purge_ledger_changes()
 RETURNS void
 LANGUAGE sql
AS $function$ delete from app_public.ledger_change_feed c where c.at < now() - app_private.ledger_changes_retention() $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.queue_due_source_scans(mailbox_interval interval, cloud_drive_interval interval)
 RETURNS integer
 LANGUAGE plpgsql
AS $function$
declare v_count integer;
begin
  with due as (
    select s.id, s.organization_id from app_public.receipt_sources s
     where s.next_scan_at <= now()
     order by s.next_scan_at
     for update skip locked
  ), claimed as (
    update app_public.receipt_sources s
       set next_scan_at = now() + case s.kind when 'mailbox' then mailbox_interval else cloud_drive_interval end
      from due where s.id = due.id
    returning s.id, s.organization_id
  )
  select count(app_private.queue_source_scan(c.organization_id, c.id)) into v_count from claimed c;
  return v_count;
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.queue_due_webhook_jobs()
 RETURNS integer
 LANGUAGE plpgsql
AS $function$
declare v_orgs uuid[];
begin
  select array_agg(distinct d.organization_id) into v_orgs
    from app_public.webhook_deliveries d
    join app_public.webhook_endpoints ep on ep.id = d.webhook_endpoint_id and ep.status = 'enabled'
   where d.status = 'pending' and d.next_attempt_at <= now() - interval '1 minute';
  perform app_private.queue_webhook_jobs(o) from unnest(v_orgs) o;
  return coalesce(cardinality(v_orgs), 0);
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.queue_job(task text, payload json, queue_name text DEFAULT NULL::text, run_at timestamp with time zone DEFAULT NULL::timestamp with time zone, max_attempts integer DEFAULT NULL::integer, job_key text DEFAULT NULL::text, preserve_run_at boolean DEFAULT false)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
begin
  -- What graphile-worker would refuse refuses the change here, not a whole batch later.
  if max_attempts is not null and max_attempts not between 1 and 32767 then
    raise exception 'queue_job: max_attempts must be between 1 and 32767, not %', max_attempts;
  end if;
  if job_key = '' then raise exception 'queue_job: a job key must not be empty'; end if;
  insert into app_private.job_outbox (task, payload, queue_name, run_at, max_attempts, job_key, preserve_run_at)
    values (task, payload, queue_name, run_at, max_attempts, job_key, preserve_run_at);
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.queue_receipt_extraction(org uuid, receipt_id uuid)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  perform app_private.check_job_organization(org);
  perform app_private.queue_job('extract_receipt', json_build_object('organizationId', org, 'receiptId', receipt_id),
    queue_name => app_private.job_queue('extract_receipt', org), max_attempts => 5);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.queue_receipt_matching(org uuid, receipt_ids uuid[] DEFAULT NULL::uuid[], amounts numeric[] DEFAULT NULL::numeric[])
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  perform app_private.check_job_organization(org);
  perform app_private.queue_job('match_receipts', json_build_object('organizationId', org, 'receiptIds', receipt_ids,
    'amounts', (select array_agg(a::text) from unnest(amounts) a)),
    queue_name => app_private.job_queue('match_receipts', org), max_attempts => 10);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.queue_receipt_reextraction(org uuid, include_read boolean DEFAULT false)
 RETURNS integer
 LANGUAGE plpgsql
AS $function$
declare v_queued integer;
begin
  select count(graphile_worker.add_job('extract_receipt', json_build_object('organizationId', org, 'receiptId', r.id, 'reextract', true),
           queue_name => app_private.job_queue('extract_receipt', org), max_attempts => 5,
           job_key => 'reextract:' || r.id, job_key_mode => 'preserve_run_at'))
    into v_queued
    from app_public.receipts r
   where r.organization_id = org and r.event_id is null and r.status <> 'rejected' and r.extracted_at is not null
     and (include_read or r.extraction_error is not null or r.amount is null or r.vendor_name is null);
  return v_queued;
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.queue_source_scan(organization_id uuid, receipt_source_id uuid)
 RETURNS text
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare v_kind text; v_job bigint;
begin
  perform app_private.check_job_organization(organization_id);
  select s.kind into v_kind from app_public.receipt_sources s
   where s.organization_id = queue_source_scan.organization_id and s.id = receipt_source_id;
  if v_kind is null then return null; end if;
  select j.id into v_job from graphile_worker.add_job(app_private.source_scan_task(v_kind),
    json_build_object('organizationId', organization_id, 'receiptSourceId', receipt_source_id),
    queue_name => app_private.job_queue(app_private.source_scan_task(v_kind), organization_id),
    job_key => 'scan:' || receipt_source_id, max_attempts => 3) j;
  return v_job::text;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.queue_waiting_receipt_matching(org uuid, amounts numeric[])
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public', 'pg_temp'
AS $function$
begin
  if exists (select 1 from app_public.receipts r where r.organization_id = org and r.event_id is null
                and r.status in ('draft', 'processed')) then
    perform app_private.queue_receipt_matching(org, null, amounts);
  end if;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.queue_webhook_attempt(delivery_id uuid, at timestamp with time zone)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare d app_public.webhook_deliveries;
begin
  select * into d from app_public.webhook_deliveries x where x.id = delivery_id;
  perform app_private.check_job_organization(d.organization_id);
  if app_public.current_organization_id() is not null and d.organization_id is distinct from app_public.current_organization_id() then
    perform app_private.fail('Webhook delivery not found.', 'AP404');
  end if;
  update app_public.webhook_deliveries x set status = 'pending', next_attempt_at = at where x.id = d.id;
  perform app_private.queue_webhook_endpoint_jobs(d.webhook_endpoint_id);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.queue_webhook_endpoint_jobs(webhook_endpoint_id uuid, due_now boolean DEFAULT true)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
begin
  perform app_private.queue_webhook_jobs(ep.organization_id, due_now)
     from app_public.webhook_endpoints ep where ep.id = queue_webhook_endpoint_jobs.webhook_endpoint_id;
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.queue_webhook_job(organization_id uuid, at timestamp with time zone)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
declare v_later boolean := at > now();
begin
  perform app_private.queue_job('deliver_webhooks', json_build_object('organizationId', organization_id),
    queue_name => app_private.job_queue('deliver_webhooks', organization_id), run_at => case when v_later then at end,
    max_attempts => 5, job_key => case when v_later then 'webhooks-retry:' else 'webhooks:' end || organization_id,
    preserve_run_at => not v_later);
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.queue_webhook_jobs(organization_id uuid, due_now boolean DEFAULT true)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
declare
  v_due boolean;
  v_next timestamptz;
begin
  -- Only a failed attempt makes a delivery wait (webhook_deliveries_retry_idx): not a scan of every one due.
  select bool_or(r.due), min(r.next) into v_due, v_next
    from app_public.webhook_endpoints ep
    cross join lateral (
      select app_private.webhook_endpoint_has_due(ep.id) as due,
             (select min(d.next_attempt_at) from app_public.webhook_deliveries d where d.webhook_endpoint_id = ep.id
                 and d.status = 'pending' and d.attempts > 0 and d.next_attempt_at > now()) as next) r
   where ep.organization_id = queue_webhook_jobs.organization_id and ep.status = 'enabled';
  if v_due and due_now then perform app_private.queue_webhook_job(organization_id, now()); end if;
  if v_next is not null then perform app_private.queue_webhook_job(organization_id, v_next); end if;
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.reading_before(readings date[], arrived date)
 RETURNS date
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ select d from unnest(readings) d order by d > arrived, abs(d - arrived), d limit 1 $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.reading_nearest(readings date[], day date)
 RETURNS date
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ select d from unnest(readings) d order by abs(d - day) nulls last, d limit 1 $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.rebuild_daily_totals(org uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  started timestamptz := clock_timestamp();
  v_totals_kept bigint;
  v_counts_kept bigint;
  v_totals_wrong bigint;
  v_counts_wrong bigint;
  v_tax_kept bigint;
  v_tax_wrong bigint;
  v_month_totals_kept bigint;
  v_month_totals_wrong bigint;
  v_month_counts_kept bigint;
  v_month_counts_wrong bigint;
  v_through date;
begin
  if current_setting('transaction_isolation') not in ('repeatable read', 'serializable') then
    perform app_private.fail('rebuild_daily_totals must run in a repeatable read transaction.');
  end if;
  -- A posting waits for no repair longer than this; the repair gives up first and the job is
  -- retried (postings take the totals and the counts in different orders, so no order of ours
  -- avoids a deadlock, but then the job, not a user's request, is the one that fails).
  perform set_config('lock_timeout', '200ms', true);
  select o.totals_rolled_through into v_through from app_public.organizations o where o.id = org for share;
  if not found then
    perform app_private.fail('Organization Not Found.', 'AP404');
  end if;
  drop table if exists pg_temp.rebuilt_totals, pg_temp.wrong_totals, pg_temp.rebuilt_counts, pg_temp.wrong_counts,
    pg_temp.rebuilt_tax, pg_temp.wrong_tax, pg_temp.rebuilt_month_totals, pg_temp.wrong_month_totals,
    pg_temp.rebuilt_month_counts, pg_temp.wrong_month_counts;

  create temporary table rebuilt_totals on commit drop as
    select l.account_id, l.txn_date as day, sum(l.debit) as debit, sum(l.credit) as credit
      from app_public.journal_lines l where l.organization_id = org and not l.voided group by 1, 2;
  create temporary table wrong_totals on commit drop as
    select coalesce(r.account_id, t.account_id) as account_id, coalesce(r.day, t.day) as day,
           coalesce(r.debit, 0) as debit, coalesce(r.credit, 0) as credit
      from rebuilt_totals r
      full join (select * from app_public.account_daily_totals k where k.organization_id = org) t
        on t.account_id = r.account_id and t.day = r.day
     where coalesce(r.debit, 0) <> coalesce(t.debit, 0) or coalesce(r.credit, 0) <> coalesce(t.credit, 0);
  create temporary table rebuilt_counts on commit drop as
    select e.transaction_date as day, e.status, count(*) as n
      from app_public.ledger_events e where e.organization_id = org group by 1, 2;
  create temporary table wrong_counts on commit drop as
    select coalesce(r.day, c.day) as day, coalesce(r.status, c.status) as status, coalesce(r.n, 0) as n
      from rebuilt_counts r
      full join (select * from app_public.ledger_event_daily_counts k where k.organization_id = org) c
        on c.day = r.day and c.status = r.status
     where coalesce(r.n, 0) <> coalesce(c.n, 0);

  -- The rolled months: what their days sum to.
  create temporary table rebuilt_month_totals on commit drop as
    select r.account_id, date_trunc('month', r.day::timestamp)::date as month, sum(r.debit) as debit, sum(r.credit) as credit
      from rebuilt_totals r where r.day < v_through group by 1, 2;
  create temporary table wrong_month_totals on commit drop as
    select coalesce(r.account_id, t.account_id) as account_id, coalesce(r.month, t.month) as month,
           coalesce(r.debit, 0) as debit, coalesce(r.credit, 0) as credit
      from rebuilt_month_totals r
      full join (select * from app_public.account_monthly_totals k where k.organization_id = org) t
        on t.account_id = r.account_id and t.month = r.month
     where coalesce(r.debit, 0) <> coalesce(t.debit, 0) or coalesce(r.credit, 0) <> coalesce(t.credit, 0);
  create temporary table rebuilt_month_counts on commit drop as
    select date_trunc('month', r.day::timestamp)::date as month, r.status, sum(r.n) as n
      from rebuilt_counts r where r.day < v_through group by 1, 2;
  create temporary table wrong_month_counts on commit drop as
    select coalesce(r.month, c.month) as month, coalesce(r.status, c.status) as status, coalesce(r.n, 0) as n
      from rebuilt_month_counts r
      full join (select * from app_public.ledger_event_monthly_counts k where k.organization_id = org) c
        on c.month = r.month and c.status = r.status
     where coalesce(r.n, 0) <> coalesce(c.n, 0);

  -- As tg_journal_lines__sales_tax keeps them: an entry counts once per tax type, a reversal -1.
  create temporary table rebuilt_tax on commit drop as
    select x.txn_date as day, x.tax_type, sum(x.collected) as collected, sum(x.itcs) as itcs,
           sum(case when j.reverses_entry_id is null then 1 else -1 end) as events
      from (select l.entry_id, l.txn_date, l.tax_type,
                   sum(case when l.tax_on_sale then l.credit - l.debit else 0 end) as collected,
                   sum(case when l.tax_on_sale then 0 else l.debit - l.credit end) as itcs
              from app_public.journal_lines l
             where l.organization_id = org and l.tax_type is not null and not l.voided group by 1, 2, 3) x
      join app_public.journal_entries j on j.id = x.entry_id
     group by 1, 2;
  create temporary table wrong_tax on commit drop as
    select coalesce(r.day, k.day) as day, coalesce(r.tax_type, k.tax_type) as tax_type, coalesce(r.collected, 0) as collected,
           coalesce(r.itcs, 0) as itcs, coalesce(r.events, 0) as events
      from rebuilt_tax r
      full join (select * from app_public.sales_tax_daily_totals k where k.organization_id = org) k
        on k.day = r.day and k.tax_type = r.tax_type
     where coalesce(r.collected, 0) <> coalesce(k.collected, 0) or coalesce(r.itcs, 0) <> coalesce(k.input_tax_credits, 0)
        or coalesce(r.events, 0) <> coalesce(k.events, 0);

  -- All worked out before any is written: rows are locked only for the writes.
  insert into app_public.account_daily_totals as t (organization_id, account_id, day, debit, credit)
    select org, w.account_id, w.day, w.debit, w.credit from wrong_totals w order by 2, 3
    on conflict (organization_id, account_id, day) do update set debit = excluded.debit, credit = excluded.credit;
  insert into app_public.ledger_event_daily_counts as t (organization_id, day, status, n)
    select org, w.day, w.status, w.n from wrong_counts w order by 2, 3
    on conflict (organization_id, day, status) do update set n = excluded.n;
  insert into app_public.sales_tax_daily_totals as t (organization_id, day, tax_type, collected, input_tax_credits, events)
    select org, w.day, w.tax_type, w.collected, w.itcs, w.events from wrong_tax w order by 2, 3
    on conflict (organization_id, day, tax_type) do update
      set collected = excluded.collected, input_tax_credits = excluded.input_tax_credits, events = excluded.events;
  delete from app_public.account_monthly_totals t using wrong_month_totals w
   where t.organization_id = org and t.account_id = w.account_id and t.month = w.month and w.debit = 0 and w.credit = 0;
  insert into app_public.account_monthly_totals as t (organization_id, account_id, month, debit, credit)
    select org, w.account_id, w.month, w.debit, w.credit from wrong_month_totals w where w.debit <> 0 or w.credit <> 0 order by 2, 3
    on conflict (organization_id, account_id, month) do update set debit = excluded.debit, credit = excluded.credit;
  delete from app_public.ledger_event_monthly_counts t using wrong_month_counts w
   where t.organization_id = org and t.month = w.month and t.status = w.status and w.n = 0;
  insert into app_public.ledger_event_monthly_counts as t (organization_id, month, status, n)
    select org, w.month, w.status, w.n from wrong_month_counts w where w.n <> 0 order by 2, 3
    on conflict (organization_id, month, status) do update set n = excluded.n;
  select count(*) into v_totals_kept from rebuilt_totals;
  select count(*) into v_totals_wrong from wrong_totals;
  select count(*) into v_counts_kept from rebuilt_counts;
  select count(*) into v_counts_wrong from wrong_counts;
  select count(*) into v_tax_kept from rebuilt_tax;
  select count(*) into v_tax_wrong from wrong_tax;
  select count(*) into v_month_totals_kept from rebuilt_month_totals;
  select count(*) into v_month_totals_wrong from wrong_month_totals;
  select count(*) into v_month_counts_kept from rebuilt_month_counts;
  select count(*) into v_month_counts_wrong from wrong_month_counts;

  return jsonb_build_object(
    'organizationId', org,
    'equal', v_totals_wrong = 0 and v_counts_wrong = 0 and v_tax_wrong = 0 and v_month_totals_wrong = 0 and v_month_counts_wrong = 0,
    'accountDays', v_totals_kept, 'accountDaysRepaired', v_totals_wrong,
    'statusDays', v_counts_kept, 'statusDaysRepaired', v_counts_wrong,
    'salesTaxDays', v_tax_kept, 'salesTaxDaysRepaired', v_tax_wrong,
    'accountMonths', v_month_totals_kept, 'accountMonthsRepaired', v_month_totals_wrong,
    'statusMonths', v_month_counts_kept, 'statusMonthsRepaired', v_month_counts_wrong,
    'ms', round(extract(epoch from clock_timestamp() - started) * 1000));
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.receipt_candidates(receipt_id uuid)
 RETURNS TABLE(event_id uuid, merchant_name text, transaction_date date, functional_amount numeric, status text, similarity real, day_distance integer, reading date)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public', 'pg_temp'
AS $function$
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
$function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.receipt_count(org uuid, period daterange)
 RETURNS integer
 LANGUAGE plpgsql
 STABLE
AS $function$
begin
  return (select count(*)::integer from app_public.receipts r
           where r.organization_id = org and r.status <> 'rejected'
             and r.uploaded_at >= (lower(period)::timestamp at time zone 'UTC')
             and r.uploaded_at < (upper(period)::timestamp at time zone 'UTC'));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.receipt_for_update(receipt_id uuid)
 RETURNS app_public.receipts
 LANGUAGE plpgsql
AS $function$
declare r app_public.receipts;
begin
  select * into r from app_public.receipts x where x.id = receipt_id for update;
  if not found then perform app_private.fail('Receipt not found.', 'AP404'); end if;
  return r;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.receipt_json(r app_public.receipts, e app_public.ledger_events, full_text boolean DEFAULT false)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$
  select jsonb_build_object(
    'id', r.id, 'vendorName', r.vendor_name, 'amount', r.amount, 'currency', r.currency,
    'receiptDate', to_char(r.receipt_date, 'YYYY-MM-DD'),
    'dateReadings', (select coalesce(jsonb_agg(to_char(d, 'YYYY-MM-DD') order by d), '[]'::jsonb) from unnest(r.date_readings) d),
    'status', r.status, 'source', r.source, 'matchStatus', r.match_status,
    'filename', r.filename, 'contentType', r.content_type, 'size', r.size, 'objectKey', r.object_key,
    'uploadedAt', app_private.iso(r.uploaded_at), 'extractedAt', app_private.iso(r.extracted_at),
    'extractionMethod', r.extraction_method, 'extractionError', r.extraction_error,
    'extraction', case when r.extracted_at is not null then jsonb_build_object('vendorConfidence', r.vendor_confidence,
      'amountConfidence', r.amount_confidence, 'dateConfidence', r.date_confidence) end,
    'extractedText', case when full_text then r.extracted_text end,
    'linkedBy', r.linked_by, 'linkedAt', app_private.iso(r.linked_at),
    'event', case when e.id is null then null else jsonb_build_object('id', e.id, 'merchantName', e.merchant_name,
      'status', e.status, 'transactionDate', to_char(e.transaction_date, 'YYYY-MM-DD'),
      'functionalAmount', app_private.money(e.functional_amount)) end,
    'created', app_private.iso(r.created), 'updated', app_private.iso(r.updated))
$function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.receipt_json_by_id(receipt_id uuid, full_text boolean DEFAULT false)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$ select app_private.receipt_json(r, e, full_text) from app_public.receipts r
     left join app_public.ledger_events e on e.id = r.event_id where r.id = receipt_json_by_id.receipt_id $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.receipt_low_confidence_fields(r app_public.receipts)
 RETURNS text[]
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  select array_remove(array[case when r.vendor_confidence = 'low' then 'vendor' end,
                            case when r.amount_confidence = 'low' then 'amount' end,
                            case when r.date_confidence = 'low' then 'date' end], null)
$function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.receipt_match_strict_thresholds(OUT min_similarity real, OUT max_day_distance integer)
 RETURNS record
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ select 0.55::real, 1 $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.receipt_match_thresholds(OUT min_similarity real, OUT min_lead real)
 RETURNS record
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ select 0.35::real, 0.15::real $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.receipt_source_json(id uuid, settings jsonb, status text, last_error text, last_scanned_at timestamp with time zone, created timestamp with time zone)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$ select settings || jsonb_build_object('id', id, 'status', status, 'lastError', last_error,
     'lastScannedAt', app_private.iso(last_scanned_at), 'created', app_private.iso(created)) $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.receive_cloud_drive_object(organization_id uuid, receipt_source_id uuid, drive_key text, etag text, object_key text, filename text, content_type text, size bigint, sha256 text)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare v_result jsonb;
begin
  -- Held until commit: a disconnect waits for this object, or this object sees the source gone.
  perform 1 from app_public.receipt_sources s where s.id = receipt_source_id for key share;
  if not found then return null; end if;
  v_result := app_private.receive_receipt(organization_id, 'cloud_drive', object_key, filename, content_type, size, sha256);
  perform app_private.record_cloud_drive_object(organization_id, receipt_source_id, drive_key, etag,
    case when (v_result->>'duplicate')::boolean then 'duplicate' else 'created' end);
  return v_result;
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.receive_intake_message(organization_id uuid, channel text, message_id text, sender text)
 RETURNS uuid
 LANGUAGE plpgsql
AS $function$
declare v_id uuid;
begin
  perform app_private.scope_organization(organization_id);
  insert into app_public.intake_messages (organization_id, channel, message_id, sender)
    values (organization_id, channel, coalesce(app_private.intake_message_key(message_id), 'generated:' || gen_random_uuid()),
            left(coalesce(sender, ''), 998))
    on conflict on constraint intake_messages_message_key do nothing
    returning id into v_id;
  return v_id;
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.receive_receipt(organization_id uuid, source text, object_key text, filename text, content_type text, size bigint, sha256 text, intake_message_id uuid DEFAULT NULL::uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
begin
  perform app_private.scope_organization(organization_id);
  if split_part(object_key, '/', 1) <> organization_id::text then
    perform app_private.fail('The object key is not in this organization''s space.');
  end if;
  return app_private.store_receipt(organization_id, source, object_key, filename, content_type, size, sha256, intake_message_id);
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.reconciliation_cleared_balance(r app_public.reconciliations)
 RETURNS numeric
 LANGUAGE sql
 STABLE
AS $function$
  select r.opening_balance + coalesce(sum(l.debit - l.credit), 0)
           * (select case when a.classification in ('asset', 'expense') then 1 else -1 end
                from app_public.accounts a where a.id = r.payment_account_id)
    from app_public.reconciliation_clearings c
    join app_public.ledger_events e on e.id = c.event_id and e.status in ('confirmed', 'synced', 'reconciled')
    join app_public.journal_lines l on l.entry_id = e.journal_entry_id and l.account_id = r.payment_account_id and not l.voided
   where c.reconciliation_id = r.id
$function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE; reporting_reader: EXECUTE

CREATE OR REPLACE FUNCTION app_private.reconciliation_json(r app_public.reconciliations)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$
  select jsonb_build_object('id', r.id,
    'paymentAccount', (select jsonb_build_object('id', a.id, 'name', a.name) from app_public.accounts a where a.id = r.payment_account_id),
    'statementDate', to_char(r.statement_date, 'YYYY-MM-DD'),
    'openingBalance', app_private.money(r.opening_balance), 'closingBalance', app_private.money(r.closing_balance),
    'clearedBalance', app_private.money(b.cleared), 'difference', app_private.money(r.closing_balance - b.cleared),
    'clearedCount', (select count(*) from app_public.reconciliation_clearings c where c.reconciliation_id = r.id),
    'status', r.status, 'created', app_private.iso(r.created), 'completedAt', app_private.iso(r.completed_at),
    'undoneAt', app_private.iso(r.undone_at))
    from (select case when r.status = 'open' then app_private.reconciliation_cleared_balance(r)
                      else r.cleared_balance end as cleared) b
$function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.record_cloud_drive_object(organization_id uuid, receipt_source_id uuid, object_key text, etag text, outcome text)
 RETURNS void
 LANGUAGE sql
AS $function$
  insert into app_public.cloud_drive_objects as o (organization_id, receipt_source_id, object_key, etag, outcome)
    values (organization_id, receipt_source_id, object_key, left(etag, 200), outcome)
  on conflict (receipt_source_id, object_key) do update set etag = excluded.etag, outcome = excluded.outcome, read_at = now()
$function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.record_job_result(job_name text, job_id text, attempt integer, organization_id uuid, payload jsonb, status text, result jsonb, error text, started_at timestamp with time zone)
 RETURNS bigint
 LANGUAGE plpgsql
AS $function$
declare v_id bigint;
begin
  if status not in ('succeeded', 'failed') then perform app_private.fail('Status must be succeeded or failed.'); end if;
  insert into app_private.job_results (job_name, job_id, attempt, organization_id, payload, status, result, error, started_at)
    values (job_name, job_id, attempt,
            -- A job naming an organization that no longer exists is still recorded.
            (select o.id from app_public.organizations o where o.id = record_job_result.organization_id),
            coalesce(payload, '{}'::jsonb), status, result, left(error, 10000), started_at)
    returning id into v_id;
  return v_id;
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.record_receipt_extraction(receipt_id uuid, extraction jsonb)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
declare
  r app_public.receipts;
  readings date[];
  v_amount numeric(20,2);
begin
  select * into r from app_public.receipts x where x.id = receipt_id for update;
  if not found then return; end if;  -- deleted meanwhile: nothing to record
  perform app_private.scope_organization(r.organization_id);
  select coalesce(array_agg(d order by d), '{}') into readings
    from (select distinct app_private.try_date(t) d from jsonb_array_elements_text(coalesce(extraction->'dateReadings', '[]'::jsonb)) t
           where app_private.try_date(t) is not null limit 2) x;
  v_amount := case when extraction->>'amount' ~ '^-?\d{1,15}(\.\d{1,2})?$' then (extraction->>'amount')::numeric end;
  update app_public.receipts x set
      vendor_name = left(nullif(btrim(extraction->>'vendorName'), ''), 500),
      amount = v_amount,
      -- A field's confidence only beside a value it describes.
      vendor_confidence = case when nullif(btrim(extraction->>'vendorName'), '') is not null then app_private.field_confidence(extraction->>'vendorConfidence') end,
      amount_confidence = case when v_amount is not null then app_private.field_confidence(extraction->>'amountConfidence') end,
      date_confidence = case when cardinality(readings) > 0 then app_private.field_confidence(extraction->>'dateConfidence') end,
      currency = case when extraction->>'currency' ~ '^[A-Z]{3}$' then extraction->>'currency' end,
      date_readings = readings,
      -- Until matching picks a reading: the one nearest the arrival day and not after it.
      receipt_date = case when x.linked_by = 'person' then coalesce(app_private.reading_nearest(readings, (select e.transaction_date from app_public.ledger_events e where e.id = x.event_id)), x.receipt_date)
                          else app_private.reading_before(readings, (x.uploaded_at at time zone 'UTC')::date) end,
      extracted_text = left(extraction->>'text', 100000),
      extraction_method = left(extraction->>'method', 50),
      extraction_error = left(extraction->>'error', 2000),
      extracted_at = now(),
      status = case when x.status = 'draft' then 'processed' else x.status end
   where x.id = r.id;
  if r.status in ('draft', 'processed') and r.event_id is null then
    perform app_private.queue_receipt_matching(r.organization_id, array[r.id]);
  end if;
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.record_upload(organization_id uuid, object_key text, filename text, content_type text, size bigint, sha256 text)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
begin
  perform app_private.assert_org_access(organization_id, false);
  if split_part(object_key, '/', 1) <> organization_id::text then
    perform app_private.fail('The object key is not in this organization''s space.');
  end if;
  if content_type not in ('image/jpeg', 'image/png', 'image/webp', 'image/heic', 'application/pdf', 'text/plain') then
    perform app_private.fail('Unsupported file type.');
  end if;
  insert into app_public.uploads (organization_id, object_key, filename, content_type, size, sha256)
    values (organization_id, object_key, left(coalesce(app_private.clean_text(filename), ''), 255), content_type, size, sha256);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.record_webhook_attempts(webhook_endpoint_id uuid, outcomes jsonb, retry_base interval, retry_window interval)
 RETURNS boolean
 LANGUAGE plpgsql
AS $function$
declare
  -- An array, so that the deliveries are found by their key, not by a join planned for a hundred rows.
  v_ids uuid[] := array(select (o->>'deliveryId')::uuid from jsonb_array_elements(outcomes) o);
  v_failed uuid[];
  v_endpoint uuid;
begin
  -- The endpoints first, then their deliveries: the order updateWebhookEndpoint takes them in when
  -- it disables one (fail_pending_webhook_deliveries), so that the two never deadlock.
  perform 1 from app_public.webhook_endpoints ep
   where ep.id in (select d.webhook_endpoint_id from app_public.webhook_deliveries d where d.id = any (v_ids))
   order by ep.id for no key update;
  with outcome as (
    select x.delivery_id, x.attempt, x.response_code, x.n,
           x.error is null and coalesce(x.response_code between 200 and 299, false) as ok,
           left(coalesce(x.error, case when not (x.response_code between 200 and 299)
                                    then format('The endpoint answered HTTP %s.', x.response_code) end), 2000) as error
      from rows from (jsonb_to_recordset(outcomes) as ("deliveryId" uuid, attempt integer, "responseCode" integer, error text))
             with ordinality x(delivery_id, attempt, response_code, error, n)
  ), locked as materialized (
    -- In the order they were made.
    select d.id from app_public.webhook_deliveries d
     where d.id = any (v_ids) order by d.seq for update
  ), recorded as (
    update app_public.webhook_deliveries d
       set attempts = d.attempts + 1, first_attempt_at = coalesce(d.first_attempt_at, now()), last_attempt_at = now(),
           response_code = o.response_code, last_error = o.error,
           status = case when o.ok then 'succeeded' when now() >= d.created + retry_window then 'failed' else 'pending' end,
           delivered_at = case when o.ok then now() end,
           next_attempt_at = case when not o.ok and now() < d.created + retry_window
             then least(now() + app_private.webhook_retry_delay(d.attempts + 1, retry_base), d.created + retry_window) end
      from outcome o, locked l
     where d.id = any (v_ids) and l.id = d.id and o.delivery_id = d.id and d.status = 'pending' and d.attempts = o.attempt
    returning d.id, d.webhook_endpoint_id, d.status, o.ok, o.n
  ), failing as (
    select r.webhook_endpoint_id, bool_or(r.ok) as any_ok, (array_agg(r.ok order by r.n desc))[1] as last_ok
      from recorded r group by r.webhook_endpoint_id
  ), endpoints as (
    update app_public.webhook_endpoints ep
       set failing_since = case when f.last_ok then null when f.any_ok then now() else coalesce(ep.failing_since, now()) end
      from failing f
     where ep.id = f.webhook_endpoint_id
       and ep.failing_since is distinct from case when f.last_ok then null when f.any_ok then now() else coalesce(ep.failing_since, now()) end
  )
  select coalesce(array_agg(r.id) filter (where r.status = 'failed'), '{}') into v_failed from recorded r;
  for v_endpoint in
    select distinct d.webhook_endpoint_id from app_public.webhook_deliveries d
      join app_public.webhook_endpoints ep on ep.id = d.webhook_endpoint_id
     where d.id = any (v_failed) and ep.status = 'enabled' and ep.failing_since <= d.first_attempt_at
  loop
    update app_public.webhook_endpoints ep
       set status = 'disabled', disabled_reason = format('Disabled at %s: every attempt failed for %s.',
             app_private.iso(now()), justify_interval(retry_window))
     where ep.id = v_endpoint;
    perform app_private.fail_pending_webhook_deliveries(v_endpoint);
  end loop;
  perform app_private.queue_webhook_jobs(x.organization_id, due_now => false)
     from (select distinct d.organization_id from app_public.webhook_deliveries d where d.id = any (v_ids)) x;
  return exists (select 1 from app_public.webhook_endpoints ep
                  where ep.id = record_webhook_attempts.webhook_endpoint_id and ep.status = 'enabled'
                    and app_private.webhook_endpoint_has_due(ep.id));
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.record_webhook_event(org uuid, type text, object_id uuid, object jsonb DEFAULT NULL::jsonb)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
declare
  v_subscribed boolean;
begin
  -- Few statements: the caller may hold a lock that others wait on until it commits (the day's counts).
  -- Only for the organization the caller is in (the operator's and the worker's: any).
  perform app_private.check_job_organization(org);
  select exists (select 1 from app_public.webhook_endpoints ep
                  where ep.organization_id = org and ep.status = 'enabled' and record_webhook_event.type = any (ep.events))
    into v_subscribed;
  if not v_subscribed then return; end if;
  if object is null then
    object := case split_part(record_webhook_event.type, '.', 1)
      when 'ledger_event' then (select app_private.ledger_event_json_by_id(e.id) from app_public.ledger_events e
                                 where e.id = object_id and e.organization_id = org)
      when 'receipt' then (select app_private.receipt_json_by_id(r.id) from app_public.receipts r
                            where r.id = object_id and r.organization_id = org) end;
    if object is null then raise exception 'record_webhook_event: no % of organization % with id %', type, org, object_id; end if;
  end if;
  -- The event and its deliveries in one statement; the organization's job (one for all its endpoints).
  -- The endpoints read again in the statement that inserts: one deleted or disabled since the
  -- check above gets no delivery.
  with event as (
    insert into app_public.webhook_events (organization_id, type, object)
      values (org, record_webhook_event.type, object)
      returning id)
  insert into app_public.webhook_deliveries (organization_id, webhook_endpoint_id, webhook_event_id)
    select org, ep.id, event.id from event, app_public.webhook_endpoints ep
     where ep.organization_id = org and ep.status = 'enabled' and record_webhook_event.type = any (ep.events)
     order by ep.id;
  perform app_private.queue_webhook_job(org, now());
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.release_allocations(event_id uuid)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
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
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.release_dead_worker_jobs(own text[], dead_after interval, unknown_after interval, retry_after interval)
 RETURNS integer
 LANGUAGE plpgsql
AS $function$
declare v_dead text[]; v_released integer;
begin
  if not exists (select 1 from app_private.worker_heartbeats h
                  where h.pool_id = any (own) and h.beating_since <= now() - dead_after) then
    return 0;
  end if;
  select coalesce(array_agg(distinct d.locked_by), '{}') into v_dead from (
    select j.locked_by, j.locked_at from graphile_worker._private_jobs j where j.locked_by is not null
    union all
    select q.locked_by, q.locked_at from graphile_worker._private_job_queues q where q.locked_by is not null
  ) d
  left join app_private.worker_heartbeats h on h.pool_id = d.locked_by
  where h.beat_at < now() - dead_after or (h.pool_id is null and d.locked_at < now() - unknown_after);
  -- Pools gone long ago without a lock left.
  delete from app_private.worker_heartbeats where beat_at < now() - greatest(dead_after, interval '1 day')
     or pool_id = any (v_dead);
  if cardinality(v_dead) = 0 then return 0; end if;
  update graphile_worker._private_jobs
     set run_at = now() + retry_after * attempts * attempts,
         last_error = 'The worker running this job stopped before it finished (killed, or out of memory).'
   where locked_by = any (v_dead);
  get diagnostics v_released = row_count;
  perform graphile_worker.force_unlock_workers(v_dead);
  return v_released;
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.release_idempotency_key(credential text, idem_key text)
 RETURNS void
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public'
AS $function$
  delete from app_public.idempotency_records x
   where x.credential = release_idempotency_key.credential and x.idempotency_key = idem_key and x.response_status is null
$function$
-- grants: <owner>: EXECUTE; accounting_authenticator: EXECUTE

CREATE OR REPLACE FUNCTION app_private.report_period(start_date text, end_date text, default_start date)
 RETURNS daterange
 LANGUAGE plpgsql
 STABLE
AS $function$
declare
  s date := default_start;
  e date := current_date;
begin
  if start_date is not null then s := app_private.parse_date(start_date, 'startDate must be a date in YYYY-MM-DD format.'); end if;
  if end_date is not null then e := app_private.parse_date(end_date, 'endDate must be a date in YYYY-MM-DD format.'); end if;
  if s > e then perform app_private.fail('startDate must not be after endDate.'); end if;
  return daterange(s, e, '[]');
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.resolve_parent(org uuid, parent uuid, classification text)
 RETURNS uuid
 LANGUAGE plpgsql
 STABLE
AS $function$
declare p app_public.accounts;
begin
  if parent is null then return null; end if;
  select * into p from app_public.accounts a where a.organization_id = org and a.id = parent;
  if not found then perform app_private.fail('Parent account not found.'); end if;
  if p.classification <> resolve_parent.classification then
    perform app_private.fail(format('A sub-account must have the classification of its parent (%s).', p.classification));
  end if;
  return p.id;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.resume_webhook_endpoint(webhook_endpoint_id uuid)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
begin
  perform app_private.check_job_organization(ep.organization_id)
     from app_public.webhook_endpoints ep where ep.id = resume_webhook_endpoint.webhook_endpoint_id;
  perform app_private.queue_webhook_endpoint_jobs(webhook_endpoint_id);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.retry_operator_job(job_id bigint)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare v_found boolean;
begin
  select true into v_found from graphile_worker.reschedule_jobs(array[job_id], run_at => now(), attempts => 0) limit 1;
  if v_found is null then
    perform app_private.fail(format('No job %s waiting in the queue: it is running now, or it ended (a job that succeeded or failed for good is no longer there; enqueue it again).', job_id), 'AP404');
  end if;
  return (select to_jsonb(j) from (select x.id::text as id, x.task_identifier as task, x.attempts, x.run_at as "runAt"
                                     from graphile_worker.jobs x where x.id = job_id) j);
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.revoke_api_key(org uuid, key_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare k jsonb;
begin
  update app_public.api_keys a set revoked_at = coalesce(a.revoked_at, now())
    where a.id = key_id and a.organization_id = org
    returning app_private.api_key_json(a.id, a.label, a.prefix, a.created, a.last_used_at, a.revoked_at) into k;
  if k is null then perform app_private.fail('API key not found.', 'AP404'); end if;
  return k;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE PROCEDURE app_private.roll_up_all_monthly_totals(INOUT rolled integer DEFAULT 0, INOUT left_for_later integer DEFAULT 0)
 LANGUAGE plpgsql
AS $procedure$
declare
  v_org uuid;
  v_through date := app_private.current_month_start();
begin
  if current_setting('transaction_isolation') <> 'read committed' then
    perform app_private.fail('Monthly totals are rolled up in a read committed transaction.');
  end if;
  rolled := 0;
  left_for_later := 0;
  for v_org in select o.id from app_public.organizations o
                where o.totals_rolled_through is null or o.totals_rolled_through < v_through order by o.id loop
    -- Taken between two changes of the organization: a few tries, a tenth of a second apart.
    for attempt in 1..10 loop
      begin
        perform app_private.roll_up_monthly_totals(v_org, v_through);
        rolled := rolled + 1;
        exit;
      exception
        when lock_not_available then
          if attempt = 10 then left_for_later := left_for_later + 1; else perform pg_sleep(0.1); end if;
        -- One organization's failure leaves the others to be rolled.
        when others then
          raise warning 'roll_up_monthly_totals: organization %: %', v_org, sqlerrm;
          left_for_later := left_for_later + 1;
          exit;
      end;
    end loop;
    commit;
  end loop;
end $procedure$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.roll_up_monthly_totals(org uuid, through date DEFAULT app_private.current_month_start())
 RETURNS integer
 LANGUAGE plpgsql
AS $function$
declare
  v_from date;
  n integer;
begin
  if through is distinct from date_trunc('month', through::timestamp)::date then
    perform app_private.fail('Monthly totals are rolled up through the first day of a month.');
  end if;
  -- A repeatable-read snapshot would predate changes that committed while it tried its locks.
  if current_setting('transaction_isolation') <> 'read committed' then
    perform app_private.fail('Monthly totals are rolled up in a read committed transaction.');
  end if;
  if through > app_private.current_month_start() then
    perform app_private.fail('Monthly totals are rolled up through the current month''s first day at the latest.');
  end if;
  if not pg_try_advisory_xact_lock(app_private.monthly_totals_key(org)) then
    raise exception 'The organization''s totals are being changed; try again.' using errcode = 'lock_not_available';
  end if;
  select o.totals_rolled_through into v_from from app_public.organizations o where o.id = org for no key update nowait;
  if not found or v_from >= through then return 0; end if;
  insert into app_public.account_monthly_totals (organization_id, account_id, month, debit, credit)
    select org, t.account_id, date_trunc('month', t.day::timestamp)::date, sum(t.debit), sum(t.credit)
      from app_public.account_daily_totals t
     where t.organization_id = org and t.day >= coalesce(v_from, '-infinity'::date) and t.day < through
     group by 2, 3 having sum(t.debit) <> 0 or sum(t.credit) <> 0 order by 2, 3;
  get diagnostics n = row_count;
  insert into app_public.ledger_event_monthly_counts (organization_id, month, status, n)
    select org, date_trunc('month', c.day::timestamp)::date, c.status, sum(c.n)
      from app_public.ledger_event_daily_counts c
     where c.organization_id = org and c.day >= coalesce(v_from, '-infinity'::date) and c.day < through
     group by 2, 3 having sum(c.n) <> 0 order by 2, 3;
  update app_public.organizations o set totals_rolled_through = through where o.id = org;
  return n;
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.rolled_period(org uuid, first_day date, last_day date)
 RETURNS TABLE(first_day date, rolled_from date, rolled_to date, last_day date)
 LANGUAGE sql
 STABLE
AS $function$
  select f, case when lo < hi then lo else f end, case when lo < hi then hi else f end, l
    from (select coalesce(rolled_period.first_day, '-infinity'::date) as f,
                 coalesce(rolled_period.last_day, 'infinity'::date) as l,
                 -- The first month that starts on or after the first day.
                 case when rolled_period.first_day is null then '-infinity'::date
                      else (date_trunc('month', (rolled_period.first_day - 1)::timestamp) + interval '1 month')::date end as lo,
                 -- The end of the last month that ends on or before the last day, or of the rolled ones.
                 case when o.totals_rolled_through is null then '-infinity'::date
                      when rolled_period.last_day is null then o.totals_rolled_through
                      else least(o.totals_rolled_through, date_trunc('month', (rolled_period.last_day + 1)::timestamp)::date) end as hi
            from app_public.organizations o where o.id = org) x
$function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE; reporting_reader: EXECUTE

CREATE OR REPLACE FUNCTION app_private.round_half_even(value numeric)
 RETURNS numeric
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  select (case when abs(value * 100 - trunc(value * 100)) = 0.5
               then trunc(value * 100) + case when trunc(value * 100) % 2 = 0 then 0 else sign(value) end
               else round(value * 100) end / 100)::numeric(20,2)
$function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.rule_account(org uuid, account uuid)
 RETURNS uuid
 LANGUAGE plpgsql
 STABLE
AS $function$
declare a app_public.accounts;
begin
  select * into a from app_public.accounts x where x.organization_id = org and x.id = account;
  if not found then perform app_private.fail('Category account not found.'); end if;
  if not a.active then perform app_private.fail('Category account is inactive.'); end if;
  if a.account_type in ('accounts_receivable', 'accounts_payable') then
    perform app_private.fail('Accounts Receivable and Payable take only invoices, bills and their payments.');
  end if;
  return a.id;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.rule_changes(r app_public.category_rules, only_unclassified boolean)
 RETURNS TABLE(event_id uuid, category_id uuid, splits jsonb, tax_amount numeric, tax_code text, tax_account_id uuid, contact_id uuid)
 LANGUAGE sql
 STABLE
AS $function$
  select c.event_id, c.category_id, c.splits, c.tax_amount, c.tax_code, c.tax_account_id, c.contact_id
    from app_private.rule_classifications(r.organization_id, array(
           select row(e.id, e.merchant_name, e.direction, e.functional_amount, e.payment_account_id, e.event_type,
                      e.transaction_date, e.contact_id)::app_private.rule_subject
             from app_public.ledger_events e
            where e.organization_id = r.organization_id and e.status = 'needs_review'
              and (not only_unclassified or e.category_id is null)
              and lower(normalize(e.merchant_name, NFC)) like lower(normalize(r.vendor_pattern, NFC))), r) c
    join app_public.ledger_events e on e.id = c.event_id
   where c.rule_id = r.id
     and (e.category_id, e.splits, e.tax_amount, e.tax_code, e.tax_account_id, e.contact_id)
         is distinct from (c.category_id, c.splits, c.tax_amount, c.tax_code, c.tax_account_id, c.contact_id)
$function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.rule_classifications(org uuid, subjects app_private.rule_subject[], candidate app_public.category_rules DEFAULT NULL::app_public.category_rules)
 RETURNS TABLE(event_id uuid, rule_id uuid, category_id uuid, splits jsonb, tax_amount numeric, tax_code text, tax_account_id uuid, contact_id uuid)
 LANGUAGE sql
 STABLE
AS $function$
  with rule as materialized (
    select c.x, lower(normalize((c.x).vendor_pattern, NFC)) lpattern
      from (select r from app_public.category_rules r where r.organization_id = org and r.id is distinct from (candidate).id
            union all
            select candidate where (candidate).id is not null) c (x)
  ), subject as materialized (
    select s.*, lower(normalize(s.merchant_name, NFC)) lname from unnest(subjects) s
  ), named as materialized (
    select n.lname, r.x, (r.x).id rule_id from (select distinct s.lname from subject s) n join rule r on n.lname like r.lpattern
  ), reach as materialized (
    -- The accounts of the rules that matched a name, and the event types they fit: only those.
    select m.rule_id, u.account_ids, u.fits
      from (select distinct on (n.rule_id) n.rule_id, n.x from named n) m cross join lateral app_private.rule_reach(m.x) u
     where u.fits <> '{}'
  ), candidate as materialized (
    -- Each name's usable rules, with the fields the conditions read as plain columns (read from
    -- the rule record once, not once per event).
    select n.lname, n.x, r.account_ids, r.fits, (n.x).direction direction, (n.x).amount_min amount_min,
           (n.x).amount_max amount_max, (n.x).payment_account_id payment_account_id, (n.x).priority priority,
           length((n.x).vendor_pattern) pattern_length, (n.x).created created, n.rule_id
      from named n join reach r on r.rule_id = n.rule_id
  ), chosen as (
    select distinct on (s.id) s.id, s.event_type, s.amount, s.transaction_date, s.contact_id, c.x
      from subject s join candidate c on c.lname = s.lname
     where s.event_type = any (c.fits)
       and (c.direction is null or c.direction = s.direction)
       and (s.amount >= c.amount_min or c.amount_min is null)
       and (s.amount <= c.amount_max or c.amount_max is null)
       and (c.payment_account_id is null or c.payment_account_id = s.payment_account_id)
       and coalesce(s.payment_account_id <> all (c.account_ids), true)
     order by s.id, c.priority, c.pattern_length desc, c.created, c.rule_id
  )
  select c.id, (c.x).id, o.category_id, o.splits, o.tax_amount, o.tax_code, o.tax_account_id, o.contact_id
    from chosen c cross join lateral app_private.rule_outcome(c.x, c.event_type, c.amount, c.transaction_date, c.contact_id) o
$function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.rule_outcome(r app_public.category_rules, event_type text, amount numeric, on_day date, contact uuid)
 RETURNS TABLE(category_id uuid, splits jsonb, tax_amount numeric, tax_code text, tax_account_id uuid, contact_id uuid)
 LANGUAGE plpgsql
 STABLE
AS $function$
begin
  contact_id := coalesce(r.contact_id, contact);
  if r.splits is not null then
    splits := app_private.rule_split_lines(r.splits, event_type, amount, on_day);
    category_id := app_private.largest_split_category(splits);
    tax_amount := app_private.splits_tax(splits);
  else
    category_id := r.account_id;
    if r.tax_code is not null then
      tax_code := r.tax_code;
      tax_amount := app_private.tax_for_account(amount, r.tax_code, app_private.is_sale(r.account_id, event_type), on_day);
    end if;
  end if;
  if coalesce(tax_amount, 0) > 0 then tax_account_id := app_private.tax_type_account(r.organization_id, 'GST_HST'); end if;
  return next;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.rule_reach(r app_public.category_rules)
 RETURNS TABLE(account_ids uuid[], fits text[])
 LANGUAGE sql
 STABLE
AS $function$
  with acct as (
    select a.id, a.active, a.classification
      from app_public.accounts a
     where a.organization_id = r.organization_id
       and a.id in (select r.account_id union all select (s->>'category_id')::uuid from jsonb_array_elements(coalesce(r.splits, '[]')) s)
  )
  select (select array_agg(a.id) from acct a),
         coalesce((select array_agg(t.t) from unnest(array['expense', 'income', 'transfer', 'refund']) t (t)
                    where not exists (select 1 from acct a
                                       where not a.active or not case when r.splits is null then app_private.category_fits(t.t, a.classification)
                                                                      else app_private.split_category_fits(t.t, a.classification) end)), '{}')
$function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.rule_split_lines(splits jsonb, event_type text, amount numeric, on_day date)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$
  with s as (
    select x.v, x.n, floor(amount * (x.v->>'percent')::numeric) / 100 share,
           amount * (x.v->>'percent')::numeric - floor(amount * (x.v->>'percent')::numeric) remainder
      from jsonb_array_elements(splits) with ordinality x (v, n)
  ), lines as (
    select s.v, s.n, round(s.share + case when row_number() over (order by s.remainder desc, s.n)
                                               <= round((amount - sum(s.share) over ()) * 100) then 0.01 else 0 end, 2) line_amount
      from s
  )
  select jsonb_agg(app_private.split_line((l.v->>'category_id')::uuid, l.line_amount, l.v->>'tax_code', null,
           l.v->>'memo', event_type, on_day) order by l.n)
    from lines l where l.line_amount > 0
$function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.sales_tax_rate(code text, on_day date)
 RETURNS numeric
 LANGUAGE plpgsql
 STABLE PARALLEL SAFE
AS $function$
declare v_rate numeric;
begin
  select r.rate into v_rate from app_public.sales_tax_rates_before r
   where r.code = sales_tax_rate.code and on_day < r.before order by r.before limit 1;
  if v_rate is null then
    select s.rate into v_rate from app_public.sales_tax_codes s where s.code = sales_tax_rate.code;
  end if;
  return v_rate;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.sales_tax_return_lines(org uuid, period daterange, tax_type text)
 RETURNS TABLE(sales numeric, collected numeric, itcs numeric, events bigint)
 LANGUAGE sql
 STABLE
AS $function$
  select (select coalesce(sum(t.credit) - sum(t.debit), 0)
            from app_private.account_totals(org, lower(period), upper(period) - 1) t join app_public.accounts a on a.id = t.account_id
           where a.classification = 'revenue' and not isempty(period)),
         coalesce(sum(s.collected), 0), coalesce(sum(s.input_tax_credits), 0), coalesce(sum(s.events), 0)
    from app_public.sales_tax_daily_totals s
   where s.organization_id = org and s.day >= lower(period) and s.day < upper(period)
     and s.tax_type = sales_tax_return_lines.tax_type
$function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.save_bank_import_layout(org uuid, payment_account_id uuid, name text, flags jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
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
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.save_idempotent_response(credential text, idem_key text, status integer, body text)
 RETURNS void
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public'
AS $function$
  update app_public.idempotency_records x set response_status = status, response_body = body
   where x.credential = save_idempotent_response.credential and x.idempotency_key = idem_key
$function$
-- grants: <owner>: EXECUTE; accounting_authenticator: EXECUTE

CREATE OR REPLACE FUNCTION app_private.scope_organization(org uuid)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
begin
  if app_public.current_api_key_id() is not null or app_public.current_user_id() is not null then
    if org is distinct from app_public.current_organization_id() then
      perform app_private.fail('Organization Not Found.', 'AU404');
    end if;
  else
    perform set_config('app.organization_id', org::text, true);
  end if;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.sort_dir(dir text, default_dir text DEFAULT 'asc'::text)
 RETURNS text
 LANGUAGE plpgsql
 IMMUTABLE
AS $function$
begin
  if dir is null then return default_dir; end if;
  if lower(dir) not in ('asc', 'desc') then
    perform app_private.fail('sortDir must be one of: asc, desc.', 'AP400');
  end if;
  return lower(dir);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.source_for_scan(receipt_source_id uuid)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$ select jsonb_build_object('organizationId', s.organization_id, 'kind', s.kind, 'settings', s.settings,
     'secretSealed', s.secret_sealed, 'cursor', s.cursor)
     from app_public.receipt_sources s where s.id = receipt_source_id $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.source_noun(kind text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ select case kind when 'mailbox' then 'Mailbox' else 'Cloud drive' end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.source_scan_task(kind text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ select case kind when 'mailbox' then 'scan_mailbox' when 'cloud_drive' then 'scan_cloud_drive' end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.split_category_fits(event_type text, classification text)
 RETURNS boolean
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ select app_private.category_fits(event_type, classification) or (event_type = 'expense' and classification = 'liability') $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.split_line(category uuid, amount numeric, tax_code text, typed_tax numeric, memo text, event_type text, on_day date)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
declare v_tax numeric := typed_tax;
begin
  if tax_code is not null and not exists (select 1 from app_public.sales_tax_codes s where s.code = split_line.tax_code) then
    perform app_private.fail('Unknown tax code.');
  end if;
  if typed_tax is null and tax_code is not null then
    v_tax := app_private.tax_for_account(amount, tax_code, app_private.is_sale(category, event_type), on_day);
  end if;
  perform app_private.check_typed_tax(typed_tax, tax_code, app_private.is_sale(category, event_type), on_day);
  if coalesce(v_tax, 0) >= amount then perform app_private.fail('A split''s tax amount must be less than its amount.'); end if;
  return jsonb_build_object('category_id', category, 'amount', amount, 'tax_code', tax_code,
    'tax_amount', coalesce(v_tax, 0), 'tax_computed', typed_tax is null and tax_code is not null, 'memo', coalesce(memo, ''));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.splits_fit(splits jsonb, event_type text)
 RETURNS boolean
 LANGUAGE sql
 STABLE
AS $function$
  select coalesce(bool_and(app_private.split_category_fits(event_type, a.classification)), false)
    from jsonb_array_elements(splits) s
    left join app_public.accounts a on a.id = (s->>'category_id')::uuid
$function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.splits_json(splits jsonb)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$
  select coalesce(jsonb_agg(jsonb_build_object('category', jsonb_build_object('id', a.id, 'name', a.name),
      'amount', app_private.money((s.v->>'amount')::numeric), 'taxCode', s.v->>'tax_code',
      'taxAmount', app_private.money((s.v->>'tax_amount')::numeric), 'memo', s.v->>'memo') order by s.n), '[]'::jsonb)
    from jsonb_array_elements(splits) with ordinality s (v, n)
    left join app_public.accounts a on a.id = (s.v->>'category_id')::uuid
$function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.splits_on_day(splits jsonb, event_type text, on_day date)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$
  select jsonb_agg(case when (s.v->>'tax_computed')::boolean
      then app_private.split_line((s.v->>'category_id')::uuid, (s.v->>'amount')::numeric, s.v->>'tax_code', null, s.v->>'memo', event_type, on_day)
      else s.v end order by s.n)
    from jsonb_array_elements(splits) with ordinality s (v, n)
$function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.splits_tax(splits jsonb)
 RETURNS numeric
 LANGUAGE sql
 IMMUTABLE
AS $function$ select nullif(sum((s->>'tax_amount')::numeric), 0) from jsonb_array_elements(splits) s $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.splits_total(splits jsonb)
 RETURNS numeric
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ select sum((s->>'amount')::numeric) from jsonb_array_elements(splits) s $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.statement_candidates(org uuid, payment_account uuid, days date[], amounts numeric[])
 RETURNS TABLE(id uuid, transaction_date date, functional_amount numeric, direction text, merchant_name text, reference text, created timestamp with time zone, waiting boolean)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public', 'pg_temp'
 SET jit TO 'off'
AS $function$
  select e.id, e.transaction_date, e.functional_amount, e.direction, e.merchant_name, e.reference, e.created,
         e.status = 'pending' or e.status = 'ignored' and app_private.ignored_while_pending(org, e.id)
    from app_public.ledger_events e
   where e.organization_id = org and org = app_public.current_organization_id()
     and (e.payment_account_id = payment_account or e.payment_account_id is null)
     and (e.transaction_date, e.functional_amount) in (select d, a from unnest(days, amounts) x (d, a))
$function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.store_receipt(org uuid, source text, object_key text, filename text, content_type text, size bigint, sha256 text, intake_message_id uuid DEFAULT NULL::uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
#variable_conflict use_column
declare
  v_id uuid;
begin
  insert into app_public.receipts (organization_id, source, object_key, filename, content_type, size, sha256, intake_message_id)
    values (org, source, object_key, left(coalesce(filename, ''), 255), content_type, size, sha256, intake_message_id)
    on conflict (organization_id, sha256) do nothing
    returning id into v_id;
  if v_id is null then
    select r.id into v_id from app_public.receipts r where r.organization_id = org and r.sha256 = store_receipt.sha256;
    return jsonb_build_object('receiptId', v_id, 'duplicate', true);
  end if;
  perform app_private.queue_receipt_extraction(org, v_id);
  perform app_private.record_webhook_event(org, 'receipt.received', v_id);
  return jsonb_build_object('receiptId', v_id, 'duplicate', false);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.store_upload_receipt(object_key text, filename text)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare u app_public.uploads := app_private.upload_by_key(object_key);
begin
  return app_private.store_receipt(u.organization_id, 'web_upload', u.object_key,
    coalesce(nullif(app_private.clean_text(filename), ''), u.filename), u.content_type, u.size, u.sha256);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.suggested_category(org uuid, merchant_name text, event_type text)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
begin
  return (
    with c as (
      select a.id, a.name, a.classification, sum(m.confirmations) as confirmations
        from app_public.merchant_category_counts m
        join app_public.accounts a on a.organization_id = org and a.id = m.category_id
       where m.organization_id = org and m.merchant = app_private.merchant_family(suggested_category.merchant_name)
         and a.active and a.account_type not in ('accounts_receivable', 'accounts_payable')
       group by a.id, a.name, a.classification
      having sum(m.confirmations) > 0
    ), total as (select sum(c.confirmations) n from c)
    select jsonb_build_object('account', jsonb_build_object('id', c.id, 'name', c.name),
             'confidence', round(c.confirmations::numeric / total.n, 2), 'basis', total.n)
      from c cross join total
     where total.n >= 3 and app_private.category_fits(suggested_category.event_type, c.classification)
     order by c.confirmations desc, c.name, c.id
     limit 1);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.sync_receipt_source(organization_id uuid, kind text, receipt_source_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare v_scan text;
begin
  perform app_private.assert_org_access(organization_id, true);
  if not exists (select 1 from app_public.receipt_sources s
                  where s.organization_id = sync_receipt_source.organization_id and s.kind = sync_receipt_source.kind
                    and s.id = receipt_source_id) then
    perform app_private.fail(app_private.source_noun(kind) || ' not found.', 'AP404');
  end if;
  v_scan := app_private.queue_source_scan(organization_id, receipt_source_id);
  return jsonb_build_object('success', true, 'error', null, 'scanId', v_scan);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.tax_account_or_default(org uuid, tax numeric, account uuid)
 RETURNS uuid
 LANGUAGE plpgsql
 STABLE
AS $function$
begin
  if account is not null or coalesce(tax, 0) = 0 then return account; end if;
  account := app_private.tax_type_account(org, 'GST_HST');
  if account is null then perform app_private.fail('A tax account is required for a tax amount.'); end if;
  return account;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.tax_code_json(t app_public.tax_codes)
 RETURNS jsonb
 LANGUAGE sql
 IMMUTABLE
AS $function$ select case when t.id is null then null else jsonb_build_object('id', t.id, 'code', t.code, 'name', t.name,
     'classification', t.classification, 'accountType', t.account_type) end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.tax_excluded_parts(amount numeric, code text, on_day date)
 RETURNS TABLE(part text, tax_type text, recoverable boolean, portion numeric)
 LANGUAGE sql
 STABLE
AS $function$
  select x.code, x.tax_type, x.recoverable, app_private.round_half_even(amount * x.rate / 100)
    from (select s.code, s.tax_type, s.recoverable = 'yes' as recoverable, app_private.sales_tax_rate(s.code, on_day) as rate
            from app_public.sales_tax_code_parts p join app_public.sales_tax_codes s on s.code = p.part
           where p.code = tax_excluded_parts.code) x
   where x.rate > 0
   order by x.code
$function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.tax_for_account(amount numeric, code text, sale boolean, on_day date)
 RETURNS numeric
 LANGUAGE plpgsql
 STABLE
AS $function$
declare v_tax numeric;
begin
  if not exists (select 1 from app_public.sales_tax_codes s where s.code = tax_for_account.code) then return null; end if;
  select coalesce(sum(t.portion), 0) into v_tax from app_private.tax_included_parts(amount, code, on_day) t where t.recoverable or sale;
  return v_tax;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.tax_included_parts(amount numeric, code text, on_day date)
 RETURNS TABLE(part text, tax_type text, recoverable boolean, portion numeric)
 LANGUAGE sql
 STABLE
AS $function$
  with parts as (
    select s.code, s.tax_type, s.recoverable = 'yes' as recoverable, app_private.sales_tax_rate(s.code, on_day) as rate
      from app_public.sales_tax_code_parts p join app_public.sales_tax_codes s on s.code = p.part
     where p.code = tax_included_parts.code
  )
  select p.code, p.tax_type, p.recoverable, app_private.round_half_even(amount * p.rate / (100 + t.total))
    from parts p cross join (select sum(rate) as total from parts) t
   where p.rate > 0
   order by p.code
$function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.tax_leg_account(org uuid, tax_type text, event_tax_account uuid)
 RETURNS uuid
 LANGUAGE sql
 STABLE
AS $function$
  select case when tax_type = 'GST_HST' then event_tax_account
              else coalesce(app_private.tax_type_account(org, tax_type), event_tax_account) end
$function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.tax_legs(amount numeric, tax numeric, code text, sale boolean, on_day date)
 RETURNS TABLE(tax_type text, portion numeric)
 LANGUAGE sql
 STABLE
AS $function$
  with parts as (
    select t.tax_type, sum(t.portion) as portion
      from app_private.tax_included_parts(amount, code, on_day) t
     where (t.recoverable or sale) and code is not null
     group by t.tax_type
  ), shared as (
    select p.tax_type, p.portion, sum(p.portion) over () as total,
           row_number() over (order by p.tax_type) as n, count(*) over () as k
      from parts p
  ), shares as (
    select s.tax_type, s.n, s.k,
           case when s.total = tax then s.portion else app_private.round_half_even(tax * s.portion / s.total) end as portion
      from shared s where s.total > 0
  )
  select x.tax_type, x.portion from (
    select s.tax_type,
           case when s.n = s.k then tax - coalesce(sum(s.portion) over (order by s.n rows between unbounded preceding and 1 preceding), 0)
                else s.portion end as portion
      from shares s
    union all
    select 'GST_HST', tax where not exists (select 1 from shares)
  ) x
  where coalesce(tax, 0) > 0 and x.portion <> 0
$function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.tax_type_account(org uuid, tax_type text)
 RETURNS uuid
 LANGUAGE plpgsql
 STABLE
AS $function$
begin
  return (select a.id from app_public.accounts a
           where a.organization_id = org and a.active
             and a.classification in ('liability', 'asset') and a.account_type not in ('bank', 'credit_card', 'clearing')
             and (a.sub_type = tax_type_account.tax_type
                  or (tax_type_account.tax_type = 'GST_HST' and a.account_type = 'tax_payable' and coalesce(a.sub_type, '') not in ('QST', 'PST')))
           order by a.sub_type is not distinct from tax_type_account.tax_type desc, a.created, a.id
           limit 1);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.tg__nfc()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
declare
  n jsonb := to_jsonb(new);
  o jsonb := case when tg_op = 'UPDATE' then to_jsonb(old) end;
  patch jsonb := '{}';
  col text;
  v text;
begin
  foreach col in array tg_argv loop
    v := n ->> col;
    if v is not null and v is not nfc normalized and (o is null or o -> col is distinct from n -> col) then
      patch := patch || jsonb_build_object(col, normalize(v, NFC));
    end if;
  end loop;
  if patch <> '{}' then new := jsonb_populate_record(new, patch); end if;
  return new;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.tg__touch_updated()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$ begin new.updated := now(); return new; end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.tg_accounts__no_cycle()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
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
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.tg_category_rules__classify()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public'
AS $function$
begin
  perform app_private.apply_rule(new, true);
  return null;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.tg_journal__balanced()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public'
AS $function$
declare
  entry uuid;
  d numeric; c numeric; n integer;
begin
  if tg_table_name = 'journal_entries' then entry := new.id;
  elsif tg_op = 'DELETE' then entry := old.entry_id;
  else entry := new.entry_id;
  end if;
  -- One query per entry (an import commits 100,000 of them): its lines' sums, or nothing when
  -- the entry itself is gone (deleted with its event).
  select coalesce(sum(l.debit), 0), coalesce(sum(l.credit), 0), count(l.id) into d, c, n
    from app_public.journal_entries j left join app_public.journal_lines l on l.entry_id = j.id
   where j.id = entry
   group by j.id;
  if found and (n < 2 or d <> c) then
    raise exception 'Journal entry % does not balance (debits %, credits %, % lines).', entry, d, c, n
      using errcode = 'check_violation';
  end if;
  return null;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.tg_journal_lines__immutable()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
begin
  if (new.organization_id, new.entry_id, new.account_id, new.txn_date, new.debit, new.credit, new.tax_type, new.tax_on_sale)
     is distinct from (old.organization_id, old.entry_id, old.account_id, old.txn_date, old.debit, old.credit, old.tax_type, old.tax_on_sale)
     or (old.voided and not new.voided) then
    perform app_private.fail('Journal lines cannot be changed; void the entry instead.');
  end if;
  return new;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.tg_journal_lines__locked()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public'
AS $function$
declare
  v_lock date;
begin
  perform 1 from app_public.organizations o where o.id in (select distinct l.organization_id from changed_rows l)
   order by o.id for key share;
  select o.lock_date into v_lock
    from app_public.organizations o
    join (select l.organization_id, min(l.txn_date) as first_day from changed_rows l group by 1) l on l.organization_id = o.id
   where l.first_day <= o.lock_date
   limit 1;
  if v_lock is not null then
    perform app_private.fail(format('The books are locked through %s.', to_char(v_lock, 'YYYY-MM-DD')));
  end if;
  return null;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.tg_journal_lines__sales_tax()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public'
AS $function$
begin
  if tg_op in ('UPDATE', 'DELETE') then
    perform app_private.add_sales_tax_totals(array(select o::app_public.journal_lines from old_rows o where o.tax_type is not null), -1);
  end if;
  if tg_op in ('UPDATE', 'INSERT') then
    perform app_private.add_sales_tax_totals(array(select n::app_public.journal_lines from new_rows n where n.tax_type is not null), 1);
  end if;
  return null;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.tg_journal_lines__same_transaction()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
begin
  -- created defaults to now(), the transaction's start: equal only within the posting transaction.
  if exists (select 1 from new_rows l join app_public.journal_entries j on j.id = l.entry_id where j.created <> now()) then
    raise exception 'Lines can only be added to a journal entry in the transaction that posts it.'
      using errcode = 'check_violation';
  end if;
  return null;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.tg_journal_lines__totals()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public'
AS $function$
declare
  v_first date; -- the earliest day whose totals the statement changed
begin
  -- The daily rows, each organization's advisory lock held, then the monthly ones when a day is
  -- before the current month (monthly-totals.sql: only such a change takes the organization's row
  -- and reads how far its months are rolled).
  if tg_op = 'INSERT' then
    with daily as (
      insert into app_public.account_daily_totals as t (organization_id, account_id, day, debit, credit)
        select organization_id, account_id, txn_date, sum(debit), sum(credit)
          from new_rows where not voided group by 1, 2, 3 order by 1, 2, 3
        on conflict (organization_id, account_id, day) do update
          set debit = t.debit + excluded.debit, credit = t.credit + excluded.credit
        returning t.organization_id, t.day)
    select min(d.day) into v_first
      from daily d, lateral (select pg_advisory_xact_lock_shared(app_private.monthly_totals_key(d.organization_id))) l;
    if v_first < app_private.current_month_start() then
      perform app_private.add_monthly_account_totals(array_agg(organization_id), array_agg(account_id), array_agg(txn_date),
                array_agg(debit), array_agg(credit))
         from new_rows where not voided;
    end if;
  elsif tg_op = 'UPDATE' then
    with daily as (
      insert into app_public.account_daily_totals as t (organization_id, account_id, day, debit, credit)
        select organization_id, account_id, txn_date, sum(debit), sum(credit) from (
          select organization_id, account_id, txn_date, debit, credit from new_rows where not voided
          union all
          select organization_id, account_id, txn_date, -debit, -credit from old_rows where not voided) x
        group by 1, 2, 3 having sum(debit) <> 0 or sum(credit) <> 0 order by 1, 2, 3
        on conflict (organization_id, account_id, day) do update
          set debit = t.debit + excluded.debit, credit = t.credit + excluded.credit
        returning t.organization_id, t.day)
    select min(d.day) into v_first
      from daily d, lateral (select pg_advisory_xact_lock_shared(app_private.monthly_totals_key(d.organization_id))) l;
    if v_first < app_private.current_month_start() then
      perform app_private.add_monthly_account_totals(array_agg(organization_id), array_agg(account_id), array_agg(txn_date),
                array_agg(debit), array_agg(credit))
         from (select organization_id, account_id, txn_date, debit, credit from new_rows where not voided
               union all
               select organization_id, account_id, txn_date, -debit, -credit from old_rows where not voided) x;
    end if;
  else
    with daily as (
      insert into app_public.account_daily_totals as t (organization_id, account_id, day, debit, credit)
        select organization_id, account_id, txn_date, -sum(debit), -sum(credit)
          from old_rows r where not voided
           -- Rows of an organization being deleted go with it.
           and exists (select 1 from app_public.organizations o where o.id = r.organization_id)
         group by 1, 2, 3 order by 1, 2, 3
        on conflict (organization_id, account_id, day) do update
          set debit = t.debit + excluded.debit, credit = t.credit + excluded.credit
        returning t.organization_id, t.day)
    select min(d.day) into v_first
      from daily d, lateral (select pg_advisory_xact_lock_shared(app_private.monthly_totals_key(d.organization_id))) l;
    if v_first < app_private.current_month_start() then
      perform app_private.add_monthly_account_totals(array_agg(organization_id), array_agg(account_id), array_agg(txn_date),
                array_agg(-debit), array_agg(-credit))
         from old_rows where not voided;
    end if;
  end if;
  return null;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.tg_ledger_event_audit__append_only()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$ begin raise exception 'The audit trail is append-only.' using errcode = 'AP403'; end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.tg_ledger_events__audit()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public'
AS $function$
declare
  v_action text := coalesce(nullif(current_setting('app.audit_action', true), ''), lower(tg_op));
  v_api_key uuid := app_public.current_api_key_id();
  v_user uuid := app_public.current_user_id();
begin
  if tg_op = 'INSERT' then
    -- An imported event's creation is recorded once per import run, by its import batch (who,
    -- when, which file): an import of 100,000 events writes one row, not 100,000. Nothing is lost:
    -- its later changes and its deletion record their old values here, as every event's do.
    insert into app_public.ledger_event_audit (organization_id, event_id, action, actor_api_key_id, actor_user_id, changes)
      select d.organization_id, d.id, v_action, v_api_key, v_user, d.changes
        from (select n.organization_id, n.id,
                     jsonb_strip_nulls(to_jsonb(n)) - array['id', 'organization_id', 'created', 'updated', 'has_memo'] changes
                from new_rows n where n.import_batch_id is null) d
       where d.changes <> '{}'::jsonb
       order by d.id;
  elsif tg_op = 'UPDATE' then
    insert into app_public.ledger_event_audit (organization_id, event_id, action, actor_api_key_id, actor_user_id, changes)
      select d.organization_id, d.id, v_action, v_api_key, v_user, d.changes
        from (select n.organization_id, n.id, jsonb_strip_nulls(jsonb_build_object(
          'event_type', case when o.event_type is distinct from n.event_type then jsonb_build_object('old', o.event_type, 'new', n.event_type) end,
          'direction', case when o.direction is distinct from n.direction then jsonb_build_object('old', o.direction, 'new', n.direction) end,
          'merchant_name', case when o.merchant_name is distinct from n.merchant_name then jsonb_build_object('old', o.merchant_name, 'new', n.merchant_name) end,
          'functional_amount', case when o.functional_amount is distinct from n.functional_amount then jsonb_build_object('old', o.functional_amount, 'new', n.functional_amount) end,
          'functional_currency', case when o.functional_currency is distinct from n.functional_currency then jsonb_build_object('old', o.functional_currency, 'new', n.functional_currency) end,
          'transaction_date', case when o.transaction_date is distinct from n.transaction_date then jsonb_build_object('old', o.transaction_date, 'new', n.transaction_date) end,
          'status', case when o.status is distinct from n.status then jsonb_build_object('old', o.status, 'new', n.status) end,
          'memo', case when o.memo is distinct from n.memo then jsonb_build_object('old', o.memo, 'new', n.memo) end,
          'has_document', case when o.has_document is distinct from n.has_document then jsonb_build_object('old', o.has_document, 'new', n.has_document) end,
          'category_id', case when o.category_id is distinct from n.category_id then jsonb_build_object('old', o.category_id, 'new', n.category_id) end,
          'payment_account_id', case when o.payment_account_id is distinct from n.payment_account_id then jsonb_build_object('old', o.payment_account_id, 'new', n.payment_account_id) end,
          'tax_amount', case when o.tax_amount is distinct from n.tax_amount then jsonb_build_object('old', o.tax_amount, 'new', n.tax_amount) end,
          'tax_account_id', case when o.tax_account_id is distinct from n.tax_account_id then jsonb_build_object('old', o.tax_account_id, 'new', n.tax_account_id) end,
          'tax_code', case when o.tax_code is distinct from n.tax_code then jsonb_build_object('old', o.tax_code, 'new', n.tax_code) end,
          'splits', case when o.splits is distinct from n.splits then jsonb_build_object('old', o.splits, 'new', n.splits) end,
          'contact_id', case when o.contact_id is distinct from n.contact_id then jsonb_build_object('old', o.contact_id, 'new', n.contact_id) end,
          'journal_entry_id', case when o.journal_entry_id is distinct from n.journal_entry_id then jsonb_build_object('old', o.journal_entry_id, 'new', n.journal_entry_id) end,
          'reversal_entry_id', case when o.reversal_entry_id is distinct from n.reversal_entry_id then jsonb_build_object('old', o.reversal_entry_id, 'new', n.reversal_entry_id) end,
          'reference', case when o.reference is distinct from n.reference then jsonb_build_object('old', o.reference, 'new', n.reference) end,
          'backfill_id', case when o.backfill_id is distinct from n.backfill_id then jsonb_build_object('old', o.backfill_id, 'new', n.backfill_id) end,
          'source', case when o.source is distinct from n.source then jsonb_build_object('old', o.source, 'new', n.source) end,
          'import_batch_id', case when o.import_batch_id is distinct from n.import_batch_id then jsonb_build_object('old', o.import_batch_id, 'new', n.import_batch_id) end,
          'source_id', case when o.source_id is distinct from n.source_id then jsonb_build_object('old', o.source_id, 'new', n.source_id) end
                     )) changes
                from new_rows n join old_rows o on o.id = n.id) d
       where d.changes <> '{}'::jsonb
       order by d.id;
  else
    insert into app_public.ledger_event_audit (organization_id, event_id, action, actor_api_key_id, actor_user_id, changes)
      select d.organization_id, d.id, v_action, v_api_key, v_user, d.changes
        from (select o.organization_id, o.id,
                     (select coalesce(jsonb_object_agg(f.key, jsonb_build_object('old', f.value)), '{}'::jsonb)
                        from jsonb_each(jsonb_strip_nulls(to_jsonb(o)) - array['id', 'organization_id', 'created', 'updated', 'has_memo']) f) changes
                from old_rows o
               -- An organization being deleted takes its events with it: nothing to record for it.
               where exists (select 1 from app_public.organizations g where g.id = o.organization_id)) d
       where d.changes <> '{}'::jsonb
       order by d.id;
  end if;
  return null;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.tg_ledger_events__changes()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public'
AS $function$
begin
  if tg_op = 'INSERT' then
    insert into app_public.ledger_change_feed (organization_id, event_id, kind)
      select n.organization_id, n.id, 'created' from new_rows n order by n.id;
  elsif tg_op = 'UPDATE' then
    insert into app_public.ledger_change_feed (organization_id, event_id, kind)
      select d.organization_id, d.id, d.kind
        from (select n.organization_id, n.id, app_private.change_kind(o, n) kind from new_rows n join old_rows o on o.id = n.id) d
       where d.kind is not null
       order by d.id;
  else
    insert into app_public.ledger_change_feed (organization_id, event_id, kind)
      select o.organization_id, o.id, 'deleted' from old_rows o
       -- An organization being deleted takes its feed with it.
       where exists (select 1 from app_public.organizations g where g.id = o.organization_id)
       order by o.id;
  end if;
  return null;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.tg_ledger_events__counts()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public'
AS $function$
declare
  v_first date; -- the earliest day whose counts the statement changed
begin
  -- The daily rows, each organization's advisory lock held, then the monthly ones when a day is
  -- before the current month (monthly-totals.sql: only such a change takes the organization's row
  -- and reads how far its months are rolled).
  if tg_op = 'INSERT' then
    with daily as (
      insert into app_public.ledger_event_daily_counts as t (organization_id, day, status, n)
        select organization_id, transaction_date, status, count(*) from new_rows group by 1, 2, 3 order by 1, 2, 3
        on conflict (organization_id, day, status) do update set n = t.n + excluded.n
        returning t.organization_id, t.day)
    select min(d.day) into v_first
      from daily d, lateral (select pg_advisory_xact_lock_shared(app_private.monthly_totals_key(d.organization_id))) l;
    if v_first < app_private.current_month_start() then
      perform app_private.add_monthly_event_counts(array_agg(organization_id), array_agg(transaction_date), array_agg(status),
                array_agg(1::bigint))
         from new_rows;
    end if;
  elsif tg_op = 'UPDATE' then
    with daily as (
      insert into app_public.ledger_event_daily_counts as t (organization_id, day, status, n)
        select organization_id, d, s, sum(k) from (
          select organization_id, transaction_date d, status s, 1 k from new_rows
          union all
          select organization_id, transaction_date, status, -1 from old_rows) x
        group by 1, 2, 3 having sum(k) <> 0 order by 1, 2, 3
        on conflict (organization_id, day, status) do update set n = t.n + excluded.n
        returning t.organization_id, t.day)
    select min(d.day) into v_first
      from daily d, lateral (select pg_advisory_xact_lock_shared(app_private.monthly_totals_key(d.organization_id))) l;
    if v_first < app_private.current_month_start() then
      perform app_private.add_monthly_event_counts(array_agg(organization_id), array_agg(d), array_agg(s), array_agg(k))
         from (select organization_id, transaction_date d, status s, 1::bigint k from new_rows
               union all
               select organization_id, transaction_date, status, -1 from old_rows) x;
    end if;
  else
    with daily as (
      insert into app_public.ledger_event_daily_counts as t (organization_id, day, status, n)
        select organization_id, transaction_date, status, -count(*) from old_rows r
         -- Rows of an organization being deleted go with it.
         where exists (select 1 from app_public.organizations o where o.id = r.organization_id)
         group by 1, 2, 3 order by 1, 2, 3
        on conflict (organization_id, day, status) do update set n = t.n + excluded.n
        returning t.organization_id, t.day)
    select min(d.day) into v_first
      from daily d, lateral (select pg_advisory_xact_lock_shared(app_private.monthly_totals_key(d.organization_id))) l;
    if v_first < app_private.current_month_start() then
      perform app_private.add_monthly_event_counts(array_agg(organization_id), array_agg(transaction_date), array_agg(status),
                array_agg(-1::bigint))
         from old_rows;
    end if;
  end if;
  return null;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.tg_ledger_events__merchant_counts()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public'
AS $function$
begin
  if tg_op = 'INSERT' then
    insert into app_public.merchant_category_counts as t (organization_id, merchant, category_id, shard, confirmations)
      select n.organization_id, app_private.merchant_family(n.merchant_name), n.category_id, app_private.counter_shard(), count(*)
        from new_rows n
       where n.status in ('confirmed', 'synced', 'reconciled') and n.category_id is not null
         and app_private.merchant_family(n.merchant_name) <> ''
       group by 1, 2, 3 order by 1, 2, 3
      on conflict (organization_id, merchant, category_id, shard) do update set confirmations = t.confirmations + excluded.confirmations;
  elsif tg_op = 'UPDATE' then
    insert into app_public.merchant_category_counts as t (organization_id, merchant, category_id, shard, confirmations)
      select x.organization_id, app_private.merchant_family(x.merchant_name), x.category_id, app_private.counter_shard(), sum(x.k)
        from new_rows n join old_rows o on o.id = n.id
        cross join lateral (values (n.organization_id, n.merchant_name, n.category_id, n.status, 1),
                                   (o.organization_id, o.merchant_name, o.category_id, o.status, -1))
          x (organization_id, merchant_name, category_id, status, k)
       where (n.status, n.category_id, n.merchant_name) is distinct from (o.status, o.category_id, o.merchant_name)
         and x.status in ('confirmed', 'synced', 'reconciled') and x.category_id is not null
         and app_private.merchant_family(x.merchant_name) <> ''
       group by 1, 2, 3 having sum(x.k) <> 0
       order by 1, 2, 3
      on conflict (organization_id, merchant, category_id, shard) do update set confirmations = t.confirmations + excluded.confirmations;
  else
    insert into app_public.merchant_category_counts as t (organization_id, merchant, category_id, shard, confirmations)
      select o.organization_id, app_private.merchant_family(o.merchant_name), o.category_id, app_private.counter_shard(), -count(*)
        from old_rows o
       where o.status in ('confirmed', 'synced', 'reconciled') and o.category_id is not null
         and app_private.merchant_family(o.merchant_name) <> ''
         -- Rows of an organization being deleted go with it.
         and exists (select 1 from app_public.organizations g where g.id = o.organization_id)
       group by 1, 2, 3 order by 1, 2, 3
      on conflict (organization_id, merchant, category_id, shard) do update set confirmations = t.confirmations + excluded.confirmations;
  end if;
  return null;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.tg_ledger_events__reconciled()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public'
AS $function$
begin
  if tg_op = 'DELETE' then
    if exists (select 1 from old_rows o where o.status = 'reconciled'
                 and exists (select 1 from app_public.organizations g where g.id = o.organization_id)) then
      perform app_private.fail('Event is reconciled.');
    end if;
    return null;
  end if;
  if (new.organization_id, new.event_type, new.direction, new.merchant_name, new.functional_amount, new.functional_currency,
      new.transaction_date, new.memo, new.category_id, new.payment_account_id, new.tax_amount, new.tax_account_id,
      new.tax_code, new.journal_entry_id, new.reference, new.splits, new.contact_id)
     is distinct from
     (old.organization_id, old.event_type, old.direction, old.merchant_name, old.functional_amount, old.functional_currency,
      old.transaction_date, old.memo, old.category_id, old.payment_account_id, old.tax_amount, old.tax_account_id,
      old.tax_code, old.journal_entry_id, old.reference, old.splits, old.contact_id)
     or new.status not in ('reconciled', 'confirmed', 'synced', 'ignored')
     -- Ignored only by a reversal, which keeps the entry and adds its opposite.
     or (new.status = 'ignored' and (old.reversal_entry_id is not null or new.reversal_entry_id is null)) then
    perform app_private.fail('Event is reconciled.');
  end if;
  return new;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.tg_ledger_events__rematch_receipts()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
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
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.tg_memberships__keep_owner()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public'
AS $function$
declare org uuid := coalesce(old.organization_id, new.organization_id);
begin
  perform 1 from app_public.organizations where id = org for update;
  if not found then return null; end if; -- the organization itself is being deleted
  if not exists (select 1 from app_public.memberships where organization_id = org and role = 'owner') then
    perform app_private.fail('An organization must keep at least one owner.');
  end if;
  return null;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.tg_receipts__has_document()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
declare ids uuid[];
begin
  if tg_op = 'INSERT' then ids := array[new.event_id];
  elsif tg_op = 'DELETE' then ids := array[old.event_id];
  elsif new.event_id is distinct from old.event_id then ids := array[old.event_id, new.event_id];
  else return null;
  end if;
  -- Locked first, in id order: a concurrent link or unlink of the same event waits here, and the
  -- update below (a new statement) then sees what it committed.
  perform 1 from app_public.ledger_events e where e.id = any (ids) order by e.id for no key update;
  update app_public.ledger_events e
     set has_document = exists (select 1 from app_public.receipts r where r.event_id = e.id)
   where e.id = any (ids)
     and e.has_document is distinct from exists (select 1 from app_public.receipts r where r.event_id = e.id);
  return null;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.tg_receipts__link_state()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
begin
  if new.event_id is null and old.event_id is not null then
    new.linked_by := null;
    new.linked_at := null;
    if new.match_status = 'matched' then new.match_status := 'unmatched'; end if;
    -- The person's link is gone with its event: the receipt waits for review (and matching) again.
    if new.status = 'reviewed' then new.status := case when new.extracted_at is null then 'draft' else 'processed' end; end if;
  end if;
  return new;
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.tg_reconciliation_clearings__changes()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public'
AS $function$
begin
  if tg_op = 'INSERT' then
    insert into app_public.ledger_change_feed (organization_id, event_id, kind)
      select distinct n.organization_id, n.event_id, 'updated' from new_rows n order by n.event_id;
  else
    insert into app_public.ledger_change_feed (organization_id, event_id, kind)
      select distinct o.organization_id, o.event_id, 'updated' from old_rows o
       -- An organization being deleted takes its feed with it; an event deleted has its own change.
       where exists (select 1 from app_public.organizations g where g.id = o.organization_id)
         and exists (select 1 from app_public.ledger_events e where e.id = o.event_id)
       order by o.event_id;
  end if;
  return null;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.try_date(day text)
 RETURNS date
 LANGUAGE plpgsql
 IMMUTABLE
AS $function$
begin
  if day !~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' then return null; end if;
  return make_date(substr(day, 1, 4)::int, substr(day, 6, 2)::int, substr(day, 9, 2)::int);
exception when others then
  return null;
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.unclear_event(event_id uuid)
 RETURNS void
 LANGUAGE sql
AS $function$
  delete from app_public.reconciliation_clearings c
   using app_public.reconciliations r
   where c.event_id = unclear_event.event_id and r.id = c.reconciliation_id and r.status = 'open'
$function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.unlink_receipt(r app_public.receipts, new_status text)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
begin
  if r.event_id is not null then
    insert into app_public.receipt_unlinked_pairs (organization_id, receipt_id, event_id)
      values (r.organization_id, r.id, r.event_id) on conflict do nothing;
  end if;
  update app_public.receipts x set event_id = null, linked_by = null, linked_at = null, status = new_status,
         match_status = case when new_status = 'draft' then 'pending' else 'unmatched' end, match_details = null
   where x.id = r.id;
  -- A link removed; a receipt never linked (rejected unread, say) changes no match.
  if r.event_id is not null then
    perform app_private.record_webhook_event(r.organization_id, 'receipt.unmatched', r.id);
  end if;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.update_webhook_endpoint(organization_id uuid, webhook_endpoint_id uuid, url text, events text[], description text, status text)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  s jsonb := app_private.webhook_endpoint_settings(organization_id, url, events, description);
begin
  if status is not null and status not in ('enabled', 'disabled') then
    perform app_private.fail('status must be one of: enabled, disabled.');
  end if;
  update app_public.webhook_endpoints x
     set url = coalesce(s->>'url', x.url),
         events = case when s->'events' = 'null'::jsonb then x.events else array(select jsonb_array_elements_text(s->'events')) end,
         description = case when update_webhook_endpoint.description is null then x.description else s->>'description' end,
         status = coalesce(update_webhook_endpoint.status, x.status),
         disabled_reason = case when coalesce(update_webhook_endpoint.status, x.status) = 'enabled' then null
                                when update_webhook_endpoint.status = 'disabled' then null else x.disabled_reason end,
         -- Enabled again: its failures so far no longer count towards disabling it.
         failing_since = case when update_webhook_endpoint.status = 'enabled' then null else x.failing_since end
   where x.organization_id = update_webhook_endpoint.organization_id and x.id = webhook_endpoint_id;
  if not found then perform app_private.fail('Webhook endpoint not found.', 'AP404'); end if;
  if update_webhook_endpoint.status = 'disabled' then
    perform app_private.fail_pending_webhook_deliveries(webhook_endpoint_id);
  elsif update_webhook_endpoint.status = 'enabled' then
    -- A delivery made while it was being disabled may still wait: its jobs again.
    perform app_private.resume_webhook_endpoint(webhook_endpoint_id);
  end if;
  return jsonb_build_object('success', true, 'error', null, 'webhookEndpoint', app_private.webhook_endpoint_json(webhook_endpoint_id));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.upload_by_key(object_key text)
 RETURNS app_public.uploads
 LANGUAGE plpgsql
 STABLE
AS $function$
declare u app_public.uploads;
begin
  select * into u from app_public.uploads x where x.object_key = upload_by_key.object_key
     and x.organization_id = app_public.current_organization_id();
  if not found then perform app_private.fail('Upload not found: upload the file with POST /uploads first.', 'AP404'); end if;
  return u;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.user_by_email(email text)
 RETURNS app_public.users
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public'
AS $function$
declare u app_public.users;
begin
  select * into u from app_public.users x where lower(x.email) = lower(app_private.clean_text(user_by_email.email));
  if not found then perform app_private.fail(format('No user with email "%s".', btrim(user_by_email.email)), 'AP404'); end if;
  return u;
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.uuid_list(ids jsonb, field text)
 RETURNS uuid[]
 LANGUAGE plpgsql
 IMMUTABLE
AS $function$
declare
  x jsonb;
  out uuid[] := '{}';
begin
  if ids is null then return null; end if;
  if jsonb_typeof(ids) <> 'array' then perform app_private.fail(format('%s must be a list of UUIDs.', field)); end if;
  for x in select e from jsonb_array_elements(ids) e loop
    if jsonb_typeof(x) <> 'string' then perform app_private.fail(format('%s must be a list of UUIDs.', field)); end if;
    out := out || app_private.parse_uuid(x #>> '{}', format('%s must be a list of UUIDs.', field));
  end loop;
  return out;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.uuid_v7()
 RETURNS uuid
 LANGUAGE sql
 PARALLEL SAFE
AS $function$
  -- The random UUID's first 6 bytes replaced by the time; its version bits 0100 set to 0111.
  select encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
           placing substring(int8send((extract(epoch from clock_timestamp()) * 1000)::bigint) from 3)
           from 1 for 6), 52, 1), 53, 1), 'hex')::uuid
$function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.vendor_key(name text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  select case when length(replace(k, ' ', '')) < 3 then '' else k end
    from (select array_to_string(array(
            select w from regexp_split_to_table(
              translate(lower(coalesce(name, '')), 'àâäáãåçéèêëíìîïñóòôöõúùûüýÿœæ', 'aaaaaaceeeeiiiinooooouuuuyyoa'), '[^a-z]+') w
             where w <> '' and w <> all (array['inc', 'ltd', 'llc', 'llp', 'corp', 'co', 'sdn', 'bhd', 'the', 'store', 'shop',
                                                'ca', 'on', 'qc', 'bc', 'ab', 'mb', 'sk', 'ns', 'nb', 'nl', 'pe', 'pos', 'purchase'])), ' ') as k) x
$function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.vendor_similarity(vendor text, merchant text)
 RETURNS real
 LANGUAGE plpgsql
 IMMUTABLE PARALLEL SAFE
AS $function$
declare
  -- PL/pgSQL: its statements are planned once per session (an SQL function with a FROM is not
  -- inlined and was planned again for every candidate).
  a text := app_private.vendor_key(vendor);
  b text := app_private.vendor_key(merchant);
begin
  if a = '' or b = '' then return 0; end if;
  return greatest(public.strict_word_similarity(a, b), public.strict_word_similarity(b, a));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.void_document(org uuid, kind text, id uuid, posting_date text)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  d app_public.documents;
  j app_public.journal_entries;
  v_date date;
  v_entry uuid;
begin
  perform app_private.assert_org_access(org, false);
  d := app_private.document_for_update(kind, id);
  if d.status = 'void' then perform app_private.fail('Already void.'); end if;
  if d.amount_paid > 0 then perform app_private.fail('A document with payments cannot be voided.'); end if;
  if d.journal_entry_id is not null then
    select * into j from app_public.journal_entries x where x.id = d.journal_entry_id;
    v_date := case when posting_date is null then greatest(current_date, j.txn_date)
                   else app_private.parse_date(posting_date, 'Posting date must be a date in YYYY-MM-DD format.') end;
    if v_date < j.txn_date then
      perform app_private.fail(format('Posting date must not be before the entry it reverses (%s).', to_char(j.txn_date, 'YYYY-MM-DD')));
    end if;
    v_entry := app_private.uuid_v7();
    insert into app_public.journal_entries (id, organization_id, document_id, txn_date, total_amount, reverses_entry_id)
      values (v_entry, org, d.id, v_date, j.total_amount, j.id);
    insert into app_public.journal_lines (organization_id, entry_id, account_id, txn_date, debit, credit, tax_type, tax_on_sale)
      select l.organization_id, v_entry, l.account_id, v_date, l.credit, l.debit, l.tax_type, l.tax_on_sale
        from app_public.journal_lines l where l.entry_id = j.id and not l.voided order by l.id;
  end if;
  update app_public.documents x set status = 'void', void_entry_id = v_entry, voided_at = now() where x.id = d.id;
  return jsonb_build_object('success', true, 'error', null,
    'document', (select app_private.document_json(x) from app_public.documents x where x.id = d.id));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.webhook_deliveries_due(webhook_endpoint_id uuid, batch integer)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$
  select jsonb_build_object('organizationId', ep.organization_id, 'webhookEndpointId', ep.id, 'url', ep.url,
           'secretSealed', ep.secret_sealed, 'deliveries', coalesce((
      select jsonb_agg(jsonb_build_object('deliveryId', d.id, 'attempt', d.attempts,
               'body', jsonb_build_object('id', ev.id, 'type', ev.type, 'created', app_private.iso(ev.created),
                 'organizationId', ev.organization_id, 'data', jsonb_build_object('object', ev.object))::text) order by d.seq)
        from (select * from app_public.webhook_deliveries x
               where x.webhook_endpoint_id = ep.id and x.status = 'pending' and x.next_attempt_at <= now()
               order by x.seq limit batch) d
        join app_public.webhook_events ev on ev.id = d.webhook_event_id), '[]'::jsonb))
    from app_public.webhook_endpoints ep
   where ep.id = webhook_deliveries_due.webhook_endpoint_id and ep.status = 'enabled'
$function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.webhook_delivery_json(d app_public.webhook_deliveries, event_type text)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$ select jsonb_build_object('id', d.id, 'webhookEndpointId', d.webhook_endpoint_id, 'eventId', d.webhook_event_id,
     'eventType', event_type, 'status', d.status, 'attempts', d.attempts, 'responseCode', d.response_code,
     'lastError', d.last_error, 'lastAttemptAt', app_private.iso(d.last_attempt_at),
     'nextAttemptAt', app_private.iso(d.next_attempt_at), 'deliveredAt', app_private.iso(d.delivered_at),
     'created', app_private.iso(d.created)) $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.webhook_endpoint_has_due(webhook_endpoint_id uuid)
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE
AS $function$
begin
  return exists (select 1 from app_public.webhook_deliveries d
                  where d.webhook_endpoint_id = webhook_endpoint_has_due.webhook_endpoint_id and d.status = 'pending'
                    and d.next_attempt_at <= now());
end $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.webhook_endpoint_json(webhook_endpoint_id uuid)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$ select jsonb_build_object('id', ep.id, 'url', ep.url, 'events', to_jsonb(ep.events), 'description', ep.description,
     'status', ep.status, 'disabledReason', ep.disabled_reason, 'created', app_private.iso(ep.created))
     from app_public.webhook_endpoints ep where ep.id = webhook_endpoint_id $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.webhook_endpoint_settings(organization_id uuid, url text, events text[], description text)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
declare
  -- The scheme as the URL parser writes it (lower case), which the table's check expects.
  v_url text := regexp_replace(app_private.clean_text(url), '^[Hh][Tt][Tt][Pp]([Ss]?)://', 'http\1://');
  v_events text[];
  v_unknown text;
  v_description text := app_private.clean_text(description);
begin
  perform app_private.assert_org_access(organization_id, true);
  if v_url is not null and (v_url !~* '^https?://' or length(v_url) > 2048) then
    perform app_private.fail('url must be an https URL of at most 2048 characters.');
  end if;
  if events is not null then
    select array_agg(distinct btrim(e) order by btrim(e)) into v_events from unnest(events) e;
    if v_events is null then perform app_private.fail('events must name at least one event type.'); end if;
    select e into v_unknown from unnest(v_events) e where not (e = any (app_private.webhook_event_types())) limit 1;
    if v_unknown is not null then
      perform app_private.fail(format('events: unknown event type %s; known: %s.', v_unknown,
        array_to_string(app_private.webhook_event_types(), ', ')));
    end if;
  end if;
  if length(v_description) > 500 then perform app_private.fail('description must be at most 500 characters.'); end if;
  return jsonb_build_object('url', v_url, 'events', to_jsonb(v_events), 'description', v_description);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.webhook_endpoints_due(organization_id uuid)
 RETURNS uuid[]
 LANGUAGE sql
 STABLE
AS $function$
  select coalesce(array_agg(ep.id order by ep.id), '{}')
    from app_public.webhook_endpoints ep
   where ep.organization_id = webhook_endpoints_due.organization_id and ep.status = 'enabled'
     and app_private.webhook_endpoint_has_due(ep.id)
$function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_private.webhook_event_types()
 RETURNS text[]
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ select array['ledger_event.created', 'ledger_event.confirmed', 'ledger_event.rejected', 'ledger_event.reversed',
                'bank_import.completed', 'processor_import.completed', 'receipt.received', 'receipt.matched',
                'receipt.unmatched', 'reconciliation.completed', 'invoice.approved', 'invoice.paid', 'bill.approved', 'bill.paid'] $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_private.webhook_retry_delay(attempts integer, base interval)
 RETURNS interval
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ select least(base * power(4, least(greatest(attempts - 1, 0), 16))::float8, interval '12 hours') $function$
-- grants: <owner>: EXECUTE

CREATE OR REPLACE FUNCTION app_public.account_balances(organization_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
 SET plan_cache_mode TO 'force_custom_plan'
AS $function$
begin
  perform app_private.assert_org_access(organization_id, false);
  return coalesce((
    select jsonb_agg(jsonb_build_object('accountId', a.id, 'accountName', a.name, 'accountType', a.account_type,
        'classification', a.classification, 'balance', app_private.money(coalesce(b.balance, 0)))
        order by lower(a.name), a.id)
      from app_public.accounts a
      left join app_private.account_balances(account_balances.organization_id) b on b.account_id = a.id
     where a.organization_id = account_balances.organization_id and a.active), '[]'::jsonb);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.add_member(organization_id uuid, email text, role text)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public'
AS $function$
begin
  perform app_private.assert_org_access(organization_id, true);
  if role = 'owner' and app_private.caller_role(organization_id) <> 'owner' then
    perform app_private.fail('Only an owner can grant, change or remove the owner role.');
  end if;
  return jsonb_build_object('success', true, 'error', null,
    'member', app_private.add_member(organization_id, email, role));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.aging_report(organization_id uuid, as_of text DEFAULT NULL::text, kind text DEFAULT NULL::text)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
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
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.apply_category_rule(organization_id uuid, category_rule_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  r app_public.category_rules;
  n integer;
begin
  perform app_private.assert_org_access(organization_id, false);
  select * into r from app_public.category_rules x
   where x.organization_id = apply_category_rule.organization_id and x.id = category_rule_id for no key update;
  if not found then perform app_private.fail('Category rule not found.', 'AP404'); end if;
  n := app_private.apply_rule(r, false);
  select * into r from app_public.category_rules x where x.id = r.id;
  return jsonb_build_object('success', true, 'error', null, 'appliedCount', n, 'categoryRule', app_private.category_rule_json(r));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.apply_ledger_event_to_documents(organization_id uuid, event_id uuid, allocations jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  e app_public.ledger_events;
  v_kind text;
begin
  perform app_private.assert_org_access(organization_id, false);
  perform set_config('app.audit_action', 'classify', true);
  perform app_private.lock_allocated_documents(allocations);
  select * into e from app_public.ledger_events x where x.id = event_id for update;
  if not found then perform app_private.fail('Ledger event not found.', 'AP404'); end if;
  -- A pending line is not yet the bank's: its posted row settles it (docs/api.md, Bank statement imports).
  if e.status = 'pending' then
    perform app_private.fail('A pending event cannot pay documents: apply it once the bank posts it.');
  end if;
  if e.status <> 'needs_review' then perform app_private.fail('Only an event in needs_review can pay documents.'); end if;
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
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.approve_bill(organization_id uuid, bill_id uuid)
 RETURNS jsonb
 LANGUAGE sql
AS $function$ select app_private.approve_document(organization_id, 'bill', bill_id) $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.approve_invoice(organization_id uuid, invoice_id uuid)
 RETURNS jsonb
 LANGUAGE sql
AS $function$ select app_private.approve_document(organization_id, 'invoice', invoice_id) $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.attach_receipt_to_event(organization_id uuid, event_id uuid, object_key text, filename text DEFAULT NULL::text)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  e app_public.ledger_events;
  r app_public.receipts;
begin
  perform app_private.assert_org_access(organization_id, false);
  -- The receipt, then the event: the order every link takes its locks in.
  r := app_private.receipt_for_update((app_private.store_upload_receipt(object_key, filename)->>'receiptId')::uuid);
  e := app_private.event_for_link(event_id);
  if r.event_id is not null and r.event_id <> e.id and r.linked_by = 'person' then
    perform app_private.fail('This file is already attached to another transaction; unlink it first.');
  end if;
  perform app_private.link_receipt(r, e);
  return jsonb_build_object('success', true, 'error', null, 'receiptId', r.id);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.balance_sheet(organization_id uuid, as_of text DEFAULT NULL::text)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
 SET plan_cache_mode TO 'force_custom_plan'
AS $function$
declare
  v_as_of date;
  r jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  v_as_of := app_private.as_of_date(as_of);
  with b as (
    select account_id, account_name, classification,
           case when classification = 'asset' then net_debit else -net_debit end as balance
      from app_private.closing_balances(balance_sheet.organization_id, v_as_of)
  ),
  line as (
    select classification, jsonb_agg(jsonb_build_object('accountId', account_id, 'accountName', account_name,
             'balance', app_private.money(balance)) order by lower(account_name), account_id) as lines, sum(balance) as total
      from b where classification in ('asset', 'liability', 'equity') group by classification
  )
  select jsonb_build_object('asOf', to_char(v_as_of, 'YYYY-MM-DD'),
      'fiscalYearStart', to_char(app_private.fiscal_year_start(o.fiscal_year_start, v_as_of), 'YYYY-MM-DD'),
      'assets', coalesce((select lines from line where classification = 'asset'), '[]'::jsonb),
      'liabilities', coalesce((select lines from line where classification = 'liability'), '[]'::jsonb),
      'equity', coalesce((select lines from line where classification = 'equity'), '[]'::jsonb),
      'totalAssets', app_private.money(coalesce((select total from line where classification = 'asset'), 0)),
      'totalLiabilities', app_private.money(coalesce((select total from line where classification = 'liability'), 0)),
      'totalEquity', app_private.money(coalesce((select total from line where classification = 'equity'), 0)),
      -- Revenue less expenses since the fiscal year began (credit-normal, as equity is).
      'currentYearEarnings', app_private.money(coalesce((select sum(balance) from b where classification in ('revenue', 'expense')), 0)))
    into r
    from app_public.organizations o where o.id = balance_sheet.organization_id;
  return r;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.batch_create_accounts(organization_id uuid, items jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
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
      perform app_private.insert_account(batch_create_accounts.organization_id, app_private.item_text(item, 'name'),
        app_private.item_uuid(item, 'taxCodeId'), app_private.item_text(item, 'accountType'),
        app_private.item_text(item, 'classification'), app_private.item_text(item, 'subType'),
        app_private.item_text(item, 'lastFour'), app_private.item_uuid(item, 'parentId'));
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
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.batch_create_contacts(organization_id uuid, items jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
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
      perform app_private.insert_contact(batch_create_contacts.organization_id, app_private.item_text(item, 'contactType'),
        app_private.item_text(item, 'displayName'), app_private.item_text(item, 'email'), app_private.item_text(item, 'phone'));
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
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.check_bank_statement_dups(organization_id uuid, payment_account_id uuid, rows jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
begin
  perform app_private.assert_org_access(organization_id, false);
  perform app_private.check_statement_size(rows);
  return jsonb_build_object('success', true, 'error', null,
    'results', app_private.check_bank_statement_dups(organization_id, payment_account_id, rows));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.complete_reconciliation(organization_id uuid, reconciliation_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  r app_public.reconciliations;
  v_cleared numeric;
begin
  perform app_private.assert_org_access(organization_id, false);
  perform set_config('app.audit_action', 'reconcile', true);
  r := app_private.lock_reconciliation(reconciliation_id);
  if r.status = 'completed' then perform app_private.fail('Reconciliation is already completed.'); end if;
  if r.status <> 'open' then perform app_private.fail(format('Reconciliation is %s.', r.status)); end if;
  -- The ticked events, locked before the sum: a reject or a reversal of one of them in flight
  -- commits first (and its tick no longer counts), or waits for this to complete.
  perform 1 from app_public.ledger_events e join app_public.reconciliation_clearings c on c.event_id = e.id
   where c.reconciliation_id = r.id order by e.id for no key update of e;
  v_cleared := app_private.reconciliation_cleared_balance(r);
  if v_cleared <> r.closing_balance then
    perform app_private.fail(format('The difference must be 0.00 to complete the reconciliation; it is %s.',
      app_private.money(r.closing_balance - v_cleared)));
  end if;
  -- Ticks of events rejected or reversed since are not part of it.
  delete from app_public.reconciliation_clearings c
   using app_public.ledger_events e
   where c.reconciliation_id = r.id and e.id = c.event_id and e.status not in ('confirmed', 'synced', 'reconciled');
  update app_public.ledger_events e set status = 'reconciled'
    from app_public.reconciliation_clearings c
   where c.reconciliation_id = r.id and e.id = c.event_id and e.status in ('confirmed', 'synced');
  update app_public.reconciliations x set status = 'completed', cleared_balance = v_cleared, completed_at = now()
   where x.id = r.id returning * into r;
  perform app_private.record_webhook_event(organization_id, 'reconciliation.completed', r.id, app_private.reconciliation_json(r));
  return jsonb_build_object('success', true, 'error', null, 'reconciliation', app_private.reconciliation_json(r));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.confirm_ledger_event(organization_id uuid, event_id uuid, posting_date text DEFAULT NULL::text)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  e app_public.ledger_events;
  v_entry uuid;
  v_date date;
begin
  perform app_private.assert_org_access(organization_id, false);
  perform set_config('app.audit_action', 'confirm', true);
  -- The row lock serializes concurrent confirms: the first posts, the others see it confirmed.
  select * into e from app_public.ledger_events x where x.id = event_id for update;
  if not found then perform app_private.fail('Ledger event not found.', 'AP404'); end if;
  if e.status in ('confirmed', 'synced', 'reconciled') then perform app_private.fail('Event is already confirmed.'); end if;
  if e.status = 'pending' then
    perform app_private.fail('A pending event cannot be confirmed: it is settled when the bank posts it.');
  end if;
  if e.status <> 'needs_review' then perform app_private.fail('Only events in needs_review can be confirmed.'); end if;
  if e.category_id is null or e.payment_account_id is null then
    perform app_private.fail('Category and payment account are required to confirm.');
  end if;
  -- The accounts may have changed since classification.
  if e.splits is null then perform app_private.check_category(e.category_id, e.event_type);
  else perform app_private.check_split_categories(e.splits, e.event_type);
  end if;
  perform app_private.check_payment_account(e.payment_account_id);
  if coalesce(e.tax_amount, 0) > 0 then perform app_private.check_tax_account(e.tax_account_id); end if;
  if coalesce(e.tax_amount, 0) >= e.functional_amount then perform app_private.fail('Tax amount must be less than the amount.'); end if;
  v_date := case when posting_date is null then e.transaction_date
                 else app_private.parse_date(posting_date, 'Posting date must be a date in YYYY-MM-DD format.') end;
  -- Later, as when the transaction's own period is locked; never into a period before it.
  if v_date < e.transaction_date then
    perform app_private.fail(format('Posting date must not be before the transaction date (%s).', to_char(e.transaction_date, 'YYYY-MM-DD')));
  end if;
  select p.entry_id into v_entry from app_private.post_journal_entries(array[e.id], v_date) p;
  perform app_private.record_webhook_event(organization_id, 'ledger_event.confirmed', e.id);
  return jsonb_build_object('success', true, 'error', null, 'eventId', e.id, 'journalEntryId', v_entry);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.create_account(organization_id uuid, name text, tax_code_id uuid DEFAULT NULL::uuid, account_type text DEFAULT NULL::text, classification text DEFAULT NULL::text, sub_type text DEFAULT NULL::text, last_four text DEFAULT NULL::text, parent_id uuid DEFAULT NULL::uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
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
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.create_api_key(organization_id uuid, label text DEFAULT NULL::text)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public'
AS $function$
begin
  perform app_private.assert_org_access(organization_id, true);
  return jsonb_build_object('success', true, 'error', null)
    || app_private.create_api_key(organization_id, label, app_public.current_user_id());
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.create_bill(organization_id uuid, contact_id uuid, number text, issue_date text, due_date text, lines jsonb, memo text DEFAULT NULL::text)
 RETURNS jsonb
 LANGUAGE sql
AS $function$ select app_private.create_document(organization_id, 'bill', contact_id, number, issue_date, due_date, lines, memo) $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.create_category_rule(organization_id uuid, vendor_pattern text, category_id uuid DEFAULT NULL::uuid, priority integer DEFAULT NULL::integer, direction text DEFAULT NULL::text, amount_min text DEFAULT NULL::text, amount_max text DEFAULT NULL::text, payment_account_id uuid DEFAULT NULL::uuid, contact_id uuid DEFAULT NULL::uuid, tax_code text DEFAULT NULL::text, splits jsonb DEFAULT NULL::jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare r app_public.category_rules;
begin
  perform app_private.assert_org_access(organization_id, false);
  r.organization_id := create_category_rule.organization_id;
  r := app_private.checked_rule(r, vendor_pattern, category_id, priority, direction, amount_min, amount_max,
    payment_account_id, contact_id, tax_code, splits);
  begin
    insert into app_public.category_rules (organization_id, vendor_pattern, account_id, priority, direction, amount_min,
        amount_max, payment_account_id, contact_id, tax_code, splits)
      values (r.organization_id, r.vendor_pattern, r.account_id, r.priority, r.direction, r.amount_min, r.amount_max,
        r.payment_account_id, r.contact_id, r.tax_code, r.splits)
      returning * into r;
  exception when unique_violation then
    perform app_private.fail('A category rule with this pattern and these conditions already exists.');
  end;
  -- Read again: the insert trigger has just classified matching events and counted them.
  select * into r from app_public.category_rules x where x.id = r.id;
  return jsonb_build_object('success', true, 'error', null, 'categoryRule', app_private.category_rule_json(r));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.create_contact(organization_id uuid, contact_type text, display_name text, email text DEFAULT NULL::text, phone text DEFAULT NULL::text)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
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
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.create_intake_address(organization_id uuid, address_type text, address text, label text DEFAULT NULL::text)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  typ text := lower(btrim(address_type));
  addr text := app_private.clean_text(address);
  lbl text := coalesce(app_private.clean_text(label), '');
  r app_public.intake_addresses;
begin
  perform app_private.assert_org_access(organization_id, false);
  if typ is null or typ not in ('email', 'sms') then perform app_private.fail('Address type must be email or sms.'); end if;
  if addr is null or addr = '' then perform app_private.fail('Address is required.'); end if;
  if typ = 'email' then
    addr := normalize(lower(addr), NFC);
    if addr !~ '^[^@\s]+@[^@\s]+\.[^@\s]+$' or length(addr) > 254 or addr <> lower(addr) then
      perform app_private.fail('Email must look like an email address.');
    end if;
  elsif addr !~ '^[0-9]+$' then
    perform app_private.fail('An SMS address must contain digits only.');
  elsif length(addr) not between 7 and 15 then
    perform app_private.fail('An SMS address must have 7 to 15 digits.');
  end if;
  if length(lbl) > 200 then perform app_private.fail('Label must be at most 200 characters.'); end if;
  begin
    insert into app_public.intake_addresses (organization_id, address_type, address, label)
      values (create_intake_address.organization_id, typ, addr, lbl)
      returning * into r;
  exception when unique_violation then
    -- The same words whoever holds it (this organization or another): nothing about the owner.
    perform app_private.fail('This address is already registered.');
  end;
  return jsonb_build_object('success', true, 'error', null, 'intakeAddress', app_private.intake_address_json(r));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.create_invoice(organization_id uuid, contact_id uuid, number text, issue_date text, due_date text, lines jsonb, memo text DEFAULT NULL::text)
 RETURNS jsonb
 LANGUAGE sql
AS $function$ select app_private.create_document(organization_id, 'invoice', contact_id, number, issue_date, due_date, lines, memo) $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.create_ledger_event(organization_id uuid, merchant_name text, amount text, transaction_date text, event_type text DEFAULT 'expense'::text, category_id uuid DEFAULT NULL::uuid, payment_account_id uuid DEFAULT NULL::uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  v_merchant text := app_private.clean_text(merchant_name);
  v_amount numeric;
  v_date date;
  v_type text := coalesce(event_type, 'expense');
  v_category uuid := category_id;
  v_rule record;
  v_id uuid;
begin
  perform app_private.assert_org_access(organization_id, false);
  perform set_config('app.audit_action', 'create', true);
  if v_merchant is null or length(v_merchant) = 0 then perform app_private.fail('Merchant name is required.'); end if;
  if length(v_merchant) > 500 then perform app_private.fail('Merchant name must be at most 500 characters.'); end if;
  v_amount := app_private.parse_amount(amount, 'Amount must be a positive decimal string.');
  v_date := app_private.parse_date(transaction_date, 'Transaction date must be a date in YYYY-MM-DD format.');
  if v_type not in ('expense', 'income', 'transfer') then
    perform app_private.fail('Event type must be one of: expense, income, transfer.');
  end if;
  if v_category is not null then perform app_private.check_category(v_category, v_type); end if;
  if payment_account_id is not null then
    perform app_private.check_payment_account(payment_account_id);
    if payment_account_id = v_category then perform app_private.fail('Category and payment account must differ.'); end if;
  end if;
  v_id := app_private.uuid_v7();
  -- Without a category, the rule for the event (rule_classifications) classifies it. (Asked
  -- about no event when a category is given: the record still gets its fields, null.)
  select * into v_rule from app_private.rule_classifications(create_ledger_event.organization_id,
    case when v_category is null then array[row(v_id, v_merchant, app_private.direction_for(v_type), v_amount,
      payment_account_id, v_type, v_date, null)::app_private.rule_subject] else '{}' end);
  if v_rule.rule_id is not null then
    update app_public.category_rules set match_count = match_count + 1 where id = v_rule.rule_id;
  end if;
  insert into app_public.ledger_events (id, organization_id, event_type, direction, merchant_name, functional_amount,
      functional_currency, transaction_date, category_id, payment_account_id, splits, tax_amount, tax_code, tax_account_id, contact_id)
    select v_id, create_ledger_event.organization_id, v_type, app_private.direction_for(v_type), v_merchant, v_amount,
      o.functional_currency, v_date, coalesce(v_category, v_rule.category_id), payment_account_id, v_rule.splits,
      v_rule.tax_amount, v_rule.tax_code, v_rule.tax_account_id, v_rule.contact_id
      from app_public.organizations o where o.id = create_ledger_event.organization_id;
  perform app_private.record_webhook_event(organization_id, 'ledger_event.created', v_id);
  return jsonb_build_object('success', true, 'error', null, 'eventId', v_id);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.create_receipt(organization_id uuid, object_key text, filename text DEFAULT NULL::text)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare stored jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  stored := app_private.store_upload_receipt(object_key, filename);
  return jsonb_build_object('success', true, 'error', null, 'receiptId', stored->'receiptId', 'duplicate', stored->'duplicate',
    'receipt', app_private.receipt_json_by_id((stored->>'receiptId')::uuid));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.current_api_key_id()
 RETURNS uuid
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$ select nullif(current_setting('app.api_key_id', true), '')::uuid $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE; reporting_reader: EXECUTE

CREATE OR REPLACE FUNCTION app_public.current_organization_id()
 RETURNS uuid
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$ select nullif(current_setting('app.organization_id', true), '')::uuid $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE; reporting_reader: EXECUTE

CREATE OR REPLACE FUNCTION app_public.current_user_id()
 RETURNS uuid
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$ select nullif(current_setting('app.user_id', true), '')::uuid $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE; reporting_reader: EXECUTE

CREATE OR REPLACE FUNCTION app_public.dashboard_summary(organization_id uuid, start_date text DEFAULT NULL::text, end_date text DEFAULT NULL::text)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
 SET plan_cache_mode TO 'force_custom_plan'
AS $function$
declare
  period daterange;
  revenue numeric;
  expenses numeric;
  unreviewed bigint;
begin
  perform app_private.assert_org_access(organization_id, false);
  period := app_private.report_period(start_date, end_date, date_trunc('month', current_date)::date);
  select coalesce(sum(total) filter (where classification = 'revenue'), 0),
         coalesce(sum(total) filter (where classification = 'expense'), 0)
    into revenue, expenses from app_private.period_totals(organization_id, period);
  unreviewed := app_private.event_count(organization_id, array['needs_review'], null, null);
  return jsonb_build_object('totalRevenue', app_private.money(revenue), 'totalExpenses', app_private.money(expenses),
    'netIncome', app_private.money(revenue - expenses),
    'receiptCount', app_private.receipt_count(organization_id, period),
    'unreviewedCount', unreviewed);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.deactivate_account(organization_id uuid, account_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
begin
  perform app_private.assert_org_access(organization_id, false);
  update app_public.accounts x set active = false
   where x.organization_id = deactivate_account.organization_id and x.id = deactivate_account.account_id;
  if not found then perform app_private.fail('Account not found.', 'AP404'); end if;
  return jsonb_build_object('success', true, 'error', null,
    'account', app_private.account_by_id(deactivate_account.organization_id, deactivate_account.account_id));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.deactivate_contact(organization_id uuid, contact_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
begin
  perform app_private.assert_org_access(organization_id, false);
  update app_public.contacts x set active = false
   where x.organization_id = deactivate_contact.organization_id and x.id = deactivate_contact.contact_id;
  if not found then perform app_private.fail('Contact not found.', 'AP404'); end if;
  return jsonb_build_object('success', true, 'error', null,
    'contact', app_private.contact_by_id(deactivate_contact.organization_id, deactivate_contact.contact_id));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.delete_category_rule(organization_id uuid, category_rule_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
begin
  perform app_private.assert_org_access(organization_id, false);
  delete from app_public.category_rules x
   where x.organization_id = delete_category_rule.organization_id and x.id = category_rule_id;
  if not found then perform app_private.fail('Category rule not found.', 'AP404'); end if;
  return jsonb_build_object('success', true, 'error', null);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.delete_intake_address(organization_id uuid, intake_address_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
begin
  perform app_private.assert_org_access(organization_id, false);
  update app_public.intake_addresses x set active = false, deleted_at = now()
   where x.organization_id = delete_intake_address.organization_id and x.id = intake_address_id and x.active;
  if not found then perform app_private.fail('Intake address not found.', 'AP404'); end if;
  return jsonb_build_object('success', true, 'error', null);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.delete_webhook_endpoint(organization_id uuid, webhook_endpoint_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
begin
  perform app_private.assert_org_access(organization_id, true);
  delete from app_public.webhook_endpoints x
   where x.organization_id = delete_webhook_endpoint.organization_id and x.id = webhook_endpoint_id;
  if not found then perform app_private.fail('Webhook endpoint not found.', 'AP404'); end if;
  return jsonb_build_object('success', true, 'error', null);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.disconnect_cloud_drive(organization_id uuid, cloud_drive_id uuid)
 RETURNS jsonb
 LANGUAGE sql
AS $function$ select app_private.disconnect_receipt_source(organization_id, 'cloud_drive', cloud_drive_id) $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.disconnect_mailbox(organization_id uuid, mailbox_id uuid)
 RETURNS jsonb
 LANGUAGE sql
AS $function$ select app_private.disconnect_receipt_source(organization_id, 'mailbox', mailbox_id) $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.document_match_suggestions(organization_id uuid, event_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
declare e app_public.ledger_events;
begin
  perform app_private.assert_org_access(organization_id, false);
  select * into e from app_public.ledger_events x where x.id = event_id;
  if not found then perform app_private.fail('Ledger event not found.', 'AP404'); end if;
  -- A booked event pays nothing more; a pending one nothing yet.
  if e.status <> 'needs_review' then return '[]'::jsonb; end if;
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
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.get_ledger_event(organization_id uuid, event_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
declare r jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  r := app_private.ledger_event_json_by_id(event_id);
  if r is null then perform app_private.fail('Ledger event not found.', 'AP404'); end if;
  return r;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.get_receipt(organization_id uuid, receipt_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
declare result jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  result := app_private.receipt_json_by_id(receipt_id, true);
  if result is null then perform app_private.fail('Receipt not found.', 'AP404'); end if;
  return result;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.import_bank_statement(organization_id uuid, payment_account_id uuid, rows jsonb, currency text DEFAULT NULL::text)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare r jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  perform app_private.check_statement_size(rows);
  r := app_private.import_bank_statement(organization_id, payment_account_id, currency, rows);
  return jsonb_build_object('success', true, 'error', null, 'importedCount', r -> 'importedCount',
    'skippedCount', r -> 'skippedCount', 'settledCount', r -> 'settledCount', 'batchId', r -> 'batchId');
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.income_statement(organization_id uuid, start_date text DEFAULT NULL::text, end_date text DEFAULT NULL::text)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
 SET plan_cache_mode TO 'force_custom_plan'
AS $function$
declare
  period daterange;
  r jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  period := app_private.report_period(start_date, end_date, date_trunc('year', current_date)::date);
  select jsonb_build_object(
      'incomeAccounts', coalesce(jsonb_agg(jsonb_build_object('accountId', account_id, 'accountName', account_name,
          'total', app_private.money(total)) order by lower(account_name), account_id) filter (where classification = 'revenue'), '[]'::jsonb),
      'expenseAccounts', coalesce(jsonb_agg(jsonb_build_object('accountId', account_id, 'accountName', account_name,
          'total', app_private.money(total)) order by lower(account_name), account_id) filter (where classification = 'expense'), '[]'::jsonb),
      'totalIncome', app_private.money(coalesce(sum(total) filter (where classification = 'revenue'), 0)),
      'totalExpenses', app_private.money(coalesce(sum(total) filter (where classification = 'expense'), 0)),
      'netIncome', app_private.money(coalesce(sum(total) filter (where classification = 'revenue'), 0)
                                     - coalesce(sum(total) filter (where classification = 'expense'), 0)))
    into r
    from app_private.period_totals(organization_id, period);
  return r;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.ledger_changes(organization_id uuid, after text DEFAULT NULL::text, "limit" integer DEFAULT NULL::integer)
 RETURNS json
 LANGUAGE plpgsql
 STABLE
AS $function$
declare
  v_limit integer := app_private.page_size("limit");
  v_txid bigint := 0;
  v_id bigint := 0;
  v_horizon bigint := pg_snapshot_xmin(pg_current_snapshot())::text::bigint;
  v_oldest text;
  v_page json;
  v_last bigint[];
  v_count integer;
begin
  perform app_private.assert_org_access(organization_id, false);
  if after is not null then
    if after ~ '^[0-9]{1,18}\.[0-9]{1,18}$' then
      v_txid := split_part(after, '.', 1)::bigint;
      v_id := split_part(after, '.', 2)::numeric;
    end if;
    if not exists (select 1 from app_public.ledger_change_feed c
                    where c.organization_id = ledger_changes.organization_id and c.txid = v_txid and c.id = v_id
                      and c.at >= now() - app_private.ledger_changes_retention()) then
      select app_private.change_cursor(c.txid, c.id) into v_oldest from app_public.ledger_change_feed c
       where c.organization_id = ledger_changes.organization_id and c.at >= now() - app_private.ledger_changes_retention()
       order by c.txid, c.id limit 1;
      perform app_private.fail(case when v_oldest is null
        then 'The cursor is unknown or has expired (changes are kept 30 days), and no change is kept: read again without after.'
        else format('The cursor is unknown or has expired (changes are kept 30 days). The oldest valid cursor is %s; read again without after to start from the oldest change kept.', v_oldest) end);
    end if;
  end if;
  with page as (
    select c.txid, c.id, c.event_id, c.kind, c.at, row_number() over (order by c.txid, c.id) rn
      from (select c.* from app_public.ledger_change_feed c
             where c.organization_id = ledger_changes.organization_id and (c.txid, c.id) > (v_txid, v_id) and c.txid < v_horizon
               and c.at >= now() - app_private.ledger_changes_retention()
             order by c.txid, c.id
             limit v_limit + 1) c
  ), events as materialized (
    -- Each event of the page once (its creation and confirmation are often on one page), built
    -- as a list builds them.
    select e.id, e.event::json event
      from app_private.ledger_events_json(array(select distinct x.event_id from page x where x.rn <= v_limit)) e
  )
  select coalesce(json_agg(json_build_object('cursor', app_private.change_cursor(n.txid, n.id), 'eventId', n.event_id,
           'kind', n.kind, 'at', app_private.iso(n.at), 'event', v.event) order by n.rn) filter (where n.rn <= v_limit), '[]'),
         max(array[n.txid, n.id]) filter (where n.rn <= v_limit),
         count(*)
    into v_page, v_last, v_count
    from page n left join events v on v.id = n.event_id;
  return json_build_object('changes', v_page, 'nextCursor', coalesce(app_private.change_cursor(v_last[1], v_last[2]), after),
    'hasMore', v_count > v_limit);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.ledger_event_history(organization_id uuid, event_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
declare r jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  select jsonb_agg(x.entry order by x.occurred_at, x.ord, x.id)
    into r
    from (
      -- An imported event's first entry: its import run.
      select b.created occurred_at, 0 ord, 0::bigint id, jsonb_build_object(
          'id', 'import:' || b.id, 'eventId', e.id, 'action', 'import',
          'actorType', case when b.actor_api_key_id is not null then 'api_key' when b.actor_user_id is not null then 'user' else 'system' end,
          'actorId', coalesce(b.actor_api_key_id, b.actor_user_id),
          'occurredAt', app_private.iso(b.created),
          'changes', jsonb_build_array(
            jsonb_build_object('field', 'import_batch_id', 'oldValue', null, 'newValue', b.id),
            jsonb_build_object('field', 'source', 'oldValue', null, 'newValue', e.source))) entry
        from app_public.ledger_events e
        join app_public.import_batches b on b.organization_id = e.organization_id and b.id = e.import_batch_id
       where e.organization_id = ledger_event_history.organization_id and e.id = ledger_event_history.event_id
      union all
      select a.occurred_at, 1, a.id, jsonb_build_object(
          'id', a.id, 'eventId', a.event_id, 'action', a.action,
          'actorType', case when a.actor_api_key_id is not null then 'api_key' when a.actor_user_id is not null then 'user' else 'system' end,
          'actorId', coalesce(a.actor_api_key_id, a.actor_user_id),
          'occurredAt', app_private.iso(a.occurred_at),
          -- A field is {old, new} (a change, a deletion) or its value alone (an insert: new, no old).
          'changes', (select coalesce(jsonb_agg(jsonb_build_object('field', k.key,
                'oldValue', case when jsonb_typeof(k.value) = 'object' then nullif(k.value -> 'old', 'null') #>> '{}' end,
                'newValue', case when jsonb_typeof(k.value) = 'object' then nullif(k.value -> 'new', 'null') #>> '{}'
                                 else nullif(k.value, 'null') #>> '{}' end)
                order by k.key), '[]'::jsonb)
              from jsonb_each(a.changes) k))
        from app_public.ledger_event_audit a
       where a.organization_id = ledger_event_history.organization_id and a.event_id = ledger_event_history.event_id) x;
  if r is null then perform app_private.fail('Ledger event not found.', 'AP404'); end if;
  return r;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.link_receipt_to_event(organization_id uuid, receipt_id uuid, event_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  r app_public.receipts;
  e app_public.ledger_events;
begin
  perform app_private.assert_org_access(organization_id, false);
  -- The receipt, then the event: the order matching locks them in.
  r := app_private.receipt_for_update(receipt_id);
  e := app_private.event_for_link(event_id);
  perform app_private.link_receipt(r, e);
  return jsonb_build_object('success', true, 'error', null, 'receipt', app_private.receipt_json_by_id(r.id));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.list_accounts(organization_id uuid, "limit" integer DEFAULT NULL::integer, "offset" integer DEFAULT NULL::integer, search text DEFAULT NULL::text, sort_by text DEFAULT NULL::text, sort_dir text DEFAULT NULL::text, active boolean DEFAULT NULL::boolean, classification text DEFAULT NULL::text)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
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
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.list_api_keys(organization_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
begin
  perform app_private.assert_org_access(organization_id, true);
  return coalesce((select jsonb_agg(app_private.api_key_json(k.id, k.label, k.prefix, k.created, k.last_used_at, k.revoked_at)
      order by k.created, k.id)
    from app_public.api_keys k where k.organization_id = list_api_keys.organization_id), '[]'::jsonb);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.list_bills(organization_id uuid, status jsonb DEFAULT NULL::jsonb, contact_id uuid DEFAULT NULL::uuid, due_before text DEFAULT NULL::text, search text DEFAULT NULL::text, "limit" integer DEFAULT NULL::integer, "offset" integer DEFAULT NULL::integer)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$ select app_private.list_documents(organization_id, 'bill', status, contact_id, due_before, search, "limit", "offset") $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.list_category_rules(organization_id uuid, "limit" integer DEFAULT NULL::integer, "offset" integer DEFAULT NULL::integer, search text DEFAULT NULL::text, sort_by text DEFAULT NULL::text, sort_dir text DEFAULT NULL::text)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
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
  perform app_private.check_sort_by(sort_by, array['vendorPattern', 'matchCount', 'created', 'updated', 'priority']);
  key := case coalesce(sort_by, 'vendorPattern')
    when 'vendorPattern' then 'f.lpattern' when 'matchCount' then '(f.r).match_count'
    when 'created' then '(f.r).created' when 'updated' then '(f.r).updated' when 'priority' then '(f.r).priority' end;
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
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.list_cloud_drives(organization_id uuid)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$ select app_private.list_receipt_sources(organization_id, 'cloud_drive') $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.list_contacts(organization_id uuid, "limit" integer DEFAULT NULL::integer, "offset" integer DEFAULT NULL::integer, search text DEFAULT NULL::text, sort_by text DEFAULT NULL::text, sort_dir text DEFAULT NULL::text, contact_type text DEFAULT NULL::text, active boolean DEFAULT NULL::boolean)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
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
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.list_intake_addresses(organization_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
begin
  perform app_private.assert_org_access(organization_id, false);
  return coalesce((select jsonb_agg(app_private.intake_address_json(i) order by i.created, i.id)
    from app_public.intake_addresses i where i.organization_id = list_intake_addresses.organization_id and i.active), '[]'::jsonb);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.list_invoices(organization_id uuid, status jsonb DEFAULT NULL::jsonb, contact_id uuid DEFAULT NULL::uuid, due_before text DEFAULT NULL::text, search text DEFAULT NULL::text, "limit" integer DEFAULT NULL::integer, "offset" integer DEFAULT NULL::integer)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$ select app_private.list_documents(organization_id, 'invoice', status, contact_id, due_before, search, "limit", "offset") $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.list_ledger_events(organization_id uuid, status jsonb DEFAULT NULL::jsonb, has_document boolean DEFAULT NULL::boolean, since_days integer DEFAULT NULL::integer, date_from text DEFAULT NULL::text, date_to text DEFAULT NULL::text, amount_min text DEFAULT NULL::text, amount_max text DEFAULT NULL::text, account_ids jsonb DEFAULT NULL::jsonb, category_ids jsonb DEFAULT NULL::jsonb, payment_account_ids jsonb DEFAULT NULL::jsonb, search text DEFAULT NULL::text, "limit" integer DEFAULT NULL::integer, "offset" integer DEFAULT NULL::integer, sort_by text DEFAULT NULL::text, sort_dir text DEFAULT NULL::text, reconciliation_id uuid DEFAULT NULL::uuid, contact_ids jsonb DEFAULT NULL::jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
 SET plan_cache_mode TO 'force_custom_plan'
AS $function$
declare
  statuses constant text[] := array['needs_review', 'confirmed', 'synced', 'reconciled', 'pending', 'ignored'];
  max_since_days constant integer := 36500;
  v_limit integer := app_private.page_size("limit");
  v_offset integer := app_private.page_offset("offset");
  v_dir text := app_private.sort_dir(sort_dir, 'desc');
  v_status text[];
  v_from date;
  v_to date;
  v_min numeric;
  v_max numeric;
  v_accounts uuid[];
  v_categories uuid[];
  v_payments uuid[];
  v_contacts uuid[];
  v_pattern text;
  v_order text;
  v_where text := '';
  v_total bigint;
  v_items jsonb;
  v_reconciliation app_public.reconciliations;
begin
  perform app_private.assert_org_access(organization_id, false);
  perform app_private.check_sort_by(sort_by, array['transactionDate', 'functionalAmount', 'merchantName', 'status', 'created']);
  v_order := case coalesce(sort_by, 'transactionDate')
    when 'transactionDate' then 'e.transaction_date' when 'functionalAmount' then 'e.functional_amount'
    when 'merchantName' then 'lower(e.merchant_name)' when 'status' then 'e.status' else 'e.created' end;
  if status is not null then
    if jsonb_typeof(status) <> 'array' then
      perform app_private.fail(format('status must be any of: %s.', array_to_string(statuses, ', ')));
    end if;
    -- An empty list matches nothing, in the page and in the total alike.
    select coalesce(array_agg(s), '{}') into v_status from jsonb_array_elements_text(status) s;
    if not (coalesce(v_status, '{}') <@ statuses) then
      perform app_private.fail(format('status must be any of: %s.', array_to_string(statuses, ', ')));
    end if;
    v_where := v_where || ' and e.status = any ($2)';
  end if;
  if since_days is not null then
    if since_days < 0 then perform app_private.fail('sinceDays must not be negative.'); end if;
    if since_days > max_since_days then
      perform app_private.fail(format('sinceDays must be between 0 and %s.', max_since_days));
    end if;
    v_from := current_date - since_days;
  end if;
  if date_from is not null then
    v_from := greatest(v_from, app_private.parse_date(date_from, 'dateFrom must be a date in YYYY-MM-DD format.'));
  end if;
  if date_to is not null then v_to := app_private.parse_date(date_to, 'dateTo must be a date in YYYY-MM-DD format.'); end if;
  if v_from is not null then v_where := v_where || ' and e.transaction_date >= $3'; end if;
  if v_to is not null then v_where := v_where || ' and e.transaction_date <= $4'; end if;
  if has_document is not null then v_where := v_where || ' and e.has_document = $5'; end if;
  if amount_min is not null then
    v_min := app_private.parse_amount(amount_min, 'amountMin must be a decimal string.', true);
    v_where := v_where || ' and e.functional_amount >= $6';
  end if;
  if amount_max is not null then
    v_max := app_private.parse_amount(amount_max, 'amountMax must be a decimal string.', true);
    v_where := v_where || ' and e.functional_amount <= $7';
  end if;
  if account_ids is not null then
    v_accounts := app_private.uuid_list(account_ids, 'accountIds');
    v_where := v_where || ' and e.category_id = any ($8)';
  end if;
  if category_ids is not null then
    v_categories := app_private.uuid_list(category_ids, 'categoryIds');
    v_where := v_where || ' and e.category_id = any ($9)';
  end if;
  if payment_account_ids is not null then
    v_payments := app_private.uuid_list(payment_account_ids, 'paymentAccountIds');
    v_where := v_where || ' and e.payment_account_id = any ($10)';
  end if;
  if contact_ids is not null then
    v_contacts := app_private.uuid_list(contact_ids, 'contactIds');
    v_where := v_where || ' and e.contact_id = any ($15)';
  end if;
  if search is not null and search <> '' then
    -- ILIKE as PostgreSQL does it (lower() of both sides, then LIKE), the pattern lowered once
    -- rather than on every row.
    v_pattern := lower(app_private.like_pattern(search));
    -- The merchant from the date index (merchant_name and has_memo are in it); the memos from the
    -- events that have one in the same dates (ledger_events_memo_idx), read once for the whole
    -- statement: a memo of up to 5,000 characters cannot ride in an index.
    v_where := v_where || ' and (lower(e.merchant_name) like $11 or (e.has_memo and e.id in (select m.id from app_public.ledger_events m
        where m.organization_id = $1 and m.has_memo' || case when v_from is not null then ' and m.transaction_date >= $3' else '' end
      || case when v_to is not null then ' and m.transaction_date <= $4' else '' end || ' and lower(m.memo) like $11)))';
  end if;

  if reconciliation_id is not null then
    select * into v_reconciliation from app_public.reconciliations r where r.id = list_ledger_events.reconciliation_id;
    if not found then perform app_private.fail('Reconciliation not found.', 'AP404'); end if;
    -- An open one: the events on the account (its payment account, or the other side of a
    -- transfer) up to the statement date that no other reconciliation of the account cleared, and
    -- those it ticked; a completed one: those it cleared (docs/api.md, Closing a period).
    v_where := v_where || case when v_reconciliation.status = 'open' then
      ' and (e.payment_account_id = ($14).payment_account_id or e.category_id = ($14).payment_account_id)
        and e.transaction_date <= ($14).statement_date
        and (exists (select 1 from app_public.reconciliation_clearings k where k.event_id = e.id and k.reconciliation_id = ($14).id)
             or (e.status in (''confirmed'', ''synced'', ''reconciled'')
                 and not exists (select 1 from app_public.reconciliation_clearings k
                                  where k.event_id = e.id and k.account_id = ($14).payment_account_id)))'
      else ' and exists (select 1 from app_public.reconciliation_clearings k where k.event_id = e.id and k.reconciliation_id = ($14).id)' end;
  end if;

  -- The total: from the status counts by month and day when only status and dates filter, else counted.
  if reconciliation_id is null and has_document is null and v_min is null and v_max is null and v_accounts is null and v_categories is null
     and v_payments is null and v_contacts is null and v_pattern is null then
    v_total := app_private.event_count(list_ledger_events.organization_id, v_status, v_from, v_to);
  else
    execute 'select count(*) from app_public.ledger_events e where e.organization_id = $1' || v_where
      into v_total
      using organization_id, v_status, v_from, v_to, has_document, v_min, v_max, v_accounts, v_categories, v_payments, v_pattern,
            null::integer, null::integer, v_reconciliation, v_contacts;
  end if;

  -- The page, in one statement: ids in total order, then each event with its accounts and entry.
  execute format($q$
    with page as (
      select e.id, row_number() over () as ord from (
        select e.id from app_public.ledger_events e
         where e.organization_id = $1 %1$s
         order by %2$s %3$s, e.id %3$s
         limit $12 offset $13) e)
    select coalesce(jsonb_agg(e.event %4$s order by page.ord), '[]'::jsonb)
      from page
      join app_private.ledger_events_json(array(select page.id from page)) e on e.id = page.id
  $q$, v_where, v_order, v_dir,
    -- In a reconciliation's list, cleared is whether this one ticked it (a transfer is on two).
    case when reconciliation_id is null then '' else $c$|| jsonb_build_object('cleared', exists (select 1
      from app_public.reconciliation_clearings k where k.event_id = e.id and k.reconciliation_id = ($14).id))$c$ end)
    into v_items
    using organization_id, v_status, v_from, v_to, has_document, v_min, v_max, v_accounts, v_categories, v_payments,
          v_pattern, v_limit, v_offset, v_reconciliation, v_contacts;
  return jsonb_build_object('items', v_items, 'totalCount', v_total, 'pageSize', v_limit, 'offset', v_offset);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.list_mailboxes(organization_id uuid)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$ select app_private.list_receipt_sources(organization_id, 'mailbox') $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.list_members(organization_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
begin
  perform app_private.assert_org_access(organization_id, true);
  return coalesce((select jsonb_agg(app_private.membership_json(m, u) order by lower(u.email), u.id)
    from app_public.memberships m join app_public.users u on u.id = m.user_id
    where m.organization_id = list_members.organization_id), '[]'::jsonb);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.list_receipts(organization_id uuid, "limit" integer DEFAULT NULL::integer, "offset" integer DEFAULT NULL::integer, search text DEFAULT NULL::text, status text DEFAULT NULL::text, source text DEFAULT NULL::text, match_status text DEFAULT NULL::text, event_id uuid DEFAULT NULL::uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
declare
  lim integer;
  off integer;
  pattern text := app_private.like_pattern(nullif(app_private.clean_text(search), ''));
begin
  perform app_private.assert_org_access(organization_id, false);
  lim := app_private.page_size("limit");
  off := app_private.page_offset("offset");
  if status is not null and status not in ('draft', 'processed', 'reviewed', 'rejected') then
    perform app_private.fail('status must be one of: draft, processed, reviewed, rejected.');
  end if;
  if source is not null and source not in ('web_upload', 'email', 'sms', 'mailbox', 'cloud_drive') then
    perform app_private.fail('source must be one of: web_upload, email, sms, mailbox, cloud_drive.');
  end if;
  if match_status is not null and match_status not in ('pending', 'matched', 'unmatched') then
    perform app_private.fail('matchStatus must be one of: pending, matched, unmatched.');
  end if;
  return (
    with f as (
      select r from app_public.receipts r
       where r.organization_id = list_receipts.organization_id
         and (pattern is null or r.vendor_name ilike pattern)
         and (list_receipts.status is null or r.status = list_receipts.status)
         and (list_receipts.source is null or r.source = list_receipts.source)
         and (list_receipts.match_status is null or r.match_status = list_receipts.match_status)
         and (list_receipts.event_id is null or r.event_id = list_receipts.event_id)
    ), page as (
      select f.r, row_number() over (order by (f.r).uploaded_at desc, (f.r).id desc) as rn
        from f order by (f.r).uploaded_at desc, (f.r).id desc limit lim offset off
    )
    select jsonb_build_object(
      'items', coalesce((select jsonb_agg(app_private.receipt_json(page.r, e) order by page.rn)
                           from page left join app_public.ledger_events e on e.id = (page.r).event_id), '[]'::jsonb),
      'totalCount', (select count(*) from f), 'pageSize', lim, 'offset', off));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.list_reconciliations(organization_id uuid, payment_account_id uuid, "limit" integer DEFAULT NULL::integer, "offset" integer DEFAULT NULL::integer)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
declare
  v_limit integer := app_private.page_size("limit");
  v_offset integer := app_private.page_offset("offset");
begin
  perform app_private.assert_org_access(organization_id, false);
  return jsonb_build_object(
    'items', coalesce((select jsonb_agg(app_private.reconciliation_json(p) order by p.created desc, p.id desc)
       from (select * from app_public.reconciliations x
              where x.organization_id = list_reconciliations.organization_id
                and x.payment_account_id = list_reconciliations.payment_account_id
              order by x.created desc, x.id desc limit v_limit offset v_offset) p), '[]'::jsonb),
    'totalCount', (select count(*) from app_public.reconciliations x
                    where x.organization_id = list_reconciliations.organization_id
                      and x.payment_account_id = list_reconciliations.payment_account_id),
    'pageSize', v_limit, 'offset', v_offset);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.list_sales_tax_codes(organization_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
begin
  perform app_private.assert_org_access(organization_id, false);
  return coalesce((select jsonb_agg(jsonb_build_object('code', s.code, 'name', s.name, 'rate', s.rate::text,
      'jurisdiction', s.jurisdiction, 'recoverable', s.recoverable) order by s.jurisdiction <> 'CA', s.jurisdiction, s.code)
    from app_public.sales_tax_codes s), '[]'::jsonb);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.list_tax_codes(organization_id uuid, search text DEFAULT NULL::text, "limit" integer DEFAULT NULL::integer, "offset" integer DEFAULT NULL::integer, classification text DEFAULT NULL::text, account_type text DEFAULT NULL::text)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
declare
  lim integer;
  off integer;
begin
  perform app_private.assert_org_access(organization_id, false);
  lim := app_private.page_size("limit");
  off := app_private.page_offset("offset");
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
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.list_webhook_deliveries(organization_id uuid, webhook_endpoint_id uuid, status text DEFAULT NULL::text, "limit" integer DEFAULT NULL::integer, "offset" integer DEFAULT NULL::integer)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
declare
  lim integer := app_private.page_size("limit");
  off integer := app_private.page_offset("offset");
begin
  perform app_private.assert_org_access(organization_id, true);
  if status is not null and status not in ('pending', 'succeeded', 'failed') then
    perform app_private.fail('status must be one of: pending, succeeded, failed.');
  end if;
  if not exists (select 1 from app_public.webhook_endpoints x
                  where x.organization_id = list_webhook_deliveries.organization_id and x.id = webhook_endpoint_id) then
    perform app_private.fail('Webhook endpoint not found.', 'AP404');
  end if;
  return (
    with f as (
      select d from app_public.webhook_deliveries d
       where d.webhook_endpoint_id = list_webhook_deliveries.webhook_endpoint_id
         and (list_webhook_deliveries.status is null or d.status = list_webhook_deliveries.status)
    ), page as (
      select f.d, row_number() over (order by (f.d).seq desc) as rn
        from f order by (f.d).seq desc limit lim offset off
    )
    select jsonb_build_object(
      'items', coalesce((select jsonb_agg(app_private.webhook_delivery_json(page.d, ev.type) order by page.rn)
                           from page join app_public.webhook_events ev on ev.id = (page.d).webhook_event_id), '[]'::jsonb),
      'totalCount', (select count(*) from f), 'pageSize', lim, 'offset', off));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.list_webhook_endpoints(organization_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
begin
  perform app_private.assert_org_access(organization_id, true);
  return coalesce((select jsonb_agg(app_private.webhook_endpoint_json(x.id) order by x.created, x.id)
    from app_public.webhook_endpoints x where x.organization_id = list_webhook_endpoints.organization_id), '[]'::jsonb);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.mark_ledger_events_synced(organization_id uuid, event_ids jsonb, external_system text, external_ids jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  max_events constant integer := 500;
  v_ids uuid[];
  v_refs text[];
  v_system text := app_private.clean_text(external_system);
  v_problem text;
  v_already uuid[];
begin
  perform app_private.assert_org_access(organization_id, false);
  perform set_config('app.audit_action', 'sync', true);
  v_ids := app_private.uuid_list(event_ids, 'eventIds');
  if jsonb_typeof(external_ids) is distinct from 'array'
     or exists (select 1 from jsonb_array_elements(external_ids) x where jsonb_typeof(x) <> 'string') then
    perform app_private.fail('externalIds must be a list of strings.');
  end if;
  select array_agg(app_private.clean_text(x #>> '{}') order by i) into v_refs from jsonb_array_elements(external_ids) with ordinality t (x, i);
  if coalesce(array_length(v_ids, 1), 0) = 0 then perform app_private.fail('eventIds must list at least one event.'); end if;
  if array_length(v_ids, 1) > max_events then perform app_private.fail(format('At most %s events per call.', max_events)); end if;
  if array_length(v_ids, 1) is distinct from array_length(v_refs, 1) then
    perform app_private.fail('eventIds and externalIds must have the same length: the i-th id is the i-th event''s.');
  end if;
  if v_system is null or length(v_system) not between 1 and 100 then
    perform app_private.fail('externalSystem must be 1 to 100 characters.');
  end if;
  if exists (select 1 from unnest(v_refs) r where r is null or length(r) not between 1 and 255) then
    perform app_private.fail('Each external id must be 1 to 255 characters.');
  end if;
  if (select count(distinct i) from unnest(v_ids) i) <> array_length(v_ids, 1) then
    perform app_private.fail('Each event at most once in eventIds.');
  end if;
  if (select count(distinct r) from unnest(v_refs) r) <> array_length(v_refs, 1) then
    perform app_private.fail('Each external id at most once in externalIds.');
  end if;
  -- In id order, as every writer of several events locks them.
  perform 1 from app_public.ledger_events e where e.id = any (v_ids) order by e.id for no key update;
  select format(case when e.id is null then 'Ledger event %s not found.' else 'Event %s is %s: only confirmed events can be marked synced.' end,
                i.id, replace(e.status, '_', ' '))
    into v_problem
    from unnest(v_ids) with ordinality i (id, n)
    left join app_public.ledger_events e on e.id = i.id
   where e.id is null or e.status not in ('confirmed', 'synced', 'reconciled')
   order by i.n limit 1;
  if v_problem is not null then perform app_private.fail(v_problem); end if;
  select format('External id %s of %s is already on event %s.', x.external_id, v_system, x.event_id) into v_problem
    from unnest(v_ids, v_refs) t (id, ref)
    join app_public.ledger_event_external_refs x
      on x.organization_id = mark_ledger_events_synced.organization_id and x.external_system = v_system
     and x.external_id = t.ref and x.event_id <> t.id
   limit 1;
  if v_problem is not null then perform app_private.fail(v_problem); end if;

  select coalesce(array_agg(e.id), '{}') into v_already from app_public.ledger_events e
   where e.id = any (v_ids) and e.status in ('synced', 'reconciled');
  begin
    insert into app_public.ledger_event_external_refs as x (organization_id, event_id, external_system, external_id)
      select mark_ledger_events_synced.organization_id, t.id, v_system, t.ref from unnest(v_ids, v_refs) t (id, ref) order by t.id
      on conflict on constraint ledger_event_external_refs_pkey do update set external_id = excluded.external_id, synced_at = now();
  exception when unique_violation then
    -- Another call gave one of these ids to another event at the same moment.
    perform app_private.fail(format('An external id of %s given here is already on another event.', v_system));
  end;
  update app_public.ledger_events e set status = 'synced' where e.id = any (v_ids) and e.status = 'confirmed';
  -- An event already synced or reconciled changes no field of its own: its new id is still a change.
  insert into app_public.ledger_change_feed (organization_id, event_id, kind)
    select mark_ledger_events_synced.organization_id, a.id, 'synced' from unnest(v_already) a (id) order by a.id;
  return jsonb_build_object('success', true, 'error', null, 'syncedCount', array_length(v_ids, 1),
    'events', (select jsonb_agg(x.event order by t.o) from unnest(v_ids) with ordinality t (i, o)
                 join app_private.ledger_events_json(v_ids) x on x.id = t.i));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.my_organizations()
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public'
AS $function$
declare
  key_id uuid := app_public.current_api_key_id();
  uid uuid := app_public.current_user_id();
begin
  if key_id is null and uid is null then perform app_private.fail('Authentication Required.', 'AU401'); end if;
  return coalesce((
    select jsonb_agg(jsonb_build_object('id', o.id, 'name', o.name) order by lower(o.name), o.id)
    from app_public.organizations o
    where (key_id is not null and o.id = (select k.organization_id from app_public.api_keys k where k.id = key_id))
       or (key_id is null and o.id in (select m.organization_id from app_public.memberships m where m.user_id = uid))
  ), '[]'::jsonb);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.preview_category_rule(organization_id uuid, category_rule_id uuid DEFAULT NULL::uuid, vendor_pattern text DEFAULT NULL::text, category_id uuid DEFAULT NULL::uuid, priority integer DEFAULT NULL::integer, direction text DEFAULT NULL::text, amount_min text DEFAULT NULL::text, amount_max text DEFAULT NULL::text, payment_account_id uuid DEFAULT NULL::uuid, contact_id uuid DEFAULT NULL::uuid, tax_code text DEFAULT NULL::text, splits jsonb DEFAULT NULL::jsonb, "limit" integer DEFAULT NULL::integer)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
declare
  r app_public.category_rules;
  v_limit integer := app_private.page_size("limit");
begin
  perform app_private.assert_org_access(organization_id, false);
  if category_rule_id is not null then
    select * into r from app_public.category_rules x
     where x.organization_id = preview_category_rule.organization_id and x.id = category_rule_id;
    if not found then perform app_private.fail('Category rule not found.', 'AP404'); end if;
  else
    r.id := gen_random_uuid();
    r.organization_id := preview_category_rule.organization_id;
    r.created := now();
  end if;
  r := app_private.checked_rule(r, vendor_pattern, category_id, priority, direction, amount_min, amount_max,
    payment_account_id, contact_id, tax_code, splits);
  return (
    with c as (select * from app_private.rule_changes(r, false))
    select jsonb_build_object('totalCount', (select count(*) from c), 'changes', coalesce((
      select jsonb_agg(x.change order by x.transaction_date desc, x.id desc) from (
        select e.transaction_date, e.id, jsonb_build_object('event', app_private.ledger_event_json_by_id(e.id),
            'after', jsonb_build_object(
              'category', (select jsonb_build_object('id', a.id, 'name', a.name) from app_public.accounts a where a.id = c.category_id),
              'splits', case when c.splits is null then '[]'::jsonb else app_private.splits_json(c.splits) end,
              'taxCode', c.tax_code, 'taxAmount', app_private.money(c.tax_amount),
              'contact', (select jsonb_build_object('id', k.id, 'displayName', k.display_name) from app_public.contacts k where k.id = c.contact_id))) change
          from c join app_public.ledger_events e on e.id = c.event_id
         order by e.transaction_date desc, e.id desc limit v_limit) x), '[]')));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.reactivate_account(organization_id uuid, account_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
begin
  perform app_private.assert_org_access(organization_id, false);
  update app_public.accounts x set active = true
   where x.organization_id = reactivate_account.organization_id and x.id = reactivate_account.account_id;
  if not found then perform app_private.fail('Account not found.', 'AP404'); end if;
  return jsonb_build_object('success', true, 'error', null,
    'account', app_private.account_by_id(reactivate_account.organization_id, reactivate_account.account_id));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.reactivate_contact(organization_id uuid, contact_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
begin
  perform app_private.assert_org_access(organization_id, false);
  update app_public.contacts x set active = true
   where x.organization_id = reactivate_contact.organization_id and x.id = reactivate_contact.contact_id;
  if not found then perform app_private.fail('Contact not found.', 'AP404'); end if;
  return jsonb_build_object('success', true, 'error', null,
    'contact', app_private.contact_by_id(reactivate_contact.organization_id, reactivate_contact.contact_id));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.receipt_match_suggestions(organization_id uuid, receipt_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
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
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.record_payment(organization_id uuid, contact_id uuid, payment_account_id uuid, amount text, date text, allocations jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
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
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.redeliver_webhook(organization_id uuid, webhook_delivery_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  d app_public.webhook_deliveries;
  v_status text;
begin
  perform app_private.assert_org_access(organization_id, true);
  select * into d from app_public.webhook_deliveries x
   where x.organization_id = redeliver_webhook.organization_id and x.id = webhook_delivery_id;
  if not found then perform app_private.fail('Webhook delivery not found.', 'AP404'); end if;
  select ep.status into v_status from app_public.webhook_endpoints ep where ep.id = d.webhook_endpoint_id;
  if v_status <> 'enabled' then perform app_private.fail('The webhook endpoint is disabled: enable it first.'); end if;
  perform app_private.queue_webhook_attempt(d.id, now());
  select * into d from app_public.webhook_deliveries x where x.id = webhook_delivery_id;
  return jsonb_build_object('success', true, 'error', null, 'delivery', app_private.webhook_delivery_json(d,
    (select ev.type from app_public.webhook_events ev where ev.id = d.webhook_event_id)));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.reject_ledger_event(organization_id uuid, event_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare e app_public.ledger_events;
begin
  perform app_private.assert_org_access(organization_id, false);
  perform set_config('app.audit_action', 'reject', true);
  select * into e from app_public.ledger_events x where x.id = event_id for update;
  if not found then perform app_private.fail('Ledger event not found.', 'AP404'); end if;
  if e.reversal_entry_id is not null then perform app_private.fail('Event is already reversed.'); end if;
  if e.status = 'ignored' then perform app_private.fail('Event is already rejected.'); end if;
  if e.status = 'reconciled' then perform app_private.fail('Event is reconciled.'); end if;
  if e.status = 'synced' then perform app_private.fail('Event is synced: a synced event is changed only by reversal.'); end if;
  -- A payment's documents are owed again; they are locked before the journal, as payments lock them.
  perform app_private.release_allocations(e.id);
  -- A posted entry is voided: kept for audit, out of every report.
  if e.journal_entry_id is not null then
    update app_public.journal_lines l set voided = true where l.entry_id = e.journal_entry_id and not l.voided;
    update app_public.journal_entries j set voided_at = now() where j.id = e.journal_entry_id and j.voided_at is null;
  end if;
  perform app_private.unclear_event(e.id);
  update app_public.ledger_events x set status = 'ignored' where x.id = e.id;
  perform app_private.record_webhook_event(organization_id, 'ledger_event.rejected', e.id);
  return jsonb_build_object('success', true, 'error', null, 'eventId', e.id);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.reject_receipt(organization_id uuid, receipt_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare r app_public.receipts;
begin
  perform app_private.assert_org_access(organization_id, false);
  r := app_private.receipt_for_update(receipt_id);
  if r.status = 'rejected' then perform app_private.fail('Receipt is already rejected.'); end if;
  perform app_private.unlink_receipt(r, 'rejected');
  return jsonb_build_object('success', true, 'error', null, 'receipt', app_private.receipt_json_by_id(r.id));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.remove_member(organization_id uuid, user_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public'
AS $function$
declare target_role text;
begin
  perform app_private.assert_org_access(organization_id, true);
  select m.role into target_role from app_public.memberships m
   where m.organization_id = remove_member.organization_id and m.user_id = remove_member.user_id for update;
  if target_role is null then perform app_private.fail('Member not found.', 'AP404'); end if;
  if target_role = 'owner' and app_private.caller_role(organization_id) <> 'owner' then
    perform app_private.fail('Only an owner can grant, change or remove the owner role.');
  end if;
  delete from app_public.memberships m where m.organization_id = remove_member.organization_id and m.user_id = remove_member.user_id;
  set constraints app_public._100_keep_owner immediate;
  return jsonb_build_object('success', true, 'error', null);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.reverse_ledger_event(organization_id uuid, event_id uuid, posting_date text DEFAULT NULL::text)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  e app_public.ledger_events;
  j app_public.journal_entries;
  v_date date;
  v_entry uuid := app_private.uuid_v7();
begin
  perform app_private.assert_org_access(organization_id, false);
  perform set_config('app.audit_action', 'reverse', true);
  select * into e from app_public.ledger_events x where x.id = event_id for update;
  if not found then perform app_private.fail('Ledger event not found.', 'AP404'); end if;
  if e.reversal_entry_id is not null then perform app_private.fail('Event is already reversed.'); end if;
  if e.status not in ('confirmed', 'synced', 'reconciled') then
    perform app_private.fail('Only confirmed events can be reversed.');
  end if;
  perform app_private.release_allocations(e.id);
  select * into j from app_public.journal_entries x where x.id = e.journal_entry_id;
  v_date := case when posting_date is null then current_date
                 else app_private.parse_date(posting_date, 'Posting date must be a date in YYYY-MM-DD format.') end;
  if v_date < j.txn_date then
    perform app_private.fail(format('Posting date must not be before the entry it reverses (%s).', to_char(j.txn_date, 'YYYY-MM-DD')));
  end if;
  insert into app_public.journal_entries (id, organization_id, event_id, txn_date, total_amount, reverses_entry_id)
    values (v_entry, e.organization_id, e.id, v_date, j.total_amount, j.id);
  insert into app_public.journal_lines (organization_id, entry_id, account_id, txn_date, debit, credit, tax_type, tax_on_sale)
    select l.organization_id, v_entry, l.account_id, v_date, l.credit, l.debit, l.tax_type, l.tax_on_sale
      from app_public.journal_lines l where l.entry_id = j.id and not l.voided order by l.id;
  perform app_private.unclear_event(e.id);
  update app_public.ledger_events x set status = 'ignored', reversal_entry_id = v_entry where x.id = e.id;
  perform app_private.record_webhook_event(organization_id, 'ledger_event.reversed', e.id);
  return jsonb_build_object('success', true, 'error', null, 'eventId', e.id, 'journalEntryId', v_entry);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.revoke_api_key(organization_id uuid, api_key_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
begin
  perform app_private.assert_org_access(organization_id, true);
  return jsonb_build_object('success', true, 'error', null, 'apiKey', app_private.revoke_api_key(organization_id, api_key_id));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.sales_tax_return(organization_id uuid, start_date text, end_date text, tax_type text)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
 SET plan_cache_mode TO 'force_custom_plan'
AS $function$
declare
  v_period daterange;
  r record;
begin
  perform app_private.assert_org_access(organization_id, false);
  if tax_type is null or tax_type not in ('GST_HST', 'QST') then
    perform app_private.fail('taxType must be one of: GST_HST, QST.');
  end if;
  if start_date is null then perform app_private.fail('startDate must be a date in YYYY-MM-DD format.'); end if;
  if end_date is null then perform app_private.fail('endDate must be a date in YYYY-MM-DD format.'); end if;
  v_period := app_private.report_period(start_date, end_date, null);
  select * into r from app_private.sales_tax_return_lines(organization_id, v_period, tax_type);
  return jsonb_build_object('taxType', tax_type,
    'startDate', to_char(lower(v_period), 'YYYY-MM-DD'), 'endDate', to_char(upper(v_period) - 1, 'YYYY-MM-DD'),
    'salesAndRevenue', app_private.money(r.sales), 'taxCollected', app_private.money(r.collected),
    'adjustments', app_private.money(0), 'totalTaxCollected', app_private.money(r.collected),
    'inputTaxCredits', app_private.money(r.itcs), 'totalItcs', app_private.money(r.itcs),
    'netTax', app_private.money(r.collected - r.itcs), 'events', r.events);
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.set_cleared(organization_id uuid, reconciliation_id uuid, event_ids jsonb, cleared boolean)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  max_events constant integer := 1000;
  r app_public.reconciliations;
  v_ids uuid[];
  bad record;
begin
  perform app_private.assert_org_access(organization_id, false);
  v_ids := app_private.uuid_list(event_ids, 'eventIds');
  if cardinality(v_ids) > max_events then perform app_private.fail(format('eventIds must have at most %s items.', max_events)); end if;
  if cleared is null then perform app_private.fail('cleared must be true or false.'); end if;
  r := app_private.lock_reconciliation(reconciliation_id);
  if r.status <> 'open' then perform app_private.fail(format('Reconciliation is %s.', r.status)); end if;
  if cleared then
    -- Locked before they are checked: a reject or a reversal in flight commits first (and the
    -- check sees it), or waits for this tick.
    perform 1 from app_public.ledger_events e where e.id = any (v_ids) order by e.id for share;
    -- Each event's problem, the first one refused.
    select p.problem, p.missing into bad from (
      select case
          when e.id is null then 'Ledger event not found.'
          when not coalesce(r.payment_account_id in (e.payment_account_id, e.category_id), false)
            then format('Event %s is not on the account being reconciled.', i.id)
          when exists (select 1 from app_public.reconciliation_clearings k
                        where k.event_id = e.id and k.account_id = r.payment_account_id and k.reconciliation_id <> r.id)
            then 'Event is reconciled.'
          when e.status not in ('confirmed', 'synced', 'reconciled') then format('Event %s is not confirmed.', i.id)
          when e.transaction_date > r.statement_date then format('Event %s is dated after the statement date.', i.id)
        end as problem, e.id is null as missing
        from unnest(v_ids) i (id)
        left join app_public.ledger_events e on e.id = i.id) p
     where p.problem is not null
     limit 1;
    if bad.problem is not null then
      perform app_private.fail(bad.problem, case when bad.missing then 'AP404' else 'AP400' end);
    end if;
    insert into app_public.reconciliation_clearings (event_id, account_id, organization_id, reconciliation_id)
      select distinct i, r.payment_account_id, r.organization_id, r.id from unnest(v_ids) i order by 1
      on conflict (event_id, account_id) do nothing;
  else
    delete from app_public.reconciliation_clearings c where c.reconciliation_id = r.id and c.event_id = any (v_ids);
  end if;
  return jsonb_build_object('success', true, 'error', null, 'reconciliation', app_private.reconciliation_json(r));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.start_reconciliation(organization_id uuid, payment_account_id uuid, statement_date text, closing_balance text)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  v_date date;
  v_closing numeric;
  prev app_public.reconciliations;
  r app_public.reconciliations;
begin
  perform app_private.assert_org_access(organization_id, false);
  v_date := app_private.parse_date(statement_date, 'Statement date must be a date in YYYY-MM-DD format.');
  v_closing := app_private.parse_balance(closing_balance, 'Closing balance must be a decimal string such as 1234.56 or -20.00.');
  perform app_private.check_payment_account(payment_account_id);
  -- The account's reconciliations are started and undone one at a time (an import's foreign keys
  -- on the account take a lock this does not wait for).
  perform 1 from app_public.accounts a where a.id = payment_account_id for no key update;
  if exists (select 1 from app_public.reconciliations x
              where x.organization_id = start_reconciliation.organization_id
                and x.payment_account_id = start_reconciliation.payment_account_id and x.status = 'open') then
    perform app_private.fail('This account already has an open reconciliation.');
  end if;
  select * into prev from app_public.reconciliations x
   where x.organization_id = start_reconciliation.organization_id
     and x.payment_account_id = start_reconciliation.payment_account_id and x.status = 'completed'
     and not exists (select 1 from app_public.reconciliations s where s.previous_id = x.id and s.status <> 'undone');
  if prev.id is not null and v_date <= prev.statement_date then
    perform app_private.fail(format('Statement date must be after the previous reconciliation''s (%s).',
      to_char(prev.statement_date, 'YYYY-MM-DD')));
  end if;
  insert into app_public.reconciliations (organization_id, payment_account_id, statement_date, opening_balance,
      closing_balance, previous_id)
    values (organization_id, payment_account_id, v_date, coalesce(prev.closing_balance, 0), v_closing, prev.id)
    returning * into r;
  return jsonb_build_object('success', true, 'error', null, 'reconciliation', app_private.reconciliation_json(r));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.sync_cloud_drive(organization_id uuid, cloud_drive_id uuid)
 RETURNS jsonb
 LANGUAGE sql
AS $function$ select app_private.sync_receipt_source(organization_id, 'cloud_drive', cloud_drive_id) $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.sync_mailbox(organization_id uuid, mailbox_id uuid)
 RETURNS jsonb
 LANGUAGE sql
AS $function$ select app_private.sync_receipt_source(organization_id, 'mailbox', mailbox_id) $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.trial_balance(organization_id uuid, as_of text DEFAULT NULL::text)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
 SET plan_cache_mode TO 'force_custom_plan'
AS $function$
declare
  v_as_of date;
  r jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  v_as_of := app_private.as_of_date(as_of);
  select jsonb_build_object('asOf', to_char(v_as_of, 'YYYY-MM-DD'),
      'rows', coalesce(jsonb_agg(jsonb_build_object('accountId', account_id, 'accountName', account_name,
          'classification', classification,
          'debit', app_private.money(greatest(net_debit, 0)), 'credit', app_private.money(greatest(-net_debit, 0)))
          order by array_position(array['asset', 'liability', 'equity', 'revenue', 'expense'], classification),
                   lower(account_name), account_id), '[]'::jsonb),
      'totalDebit', app_private.money(coalesce(sum(greatest(net_debit, 0)), 0)),
      'totalCredit', app_private.money(coalesce(sum(greatest(-net_debit, 0)), 0)))
    into r
    from app_private.closing_balances(trial_balance.organization_id, v_as_of);
  return r;
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.undo_reconciliation(organization_id uuid, reconciliation_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare r app_public.reconciliations;
begin
  perform app_private.assert_org_access(organization_id, true);
  perform set_config('app.audit_action', 'undo_reconciliation', true);
  select * into r from app_public.reconciliations x where x.id = reconciliation_id;
  if not found then perform app_private.fail('Reconciliation not found.', 'AP404'); end if;
  perform 1 from app_public.accounts a where a.id = r.payment_account_id for no key update;
  r := app_private.lock_reconciliation(reconciliation_id);
  if r.status = 'undone' then perform app_private.fail('Reconciliation is already undone.'); end if;
  if exists (select 1 from app_public.reconciliations s where s.previous_id = r.id and s.status <> 'undone') then
    perform app_private.fail('Only the account''s latest reconciliation can be undone.');
  end if;
  -- In id order, as every writer of several events locks them.
  perform 1 from app_public.ledger_events e join app_public.reconciliation_clearings c on c.event_id = e.id
   where c.reconciliation_id = r.id order by e.id for no key update of e;
  -- Back to confirmed (synced, when exported) unless the other side of a transfer stays reconciled.
  update app_public.ledger_events e
     set status = case when exists (select 1 from app_public.ledger_event_external_refs x where x.event_id = e.id)
                       then 'synced' else 'confirmed' end
    from app_public.reconciliation_clearings c
   where c.reconciliation_id = r.id and e.id = c.event_id and e.status = 'reconciled'
     and not exists (select 1 from app_public.reconciliation_clearings k join app_public.reconciliations o on o.id = k.reconciliation_id
                      where k.event_id = e.id and o.id <> r.id and o.status = 'completed');
  delete from app_public.reconciliation_clearings c where c.reconciliation_id = r.id;
  update app_public.reconciliations x set status = 'undone', undone_at = now() where x.id = r.id returning * into r;
  return jsonb_build_object('success', true, 'error', null, 'reconciliation', app_private.reconciliation_json(r));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.unlink_receipt(organization_id uuid, receipt_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare r app_public.receipts;
begin
  perform app_private.assert_org_access(organization_id, false);
  r := app_private.receipt_for_update(receipt_id);
  if r.event_id is null then perform app_private.fail('Receipt is not linked to a transaction.'); end if;
  if r.status = 'rejected' then perform app_private.fail('Receipt is rejected.'); end if;
  perform app_private.unlink_receipt(r, case when r.extracted_at is null then 'draft' else 'processed' end);
  if r.extracted_at is not null then
    perform app_private.queue_receipt_matching(r.organization_id, array[r.id]);
  end if;
  return jsonb_build_object('success', true, 'error', null, 'receipt', app_private.receipt_json_by_id(r.id));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.update_account(organization_id uuid, account_id uuid, name text DEFAULT NULL::text, last_four text DEFAULT NULL::text, parent_id uuid DEFAULT NULL::uuid, clear_parent boolean DEFAULT NULL::boolean, tax_code_id uuid DEFAULT NULL::uuid, sub_type text DEFAULT NULL::text)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  a app_public.accounts;
  t app_public.tax_codes;
  nm text := app_private.clean_text(name);
  st text := app_private.clean_text(sub_type);
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
  if st is not null then
    if length(st) > 100 then perform app_private.fail('subType must be at most 100 characters.'); end if;
    a.sub_type := st;
  end if;
  begin
    update app_public.accounts x set name = a.name, last_four = a.last_four, parent_id = a.parent_id,
        tax_code_id = a.tax_code_id, sub_type = a.sub_type
     where x.organization_id = a.organization_id and x.id = a.id;
  exception when unique_violation then
    perform app_private.fail('Account with this name already exists.');
  end;
  return jsonb_build_object('success', true, 'error', null, 'account', app_private.account_by_id(a.organization_id, a.id));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.update_category_rule(organization_id uuid, category_rule_id uuid, vendor_pattern text DEFAULT NULL::text, category_id uuid DEFAULT NULL::uuid, priority integer DEFAULT NULL::integer, direction text DEFAULT NULL::text, amount_min text DEFAULT NULL::text, amount_max text DEFAULT NULL::text, payment_account_id uuid DEFAULT NULL::uuid, contact_id uuid DEFAULT NULL::uuid, tax_code text DEFAULT NULL::text, splits jsonb DEFAULT NULL::jsonb, clear_payment_account boolean DEFAULT NULL::boolean, clear_contact boolean DEFAULT NULL::boolean)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare r app_public.category_rules;
begin
  perform app_private.assert_org_access(organization_id, false);
  select * into r from app_public.category_rules x
   where x.organization_id = update_category_rule.organization_id and x.id = category_rule_id for no key update;
  if not found then perform app_private.fail('Category rule not found.', 'AP404'); end if;
  r := app_private.checked_rule(r, vendor_pattern, category_id, priority, direction, amount_min, amount_max,
    payment_account_id, contact_id, tax_code, splits, coalesce(clear_payment_account, false), coalesce(clear_contact, false));
  begin
    update app_public.category_rules x set vendor_pattern = r.vendor_pattern, account_id = r.account_id, priority = r.priority,
        direction = r.direction, amount_min = r.amount_min, amount_max = r.amount_max, payment_account_id = r.payment_account_id,
        contact_id = r.contact_id, tax_code = r.tax_code, splits = r.splits
     where x.organization_id = r.organization_id and x.id = r.id
     returning * into r;
  exception when unique_violation then
    perform app_private.fail('A category rule with this pattern and these conditions already exists.');
  end;
  return jsonb_build_object('success', true, 'error', null, 'categoryRule', app_private.category_rule_json(r));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.update_contact(organization_id uuid, contact_id uuid, contact_type text DEFAULT NULL::text, display_name text DEFAULT NULL::text, email text DEFAULT NULL::text, phone text DEFAULT NULL::text)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  c app_public.contacts;
  nm text := app_private.clean_text(display_name);
begin
  perform app_private.assert_org_access(organization_id, false);
  select * into c from app_public.contacts x
   where x.organization_id = update_contact.organization_id and x.id = update_contact.contact_id for no key update;
  if not found then perform app_private.fail('Contact not found.', 'AP404'); end if;
  if contact_type is not null then
    if lower(btrim(contact_type)) not in ('vendor', 'customer') then perform app_private.fail('Contact type must be vendor or customer.'); end if;
    -- Its invoices (a customer's) or bills (a vendor's) say which side it is on.
    if lower(btrim(contact_type)) <> c.contact_type
       and exists (select 1 from app_public.documents d where d.contact_id = c.id and d.status <> 'void') then
      perform app_private.fail('A contact with invoices or bills keeps its type.');
    end if;
    c.contact_type := lower(btrim(contact_type));
  end if;
  if nm is not null then
    if nm = '' then perform app_private.fail('Display name is required.'); end if;
    if length(nm) > 200 then perform app_private.fail('Display name must be at most 200 characters.'); end if;
    c.display_name := nm;
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
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.update_ledger_event(organization_id uuid, event_id uuid, transaction_date text DEFAULT NULL::text, memo text DEFAULT NULL::text, amount text DEFAULT NULL::text, event_type text DEFAULT NULL::text)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  e app_public.ledger_events;
  v_type text;
  v_category uuid;
  v_amount numeric;
  v_tax numeric;
  v_classification text;
  v_date date;
  v_sale boolean;
  v_tax_account uuid;
  v_memo text := normalize(memo, NFC);
  v_splits jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  perform set_config('app.audit_action', 'update', true);
  select * into e from app_public.ledger_events x where x.id = event_id for update;
  if not found then perform app_private.fail('Ledger event not found.', 'AP404'); end if;
  if e.status = 'reconciled' then perform app_private.fail('Event is reconciled.'); end if;
  if e.status not in ('needs_review', 'pending') then
    perform app_private.fail('Only events in needs_review or pending can be updated.');
  end if;
  v_type := coalesce(event_type, e.event_type);
  if event_type is not null and event_type not in ('expense', 'income', 'transfer') then
    perform app_private.fail('Event type must be one of: expense, income, transfer.');
  end if;
  v_amount := case when amount is null then e.functional_amount
                   else app_private.parse_amount(amount, 'Amount must be a positive decimal string.') end;
  if v_memo is not null and length(v_memo) > 5000 then perform app_private.fail('Memo must be at most 5000 characters.'); end if;
  -- A category that no longer fits the new type is cleared (the event needs classifying again).
  v_category := e.category_id;
  if v_category is not null and v_type <> e.event_type then
    select a.classification into v_classification from app_public.accounts a where a.id = v_category;
    if not app_private.category_fits(v_type, v_classification) then v_category := null; end if;
  end if;
  -- A tax portion computed from a sales tax code follows the amount, the side (sale or purchase)
  -- and the date; an edit of anything else leaves it as it is.
  v_tax := e.tax_amount;
  v_tax_account := e.tax_account_id;
  v_date := case when update_ledger_event.transaction_date is null then e.transaction_date
                 else app_private.parse_date(update_ledger_event.transaction_date, 'Transaction date must be a date in YYYY-MM-DD format.') end;
  v_splits := e.splits;
  if v_splits is not null then
    -- Split: the lines must still add up, and still fit the type (else the event is classified
    -- again, as one whose category no longer fits); a computed tax follows the date.
    if v_amount <> e.functional_amount then perform app_private.fail('Splits must add up to the amount.'); end if;
    if not app_private.splits_fit(v_splits, v_type) then
      v_splits := null; v_category := null; v_tax := null; v_tax_account := null;
      e.tax_code := null;
    else
      v_category := app_private.largest_split_category(v_splits);
      if v_date <> e.transaction_date then
        v_splits := app_private.splits_on_day(v_splits, v_type, v_date);
        v_tax := app_private.splits_tax(v_splits);
      end if;
    end if;
  elsif e.tax_code is not null then
    v_sale := app_private.is_sale(v_category, v_type);
    if v_amount <> e.functional_amount or v_date <> e.transaction_date or v_sale is distinct from app_private.is_sale(e.category_id, e.event_type) then
      v_tax := app_private.tax_for_account(v_amount, e.tax_code, v_sale, v_date);
      v_tax_account := app_private.tax_account_or_default(e.organization_id, v_tax, v_tax_account);
    end if;
  end if;
  if v_tax is not null and v_tax >= v_amount then
    perform app_private.fail('Tax amount must be less than the amount.');
  end if;
  update app_public.ledger_events x set
      transaction_date = v_date,
      memo = coalesce(v_memo, x.memo),
      functional_amount = v_amount,
      event_type = v_type,
      -- Only a change of type recomputes the direction: an imported event's comes from the sign.
      direction = case when update_ledger_event.event_type is null then x.direction else app_private.direction_for(v_type) end,
      category_id = v_category,
      tax_amount = v_tax,
      tax_account_id = v_tax_account,
      tax_code = e.tax_code,
      splits = v_splits
    where x.id = e.id;
  return jsonb_build_object('success', true, 'error', null, 'event', app_private.ledger_event_json_by_id(e.id));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.update_member_role(organization_id uuid, user_id uuid, role text)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app_public'
AS $function$
declare
  m app_public.memberships;
  u app_public.users;
begin
  perform app_private.assert_org_access(organization_id, true);
  if role is null or role not in ('owner', 'admin', 'member') then
    perform app_private.fail('Role must be one of: owner, admin, member.');
  end if;
  select * into m from app_public.memberships x
   where x.organization_id = update_member_role.organization_id and x.user_id = update_member_role.user_id for update;
  if m is null then perform app_private.fail('Member not found.', 'AP404'); end if;
  if (m.role = 'owner' or role = 'owner') and app_private.caller_role(organization_id) <> 'owner' then
    perform app_private.fail('Only an owner can grant, change or remove the owner role.');
  end if;
  update app_public.memberships x set role = update_member_role.role
   where x.organization_id = m.organization_id and x.user_id = m.user_id
   returning * into m;
  set constraints app_public._100_keep_owner immediate;
  select * into u from app_public.users where id = m.user_id;
  return jsonb_build_object('success', true, 'error', null, 'member', app_private.membership_json(m, u));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.update_organization_settings(organization_id uuid, date_order text DEFAULT NULL::text, lock_date jsonb DEFAULT NULL::jsonb, fiscal_year_start text DEFAULT NULL::text)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare o app_public.organizations;
begin
  perform app_private.assert_org_access(organization_id, true);
  if date_order is not null and date_order not in ('auto', 'DMY', 'MDY') then
    perform app_private.fail('dateOrder must be one of: auto, DMY, MDY.');
  end if;
  if fiscal_year_start is not null and not (fiscal_year_start ~ '^(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$'
      and to_char(make_date(2001, substr(fiscal_year_start, 1, 2)::integer, 1) + interval '1 month' - interval '1 day', 'DD')
          >= substr(fiscal_year_start, 4)) then
    perform app_private.fail('fiscalYearStart must be a day of the year in MM-DD format, such as 01-01 or 04-01.');
  end if;
  -- FOR UPDATE, not the update's own lock: it conflicts with the key-share lock every posting
  -- holds on the row (ledger/lock-date.sql), so postings in flight commit first and later ones
  -- read the new lock date.
  perform 1 from app_public.organizations x where x.id = update_organization_settings.organization_id for update;
  update app_public.organizations x set
      date_order = coalesce(update_organization_settings.date_order, x.date_order),
      lock_date = case when update_organization_settings.lock_date is null then x.lock_date
        when jsonb_typeof(update_organization_settings.lock_date) = 'null' then null
        else app_private.parse_date(case when jsonb_typeof(update_organization_settings.lock_date) = 'string'
          then update_organization_settings.lock_date #>> '{}' end, 'lockDate must be a date in YYYY-MM-DD format.') end,
      fiscal_year_start = coalesce(update_organization_settings.fiscal_year_start, x.fiscal_year_start)
   where x.id = update_organization_settings.organization_id
   returning * into o;
  return jsonb_build_object('success', true, 'error', null, 'organization', app_private.organization_settings_json(o));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.update_staged_entry(organization_id uuid, event_id uuid, category_id uuid DEFAULT NULL::uuid, payment_id uuid DEFAULT NULL::uuid, tax_amount text DEFAULT NULL::text, tax_account_id uuid DEFAULT NULL::uuid, tax_code text DEFAULT NULL::text, splits jsonb DEFAULT NULL::jsonb, contact_id uuid DEFAULT NULL::uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  e app_public.ledger_events;
  v_category uuid;
  v_payment uuid;
  v_tax numeric;
  v_tax_account uuid;
  v_tax_code text;
  v_splits jsonb;
begin
  perform app_private.assert_org_access(organization_id, false);
  perform set_config('app.audit_action', 'classify', true);
  select * into e from app_public.ledger_events x where x.id = event_id for update;
  if not found then perform app_private.fail('Ledger event not found.', 'AP404'); end if;
  if e.status = 'reconciled' then perform app_private.fail('Event is reconciled.'); end if;
  if e.status in ('confirmed', 'synced') then perform app_private.fail('Event is already confirmed.'); end if;
  if e.status not in ('needs_review', 'pending') then
    perform app_private.fail('Only events in needs_review or pending can be updated.');
  end if;
  if splits is not null and (category_id is not null or tax_amount is not null or tax_code is not null) then
    perform app_private.fail('Give splits, or categoryId with taxAmount and taxCode, not both: each split has its own tax.');
  end if;
  if e.splits is not null and splits is null and category_id is null and (tax_amount is not null or tax_code is not null) then
    perform app_private.fail('The tax of a split event is on its splits: give splits, or a categoryId to make it one line.');
  end if;
  v_payment := coalesce(payment_id, e.payment_account_id);
  if payment_id is not null then perform app_private.check_payment_account(payment_id); end if;

  v_tax := e.tax_amount;
  v_tax_code := e.tax_code;
  v_splits := e.splits;
  if splits is not null then
    v_splits := app_private.checked_splits(splits, e.event_type, e.functional_amount, e.transaction_date);
  elsif category_id is not null and e.splits is not null then
    -- One line again: the splits' tax goes with them.
    v_splits := null; v_tax := null; v_tax_code := null;
  end if;

  if v_splits is not null then
    v_category := app_private.largest_split_category(v_splits);
    v_tax := app_private.splits_tax(v_splits);
    v_tax_code := null;
    if v_payment in (select (s->>'category_id')::uuid from jsonb_array_elements(v_splits) s) then
      perform app_private.fail('Category and payment account must differ.');
    end if;
  else
    v_category := coalesce(category_id, e.category_id);
    if category_id is not null then perform app_private.check_category(category_id, e.event_type); end if;
    if v_category = v_payment then perform app_private.fail('Category and payment account must differ.'); end if;
    if tax_code is not null then
      v_tax_code := tax_code;
      v_tax := app_private.tax_for_account(e.functional_amount, update_staged_entry.tax_code,
        app_private.is_sale(v_category, e.event_type), e.transaction_date);
      if v_tax is null then perform app_private.fail('Unknown tax code.'); end if;
    end if;
    if tax_amount is not null then
      v_tax := app_private.parse_amount(tax_amount, 'Tax amount must be a decimal string of at least 0.', true);
      if tax_code is null then v_tax_code := null; end if; -- an explicit amount replaces a computed one
      perform app_private.check_typed_tax(v_tax, v_tax_code, app_private.is_sale(v_category, e.event_type), e.transaction_date);
    end if;
    if v_tax is not null and v_tax >= e.functional_amount then
      perform app_private.fail('Tax amount must be less than the amount.');
    end if;
  end if;
  v_tax_account := coalesce(tax_account_id, e.tax_account_id);
  if tax_account_id is not null then perform app_private.check_tax_account(tax_account_id); end if;
  v_tax_account := app_private.tax_account_or_default(e.organization_id, v_tax, v_tax_account);
  if v_tax_account is not null and (v_tax_account in (v_category, v_payment)
     or v_tax_account in (select (s->>'category_id')::uuid from jsonb_array_elements(v_splits) s)) then
    perform app_private.fail('The tax account must differ from the category and payment accounts.');
  end if;

  if contact_id is not null and not exists (select 1 from app_public.contacts k where k.id = contact_id) then
    perform app_private.fail('Contact not found.');
  end if;
  update app_public.ledger_events x set category_id = v_category, payment_account_id = v_payment,
      tax_amount = v_tax, tax_account_id = v_tax_account, tax_code = v_tax_code, splits = v_splits,
      contact_id = coalesce(update_staged_entry.contact_id, x.contact_id)
    where x.id = e.id;
  return jsonb_build_object('success', true, 'error', null, 'event', app_private.ledger_event_json_by_id(e.id));
end $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.void_bill(organization_id uuid, bill_id uuid, posting_date text DEFAULT NULL::text)
 RETURNS jsonb
 LANGUAGE sql
AS $function$ select app_private.void_document(organization_id, 'bill', bill_id, posting_date) $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE OR REPLACE FUNCTION app_public.void_invoice(organization_id uuid, invoice_id uuid, posting_date text DEFAULT NULL::text)
 RETURNS jsonb
 LANGUAGE sql
AS $function$ select app_private.void_document(organization_id, 'invoice', invoice_id, posting_date) $function$
-- grants: <owner>: EXECUTE; accounting_visitor: EXECUTE

CREATE TRIGGER _050_nfc BEFORE INSERT OR UPDATE ON app_public.accounts FOR EACH ROW WHEN (((NOT (new.name IS NFC NORMALIZED)) OR (NOT (new.sub_type IS NFC NORMALIZED)))) EXECUTE FUNCTION app_private.tg__nfc('name', 'sub_type');

CREATE TRIGGER _100_touch_updated BEFORE UPDATE ON app_public.accounts FOR EACH ROW EXECUTE FUNCTION app_private.tg__touch_updated();

CREATE TRIGGER _200_no_cycle BEFORE UPDATE OF parent_id ON app_public.accounts FOR EACH ROW WHEN (((new.parent_id IS NOT NULL) AND (new.parent_id IS DISTINCT FROM old.parent_id))) EXECUTE FUNCTION app_private.tg_accounts__no_cycle();

CREATE TRIGGER _050_nfc BEFORE INSERT OR UPDATE ON app_public.api_keys FOR EACH ROW WHEN ((NOT (new.label IS NFC NORMALIZED))) EXECUTE FUNCTION app_private.tg__nfc('label');

CREATE TRIGGER _050_nfc BEFORE INSERT OR UPDATE ON app_public.category_rules FOR EACH ROW WHEN ((NOT (new.vendor_pattern IS NFC NORMALIZED))) EXECUTE FUNCTION app_private.tg__nfc('vendor_pattern');

CREATE TRIGGER _100_touch_updated BEFORE UPDATE ON app_public.category_rules FOR EACH ROW EXECUTE FUNCTION app_private.tg__touch_updated();

CREATE TRIGGER _600_classify_needs_review AFTER INSERT ON app_public.category_rules FOR EACH ROW EXECUTE FUNCTION app_private.tg_category_rules__classify();

CREATE TRIGGER _050_nfc BEFORE INSERT OR UPDATE ON app_public.contacts FOR EACH ROW WHEN (((NOT (new.display_name IS NFC NORMALIZED)) OR (NOT (new.email IS NFC NORMALIZED)))) EXECUTE FUNCTION app_private.tg__nfc('display_name', 'email');

CREATE TRIGGER _100_touch_updated BEFORE UPDATE ON app_public.contacts FOR EACH ROW EXECUTE FUNCTION app_private.tg__touch_updated();

CREATE TRIGGER _100_touch_updated BEFORE UPDATE ON app_public.documents FOR EACH ROW EXECUTE FUNCTION app_private.tg__touch_updated();

CREATE TRIGGER _050_nfc BEFORE INSERT OR UPDATE ON app_public.intake_addresses FOR EACH ROW WHEN (((NOT (new.address IS NFC NORMALIZED)) OR (NOT (new.label IS NFC NORMALIZED)))) EXECUTE FUNCTION app_private.tg__nfc('address', 'label');

CREATE TRIGGER _300_locked_update AFTER UPDATE ON app_public.journal_entries REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION app_private.tg_journal_lines__locked();

CREATE CONSTRAINT TRIGGER _900_balanced AFTER INSERT ON app_public.journal_entries DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION app_private.tg_journal__balanced();

CREATE TRIGGER _100_immutable BEFORE UPDATE ON app_public.journal_lines FOR EACH ROW EXECUTE FUNCTION app_private.tg_journal_lines__immutable();

CREATE TRIGGER _200_same_transaction AFTER INSERT ON app_public.journal_lines REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION app_private.tg_journal_lines__same_transaction();

CREATE TRIGGER _300_locked_delete AFTER DELETE ON app_public.journal_lines REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION app_private.tg_journal_lines__locked();

CREATE TRIGGER _300_locked_insert AFTER INSERT ON app_public.journal_lines REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION app_private.tg_journal_lines__locked();

CREATE TRIGGER _300_locked_update AFTER UPDATE ON app_public.journal_lines REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION app_private.tg_journal_lines__locked();

CREATE TRIGGER _500_totals_delete AFTER DELETE ON app_public.journal_lines REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION app_private.tg_journal_lines__totals();

CREATE TRIGGER _500_totals_insert AFTER INSERT ON app_public.journal_lines REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION app_private.tg_journal_lines__totals();

CREATE TRIGGER _500_totals_update AFTER UPDATE ON app_public.journal_lines REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION app_private.tg_journal_lines__totals();

CREATE TRIGGER _510_sales_tax_delete AFTER DELETE ON app_public.journal_lines REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION app_private.tg_journal_lines__sales_tax();

CREATE TRIGGER _510_sales_tax_insert AFTER INSERT ON app_public.journal_lines REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION app_private.tg_journal_lines__sales_tax();

CREATE TRIGGER _510_sales_tax_update AFTER UPDATE ON app_public.journal_lines REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION app_private.tg_journal_lines__sales_tax();

CREATE CONSTRAINT TRIGGER _900_balanced AFTER DELETE OR UPDATE ON app_public.journal_lines DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION app_private.tg_journal__balanced();

CREATE TRIGGER _100_append_only BEFORE DELETE OR UPDATE ON app_public.ledger_event_audit FOR EACH ROW EXECUTE FUNCTION app_private.tg_ledger_event_audit__append_only();

CREATE TRIGGER _100_no_truncate BEFORE TRUNCATE ON app_public.ledger_event_audit FOR EACH STATEMENT EXECUTE FUNCTION app_private.tg_ledger_event_audit__append_only();

CREATE TRIGGER _050_nfc BEFORE INSERT OR UPDATE ON app_public.ledger_events FOR EACH ROW WHEN (((NOT (new.merchant_name IS NFC NORMALIZED)) OR (NOT (new.memo IS NFC NORMALIZED)) OR (NOT (new.reference IS NFC NORMALIZED)))) EXECUTE FUNCTION app_private.tg__nfc('merchant_name', 'memo', 'reference');

CREATE TRIGGER _100_touch_updated BEFORE UPDATE ON app_public.ledger_events FOR EACH ROW EXECUTE FUNCTION app_private.tg__touch_updated();

CREATE TRIGGER _200_reconciled BEFORE UPDATE ON app_public.ledger_events FOR EACH ROW WHEN ((old.status = 'reconciled'::text)) EXECUTE FUNCTION app_private.tg_ledger_events__reconciled();

CREATE TRIGGER _200_reconciled_delete AFTER DELETE ON app_public.ledger_events REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION app_private.tg_ledger_events__reconciled();

CREATE TRIGGER _500_counts_delete AFTER DELETE ON app_public.ledger_events REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION app_private.tg_ledger_events__counts();

CREATE TRIGGER _500_counts_insert AFTER INSERT ON app_public.ledger_events REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION app_private.tg_ledger_events__counts();

CREATE TRIGGER _500_counts_update AFTER UPDATE ON app_public.ledger_events REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION app_private.tg_ledger_events__counts();

CREATE TRIGGER _510_merchant_counts_delete AFTER DELETE ON app_public.ledger_events REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION app_private.tg_ledger_events__merchant_counts();

CREATE TRIGGER _510_merchant_counts_insert AFTER INSERT ON app_public.ledger_events REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION app_private.tg_ledger_events__merchant_counts();

CREATE TRIGGER _510_merchant_counts_update AFTER UPDATE ON app_public.ledger_events REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION app_private.tg_ledger_events__merchant_counts();

CREATE TRIGGER _800_audit_delete AFTER DELETE ON app_public.ledger_events REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION app_private.tg_ledger_events__audit();

CREATE TRIGGER _800_audit_insert AFTER INSERT ON app_public.ledger_events REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION app_private.tg_ledger_events__audit();

CREATE TRIGGER _800_audit_update AFTER UPDATE ON app_public.ledger_events REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION app_private.tg_ledger_events__audit();

CREATE TRIGGER _820_changes_delete AFTER DELETE ON app_public.ledger_events REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION app_private.tg_ledger_events__changes();

CREATE TRIGGER _820_changes_insert AFTER INSERT ON app_public.ledger_events REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION app_private.tg_ledger_events__changes();

CREATE TRIGGER _820_changes_update AFTER UPDATE ON app_public.ledger_events REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION app_private.tg_ledger_events__changes();

CREATE TRIGGER _900_rematch_receipts_insert AFTER INSERT ON app_public.ledger_events REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION app_private.tg_ledger_events__rematch_receipts();

CREATE TRIGGER _900_rematch_receipts_update AFTER UPDATE ON app_public.ledger_events REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION app_private.tg_ledger_events__rematch_receipts();

CREATE CONSTRAINT TRIGGER _100_keep_owner AFTER DELETE OR UPDATE ON app_public.memberships DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN ((old.role = 'owner'::text)) EXECUTE FUNCTION app_private.tg_memberships__keep_owner();

CREATE TRIGGER _050_nfc BEFORE INSERT OR UPDATE ON app_public.organizations FOR EACH ROW WHEN ((NOT (new.name IS NFC NORMALIZED))) EXECUTE FUNCTION app_private.tg__nfc('name');

CREATE TRIGGER _100_touch_updated BEFORE UPDATE ON app_public.receipts FOR EACH ROW EXECUTE FUNCTION app_private.tg__touch_updated();

CREATE TRIGGER _200_link_state BEFORE UPDATE OF event_id ON app_public.receipts FOR EACH ROW EXECUTE FUNCTION app_private.tg_receipts__link_state();

CREATE TRIGGER _500_has_document AFTER INSERT OR DELETE OR UPDATE OF event_id ON app_public.receipts FOR EACH ROW EXECUTE FUNCTION app_private.tg_receipts__has_document();

CREATE TRIGGER _820_changes_delete AFTER DELETE ON app_public.reconciliation_clearings REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION app_private.tg_reconciliation_clearings__changes();

CREATE TRIGGER _820_changes_insert AFTER INSERT ON app_public.reconciliation_clearings REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION app_private.tg_reconciliation_clearings__changes();

CREATE TRIGGER _050_nfc BEFORE INSERT OR UPDATE ON app_public.users FOR EACH ROW WHEN (((NOT (new.email IS NFC NORMALIZED)) OR (NOT (new.name IS NFC NORMALIZED)))) EXECUTE FUNCTION app_private.tg__nfc('email', 'name');

CREATE TRIGGER _100_touch_updated BEFORE UPDATE ON app_public.webhook_endpoints FOR EACH ROW EXECUTE FUNCTION app_private.tg__touch_updated();

policy account_daily_totals_tenant on app_public.account_daily_totals for all to public
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());

policy account_monthly_totals_tenant on app_public.account_monthly_totals for all to public
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());

policy accounts_tenant on app_public.accounts for all to public
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());

policy api_keys_tenant on app_public.api_keys for all to public
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());

policy bank_import_layouts_tenant on app_public.bank_import_layouts for all to public
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());

policy category_rules_tenant on app_public.category_rules for all to public
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());

policy cloud_drive_objects_tenant on app_public.cloud_drive_objects for all to public
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());

policy contacts_tenant on app_public.contacts for all to public
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());

policy document_lines_tenant on app_public.document_lines for all to public
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());

policy documents_tenant on app_public.documents for all to public
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());

policy idempotency_records_tenant on app_public.idempotency_records for all to public
  using (organization_id = app_public.current_organization_id());

policy import_batches_tenant on app_public.import_batches for all to public
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());

policy intake_addresses_tenant on app_public.intake_addresses for all to public
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());

policy intake_messages_tenant on app_public.intake_messages for all to public
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());

policy journal_entries_tenant on app_public.journal_entries for all to public
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());

policy journal_lines_tenant on app_public.journal_lines for all to public
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());

policy ledger_change_feed_tenant on app_public.ledger_change_feed for all to public
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());

policy ledger_event_audit_append on app_public.ledger_event_audit for insert to public
  with check (organization_id = app_public.current_organization_id());

policy ledger_event_audit_read on app_public.ledger_event_audit for select to public
  using (organization_id = app_public.current_organization_id());

policy ledger_event_daily_counts_tenant on app_public.ledger_event_daily_counts for all to public
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());

policy ledger_event_external_refs_tenant on app_public.ledger_event_external_refs for all to public
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());

policy ledger_event_monthly_counts_tenant on app_public.ledger_event_monthly_counts for all to public
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());

policy ledger_events_tenant on app_public.ledger_events for all to public
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());

policy memberships_tenant on app_public.memberships for all to public
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());

policy merchant_category_counts_tenant on app_public.merchant_category_counts for all to public
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());

policy organizations_tenant on app_public.organizations for all to public
  using (id = app_public.current_organization_id());

policy payment_allocations_tenant on app_public.payment_allocations for all to public
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());

policy rate_limit_windows_tenant on app_public.rate_limit_windows for all to public
  using (organization_id = app_public.current_organization_id());

policy receipt_sources_tenant on app_public.receipt_sources for all to public
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());

policy receipt_unlinked_pairs_tenant on app_public.receipt_unlinked_pairs for all to public
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());

policy receipts_tenant on app_public.receipts for all to public
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());

policy reconciliation_clearings_tenant on app_public.reconciliation_clearings for all to public
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());

policy reconciliations_tenant on app_public.reconciliations for all to public
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());

policy sales_tax_daily_totals_tenant on app_public.sales_tax_daily_totals for all to public
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());

policy uploads_tenant on app_public.uploads for all to public
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());

policy users_visible on app_public.users for select to public
  using ((id = app_public.current_user_id()) OR (id IN ( SELECT m.user_id
   FROM app_public.memberships m
  WHERE (m.organization_id = app_public.current_organization_id()))));

policy webhook_deliveries_tenant on app_public.webhook_deliveries for all to public
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());

policy webhook_endpoints_tenant on app_public.webhook_endpoints for all to public
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());

policy webhook_events_tenant on app_public.webhook_events for all to public
  using (organization_id = app_public.current_organization_id())
  with check (organization_id = app_public.current_organization_id());

default privileges of <owner> in every schema on functions: <owner>: EXECUTE
