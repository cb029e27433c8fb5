-- Takes the rows of a locked claim of an unordered route in staging order
-- (claimable.sql, written in below, past the cursor $2) by locking them in
-- the open transaction of a locked batch, returning only what tells the
-- relay how many it took and whether any had crashed. read_locked.sql
-- reads the rest in the same transaction while the relay's next claim
-- takes the next rows: writing the columns out costs the server more than
-- finding and locking the rows.
select r.id, r.attempts_started + 1 as attempts_started, r.attempts_finished
{claimable}
