-- Locked claims in progress: a record per batch, committed apart from the
-- batch's own transaction and deleted by its settle. A record left behind
-- past its expiry names rows whose claim died unsettled; the sweep counts
-- that crash against them.
create table {claims} (
    token uuid primary key,
    route text not null,
    ids bigint[] not null,
    expires_at timestamptz not null
)
