-- Accepts the slot where it stands after an operator recovered from a
-- lost slot: its position from now on is the slot's.
insert into {positions} (slot, lsn)
select $1, (confirmed_flush_lsn - '0/0'::pg_lsn)::bigint
from pg_replication_slots
where slot_name = $1
on conflict (slot) do update set lsn = excluded.lsn, recorded_at = now()
returning lsn
