-- Replaced by 0010: claims ordered by the bare id could be planned on the
-- primary key instead, filtering out every finished row on each claim.
drop index {schema}."{outbox_table}_claim_idx"
