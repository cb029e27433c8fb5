-- Deletes up to $3 marks of a consumer older than $2 microseconds.
delete from {inbox}
where (consumer, event_id) in (
    select consumer, event_id
    from {inbox}
    where consumer = $1 and marked_at <= now() - $2 * interval '1 microsecond'
    order by marked_at
    limit $3
)
