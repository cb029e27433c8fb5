-- Writes the one event staged in a transaction when its id was freshly
-- generated, the common case: such an id cannot be stored already, so the
-- insert skips the duplicate check of stage_one.sql, which costs a
-- speculative insertion. The caller announces the commit.
insert into {outbox} (
    event_id, route, destination, event_type, payload, content_type, headers,
    ordering_key, correlation_id, causation_id, tenant_id, occurred_at, hlc,
    available_at, expires_at
)
values (
    $1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9, $10, $11, $12, $13,
    greatest(now() + $14 * interval '1 microsecond', $15::timestamptz),
    $16::timestamptz
)
