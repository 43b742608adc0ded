import { ImportFileError } from "./errors.js";

/**
 * The two exports (shared/data/processor_balance_history.md): layout A, the dashboard's balance
 * history (`id`, `Type`, `Amount`, …), and layout B, the itemized balance change report
 * (`balance_transaction_id`, `reporting_category`, `gross`, …). Which one a file is follows from
 * its header; columns are found by name, case-insensitively, in any order, extra columns ignored.
 */
export type LayoutName = "A" | "B";

/** The fields an import reads, each from one column of the layout (the first name found). */
export type Field = "id" | "type" | "amount" | "fee" | "currency" | "created" | "description" | "source";

interface Layout {
  name: LayoutName;
  title: string;
  columns: Record<Field, { names: string[]; required: boolean }>;
}

export const LAYOUTS: Record<LayoutName, Layout> = {
  A: {
    name: "A",
    title: "balance history export",
    columns: {
      id: { names: ["id"], required: true },
      type: { names: ["Type"], required: true },
      amount: { names: ["Amount"], required: true },
      fee: { names: ["Fee"], required: true },
      currency: { names: ["Currency"], required: true },
      created: { names: ["Created (UTC)", "Created"], required: true },
      description: { names: ["Description"], required: false },
      source: { names: ["Source"], required: false },
    },
  },
  B: {
    name: "B",
    title: "itemized balance change report",
    columns: {
      id: { names: ["balance_transaction_id"], required: true },
      type: { names: ["reporting_category"], required: true },
      amount: { names: ["gross"], required: true },
      fee: { names: ["fee"], required: true },
      currency: { names: ["currency"], required: true },
      created: { names: ["created_utc", "created"], required: true },
      description: { names: ["description"], required: false },
      source: { names: ["source_id"], required: false },
    },
  },
};

/** Where each field is in a file's rows, and the column name to quote in messages. */
export interface ColumnMap {
  layout: LayoutName;
  index: Record<Field, number>; // -1: optional column absent
  label: Record<Field, string>;
}

/** The layout of a file from its header (line 1), or an error naming what is missing. */
export function detectLayout(header: string[]): ColumnMap {
  const names = header.map((h) => h.trim().toLowerCase());
  const has = (n: string) => names.includes(n.toLowerCase());
  const layout: Layout | undefined =
    has("reporting_category") || has("balance_transaction_id") ? LAYOUTS.B
    : has("type") || has("id") ? LAYOUTS.A
    : undefined;
  if (!layout) {
    throw new ImportFileError(
      "Line 1: the header is neither a balance history export (id, Type, Amount, Fee, Currency, Created (UTC), …) " +
      "nor an itemized balance change report (balance_transaction_id, reporting_category, gross, fee, currency, created_utc, …).");
  }
  const index = {} as Record<Field, number>;
  const label = {} as Record<Field, string>;
  for (const [field, spec] of Object.entries(layout.columns) as [Field, Layout["columns"][Field]][]) {
    const found = spec.names.map((n) => names.indexOf(n.toLowerCase())).find((i) => i >= 0) ?? -1;
    if (found < 0 && spec.required) throw new ImportFileError(`Line 1, column ${spec.names[0]}: the column is missing (${layout.title}).`);
    index[field] = found;
    label[field] = found >= 0 ? header[found].trim() : spec.names[0];
  }
  return { layout: layout.name, index, label };
}
