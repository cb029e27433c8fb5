-- The server session a connection reaches now: a pooler in transaction
-- mode may move a connection to another one after each transaction.
select pg_backend_pid()
