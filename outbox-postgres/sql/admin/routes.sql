-- Every route with at least one row, in name order.
select distinct route from {outbox} order by route
