-- Claims the rows that one of the claimable*.sql selections, written in
-- below, takes, by locking them in the open transaction of a locked batch,
-- which settles them before it commits. The rows are not rewritten, so the claim writes
-- nothing but the row locks; the attempt is counted when the batch
-- settles, and until then the row reads as that attempt.
select
    r.id, r.event_id, r.route, r.destination, r.event_type, r.payload, r.content_type,
    r.headers::text as headers, r.ordering_key, r.correlation_id, r.causation_id,
    r.tenant_id, r.occurred_at, r.hlc, r.expires_at, r.attempts_started + 1 as attempts_started,
    r.attempts_finished, r.last_error
{claimable}
