-- Settles a locked batch whose every row was published, on a store
-- deleting published rows: one plain delete by row id, inside the
-- transaction holding the rows' locks, which also deletes the claim's
-- record ($2). Returns the ids of the rows it did not find: none while
-- the batch's locks hold, so the common case sends no row back.
with released as (
    delete from {claims} where token = $2
),
settled as (
    delete from {outbox}
    where id = any($1::bigint[])
    returning id
)
select u.id
from unnest($1::bigint[]) as u(id)
where u.id not in (select s.id from settled as s)
