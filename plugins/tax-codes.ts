import { gql } from "postgraphile/utils";
import { sqlOperationsPlugin } from "./sql-operations.js";

/**
 * GIFI tax codes and sales tax codes: global reference data (docs/api.md, Chart of accounts,
 * contacts and rules).
 */
export const TaxCodesPlugin = sqlOperationsPlugin("TaxCodesPlugin", gql`
  "A CRA GIFI code. accountType is the suggested ledger account type; \`total\` codes are computed totals no account may use."
  type TaxCode { id: UUID! code: String! name: String! classification: String! accountType: String! }
  type TaxCodePage { items: [TaxCode!]! totalCount: Int! pageSize: Int! offset: Int! }
  "A Canadian sales tax code. rate is a percentage as a decimal string with 3 decimals (\\"9.975\\"); recoverable is yes, no, partial or n/a."
  type SalesTaxCode { code: String! name: String! rate: String! jurisdiction: String! recoverable: String! }

  extend type Query {
    "GIFI codes ordered by code; search matches code and name. Optional filters: classification, accountType."
    listTaxCodes(organizationId: UUID!, search: String, limit: Int, offset: Int, classification: String, accountType: String): TaxCodePage!
    "Every sales tax code (federal first, then by province), for updateStagedEntry(taxCode:)."
    listSalesTaxCodes(organizationId: UUID!): [SalesTaxCode!]!
  }
`);
