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

  extend type Query {
    "The latest issued first. Filters: status (any of), contactId, dueBefore (due earlier than that day), search (number and contact name)."
    listInvoices(organizationId: UUID!, status: [String!], contactId: UUID, dueBefore: String, search: String, limit: Int, offset: Int): DocumentPage!
    "As listInvoices, for bills."
    listBills(organizationId: UUID!, status: [String!], contactId: UUID, dueBefore: String, search: String, limit: Int, offset: Int): DocumentPage!
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
  }
`);
