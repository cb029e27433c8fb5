-- Which of the rows $2 of route $1 are still pending.
select id
from {outbox}
where route = $1 and id = any($2) and status = 'pending'
