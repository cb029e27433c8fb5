-- Records where a slot just created starts, unless a position is recorded
-- already: a slot created again must not hide that its predecessor was
-- lost.
insert into {positions} (slot, lsn)
values ($1, $2)
on conflict (slot) do nothing
