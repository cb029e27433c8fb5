-- Where each log-tailing relay's slot stands, recorded before the slot is
-- told: a slot found past its recorded position was dropped and created
-- again (or advanced by hand), and what it skipped may be lost.
create table {positions} (
    slot text primary key,
    lsn bigint not null,
    recorded_at timestamptz not null default now()
)
