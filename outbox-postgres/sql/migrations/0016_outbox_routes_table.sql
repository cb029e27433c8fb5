-- Every route ever staged into the outbox, recorded at its first staging,
-- so an operator's status lists a route whose rows were all published and
-- deleted, with zeros, rather than forgetting it.
create table {routes} (
    route text primary key,
    first_staged_at timestamptz not null default now()
)
