-- What already stands under the inbox's names, as the migrations of another
-- outbox table sharing the inbox leave it: whether the inbox table ($1)
-- exists and is an inbox (a table keyed by consumer text and event_id uuid,
-- with marked_at timestamptz), and whether its age index ($2) exists and is
-- an index on it.
with inbox as (
    select c.oid, c.relkind
    from pg_class as c
    where c.oid = to_regclass($1)
),
age as (
    select c.oid, i.indrelid
    from pg_class as c
    left join pg_index as i on i.indexrelid = c.oid
    where c.oid = to_regclass($2)
)
select
    exists (select 1 from inbox) as inbox_exists,
    exists (
        select 1
        from inbox
        join pg_constraint as k on k.conrelid = inbox.oid and k.contype = 'p'
        where inbox.relkind in ('r', 'p')
          and k.conkey = array(
              select a.attnum
              from unnest(array['consumer', 'event_id'], array['text', 'uuid']::regtype[])
                  with ordinality as c(name, type, n)
              join pg_attribute as a
                  on a.attrelid = inbox.oid and a.attname = c.name and a.atttypid = c.type
              order by c.n
          )
          and exists (
              select 1
              from pg_attribute as a
              where a.attrelid = inbox.oid and a.attname = 'marked_at'
                and a.atttypid = 'timestamptz'::regtype
          )
    ) as inbox_is_inbox,
    exists (select 1 from age) as age_exists,
    exists (select 1 from age, inbox where age.indrelid = inbox.oid) as age_on_inbox
