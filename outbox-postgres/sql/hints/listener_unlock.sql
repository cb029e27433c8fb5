-- Gives back the lock of listener_lock.sql before the listening connection
-- returns to the pool. $1: the lock space, $2: the channel.
select pg_advisory_unlock_shared($1, hashtext($2))
