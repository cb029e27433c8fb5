-- Records a slot just created, its mode and publication, and where it
-- starts, unless it is recorded already: a slot created again must not
-- hide that its predecessor was lost.
insert into {positions} (slot, mode, publication, lsn)
values ($1, $2, $3, $4)
on conflict (slot) do nothing
