-- Handler attempts on an event that have not committed, per consumer:
-- counted in writes committed apart from the handler's transaction, so a
-- crash of the handler's process leaves its start counted, and deleted in
-- the handler's transaction when it commits. Only redeliveries and failures
-- write here, so a first delivery that succeeds never does.
create table if not exists {inbox_attempts} (
    consumer text not null,
    event_id uuid not null,
    started integer not null default 0,
    finished integer not null default 0,
    touched_at timestamptz not null default now(),
    primary key (consumer, event_id)
)
