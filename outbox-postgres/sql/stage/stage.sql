-- Writes every event staged in a transaction in one statement and, given a
-- channel in $17, sends the relay a wake-up hint, delivered when the
-- transaction commits. Without one the caller announces the commit itself:
-- a NOTIFY serialises the commits of every transaction sending one. An event
-- id already stored for the route is skipped, so staging is idempotent:
-- by the unique index of (route, event_id), and in a rotated outbox, whose
-- index is per slot, by a look into the other slots as well. A row is
-- available after its delay or at its not-before time, whichever is later
-- (greatest ignores a null).
with inserted as (
    insert into {outbox} (
        event_id, route, destination, event_type, payload, content_type, headers,
        ordering_key, correlation_id, causation_id, tenant_id, occurred_at, hlc,
        available_at, expires_at
    )
    select
        e.event_id, e.route, e.destination, e.event_type, e.payload, e.content_type,
        e.headers::jsonb, e.ordering_key, e.correlation_id, e.causation_id, e.tenant_id,
        e.occurred_at, e.hlc,
        greatest(now() + e.delay_us * interval '1 microsecond', e.not_before), e.expires_at
    from unnest(
        $1::uuid[], $2::text[], $3::text[], $4::text[], $5::bytea[], $6::text[], $7::text[],
        $8::text[], $9::text[], $10::text[], $11::text[], $12::timestamptz[], $13::bigint[],
        $14::bigint[], $15::timestamptz[], $16::timestamptz[]
    ) with ordinality as e(
        event_id, route, destination, event_type, payload, content_type, headers,
        ordering_key, correlation_id, causation_id, tenant_id, occurred_at, hlc,
        delay_us, not_before, expires_at, n
    )
    where {unstored_rows}
    order by e.n
    on conflict do nothing
    returning 1
)
select
    count(*) as inserted,
    case when $17::text is null then '' else pg_notify($17, '')::text end as notified
from inserted
