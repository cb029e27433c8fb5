-- The relay's logical replication slot, decoded by pgoutput.
select lsn::text from pg_create_logical_replication_slot($1, 'pgoutput')
