import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "./helpers/harness.js";

/**
 * Deleting a row makes PostgreSQL look up, for each foreign key that references its table, the
 * rows that still point at it. Without an index on the referencing columns each lookup reads every
 * row of the organization: deleting a processor import's 160,000 journal entries looked up the
 * events reversing to each (an unindexed `reversal_entry_id`) and ran for more than twenty minutes.
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

/** Tables whose rows are deleted only with their organization, or never: one lookup each, not one per row. */
const DELETED_ONLY_WITH_THEIR_ORGANIZATION = [
  "app_public.organizations", "app_public.users", "app_public.accounts", "app_public.sales_tax_codes",
  "app_public.intake_messages", "app_public.reconciliations", "app_public.contacts", "app_public.documents",
];

describe("foreign keys", () => {
  it("every key to rows that are deleted on their own is served by an index on its columns", async () => {
    // An index serves a key when it leads with one of the key's columns other than the
    // organization (alone, organization_id matches every row of the tenant), or with the
    // organization and then one of them; a partial one only when its predicate is that one of the
    // key's columns is not null (which the lookup's equality implies).
    const { rows } = await h.owner.query(`
      with fk as (
        select c.conrelid, c.conname, c.confrelid,
               array(select a.attname::text from unnest(c.conkey) k join pg_attribute a on a.attrelid = c.conrelid and a.attnum = k) cols
          from pg_constraint c join pg_namespace n on n.oid = c.connamespace
         where c.contype = 'f' and n.nspname in ('app_public', 'app_private')
      ), idx as (
        select i.indrelid, pg_get_expr(i.indpred, i.indrelid) as predicate,
               array(select a.attname::text from unnest(i.indkey::int2[]) with ordinality u(k, o)
                       join pg_attribute a on a.attrelid = i.indrelid and a.attnum = u.k order by u.o) keys
          from pg_index i where i.indisvalid and i.indisready
      )
      select fk.conname, fk.confrelid::regclass::text as referenced from fk
       where fk.confrelid::regclass::text <> all ($1::text[])
         and not exists (select 1 from idx where idx.indrelid = fk.conrelid and idx.keys[1] = any (fk.cols)
                           and (idx.keys[1] <> 'organization_id' or fk.cols = array['organization_id'] or idx.keys[2] = any (fk.cols))
                           -- A partial index serves the lookup only when its predicate follows from it.
                           and (idx.predicate is null or idx.predicate in (select '(' || c || ' IS NOT NULL)' from unnest(fk.cols) c)))
       order by 1`, [DELETED_ONLY_WITH_THEIR_ORGANIZATION]);
    expect(rows).toEqual([]);
    // The check sees the keys it is about (a query that matched nothing would pass as well).
    const { rows: [seen] } = await h.owner.query(`select count(*)::int n from pg_constraint
      where contype = 'f' and confrelid = 'app_public.journal_entries'::regclass`);
    expect(seen.n).toBeGreaterThanOrEqual(5);
  });
});
