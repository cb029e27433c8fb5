-- Serves claims: the pending rows of a route, oldest first.
create index "{outbox_table}_claim_idx" on {outbox} (route, id)
    where status = 'pending'
