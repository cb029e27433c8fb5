-- The slot taking the staging now, as staging computes it (the outbox's
-- default), and the one a rotation truncates now: two slots on, which
-- took the staging two to three slot lengths ago and takes it again as
-- long from now, so neither staging nor the drain of the slot before the
-- current one is in its way.
with w as (
    select {current_slot} as current
)
select current, ((current + 2) % {slots})::smallint as truncated
from w
