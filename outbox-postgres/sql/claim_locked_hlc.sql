-- As claim_locked.sql, in hybrid-clock order.
select
    id, event_id, route, destination, event_type, payload, content_type,
    headers::text as headers, ordering_key, correlation_id, causation_id,
    tenant_id, occurred_at, hlc, attempts_started + 1 as attempts_started,
    attempts_finished, last_error
from {outbox}
where route = $1 and status = 'pending' and available_at <= now()
order by hlc nulls first, id
limit {limit}
for update skip locked
