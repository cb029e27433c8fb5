-- Up to $5 failed rows of route $1, oldest failure first: of event type $2
-- where given, failed at least $3 microseconds ago, among events $4 where
-- given.
select
    event_id,
    event_type,
    destination,
    ordering_key,
    attempts_started,
    last_error,
    (extract(epoch from now() - finished_at) * 1000000)::bigint as failed_us,
    content_type,
    payload
from {outbox}
where route = $1 and status = 'failed'
    and ($2::text is null or event_type = $2)
    and finished_at <= now() - $3 * interval '1 microsecond'
    and ($4::uuid[] is null or event_id = any($4))
order by finished_at, id
limit $5
