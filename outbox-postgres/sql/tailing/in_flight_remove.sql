-- Takes settled events off the list of those in flight, once each.
update {positions}
set in_flight = array(select unnest(in_flight) except all select unnest($2::uuid[]))
where slot = $1
