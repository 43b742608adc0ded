import { afterAll, beforeAll, expect, it } from "vitest";
import { startHarness, type Harness } from "./helpers/harness.js";

let h: Harness;
beforeAll(async () => { h = await startHarness(); });
afterAll(() => h?.close());

// The audit trail lists the fields of an event one by one (for speed): a column added to the
// table must be added there too, or its changes would go unrecorded.
it("records every column of ledger_events but the bookkeeping ones", async () => {
  const { rows: columns } = await h.owner.query(`select attname from pg_attribute
     where attrelid = 'app_public.ledger_events'::regclass and attnum > 0 and not attisdropped`);
  const { rows: [{ body }] } = await h.owner.query("select prosrc body from pg_proc where oid = 'app_private.tg_ledger_events__audit'::regproc");
  const bookkeeping = new Set(["id", "organization_id", "created", "updated", "has_memo"]);
  const missing = columns.map((c) => c.attname as string).filter((c) => !bookkeeping.has(c) && !body.includes(`'${c}', case when o.${c} is distinct from n.${c}`));
  expect(missing).toEqual([]);
});
