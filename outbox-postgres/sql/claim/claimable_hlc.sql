-- As claimable.sql, in hybrid-clock order.
from {outbox} as r
where r.route = $1 and r.status = 'pending' and r.available_at <= now()
  {skip}
order by r.hlc nulls first, r.id
limit {limit}
for update of r skip locked
