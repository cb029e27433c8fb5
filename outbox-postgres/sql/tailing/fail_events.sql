-- Message mode: writes events that failed for good as failed rows, the
-- only rows this mode writes, so that they can be listed, requeued and
-- purged. An event already failed in the table is left as it is. Each
-- keeps its expiry, so that a requeue past it fails it again rather than
-- publish it.
insert into {outbox} (
    event_id, route, destination, event_type, payload, content_type, headers,
    ordering_key, correlation_id, causation_id, tenant_id, occurred_at, hlc,
    status, last_error, attempts_started, attempts_finished, finished_at, expires_at
)
select
    e.event_id, e.route, e.destination, e.event_type, e.payload, e.content_type,
    e.headers::jsonb, e.ordering_key, e.correlation_id, e.causation_id, e.tenant_id,
    e.occurred_at, e.hlc, 'failed', e.reason, e.attempts, e.attempts, now(), e.expires_at
from unnest(
    $1::uuid[], $2::text[], $3::text[], $4::text[], $5::bytea[], $6::text[], $7::text[],
    $8::text[], $9::text[], $10::text[], $11::text[], $12::timestamptz[], $13::bigint[],
    $14::timestamptz[], $15::text[], $16::integer[]
) as e(
    event_id, route, destination, event_type, payload, content_type, headers,
    ordering_key, correlation_id, causation_id, tenant_id, occurred_at, hlc,
    expires_at, reason, attempts
)
on conflict do nothing
