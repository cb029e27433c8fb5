-- At most one row per ordering key in flight under a per-key claim, whatever
-- the number of relays: a second claim of the key fails instead of racing.
create unique index "{outbox_table}_key_lock_idx" on {outbox} (route, key_lock)
    where key_lock is not null
