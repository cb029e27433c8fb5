-- The rows left in slot {slot}, counted up to one past the most a
-- rotation moves.
select count(*) from (select 1 from {partition} limit {max_moved} + 1) as live
