import { AccountsPlugin } from "./accounts.js";
import { BatchesPlugin } from "./batches.js";
import { CategoryRulesPlugin } from "./category-rules.js";
import { ContactsPlugin } from "./contacts.js";
import { IntakeAddressesPlugin } from "./intake-addresses.js";
import { TaxCodesPlugin } from "./tax-codes.js";

/** Master data (issue 3): tax codes, chart of accounts, contacts, category rules, intake addresses. */
export const MasterDataPlugins = [TaxCodesPlugin, AccountsPlugin, BatchesPlugin, ContactsPlugin, CategoryRulesPlugin, IntakeAddressesPlugin];
