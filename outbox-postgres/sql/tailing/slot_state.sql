-- The slot as the server keeps it, with positions as byte offsets: the
-- position confirmed by its reader, the oldest it retains WAL from, the
-- server's current one, and whether a reader holds it.
select
    plugin,
    slot_type,
    database,
    (confirmed_flush_lsn - '0/0'::pg_lsn)::bigint as confirmed,
    (restart_lsn - '0/0'::pg_lsn)::bigint as restart,
    (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint as current,
    active,
    current_database() as current_database
from pg_replication_slots
where slot_name = $1
