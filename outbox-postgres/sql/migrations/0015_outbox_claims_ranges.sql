-- Claim records name their rows as ranges of row ids (`id_ranges`), which
-- the rows of one claim mostly are, rather than one array element per row
-- (`ids`): a record of a thousand rows is a few dozen bytes instead of
-- eight kilobytes stored out of line, which PostgreSQL writes and deletes
-- once a batch. Records written before are still read from `ids`, which a
-- trimmed record also uses.
alter table {claims}
    add column id_ranges int8multirange not null default '{}',
    alter column ids set default '{}'
