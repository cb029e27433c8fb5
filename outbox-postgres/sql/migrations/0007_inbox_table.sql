-- The inbox: one row per event a consumer has handled. Shared by the outbox
-- tables of a schema that name the same inbox; the first to migrate makes it.
create table if not exists {inbox} (
    consumer text not null,
    event_id uuid not null,
    marked_at timestamptz not null default now(),
    primary key (consumer, event_id)
)
