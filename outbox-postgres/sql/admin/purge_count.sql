-- How many rows of route $1 in status $2 finished at least $3 microseconds
-- ago: what repeated purges with the same request would delete.
select count(*)
from {outbox}
where route = $1 and status = $2
    and finished_at <= now() - $3 * interval '1 microsecond'
