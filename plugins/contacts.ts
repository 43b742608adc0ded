import { gql } from "postgraphile/utils";
import { sqlOperationsPlugin } from "./sql-operations.js";

/**
 * Vendors and customers (contract: Contact; docs/api.md, Chart of accounts, contacts and rules),
 * created one by one or in batches.
 */
export const ContactsPlugin = sqlOperationsPlugin("ContactsPlugin", gql`
  "A vendor or customer. email and phone are \\"\\" when absent; balance is a number."
  type Contact {
    id: UUID! contactType: String! displayName: String! email: String! phone: String! balance: Float!
    active: Boolean! created: String! updated: String!
  }
  type ContactPage { items: [Contact!]! totalCount: Int! pageSize: Int! offset: Int! }
  type ContactResult { success: Boolean! error: String contact: Contact }

  extend type Query {
    """
    Contacts, by displayName unless sortBy says otherwise: displayName, contactType, email, balance,
    created, updated. search matches display name and email. Optional filters: contactType, active.
    """
    listContacts(organizationId: UUID!, limit: Int, offset: Int, search: String, sortBy: String, sortDir: String,
      contactType: String, active: Boolean): ContactPage!
  }
  input ContactInput { contactType: String! displayName: String! email: String phone: String }

  extend type Mutation {
    "At most 500 items (more is a BAD_USER_INPUT error and nothing is created); each item succeeds or fails on its own."
    batchCreateContacts(organizationId: UUID!, items: [ContactInput!]!): BatchCreateResult!
    "contactType is vendor or customer; displayName is unique per type, case-insensitively."
    createContact(organizationId: UUID!, contactType: String!, displayName: String!, email: String, phone: String): ContactResult!
    "Absent arguments leave the field as it is; email or phone \\"\\" removes it."
    updateContact(organizationId: UUID!, contactId: UUID!, contactType: String, displayName: String, email: String, phone: String): ContactResult!
    deactivateContact(organizationId: UUID!, contactId: UUID!): ContactResult!
    reactivateContact(organizationId: UUID!, contactId: UUID!): ContactResult!
  }
`);
