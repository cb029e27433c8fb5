-- The inbox's marks per consumer and the age of each one's oldest mark, in
-- microseconds.
select
    consumer,
    count(*) as marks,
    (extract(epoch from now() - min(marked_at)) * 1000000)::bigint as oldest_us
from {inbox}
group by consumer
order by consumer
