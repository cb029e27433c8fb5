-- Applies a locked batch's outcomes in one statement, inside the
-- transaction holding the rows' locks, which fences it: no other claim can
-- have taken them. Rows are named by their id. Counts the attempt as
-- started and finished. With $5 (delete on publish), published rows are
-- deleted. Also deletes the claim's record ($6). Returns the rows settled.
with released as (
    delete from {claims} where token = $6
),
outcome as (
    select *
    from unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[])
        as u(id, outcome, delay_us, error)
),
deleted as (
    delete from {outbox} as o
    using outcome as u
    where $5 and u.outcome = 'published' and o.id = u.id
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
        attempts_started = o.attempts_started + 1,
        attempts_finished = o.attempts_finished + 1,
        last_error = coalesce(u.error, o.last_error)
    from outcome as u
    where not ($5 and u.outcome = 'published') and o.id = u.id
    returning o.event_id, u.outcome
)
select event_id, outcome from deleted
union all
select event_id, outcome from updated
