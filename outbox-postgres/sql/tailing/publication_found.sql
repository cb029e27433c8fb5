-- Whether the publication exists, and whether it publishes the outbox
-- table's inserts ($2 its schema, $3 its name).
select
    exists (select 1 from pg_publication where pubname = $1) as found,
    exists (
        select 1
        from pg_publication p
        join pg_publication_tables t on t.pubname = p.pubname
        where p.pubname = $1 and p.pubinsert
          and t.schemaname = $2 and t.tablename = $3
    ) as publishes_outbox
