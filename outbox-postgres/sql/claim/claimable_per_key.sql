-- As claimable.sql for a per-key route: the oldest unfinished row of each
-- ordering key, where that row is pending, due and not locked by another
-- claim, plus rows without a key. A key whose oldest unfinished row is in
-- flight, waits for a retry, or is locked by a concurrent claim gives
-- nothing, so the rest of that key waits behind it.
--
-- The claim walks the keys rather than the rows: one step of the key
-- index per key with unfinished rows, from the key after the key cursor
-- ({key_after}) round to it again, locking each key's head as it goes,
-- until it holds as many rows as it may take. A walk over the rows
-- instead pays for every row of a key behind its head, and a claim that
-- found every head locked by another relay walked the whole backlog for
-- nothing. The store moves the cursor to the last key of a full claim
-- (see claim/keys.rs), so every key gets its turn however many there are.
--
-- Rows without a key are taken from among the route's oldest pending rows
-- and counted first. The heads are locked inside the walk, so the claim
-- itself locks nothing more. A locked claim takes one of the route's
-- places first ({gate}, gate.sql) and takes nothing without one.
from {outbox} as r
where r.id in (
    with recursive gate (open) as (
        select {gate}
    ), keyless as (
        select c.id
        from {outbox} as c
        where c.id in (
            select n.id
            from (
                select o.id, o.ordering_key
                from {outbox} as o
                where o.route = $1 and o.status = 'pending' and o.available_at <= now()
                  {skip_o} and (select gate.open from gate)
                order by o.id + 0
                limit {limit}
            ) as n
            where n.ordering_key is null
        )
        for update of c skip locked
    ), walk (key, wrapped, head, found) as (
        select {key_after}::text, false, null::bigint, 0
        where (select gate.open from gate)
        union all
        select k.key, k.wrapped, x.id, w.found + (x.id is not null)::int
        from walk as w
        cross join lateral (
            -- The next key, or past the last one the first key, once.
            (
                select o.ordering_key as key, w.wrapped
                from {outbox} as o
                where o.route = $1 and o.ordering_key > w.key
                  and o.status in ('pending', 'in_flight') {skip_o}
                order by o.ordering_key
                limit 1
            )
            union all
            (
                select o.ordering_key, true
                from {outbox} as o
                where not w.wrapped and o.route = $1 and o.ordering_key >= ''
                  and o.status in ('pending', 'in_flight') {skip_o}
                order by o.ordering_key
                limit 1
            )
            limit 1
        ) as k
        left join lateral (
            select h.id
            from {outbox} as h
            where h.route = $1 and h.ordering_key = k.key
              and h.status in ('pending', 'in_flight') {skip_h}
            order by h.id
            limit 1
        ) as h on true
        left join lateral (
            -- A key in flight under a leased claim holds its key lock.
            select x.id
            from {outbox} as x
            where x.id = h.id and x.status = 'pending' and x.available_at <= now()
              {skip_x}
              and not exists (
                  select 1
                  from {outbox} as f
                  where f.route = $1 and f.key_lock = k.key
              )
            for update of x skip locked
        ) as x on true
        where w.found < {limit} - (select count(*) from keyless)
          -- Round again, the walk stops where it started.
          and not (k.wrapped and k.key > {key_after})
    )
    select walk.head from walk where walk.head is not null
    union all
    select keyless.id from keyless
)
order by r.id + 0
limit {limit}
