-- Serves per-key claims: the unfinished rows of one ordering key.
create index "{outbox_table}_key_idx" on {outbox} (route, ordering_key, id)
    where ordering_key is not null and status in ('pending', 'in_flight')
