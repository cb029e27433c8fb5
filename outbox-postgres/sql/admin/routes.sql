-- Every route recorded at its first staging, and every route with a row
-- (rows staged before the routes table existed), in name order.
select route from {routes}
union
select distinct route from {outbox}
order by route
