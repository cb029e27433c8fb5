-- Writes the one event staged in a transaction, without the arrays of
-- stage.sql, when the caller chose its id; the caller announces the commit.
-- An event id already stored for the route is skipped, so staging is
-- idempotent.
insert into {outbox} (
    event_id, route, destination, event_type, payload, content_type, headers,
    ordering_key, correlation_id, causation_id, tenant_id, occurred_at, hlc,
    available_at
)
values (
    $1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9, $10, $11, $12, $13,
    now() + $14 * interval '1 microsecond'
)
on conflict (route, event_id) do nothing
