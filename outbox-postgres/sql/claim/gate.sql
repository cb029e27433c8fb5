-- Whether a locked claim of a per-key route holds one of the route's
-- places, written into its selection as {gate}: the advisory locks 0 to
-- {places} - 1 keyed on the table and the route, which the claim's
-- transaction keeps until it commits or rolls back. A claim finding every
-- place taken tries again every 50 ms for about a second, so a relay
-- standing by takes over within moments of the claim before it ending,
-- its relay dead or not; then it gives up and takes nothing. Taken again
-- by the same transaction, a place is granted at once.
exists (
    select 1
    from generate_series(0, 20 * {places} - 1) as attempt
    where case
        when pg_try_advisory_xact_lock(
            hashtext('tidings claims {outbox} ' || $1), attempt % {places}
        ) then true
        when attempt % {places} < {places} - 1 then false
        -- Every place taken: a moment's wait before the next round. The
        -- wait names `attempt` so that it runs each round, not once.
        else (select false from pg_sleep(0.05 * sign(attempt + 1)))
    end
    limit 1
)
