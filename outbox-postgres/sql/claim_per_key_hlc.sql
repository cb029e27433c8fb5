-- As claim_per_key.sql, with "oldest" meaning first in hybrid-clock order.
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
                and (
                    (coalesce(k.hlc, -1), k.id) < (coalesce(r.hlc, -1), r.id)
                    or k.status = 'in_flight'
                )
          )
      ))
    order by r.hlc nulls first, r.id
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
