-- Serves inbox retention: a consumer's marks by age. Made by the first
-- outbox table sharing the inbox to migrate, like the inbox.
create index if not exists "{inbox_table}_age_idx" on {inbox} (consumer, marked_at)
