-- The inbox: one row per event a consumer has handled.
create table {inbox} (
    consumer text not null,
    event_id uuid not null,
    marked_at timestamptz not null default now(),
    primary key (consumer, event_id)
)
