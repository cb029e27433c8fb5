-- The publication of message mode: no table at all. The replication
-- protocol needs one to start, and the relay reads only the store's
-- logical decoding messages.
create publication {publication}
