create table if not exists {migrations} (
    version integer primary key,
    name text not null,
    applied_at timestamptz not null default now()
)
