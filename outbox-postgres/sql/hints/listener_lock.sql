-- Marks this session as listening on a channel, so stores know somebody
-- hears their hints (listeners.sql): a shared session lock, never waited
-- for, released when the connection closes. $1: the lock space, $2: the
-- channel.
select pg_try_advisory_lock_shared($1, hashtext($2)) as locked, pg_backend_pid() as backend
