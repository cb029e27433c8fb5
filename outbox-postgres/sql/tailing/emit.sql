-- Writes the events staged in a transaction as transactional logical
-- decoding messages, in staging order: no outbox row. They are decoded
-- only if the transaction commits.
select count(pg_logical_emit_message(true, $1, m.content))
from unnest($2::bytea[]) with ordinality as m(content, n)
