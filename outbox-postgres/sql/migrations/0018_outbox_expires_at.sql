-- The time an event stops being worth delivering, where it has one: the
-- relay fails an expired row instead of publishing it. A rotated outbox
-- has the column from its conversion (0014), which makes it on every
-- slot; this adds it to a plain one.
alter table {outbox} add column if not exists expires_at timestamptz
