-- Serves purges and failed-row requeues.
create index "{outbox_table}_finished_idx" on {outbox} (route, status, finished_at)
    where status in ('published', 'failed')
