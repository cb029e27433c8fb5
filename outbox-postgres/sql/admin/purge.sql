-- Deletes up to $4 rows of a route in status $2 finished at least $3
-- microseconds ago, oldest first.
delete from {outbox}
where id in (
    select id
    from {outbox}
    where route = $1 and status = $2
      and finished_at <= now() - $3 * interval '1 microsecond'
    order by finished_at
    limit $4
    for update skip locked
)
