-- The slot taking the staging now, and the one a rotation truncates now:
-- two slots on, which took the staging two to three slot lengths ago and
-- takes it again as long from now, so neither staging nor the drain of the
-- slot before the current one is in its way.
with w as (
    select floor(extract(epoch from statement_timestamp()) / {slot_seconds})::bigint as n
)
select (n % {slots})::smallint as current, ((n + 2) % {slots})::smallint as truncated
from w
