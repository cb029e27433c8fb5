-- Reads the attempts counted on an event, counting none.
select started, finished from {inbox_attempts} where consumer = $1 and event_id = $2
