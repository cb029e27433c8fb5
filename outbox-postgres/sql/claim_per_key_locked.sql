-- As claim_per_key.sql, locking the rows in the open transaction of a locked
-- batch instead of stamping a lease (see claim_locked.sql). A locked row
-- stays pending, so in any other claim's snapshot it is the oldest
-- unfinished row of its key and holds the rest of the key back; it is
-- skipped itself because it is locked. Keys in flight under a leased claim
-- are held back as there.
select
    r.id, r.event_id, r.route, r.destination, r.event_type, r.payload, r.content_type,
    r.headers::text as headers, r.ordering_key, r.correlation_id, r.causation_id,
    r.tenant_id, r.occurred_at, r.hlc, r.attempts_started + 1 as attempts_started,
    r.attempts_finished, r.last_error
from {outbox} as r
where r.route = $1 and r.status = 'pending' and r.available_at <= now()
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
            and (k.id < r.id or k.status = 'in_flight')
      )
  ))
order by r.id + 0
limit {limit}
for update of r skip locked
