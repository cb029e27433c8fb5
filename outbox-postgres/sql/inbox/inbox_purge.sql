-- Deletes up to $3 marks of a consumer older than $2 microseconds, and up to
-- $3 of its attempt counts last written before then; returns how many went.
with marks as (
    delete from {inbox}
    where (consumer, event_id) in (
        select consumer, event_id
        from {inbox}
        where consumer = $1 and marked_at <= now() - $2 * interval '1 microsecond'
        order by marked_at
        limit $3
    )
    returning 1
), attempts as (
    delete from {inbox_attempts}
    where (consumer, event_id) in (
        select consumer, event_id
        from {inbox_attempts}
        where consumer = $1 and touched_at <= now() - $2 * interval '1 microsecond'
        order by touched_at
        limit $3
    )
    returning 1
)
select (select count(*) from marks) + (select count(*) from attempts)
