-- Where the slot's reader last recorded it stood.
select lsn from {positions} where slot = $1
