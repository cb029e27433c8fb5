-- Moves what is left in slot {slot} (retries, failed rows, rows in flight)
-- to slot $1, keeping every column but the slot, the id included, so
-- their order holds. A row whose event id the target slot already holds,
-- staged twice in a race of two stagings, is left to the truncation: its
-- twin is the same event.
update {outbox} as o
set slot = $1
where o.slot = {slot}
  and not exists (
      select 1
      from {outbox} as t
      where t.slot = $1 and t.route = o.route and t.event_id = o.event_id
  )
