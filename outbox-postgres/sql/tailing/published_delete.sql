-- Table mode: removes rows the relay published.
delete from {outbox} where id = any($1::bigint[])
returning id
