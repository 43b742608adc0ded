import { context, lambda, type ExecutableStep } from "postgraphile/grafast";
import { gql } from "postgraphile/utils";
import { sqlOperationsPlugin } from "./sql-operations.js";

/** What the server signs a stored file's URL with (src/receipts/file-urls.ts), from the GraphQL context. */
export type SignFileUrl = (file: { objectKey: string; contentType: string; filename?: string }) => string;

interface ReceiptFile { objectKey: string; contentType: string; filename: string }

declare global {
  namespace Grafast {
    interface Context {
      signFileUrl?: SignFileUrl;
    }
  }
}

/**
 * Receipts (contract: Receipt, attachReceiptToEvent, listReceipts; docs/api.md, Receipts). Each
 * operation is one SQL function; only `imageUrl` is made here, signed with the server's secret.
 */
export const ReceiptsPlugin = sqlOperationsPlugin("ReceiptsPlugin", gql`
  type ReceiptEvent { id: UUID! merchantName: String! status: String! transactionDate: String! functionalAmount: String! }
  """
  How far each extracted field can be trusted: high, medium or low; null when the field was not
  read (receipts read before confidences were kept: medium). Matching asks more of a receipt with a
  low field (docs/api.md, Matching).
  """
  type ReceiptExtraction {
    "high: a registered name (Inc., Ltd., SDN BHD), read alike twice, or named in a sentence; medium: the strongest line at the top; low: from a forwarded email's sender or subject."
    vendorConfidence: String
    "high: the receipt's arithmetic confirms it (subtotal + tax ± rounding, cash − change, a card payment); medium: a total label names it; low: neither."
    amountConfidence: String
    "high: a labelled or timestamped date read alike twice; medium: labelled or timestamped; low: mended from broken digits, or merely the first date seen."
    dateConfidence: String
  }
  type Receipt {
    id: UUID!
    "From text recognition; null until extracted, or when it could not be read."
    vendorName: String
    "The total the receipt shows (a number, as the contract types it); null when unread."
    amount: Float
    "ISO 4217, when the receipt names its currency."
    currency: String
    "YYYY-MM-DD: the reading that matched an event, else the one nearest the arrival day and not after it."
    receiptDate: String
    "Both readings of a date whose day and month could be either way (dateOrder auto), else one."
    dateReadings: [String!]!
    "draft (stored, not yet read), processed, reviewed (linked or confirmed by a person), rejected."
    status: String!
    "web_upload, email, sms, mailbox or cloud_drive."
    source: String!
    "pending until matching ran, then matched or unmatched."
    matchStatus: String!
    filename: String!
    contentType: String!
    size: Float!
    objectKey: String!
    "When it arrived (uploaded or received), ISO 8601 UTC."
    uploadedAt: String!
    "A URL under PUBLIC_URL serving the stored file, signed, valid for RECEIPT_URL_TTL."
    imageUrl: String!
    extractedAt: String
    extractionMethod: String
    extractionError: String
    "Null until extracted."
    extraction: ReceiptExtraction
    "The extracted text (getReceipt only; null in lists)."
    extractedText: String
    "person or matching, while linked."
    linkedBy: String
    linkedAt: String
    "The linked transaction."
    event: ReceiptEvent
    created: String!
    updated: String!
  }
  type ReceiptPage { items: [Receipt!]! totalCount: Int! pageSize: Int! offset: Int! }
  type ReceiptMatchSuggestion {
    event: ReceiptEvent!
    "Trigram similarity of the receipt's vendor and the event's merchant name (0 to 1)."
    vendorSimilarity: Float!
    "Days between the event and the receipt's date reading nearest to it."
    dayDistance: Int!
    receiptDate: String!
  }
  type CreateReceiptResult { success: Boolean! error: String receiptId: UUID "True when the same file was already a receipt: that receipt is returned." duplicate: Boolean receipt: Receipt }
  type AttachReceiptResult { success: Boolean! error: String receiptId: UUID }
  type ReceiptResult { success: Boolean! error: String receipt: Receipt }

  extend type Query {
    "Newest first. Filters: status, source, search (vendor name), matchStatus, eventId."
    listReceipts(organizationId: UUID!, limit: Int, offset: Int, search: String, status: String, source: String, matchStatus: String, eventId: UUID): ReceiptPage!
    getReceipt(organizationId: UUID!, receiptId: UUID!): Receipt!
    "The events the receipt could belong to, best first, with their scores."
    receiptMatchSuggestions(organizationId: UUID!, receiptId: UUID!): [ReceiptMatchSuggestion!]!
  }
  extend type Mutation {
    "A file uploaded with POST /uploads becomes a receipt (source web_upload), extracted and matched like the others."
    createReceipt(organizationId: UUID!, objectKey: String!, filename: String): CreateReceiptResult!
    "An uploaded file becomes a receipt linked to this event at once (reviewed)."
    attachReceiptToEvent(organizationId: UUID!, eventId: UUID!, objectKey: String!, filename: String): AttachReceiptResult!
    "A person's link: the receipt is reviewed and linked to this event only."
    linkReceiptToEvent(organizationId: UUID!, receiptId: UUID!, eventId: UUID!): ReceiptResult!
    "Never linked to that event again automatically; matching may find another."
    unlinkReceipt(organizationId: UUID!, receiptId: UUID!): ReceiptResult!
    "Not a receipt: unlinked, kept, excluded from receiptCount."
    rejectReceipt(organizationId: UUID!, receiptId: UUID!): ReceiptResult!
  }
`, {
  Receipt: {
    imageUrl($receipt: ExecutableStep) {
      return lambda([$receipt, context().get("signFileUrl")], ([r, sign]) => {
        const file = r as ReceiptFile;
        if (!sign) throw new Error("No file URL signer in the GraphQL context.");
        return (sign as SignFileUrl)({ objectKey: file.objectKey, contentType: file.contentType, filename: file.filename });
      });
    },
  },
});
