-- Serves inbox retention: a consumer's marks by age.
create index "{inbox_table}_age_idx" on {inbox} (consumer, marked_at)
