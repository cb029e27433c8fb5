-- The rows a claim takes, as both claim modes (claim.sql, claim_locked.sql)
-- select them: the oldest claimable rows of a route, locked, skipping those
-- another claim holds. Ordered by `id + 0`, the key of the claim index, so
-- that index serves the claim whatever the statistics say. The row limit is
-- written in: with a parameter there, PostgreSQL's generic plan assumes a
-- tenth of the table and loses to a fresh plan every time, so every claim
-- was planned anew. The line after the filter is empty or, in a rotated
-- outbox whose slot is about to be truncated, leaves that slot out of the
-- plan (see rotation.rs). The line after that is empty in a leased claim;
-- in a locked one it starts the scan past $2, the claim's cursor: the last
-- row id of the drain's batch before, so the scan does not walk again past
-- the rows the drain holds locked or has just deleted, or the lowest
-- bigint, for a claim from the oldest row.
from {outbox} as r
where r.route = $1 and r.status = 'pending' and r.available_at <= now()
  {skip}
  {after}
order by r.id + 0
limit {limit}
for update of r skip locked
