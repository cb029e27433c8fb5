-- Records an event for a consumer; a duplicate inserts nothing and, unlike a
-- unique violation, leaves the transaction usable.
insert into {inbox} (consumer, event_id) values ($1, $2)
on conflict do nothing
