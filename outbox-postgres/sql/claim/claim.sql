-- Claims the rows that one of the claimable*.sql selections, written in
-- below, takes, under a fresh lease committed with the statement. On a
-- per-key route ($4) each claimed row also takes its key's lock.
with picked as (
    select r.id
    {claimable}
)
update {outbox} as o
set status = 'in_flight',
    lease_token = $2,
    lease_expires_at = now() + $3 * interval '1 microsecond',
    attempts_started = o.attempts_started + 1,
    key_lock = case when $4 then o.ordering_key end
from picked
where o.id = picked.id {skip_target}
returning
    o.id, o.event_id, o.route, o.destination, o.event_type, o.payload, o.content_type,
    o.headers::text as headers, o.ordering_key, o.correlation_id, o.causation_id,
    o.tenant_id, o.occurred_at, o.hlc, o.expires_at, o.attempts_started, o.attempts_finished,
    o.last_error
