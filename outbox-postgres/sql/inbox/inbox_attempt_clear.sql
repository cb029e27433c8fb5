-- Deletes an event's attempt count, in the handler's transaction.
delete from {inbox_attempts} where consumer = $1 and event_id = $2
