-- Citus readiness: what stands between each table and distribution by organization_id on a
-- sharded PostgreSQL such as Citus (docs/citus.md). It reads the catalog only and changes
-- nothing:
--
--   psql "$DATABASE_URL" -f scripts/citus-readiness.sql
--
-- A distributed table's primary key, unique constraints and unique indexes must contain the
-- distribution column, and a foreign key between two distributed tables must include it on both
-- sides (one to a reference table, copied to every node, may omit it). The distribution column may
-- not be null. One row per finding, by kind of table:
--   tenant       a table with an organization_id column: each key that lacks organization_id
--                (`primary key`, `unique`, `unique index`, `foreign key`), `nullable` when
--                organization_id may be null, or `ready` when there is nothing to change;
--   tenant root  the table the organization_id columns reference;
--   global       any other table without organization_id: each of its unique keys (`primary
--                key`, `unique`, `unique index`: unique across all organizations), and
--                `referenced by`: the tenant tables whose foreign keys point at it.
with tables as (
  select c.oid, n.nspname, format('%I.%I', n.nspname, c.relname) as table_name,
         a.attnum as org_attnum, a.attnotnull as org_not_null,
         exists (select 1 from pg_constraint f
                   join pg_attribute fa on fa.attrelid = f.conrelid and fa.attnum = f.conkey[1]
                  where f.contype = 'f' and f.confrelid = c.oid and cardinality(f.conkey) = 1
                    and fa.attname = 'organization_id') as is_root
    from pg_class c
    join pg_namespace n on n.oid = c.relnamespace
    left join pg_attribute a on a.attrelid = c.oid and a.attname = 'organization_id' and not a.attisdropped
   where c.relkind in ('r', 'p') and not c.relispartition
     and n.nspname <> 'information_schema' and n.nspname !~ '^pg_'
),
unique_keys as (
  -- Primary keys, unique constraints and unique indexes (partial and expression ones too).
  select t.oid, coalesce(k.conname, ic.relname) as key,
         case when i.indisprimary then 'primary key' when k.oid is not null then 'unique' else 'unique index' end as key_type,
         coalesce(pg_get_constraintdef(k.oid), regexp_replace(pg_get_indexdef(i.indexrelid), '^.* USING \w+ ', '')) as definition,
         t.org_attnum = any (i.indkey::int2[]) as has_org
    from tables t
    join pg_index i on i.indrelid = t.oid and i.indisunique
    join pg_class ic on ic.oid = i.indexrelid
    left join pg_constraint k on k.conindid = i.indexrelid and k.conrelid = t.oid and k.contype in ('p', 'u')
),
foreign_keys as (
  select t.oid, f.conname as key, pg_get_constraintdef(f.oid) as definition,
         t.org_attnum = any (f.conkey) as has_org, f.confrelid
    from tables t
    join pg_constraint f on f.conrelid = t.oid and f.contype = 'f'
),
findings as (
  select t.table_name, 'tenant' as kind, u.key_type as finding, u.definition
    from tables t join unique_keys u on u.oid = t.oid
   where t.org_attnum is not null and not u.has_org
  union all
  select t.table_name, 'tenant', 'foreign key', f.definition
    from tables t join foreign_keys f on f.oid = t.oid
   where t.org_attnum is not null and not f.has_org
  union all
  select t.table_name, 'tenant', 'nullable', 'organization_id may be null'
    from tables t where t.org_attnum is not null and not t.org_not_null
  union all
  select t.table_name, 'tenant', 'ready', null
    from tables t
   where t.org_attnum is not null and t.org_not_null
     and not exists (select 1 from unique_keys u where u.oid = t.oid and not u.has_org)
     and not exists (select 1 from foreign_keys f where f.oid = t.oid and not f.has_org)
  union all
  select t.table_name, case when t.is_root then 'tenant root' else 'global' end, u.key_type, u.definition
    from tables t join unique_keys u on u.oid = t.oid
   where t.org_attnum is null
  union all
  select t.table_name, case when t.is_root then 'tenant root' else 'global' end, 'referenced by',
         case when t.is_root then count(distinct r.oid) || ' tables, by organization_id'
              else string_agg(distinct r.table_name, ', ') end
    from tables t
    join foreign_keys f on f.confrelid = t.oid
    join tables r on r.oid = f.oid and r.org_attnum is not null
   where t.org_attnum is null
   group by t.table_name, t.is_root
)
select table_name, kind, finding, definition
  from findings
 order by kind desc, table_name, finding, definition;
