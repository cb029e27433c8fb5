-- Table mode, after a lost slot: stages the pending rows again, in their
-- order, so that the new slot reads them. Rows it had read already are
-- published twice; none is skipped.
with taken as (
    delete from {outbox}
    where status = 'pending'
    returning *
),
staged as (
    insert into {outbox} (
        event_id, route, destination, event_type, payload, content_type, headers,
        ordering_key, correlation_id, causation_id, tenant_id, occurred_at, hlc,
        available_at, expires_at
    )
    select
        event_id, route, destination, event_type, payload, content_type, headers,
        ordering_key, correlation_id, causation_id, tenant_id, occurred_at, hlc,
        available_at, expires_at
    from taken
    order by id
    returning 1
)
select count(*) from staged
