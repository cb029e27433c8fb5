-- Serves the sweeper: in-flight rows of a route by lease expiry.
create index "{outbox_table}_lease_idx" on {outbox} (route, lease_expires_at)
    where status = 'in_flight'
