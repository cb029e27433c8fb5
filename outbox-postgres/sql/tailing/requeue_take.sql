-- Message mode: takes failed rows of a route (all of them with $2, else
-- those listed in $3) out of the table, to stage them again as messages
-- in the same transaction.
delete from {outbox}
where route = $1 and status = 'failed' and ($2 or event_id = any($3::uuid[]))
returning
    id, event_id, route, destination, event_type, payload, content_type, headers::text as headers,
    ordering_key, correlation_id, causation_id, tenant_id, occurred_at, hlc, expires_at,
    attempts_started, attempts_finished, last_error
