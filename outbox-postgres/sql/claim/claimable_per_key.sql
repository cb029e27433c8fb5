-- As claimable.sql for a per-key route: the oldest unfinished row of each
-- ordering key whose key has nothing in flight, plus rows without a key. A
-- row locked by a concurrent claim is skipped, and so is the rest of its
-- key, because the locked row stays the oldest unfinished one in this
-- statement's snapshot (a row under a locked claim stays pending until it
-- settles). The key_lock unique index refuses a second leased in-flight
-- row of a key outright.
from {outbox} as r
where r.route = $1 and r.status = 'pending' and r.available_at <= now()
  {skip}
  and (r.ordering_key is null or (
      -- fast filter: keys in flight under a leased per-key claim
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
            and (k.id < r.id or k.status = 'in_flight')
      )
  ))
-- id + 0: the claim index's key, as in claimable.sql
order by r.id + 0
limit {limit}
for update of r skip locked
