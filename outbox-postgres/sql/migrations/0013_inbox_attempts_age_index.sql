-- Serves inbox retention: a consumer's attempt counts by age.
create index if not exists "{inbox_table}_attempts_age_idx" on {inbox_attempts} (consumer, touched_at)
