-- The records of locked claims of a route that expired unsettled, oldest
-- first, locked so that concurrent sweeps split them.
select token, ids
from {claims}
where route = $1 and expires_at <= now()
order by expires_at
limit $2
for update skip locked
