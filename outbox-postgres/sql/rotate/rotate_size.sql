-- The size on disk of a slot's partition ($1): 0 once truncated, until
-- staging writes to it again.
select pg_relation_size($1::regclass)
