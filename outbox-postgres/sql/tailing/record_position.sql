-- Records the slot's position before the reader confirms it to the slot;
-- it only moves forward, so a reader that lost the slot cannot undo its
-- successor's record. A position that moves clears the count of sessions
-- begun at the last one and the crashes charged there.
update {positions}
set starts = case when $2 > lsn then 0 else starts end,
    crashes = case when $2 > lsn then '{}'::jsonb else crashes end,
    lsn = greatest(lsn, $2),
    recorded_at = now()
where slot = $1
