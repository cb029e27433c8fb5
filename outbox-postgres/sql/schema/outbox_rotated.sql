-- Whether the outbox ($1) is partitioned, as a rotated outbox is.
select coalesce((select relkind = 'p' from pg_class where oid = to_regclass($1)), false)
