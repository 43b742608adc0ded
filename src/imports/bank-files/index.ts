export { BankFileError, type EventType, type StatementRow } from "./row.js";
export { eventTypeFor } from "./event-type.js";
export { flagName, LAYOUT_FLAGS, type BankFile, type BankFileOptions, type LayoutFlags } from "./statement.js";
export { readBankFile } from "./read-bytes.js";
export { readBankStatementFile } from "./read-file.js";
export { MAX_CSV_BYTES, MAX_OFX_BYTES, MAX_STATEMENT_ROWS } from "./limits.js";
