-- Records the slot's position before the reader confirms it to the slot;
-- it only moves forward, so a reader that lost the slot cannot undo its
-- successor's record.
insert into {positions} (slot, lsn)
values ($1, $2)
on conflict (slot) do update
set lsn = greatest({positions}.lsn, excluded.lsn), recorded_at = now()
