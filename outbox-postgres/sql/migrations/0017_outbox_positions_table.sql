-- The log-tailing relays of the outbox, one row per replication slot: the
-- mode and publication it was made with, so that every tool staging into
-- or requeuing from the outbox knows the relay reads the log, and where
-- the slot stands, recorded before the slot is told. A slot found past
-- its recorded position was dropped and created again (or advanced by
-- hand), and what it skipped may be lost.
create table {positions} (
    slot text primary key,
    mode text not null check (mode in ('table', 'messages')),
    publication text not null,
    lsn bigint not null,
    recorded_at timestamptz not null default now()
)
