-- Settles a locked batch whose every row was published, on a store
-- deleting published rows: one plain delete by row id, inside the
-- transaction holding the rows' locks. Returns the rows settled.
delete from {outbox}
where id = any($1::bigint[])
returning event_id, 'published' as outcome
