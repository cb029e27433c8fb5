-- Applies a batch's outcomes in one statement, each fenced on the lease
-- token: a row swept and claimed again since no longer carries it and is left
-- alone. With $7 (delete on publish), published rows are deleted. Returns the
-- rows settled; the caller reports the others as lost.
with outcome as (
    select *
    from unnest($3::uuid[], $4::text[], $5::bigint[], $6::text[])
        as u(event_id, outcome, delay_us, error)
),
deleted as (
    delete from {outbox} as o
    using outcome as u
    where $7 and u.outcome = 'published'
      and o.route = $1 and o.event_id = u.event_id
      and o.status = 'in_flight' and o.lease_token = $2
    returning o.event_id, u.outcome
),
updated as (
    update {outbox} as o
    set status = case u.outcome when 'retry' then 'pending' else u.outcome end,
        available_at = case u.outcome
            when 'retry' then now() + u.delay_us * interval '1 microsecond'
            else o.available_at
        end,
        finished_at = case u.outcome when 'retry' then null else now() end,
        lease_token = null,
        lease_expires_at = null,
        key_lock = null,
        attempts_finished = o.attempts_finished + 1,
        last_error = coalesce(u.error, o.last_error)
    from outcome as u
    where not ($7 and u.outcome = 'published')
      and o.route = $1 and o.event_id = u.event_id
      and o.status = 'in_flight' and o.lease_token = $2
    returning o.event_id, u.outcome
)
select event_id, outcome from deleted
union all
select event_id, outcome from updated
