-- How long ago a consumer marked an event handled, in microseconds; no
-- row when it has not.
select (extract(epoch from now() - marked_at) * 1000000)::bigint as age_us
from {inbox}
where consumer = $1 and event_id = $2
