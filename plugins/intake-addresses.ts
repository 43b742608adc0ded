import { gql } from "postgraphile/utils";
import { sqlOperationsPlugin } from "./sql-operations.js";

/**
 * Receipt intake addresses (contract: IntakeAddress; docs/api.md, Chart of accounts, contacts and
 * rules).
 */
export const IntakeAddressesPlugin = sqlOperationsPlugin("IntakeAddressesPlugin", gql`
  "An email address (stored lower-case) or SMS number (7 to 15 digits) that receives receipts. created is an ISO 8601 UTC timestamp."
  type IntakeAddress { id: UUID! addressType: String! address: String! label: String! active: Boolean! created: String! }
  type IntakeAddressResult { success: Boolean! error: String intakeAddress: IntakeAddress }
  type DeleteIntakeAddressResult { success: Boolean! error: String }

  extend type Query {
    "The organization's active intake addresses, oldest first (not paginated)."
    listIntakeAddresses(organizationId: UUID!): [IntakeAddress!]!
  }
  extend type Mutation {
    "An active address belongs to one organization only; otherwise: This address is already registered."
    createIntakeAddress(organizationId: UUID!, addressType: String!, address: String!, label: String): IntakeAddressResult!
    "Deactivates the address (kept for audit); it stops receiving and may be registered again, by anyone."
    deleteIntakeAddress(organizationId: UUID!, intakeAddressId: UUID!): DeleteIntakeAddressResult!
  }
`);
