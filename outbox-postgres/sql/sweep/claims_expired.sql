-- The records of locked claims of a route that expired unsettled, oldest
-- first, locked so that concurrent sweeps split them; each with every row
-- id it names, from its ranges and from its list.
select
    token,
    ids || array(
        select generate_series(lower(r), upper(r) - 1)
        from unnest(id_ranges) as r
    ) as ids
from {claims}
where route = $1 and expires_at <= now()
order by expires_at
limit $2
for update skip locked
