-- Fails the rows of a claim of route $1 that could not be read ($3, their
-- event ids; $4, why), keeping them for an operator to repair and requeue.
-- A leased claim ($2, its lease token) also returns its other rows to
-- pending as if never claimed; a locked claim ($2 null) rolled back
-- before, so its rows are pending already.
with unreadable as (
    select * from unnest($3::uuid[], $4::text[]) as u(event_id, reason)
),
failed as (
    update {outbox} as o
    set status = 'failed',
        finished_at = now(),
        lease_token = null,
        lease_expires_at = null,
        key_lock = null,
        last_error = 'unreadable: ' || u.reason
    from unreadable as u
    where o.route = $1 and o.event_id = u.event_id
      and case when $2::uuid is null then o.status = 'pending'
               else o.status = 'in_flight' and o.lease_token = $2 end
)
update {outbox} as o
set status = 'pending',
    lease_token = null,
    lease_expires_at = null,
    key_lock = null,
    attempts_started = o.attempts_started - 1
where $2::uuid is not null
  and o.route = $1 and o.status = 'in_flight' and o.lease_token = $2
  and o.event_id <> all($3::uuid[])
