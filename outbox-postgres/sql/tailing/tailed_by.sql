-- The log-tailing relays recorded for the outbox.
select slot, mode, publication from {positions} order by slot
