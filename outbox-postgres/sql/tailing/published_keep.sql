-- Table mode, published rows kept: marks them published, with the
-- attempts it took.
update {outbox} as o
set status = 'published',
    finished_at = now(),
    attempts_started = u.attempts,
    attempts_finished = u.attempts
from unnest($1::bigint[], $2::integer[]) as u(id, attempts)
where o.id = u.id
returning o.id
