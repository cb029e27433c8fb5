-- Counts a handler attempt starting on an event, in a statement of its own
-- that commits at once; returns the attempts counted so far, this one
-- included.
insert into {inbox_attempts} as a (consumer, event_id, started) values ($1, $2, 1)
on conflict (consumer, event_id) do update
set started = a.started + 1, touched_at = now()
returning started, finished
