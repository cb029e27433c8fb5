-- The publication of table mode: the outbox table's inserts, nothing else.
create publication {publication} for table {outbox} with (publish = 'insert')
