-- Accepts the slot where it stands after an operator recovered from a
-- lost slot: its position from now on is the slot's, with no session
-- begun and no crash charged there.
update {positions} as p
set lsn = (s.confirmed_flush_lsn - '0/0'::pg_lsn)::bigint,
    recorded_at = now(),
    starts = 0,
    in_flight = '{}',
    crashes = '{}'
from pg_replication_slots as s
where p.slot = $1 and s.slot_name = $1
returning p.lsn
