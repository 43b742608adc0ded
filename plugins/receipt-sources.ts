import { gql } from "postgraphile/utils";
import { connectCloudDrive, connectMailbox } from "../src/sources/connect.js";
import { served, sqlOperationsPlugin } from "./sql-operations.js";

/**
 * Mailboxes and cloud-drive folders as receipt sources (docs/api.md, Receipt sources; contract
 * sources `mailbox` and `cloud_drive`). Owner or admin only, by JWT. Listing, scanning now and
 * disconnecting are SQL functions; connecting is served here (src/sources/connect.ts), since it
 * tests the connection and seals the secret, with its rules in SQL.
 */
export const ReceiptSourcesPlugin = sqlOperationsPlugin("ReceiptSourcesPlugin", gql`
  """
  An IMAP mailbox scanned for receipt attachments. status: connected, or error (lastError says
  why; it is retried with backoff). Timestamps are ISO 8601 UTC. The password is never returned.
  """
  type Mailbox {
    id: UUID! host: String! port: Int! secure: Boolean! username: String! folder: String!
    status: String! lastError: String lastScannedAt: String created: String!
  }
  type MailboxResult { success: Boolean! error: String mailbox: Mailbox }
  """
  A folder (bucket and prefix) of an S3-compatible store whose new objects become receipts.
  endpoint null: AWS S3 in region. The secret access key is never returned.
  """
  type CloudDrive {
    id: UUID! endpoint: String bucket: String! prefix: String! region: String! accessKeyId: String!
    status: String! lastError: String lastScannedAt: String created: String!
  }
  type CloudDriveResult { success: Boolean! error: String cloudDrive: CloudDrive }
  "scanId: the queued scan's id (the worker's job id), as the operator's list_scans shows it."
  type ReceiptSourceScanResult { success: Boolean! error: String scanId: String }
  type DisconnectReceiptSourceResult { success: Boolean! error: String }

  extend type Query {
    "The organization's mailboxes, oldest first (not paginated)."
    listMailboxes(organizationId: UUID!): [Mailbox!]!
    "The organization's cloud-drive folders, oldest first (not paginated)."
    listCloudDrives(organizationId: UUID!): [CloudDrive!]!
  }
  extend type Mutation {
    """
    Logs in to the mailbox (port default 993 with secure, else 143 with STARTTLS; folder default
    INBOX) and stores it only if that worked; otherwise success is false and error says why.
    Its first scan reads the last 30 days.
    """
    connectMailbox(organizationId: UUID!, host: String!, port: Int, secure: Boolean, username: String!, password: String!, folder: String): MailboxResult!
    "Queues a scan now; the scan's id is returned."
    syncMailbox(organizationId: UUID!, mailboxId: UUID!): ReceiptSourceScanResult!
    "Removes the mailbox and its password; its receipts stay."
    disconnectMailbox(organizationId: UUID!, mailboxId: UUID!): DisconnectReceiptSourceResult!
    """
    Lists the folder with the credentials (endpoint: an https origin; region default us-east-1)
    and stores it only if that worked; otherwise success is false and error says why.
    """
    connectCloudDrive(organizationId: UUID!, endpoint: String, bucket: String!, prefix: String, accessKeyId: String!, secretAccessKey: String!, region: String): CloudDriveResult!
    "Queues a scan now; the scan's id is returned."
    syncCloudDrive(organizationId: UUID!, cloudDriveId: UUID!): ReceiptSourceScanResult!
    "Removes the folder and its secret key; its receipts stay."
    disconnectCloudDrive(organizationId: UUID!, cloudDriveId: UUID!): DisconnectReceiptSourceResult!
  }
`, { Mutation: { connectMailbox: served(connectMailbox), connectCloudDrive: served(connectCloudDrive) } });
