-- Records a locked claim of route $2 under token $1, its rows named by the
-- ranges of row ids from $3 to $4 (both included, one range per pair),
-- expiring after $5 microseconds, committed on its own (not in the batch's
-- transaction), so it outlives a relay that dies. Committed without waiting
-- for the WAL flush: a record lost in a database crash only loses the count
-- of a crash the database caused, not the relay.
with no_flush as (
    select set_config('synchronous_commit', 'off', true)
)
insert into {claims} (token, route, id_ranges, expires_at)
select $1, $2,
    coalesce(
        (
            select range_agg(int8range(u.first, u.last, '[]'))
            from unnest($3::bigint[], $4::bigint[]) as u(first, last)
        ),
        '{}'
    ),
    now() + $5 * interval '1 microsecond'
from no_flush
