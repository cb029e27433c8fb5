-- Only for a rotated outbox (Layout::Rotated): turns the outbox into a
-- table partitioned into four slots by `slot`, which staging fills from
-- the second it stages in. Every row is kept with its id, state, lease
-- and attempts, in the current slot; the identity goes on from where it
-- stood. The whole runs under an exclusive lock on the outbox, so no
-- claim, settle or stage runs meanwhile; locked claims in progress are
-- waited for.
do $rotate$
declare
    next_id bigint;
begin
    lock table {outbox} in access exclusive mode;
    select coalesce(pg_sequence_last_value(pg_get_serial_sequence('{outbox}', 'id')), 0) + 1
        into next_id;

    alter table {outbox} rename to "{outbox_table}_unrotated";
    alter table {schema}."{outbox_table}_unrotated"
        alter column id drop identity,
        drop constraint "{outbox_table}_pkey",
        drop constraint "{outbox_table}_route_event_id_key";
    drop index {schema}."{outbox_table}_claim_idx", {schema}."{outbox_table}_lease_idx",
        {schema}."{outbox_table}_key_idx", {schema}."{outbox_table}_key_lock_idx",
        {schema}."{outbox_table}_finished_idx";

    create table {outbox} (
        id bigint generated always as identity,
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
        expires_at timestamptz,
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
        slot smallint not null default {current_slot},
        primary key (id, slot),
        unique (route, event_id, slot)
    ) partition by list (slot);
    create table {schema}."{outbox_table}_slot_0" partition of {outbox} for values in (0);
    create table {schema}."{outbox_table}_slot_1" partition of {outbox} for values in (1);
    create table {schema}."{outbox_table}_slot_2" partition of {outbox} for values in (2);
    create table {schema}."{outbox_table}_slot_3" partition of {outbox} for values in (3);

    -- A plain outbox converted after migration 0018 has the expiry column
    -- already; one converted before gets it here, and 0018 finds it made.
    alter table {schema}."{outbox_table}_unrotated"
        add column if not exists expires_at timestamptz;
    insert into {outbox} (
        id, event_id, route, destination, event_type, payload, content_type, headers,
        ordering_key, correlation_id, causation_id, tenant_id, occurred_at, hlc, expires_at,
        status, available_at, lease_token, lease_expires_at, key_lock, attempts_started,
        attempts_finished, last_error, created_at, finished_at
    )
    overriding system value
    select
        id, event_id, route, destination, event_type, payload, content_type, headers,
        ordering_key, correlation_id, causation_id, tenant_id, occurred_at, hlc, expires_at,
        status, available_at, lease_token, lease_expires_at, key_lock, attempts_started,
        attempts_finished, last_error, created_at, finished_at
    from {schema}."{outbox_table}_unrotated";
    drop table {schema}."{outbox_table}_unrotated";
    execute format('alter table {outbox} alter column id restart with %s', next_id);

    -- The indexes of migrations 0003 to 0010, on every slot. A per-key
    -- claim's key lock is unique per slot; a key's rows in other slots are
    -- kept out by the claim's own check for older unfinished rows.
    create index "{outbox_table}_claim_idx" on {outbox} (route, (id + 0))
        where status = 'pending';
    create index "{outbox_table}_lease_idx" on {outbox} (route, lease_expires_at)
        where status = 'in_flight';
    create index "{outbox_table}_key_idx" on {outbox} (route, ordering_key, id)
        where ordering_key is not null and status in ('pending', 'in_flight');
    create unique index "{outbox_table}_key_lock_idx" on {outbox} (route, key_lock, slot)
        where key_lock is not null;
    create index "{outbox_table}_finished_idx" on {outbox} (route, status, finished_at)
        where status in ('published', 'failed');
end
$rotate$
