-- Records routes staged for the first time in this process, in the
-- staging transaction. Returns the routes it inserted; the others were
-- already recorded by a committed transaction.
insert into {routes} (route)
select unnest($1::text[])
on conflict do nothing
returning route
