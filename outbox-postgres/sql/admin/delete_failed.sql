-- Deletes the failed rows of a route whose event ids are listed in $2; a
-- row of another status is never touched.
delete from {outbox}
where route = $1 and status = 'failed' and event_id = any($2::uuid[])
