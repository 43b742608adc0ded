import type pg from "pg";

/** The schemas the project owns (graphile_worker and graphile_migrate are the libraries'). */
export const OWN_SCHEMAS = ["app_public", "app_private", "reporting"];

/**
 * The migrated database as a reviewer reads it: every table (columns, constraints, indexes,
 * row-level security), view, function, trigger, policy and grant of OWN_SCHEMAS, in a stable order,
 * from the catalog over an ordinary connection (no pg_dump). The owner's role name is written
 * `<owner>`, so the same migrations give the same text whoever runs them. The text depends on
 * the server's deparser: data/schema.sql is made on the PostgreSQL major CI runs (SNAPSHOT_SERVER).
 */
export async function schemaSnapshot(db: pg.Pool | pg.Client): Promise<string> {
  const sections: string[] = [];
  const rows = async (sql: string, params: unknown[] = [OWN_SCHEMAS]) => (await db.query(sql, params)).rows as Record<string, string>[];
  const acl = (column: string, owner: string) => `(select coalesce(string_agg(format('%s: %s', case a.grantee when 0 then 'public'
      when ${owner} then '<owner>' else a.grantee::regrole::text end, a.privileges), '; ' order by 1), 'none')
    from (select grantee, string_agg(privilege_type, ', ' order by privilege_type) as privileges
            from aclexplode(${column}) group by grantee) a)`;

  for (const r of await rows(`select n.nspname as name, ${acl("n.nspacl", "n.nspowner")} as acl
      from pg_namespace n where n.nspname = any($1) order by 1`)) {
    sections.push(`schema ${r.name}\n  grants: ${r.acl}`);
  }

  for (const t of await rows(`select c.oid::regclass::text as name, c.oid::text as oid, c.relrowsecurity::text as rls,
        c.relforcerowsecurity::text as forced, ${acl("c.relacl", "c.relowner")} as acl
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = any($1) and c.relkind in ('r', 'p') order by 1`)) {
    const lines = [`table ${t.name}${t.rls === "true" ? ` (row-level security${t.forced === "true" ? ", forced" : ""})` : ""}`];
    for (const c of await rows(`select a.attname as name, format_type(a.atttypid, a.atttypmod) as type, a.attnotnull::text as notnull,
          pg_get_expr(d.adbin, d.adrelid) as def, a.attidentity as identity, a.attgenerated as generated,
          ${acl("a.attacl", "0")} as acl
        from pg_attribute a left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
       where a.attrelid = ${t.oid} and a.attnum > 0 and not a.attisdropped order by a.attnum`, [])) {
      lines.push(`  column ${c.name} ${c.type}${c.notnull === "true" ? " not null" : ""}`
        + `${c.identity ? ` identity ${c.identity}` : ""}${c.def ? `${c.generated ? " generated" : ""} default ${c.def}` : ""}`
        + `${c.acl !== "none" ? `  grants: ${c.acl}` : ""}`);
    }
    for (const k of await rows(`select conname as name, pg_get_constraintdef(oid) as def from pg_constraint
       where conrelid = ${t.oid} and contype <> 't' order by 1`, [])) {
      lines.push(`  constraint ${k.name} ${k.def}`);
    }
    for (const i of await rows(`select pg_get_indexdef(indexrelid) as def from pg_index
       where indrelid = ${t.oid} order by 1`, [])) {
      lines.push(`  ${i.def}`);
    }
    lines.push(`  grants: ${t.acl}`);
    sections.push(lines.join("\n"));
  }

  for (const v of await rows(`select c.oid::regclass::text as name, coalesce(array_to_string(c.reloptions, ', '), '') as options,
        pg_get_viewdef(c.oid) as def, ${acl("c.relacl", "c.relowner")} as acl
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = any($1) and c.relkind in ('v', 'm') order by 1`)) {
    sections.push(`view ${v.name}${v.options ? ` with (${v.options})` : ""} as\n${v.def.trimEnd()}\n  grants: ${v.acl}`);
  }

  for (const f of await rows(`select pg_get_functiondef(p.oid) as def, ${acl("p.proacl", "p.proowner")} as acl
      from pg_proc p join pg_namespace n on n.oid = p.pronamespace
     where n.nspname = any($1) order by n.nspname, p.proname, pg_get_function_identity_arguments(p.oid)`)) {
    sections.push(`${f.def.trimEnd()}\n-- grants: ${f.acl}`);
  }

  for (const g of await rows(`select pg_get_triggerdef(t.oid) as def from pg_trigger t
      join pg_class c on c.oid = t.tgrelid join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = any($1) and not t.tgisinternal order by c.oid::regclass::text, t.tgname`)) {
    sections.push(`${g.def};`);
  }

  for (const p of await rows(`select format('policy %s on %s for %s to %s%s%s', p.polname, c.oid::regclass,
        case p.polcmd when 'r' then 'select' when 'a' then 'insert' when 'w' then 'update' when 'd' then 'delete' else 'all' end,
        (select string_agg(case r when 0 then 'public' else r::regrole::text end, ', ' order by 1) from unnest(p.polroles) r),
        coalesce(E'\\n  using ' || pg_get_expr(p.polqual, p.polrelid), ''),
        coalesce(E'\\n  with check ' || pg_get_expr(p.polwithcheck, p.polrelid), '')) as def
      from pg_policy p join pg_class c on c.oid = p.polrelid join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = any($1) order by c.oid::regclass::text, p.polname`)) {
    sections.push(`${p.def};`);
  }

  for (const d of await rows(`select format('default privileges of %s in %s on %s: %s',
        case when d.defaclrole = db.datdba then '<owner>' else d.defaclrole::regrole::text end,
        coalesce(n.nspname, 'every schema'),
        case d.defaclobjtype when 'r' then 'tables' when 'f' then 'functions' when 'S' then 'sequences' when 'T' then 'types' else 'schemas' end,
        ${acl("d.defaclacl", "d.defaclrole")}) as def
      from pg_default_acl d left join pg_namespace n on n.oid = d.defaclnamespace
      join pg_database db on db.datname = current_database()
     where (n.nspname is null or n.nspname = any($1)) order by 1`)) {
    sections.push(d.def);
  }

  return `-- The migrated schema, as the catalog describes it. Made by \`npm run schema:dump\`; do not edit.\n\n${sections.join("\n\n")}\n`;
}
