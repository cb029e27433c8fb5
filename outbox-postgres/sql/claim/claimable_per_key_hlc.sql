-- As claimable_per_key.sql, with "oldest" meaning first in hybrid-clock
-- order.
from {outbox} as r
where r.route = $1 and r.status = 'pending' and r.available_at <= now()
  {skip} and {gate}
  and (r.ordering_key is null or (
      r.ordering_key not in (
          select f.key_lock
          from {outbox} as f
          where f.route = $1 and f.key_lock is not null
      )
      and not exists (
          select 1
          from {outbox} as k
          where k.route = r.route and k.ordering_key = r.ordering_key
            and k.status in ('pending', 'in_flight')
            and (
                (coalesce(k.hlc, -1), k.id) < (coalesce(r.hlc, -1), r.id)
                or k.status = 'in_flight'
            )
      )
  ))
order by r.hlc nulls first, r.id
limit {limit}
for update of r skip locked
