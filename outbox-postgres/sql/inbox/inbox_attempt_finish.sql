-- Counts an attempt that ended without a commit, and its start ($3 = 1)
-- when that was not counted before.
insert into {inbox_attempts} as a (consumer, event_id, started, finished)
values ($1, $2, $3, 1)
on conflict (consumer, event_id) do update
set started = a.started + $3, finished = a.finished + 1, touched_at = now()
