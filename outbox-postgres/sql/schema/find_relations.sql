-- Which of the named relations exist.
select to_regclass(name) is not null as found
from unnest($1::text[]) with ordinality as r(name, n)
order by n
