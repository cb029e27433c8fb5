-- Who listens on a store's channel: every listener holds a shared advisory
-- lock keyed on the channel while it listens (listener_lock.sql). Returns
-- whether any does, and whether any does outside $3, the backends of the
-- asking process's own listeners, which it wakes without a hint.
-- $1: the lock space, $2: the channel.
select
    count(*) > 0 as anywhere,
    coalesce(bool_or(pid <> all($3::int4[])), false) as elsewhere
from pg_locks
where locktype = 'advisory'
    and database = (select oid from pg_database where datname = current_database())
    and classid = $1::int4::oid
    and objid = hashtext($2)::oid
    and objsubid = 2
    and granted
