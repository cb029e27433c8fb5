-- Records a locked claim of rows $3 of route $2 under token $1, expiring
-- after $4 microseconds, committed on its own (not in the batch's
-- transaction), so it outlives a relay that dies. Committed without waiting
-- for the WAL flush: a record lost in a database crash only loses the count
-- of a crash the database caused, not the relay.
with no_flush as (
    select set_config('synchronous_commit', 'off', true)
)
insert into {claims} (token, route, ids, expires_at)
select $1, $2, $3, now() + $4 * interval '1 microsecond'
from no_flush
