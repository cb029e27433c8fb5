-- Claims the oldest claimable rows of a route by locking them in the open
-- transaction of a locked batch, which settles them before it commits. The
-- rows are not rewritten, so the claim writes nothing but the row locks;
-- the attempt is counted when the batch settles, and until then the row
-- reads as that attempt. Ordered by `id + 0` and with the row limit
-- written in, as in claim.sql.
select
    id, event_id, route, destination, event_type, payload, content_type,
    headers::text as headers, ordering_key, correlation_id, causation_id,
    tenant_id, occurred_at, hlc, attempts_started + 1 as attempts_started,
    attempts_finished, last_error
from {outbox}
where route = $1 and status = 'pending' and available_at <= now()
order by id + 0
limit {limit}
for update skip locked
