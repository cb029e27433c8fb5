-- Keeps, in the expired claim record $1, only the rows $2 that are still
-- pending under a live claim, named in its list, or deletes the record
-- when there are none.
with trimmed as (
    update {claims}
    set ids = $2, id_ranges = '{}'
    where token = $1 and cardinality($2::bigint[]) > 0
)
delete from {claims}
where token = $1 and cardinality($2::bigint[]) = 0
