-- Claims, under a fresh lease, the oldest unfinished row of each ordering key
-- whose key has nothing in flight, plus rows without a key. A row locked by a
-- concurrent claim is skipped, and so is the rest of its key, because the
-- locked row stays the oldest unfinished one in this statement's snapshot.
-- The key_lock unique index refuses a second in-flight row of a key outright.
with picked as (
    select r.id
    from {outbox} as r
    where r.route = $1 and r.status = 'pending' and r.available_at <= now()
      and (r.ordering_key is null or (
          -- fast filter: keys in flight under a per-key claim
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
    -- id + 0: the claim index's key, as in claim.sql
    order by r.id + 0
    limit {limit}
    for update of r skip locked
)
update {outbox} as o
set status = 'in_flight',
    lease_token = $2,
    lease_expires_at = now() + $3 * interval '1 microsecond',
    attempts_started = o.attempts_started + 1,
    key_lock = o.ordering_key
from picked
where o.id = picked.id
returning
    o.id, o.event_id, o.route, o.destination, o.event_type, o.payload, o.content_type,
    o.headers::text as headers, o.ordering_key, o.correlation_id, o.causation_id,
    o.tenant_id, o.occurred_at, o.hlc, o.attempts_started, o.attempts_finished,
    o.last_error
