-- Table mode: stages failed rows of a route (all of them with $2, else
-- those listed in $3) again as new rows, in their order, since the relay
-- reads inserts: the failed rows go, their copies start with fresh
-- attempt counters.
with taken as (
    delete from {outbox}
    where route = $1 and status = 'failed' and ($2 or event_id = any($3::uuid[]))
    returning *
),
staged as (
    insert into {outbox} (
        event_id, route, destination, event_type, payload, content_type, headers,
        ordering_key, correlation_id, causation_id, tenant_id, occurred_at, hlc,
        expires_at
    )
    select
        event_id, route, destination, event_type, payload, content_type, headers,
        ordering_key, correlation_id, causation_id, tenant_id, occurred_at, hlc,
        expires_at
    from taken
    order by id
    returning 1
)
select count(*) from staged
