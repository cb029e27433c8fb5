-- Settles a locked batch whose every row was published, on a store
-- deleting published rows: one plain delete by row id, inside the
-- transaction holding the rows' locks, which also deletes the claim's
-- record ($2). Returns the rows settled.
with released as (
    delete from {claims} where token = $2
)
delete from {outbox}
where id = any($1::bigint[])
returning event_id, 'published' as outcome
