-- Settles a locked batch whose every row was published, on a store
-- deleting published rows: one delete of the batch's runs of consecutive
-- row ids ($1 the first and $2 the last id of each run), inside the
-- transaction holding the rows' locks, which also deletes the claim's
-- record ($3). A run holds only rows of the batch, so each is one range
-- of the primary key rather than a lookup per row. Returns one row: a
-- null when it deleted all $4 rows, as it does while the batch's locks
-- hold, and otherwise the ids of the rows it did delete, so the rest
-- can be told.
with released as (
    delete from {claims} where token = $3
),
settled as (
    delete from {outbox} as o
    using unnest($1::bigint[], $2::bigint[]) as run(first_id, last_id)
    where o.id between run.first_id and run.last_id
    returning o.id
)
select case when n.settled <> $4 then array(select s.id from settled as s) end as settled
from (select count(*) as settled from settled) as n
