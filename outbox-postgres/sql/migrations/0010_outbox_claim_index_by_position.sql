-- Serves claims: the pending rows of a route in staging order. Keyed on
-- `id + 0`, which claims order by, so that only this index yields their
-- order: on the bare id the planner may walk the primary key instead when
-- statistics say nearly every row is pending (a fresh backlog), and then
-- every claim skips all the rows finished since.
create index "{outbox_table}_claim_idx" on {outbox} (route, (id + 0))
    where status = 'pending'
