import { gql } from "postgraphile/utils";
import { sqlOperationsPlugin } from "./sql-operations.js";

/**
 * Ledger events and their transitions (contract: LedgerEvent, States and transitions, Behavior
 * rules 1–4 and 10; docs/api.md, Money and the ledger). Each operation is one SQL function that
 * owns the rule.
 */
export const LedgerEventsPlugin = sqlOperationsPlugin("LedgerEventsPlugin", gql`
  "An account as an event shows it: the category (expense/income) account."
  type LedgerEventAccount { id: UUID! name: String! accountType: String! }
  type LedgerAccountRef { id: UUID! name: String! }
  type JournalEntry {
    id: UUID!
    txnDate: String!
    totalAmount: String!
    "When the entry was voided by rejectLedgerEvent (kept for audit, out of every report); null while posted."
    voidedAt: String
  }
  "One line of a split event: a category, the amount with tax, its sales tax code and the tax posted to the tax accounts."
  type LedgerEventSplit { category: LedgerAccountRef! amount: String! taxCode: String taxAmount: String! memo: String! }
  "A line of updateStagedEntry(splits:). amount includes the tax; taxAmount, when left out, is computed from taxCode."
  input LedgerEventSplitInput { categoryId: UUID! amount: String! taxCode: String taxAmount: String memo: String }
  type LedgerEventReceipt { id: UUID! filename: String! objectKey: String! uploadedAt: String! }
  """
  The category most often confirmed for the same merchant (case, spaces, digits and store numbers
  ignored): confidence is its share of those confirmations, basis how many there are (3 at least).
  """
  type SuggestedCategory { account: LedgerAccountRef! confidence: Float! basis: Int! }
  "The event's id in a system it was exported to (markLedgerEventsSynced)."
  type LedgerEventExternalRef { externalSystem: String! externalId: String! syncedAt: String! }
  type LedgerEvent {
    id: UUID!
    eventType: String!
    "in or out: which way money moved relative to the payment account."
    direction: String!
    merchantName: String!
    functionalAmount: String!
    functionalCurrency: String!
    transactionDate: String!
    status: String!
    memo: String!
    hasDocument: Boolean!
    account: LedgerEventAccount
    paymentAccount: LedgerAccountRef
    category: LedgerAccountRef
    "Tax portion of the amount, posted to taxAccount; null when none."
    taxAmount: String
    taxCode: String
    taxAccount: LedgerAccountRef
    "The customer or vendor: set by updateStagedEntry(contactId:), and on a payment of invoices or bills."
    contact: DocumentContact
    "The lines of a split event, in the order given (category and taxAmount above show the largest line and the lines' tax); empty for an event of one line."
    splits: [LedgerEventSplit!]!
    "The entry that posted it (on transactionDate, or on the postingDate it was confirmed with)."
    journalEntry: JournalEntry
    "The entry that reversed it (reverseLedgerEvent), kept beside journalEntry; null unless reversed."
    reversalEntry: JournalEntry
    "Ticked in a reconciliation (open, or completed: then the status is reconciled)."
    cleared: Boolean!
    receipts: [LedgerEventReceipt!]!
    "Where the event came from: manual, bank_import or processor_import."
    source: String!
    "The import run that created it (bank and processor imports), else null."
    importBatchId: UUID
    "The bank's id of the transaction (an OFX FITID), when the statement gave one."
    reference: String
    "For an event waiting for review with no category: what the organization's confirmed history suggests, never applied on its own; else null."
    suggestedCategory: SuggestedCategory
    "Its ids in the systems it was exported to; empty unless synced (or reconciled after)."
    externalRefs: [LedgerEventExternalRef!]!
    created: String!
    updated: String!
  }
  type LedgerEventPage { items: [LedgerEvent!]! totalCount: Int! pageSize: Int! offset: Int! }

  type LedgerEventChange { field: String! oldValue: String newValue: String }
  "One change of an event: who (API key or user; system for server-side commands), when, what."
  type LedgerEventAuditEntry {
    id: String!
    eventId: UUID!
    action: String!
    actorType: String!
    actorId: UUID
    occurredAt: String!
    changes: [LedgerEventChange!]!
  }

  type CreateLedgerEventResult { success: Boolean! error: String eventId: UUID }
  type UpdateLedgerEventResult { success: Boolean! error: String event: LedgerEvent }
  type UpdateStagedEntryResult { success: Boolean! error: String event: LedgerEvent }
  type ConfirmLedgerEventResult { success: Boolean! error: String eventId: UUID journalEntryId: UUID }
  type RejectLedgerEventResult { success: Boolean! error: String eventId: UUID }
  "journalEntryId: the reversing entry."
  type ReverseLedgerEventResult { success: Boolean! error: String eventId: UUID journalEntryId: UUID }

  extend type Query {
    listLedgerEvents(
      organizationId: UUID!, status: [String!], hasDocument: Boolean, sinceDays: Int, dateFrom: String, dateTo: String,
      amountMin: String, amountMax: String, accountIds: [UUID!], categoryIds: [UUID!], paymentAccountIds: [UUID!],
      search: String, limit: Int, offset: Int,
      "transactionDate (default), functionalAmount, merchantName, status, created"
      sortBy: String,
      "asc or desc (default desc)"
      sortDir: String,
      "The events of a reconciliation: while open, the account's confirmed events up to its statement date and those it ticked; once completed, those it cleared."
      reconciliationId: UUID,
      "Events of any of these contacts."
      contactIds: [UUID!]
    ): LedgerEventPage!
    getLedgerEvent(organizationId: UUID!, eventId: UUID!): LedgerEvent!
    "The event's audit trail, oldest first."
    ledgerEventHistory(organizationId: UUID!, eventId: UUID!): [LedgerEventAuditEntry!]!
  }
  extend type Mutation {
    createLedgerEvent(organizationId: UUID!, merchantName: String!, amount: String!, transactionDate: String!,
      eventType: String, categoryId: UUID, paymentAccountId: UUID): CreateLedgerEventResult!
    updateLedgerEvent(organizationId: UUID!, eventId: UUID!, transactionDate: String, memo: String, amount: String,
      eventType: String): UpdateLedgerEventResult!
    "splits classifies the event into several category lines, which must add up to its amount; categoryId makes it one line again."
    updateStagedEntry(organizationId: UUID!, eventId: UUID!, categoryId: UUID, paymentId: UUID, taxAmount: String,
      taxAccountId: UUID, taxCode: String, splits: [LedgerEventSplitInput!], contactId: UUID): UpdateStagedEntryResult!
    "postingDate (YYYY-MM-DD): the entry's date when not the transaction date, such as a day after the lock date."
    confirmLedgerEvent(organizationId: UUID!, eventId: UUID!, postingDate: String): ConfirmLedgerEventResult!
    rejectLedgerEvent(organizationId: UUID!, eventId: UUID!): RejectLedgerEventResult!
    "Posts a reversing entry (debits and credits swapped) dated postingDate (default today, after the lock date) and ignores the event; the original entry stays in its period."
    reverseLedgerEvent(organizationId: UUID!, eventId: UUID!, postingDate: String): ReverseLedgerEventResult!
  }
`);
