-- Returns rows whose lease expired to pending, claimable at once. Attempts
-- started stay ahead of attempts finished, which counts the crash.
with expired as (
    select id
    from {outbox}
    where route = $1 and status = 'in_flight' and lease_expires_at <= now()
    order by lease_expires_at
    limit $2
    for update skip locked
)
update {outbox} as o
set status = 'pending',
    lease_token = null,
    lease_expires_at = null,
    key_lock = null
from expired
where o.id = expired.id
