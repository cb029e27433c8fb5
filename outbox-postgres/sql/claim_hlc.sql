-- Claims the claimable rows of a route under a fresh lease, in hybrid-clock
-- order.
with picked as (
    select id
    from {outbox}
    where route = $1 and status = 'pending' and available_at <= now()
    order by hlc nulls first, id
    limit {limit}
    for update skip locked
)
update {outbox} as o
set status = 'in_flight',
    lease_token = $2,
    lease_expires_at = now() + $3 * interval '1 microsecond',
    attempts_started = o.attempts_started + 1
from picked
where o.id = picked.id
returning
    o.id, o.event_id, o.route, o.destination, o.event_type, o.payload, o.content_type,
    o.headers::text as headers, o.ordering_key, o.correlation_id, o.causation_id,
    o.tenant_id, o.occurred_at, o.hlc, o.attempts_started, o.attempts_finished,
    o.last_error
