-- The log-tailing relays of the outbox, one row per replication slot: the
-- mode and publication it was made with, so that every tool staging into
-- or requeuing from the outbox knows the relay reads the log, and where
-- the slot stands, recorded before the slot is told. A slot found past
-- its recorded position was dropped and created again (or advanced by
-- hand), and what it skipped may be lost.
--
-- `starts` counts the sessions begun since the position last moved; from
-- the second on, a session lists the events it hands out in `in_flight`
-- until they are settled, and the next session charges a crash to each
-- one left there (`crashes`, by event id), so an event that keeps killing
-- its relay is failed as a crash loop. A position that moves clears the
-- counts.
create table {positions} (
    slot text primary key,
    mode text not null check (mode in ('table', 'messages')),
    publication text not null,
    lsn bigint not null,
    recorded_at timestamptz not null default now(),
    starts integer not null default 0,
    in_flight uuid[] not null default '{}',
    crashes jsonb not null default '{}'
)
