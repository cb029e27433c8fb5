-- Records the slot's position before the reader confirms it to the slot;
-- it only moves forward, so a reader that lost the slot cannot undo its
-- successor's record.
update {positions}
set lsn = greatest(lsn, $2), recorded_at = now()
where slot = $1
