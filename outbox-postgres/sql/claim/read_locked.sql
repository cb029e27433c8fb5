-- Reads the rows a locked batch took (claim_locked_take.sql), in the
-- batch's transaction, which holds their locks: its runs of consecutive
-- row ids, $1 the first and $2 the last id of each run, as claim_locked.sql
-- returns rows. A run holds only rows of the batch, so each is one range
-- of the primary key.
select
    r.id, r.event_id, r.route, r.destination, r.event_type, r.payload, r.content_type,
    r.headers::text as headers, r.ordering_key, r.correlation_id, r.causation_id,
    r.tenant_id, r.occurred_at, r.hlc, r.attempts_started + 1 as attempts_started,
    r.attempts_finished, r.last_error
from unnest($1::bigint[], $2::bigint[]) as run(first_id, last_id)
join {outbox} as r on r.id between run.first_id and run.last_id
order by r.id
