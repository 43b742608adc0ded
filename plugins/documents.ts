import { gql } from "postgraphile/utils";
import { sqlOperationsPlugin } from "./sql-operations.js";

/**
 * Invoices to customers and bills from vendors (docs/api.md, Invoices, bills and contact
 * balances): drafts, approval that posts to Accounts Receivable or Payable, void by reversal.
 */
export const DocumentsPlugin = sqlOperationsPlugin("DocumentsPlugin", gql`
  type DocumentContact { id: UUID! displayName: String! }
  "A line: amount is quantity × unitPrice (half to even), taxAmount the tax on top of it under taxCode."
  type DocumentLine {
    description: String! quantity: String! unitPrice: String! amount: String! category: LedgerAccountRef!
    taxCode: String taxAmount: String!
  }
  """
  An invoice (kind invoice, to a customer) or a bill (kind bill, from a vendor). status: draft, open,
  partially_paid, paid or void; amountDue is what is still owed (0.00 for a draft or a void one).
  """
  type Document {
    id: UUID!
    kind: String!
    contact: DocumentContact!
    number: String!
    issueDate: String!
    dueDate: String!
    memo: String!
    status: String!
    subtotal: String!
    taxTotal: String!
    total: String!
    amountPaid: String!
    amountDue: String!
    lines: [DocumentLine!]!
    "The approval's entry; null for a draft."
    journalEntryId: UUID
    "The void's reversing entry; null unless an approved document was voided."
    voidEntryId: UUID
    approvedAt: String
    voidedAt: String
    created: String!
    updated: String!
  }
  type DocumentPage { items: [Document!]! totalCount: Int! pageSize: Int! offset: Int! }
  type DocumentResult { success: Boolean! error: String document: Document }
  "quantity: at most 4 decimals; unitPrice: at least 0, at most 4 decimals; categoryId: a revenue account (invoice) or an expense or asset account (bill)."
  input DocumentLineInput { description: String! quantity: String! unitPrice: String! categoryId: UUID! taxCode: String }
  "What a payment pays of one document."
  input AllocationInput { documentId: UUID! amount: String! }
  "The payment's ledger event (confirmed, with its entry) and the documents it paid, as they are now."
  type PaymentResult { success: Boolean! error: String eventId: UUID journalEntryId: UUID documents: [Document!] }
  "reason: number (its number is in the bank line's description or reference) or amount (its amount due is the line's amount)."
  type DocumentMatchSuggestion { document: Document! reason: String! }
  type AgingRow { contact: DocumentContact! current: String! days1to30: String! days31to60: String! days61to90: String! over90: String! total: String! }
  type AgingTotals { current: String! days1to30: String! days31to60: String! days61to90: String! over90: String! total: String! }
  type AgingReport { asOf: String! kind: String! rows: [AgingRow!]! totals: AgingTotals! }

  extend type Query {
    "The latest issued first. Filters: status (any of), contactId, dueBefore (due earlier than that day), search (number and contact name)."
    listInvoices(organizationId: UUID!, status: [String!], contactId: UUID, dueBefore: String, search: String, limit: Int, offset: Int): DocumentPage!
    "As listInvoices, for bills."
    listBills(organizationId: UUID!, status: [String!], contactId: UUID, dueBefore: String, search: String, limit: Int, offset: Int): DocumentPage!
    "Open documents an imported bank line may pay (money in: invoices; out: bills): by number first, then by amount due; at most 10."
    documentMatchSuggestions(organizationId: UUID!, eventId: UUID!): [DocumentMatchSuggestion!]!
    "What each contact owed on asOf (default today) by days past due; kind: receivable (default) or payable."
    agingReport(organizationId: UUID!, asOf: Date, kind: String): AgingReport!
  }
  extend type Mutation {
    "A draft invoice to a customer; number unique in the organization. Dates YYYY-MM-DD; at most 200 lines."
    createInvoice(organizationId: UUID!, contactId: UUID!, number: String!, issueDate: String!, dueDate: String!,
      lines: [DocumentLineInput!]!, memo: String): DocumentResult!
    "A draft bill from a vendor; number unique per vendor."
    createBill(organizationId: UUID!, contactId: UUID!, number: String!, issueDate: String!, dueDate: String!,
      lines: [DocumentLineInput!]!, memo: String): DocumentResult!
    "Posts the draft on its issue date: debit Accounts Receivable, credit revenue and tax collected."
    approveInvoice(organizationId: UUID!, invoiceId: UUID!): DocumentResult!
    "Posts the draft on its issue date: debit expenses and recoverable tax, credit Accounts Payable."
    approveBill(organizationId: UUID!, billId: UUID!): DocumentResult!
    "A draft, or an approved invoice without payments (a reversing entry dated postingDate, default today). Its number stays taken."
    voidInvoice(organizationId: UUID!, invoiceId: UUID!, postingDate: String): DocumentResult!
    "As voidInvoice, for a bill."
    voidBill(organizationId: UUID!, billId: UUID!, postingDate: String): DocumentResult!
    "A customer's payment in, or a payment to a vendor out, booked and confirmed; allocations must add up to amount, none more than is due."
    recordPayment(organizationId: UUID!, contactId: UUID!, paymentAccountId: UUID!, amount: String!, date: String!,
      allocations: [AllocationInput!]!): PaymentResult!
    "An imported bank line (needs_review or pending) pays documents: it becomes a transfer to Accounts Receivable or Payable and is confirmed."
    applyLedgerEventToDocuments(organizationId: UUID!, eventId: UUID!, allocations: [AllocationInput!]!): PaymentResult!
  }
`);
