-- Counts a session begun at the recorded position, and charges a crash to
-- each event the session before it left in flight: returns the sessions
-- begun there, this one included, and the crashes of each event by id.
update {positions} as p
set starts = p.starts + 1,
    in_flight = '{}',
    crashes = p.crashes || coalesce((
        select jsonb_object_agg(id::text, coalesce((p.crashes ->> id::text)::integer, 0) + 1)
        from (select distinct unnest(p.in_flight) as id) as left_over
    ), '{}'::jsonb)
where p.slot = $1
returning p.starts, p.crashes::text
