-- The outbox: one row per staged event, with its relay state.
create table {outbox} (
    id bigint generated always as identity primary key,
    event_id uuid not null,
    route text not null,
    destination text not null,
    event_type text not null,
    payload bytea not null,
    content_type text not null,
    headers jsonb not null default '{}',
    ordering_key text,
    correlation_id text,
    causation_id text,
    tenant_id text,
    occurred_at timestamptz not null,
    hlc bigint,
    status text not null default 'pending'
        check (status in ('pending', 'in_flight', 'published', 'failed')),
    available_at timestamptz not null default now(),
    lease_token uuid,
    lease_expires_at timestamptz,
    key_lock text,
    attempts_started integer not null default 0,
    attempts_finished integer not null default 0,
    last_error text,
    created_at timestamptz not null default now(),
    finished_at timestamptz,
    unique (route, event_id)
)
