-- Writes the one event staged in a transaction, without the arrays of
-- stage.sql, when the caller chose its id; the caller announces the commit.
-- An event id already stored for the route is skipped, so staging is
-- idempotent: by the unique index of (route, event_id), and in a rotated
-- outbox, whose index is per slot, by a look into the other slots as well.
insert into {outbox} (
    event_id, route, destination, event_type, payload, content_type, headers,
    ordering_key, correlation_id, causation_id, tenant_id, occurred_at, hlc,
    available_at, expires_at
)
select
    $1::uuid, $2::text, $3::text, $4::text, $5::bytea, $6::text, $7::jsonb, $8::text,
    $9::text, $10::text, $11::text, $12::timestamptz, $13::bigint,
    greatest(now() + $14::bigint * interval '1 microsecond', $15::timestamptz),
    $16::timestamptz
where {unstored_one}
on conflict do nothing
