-- Serialises migrations of one schema across processes until commit.
select pg_advisory_xact_lock(hashtextextended($1, 0))
