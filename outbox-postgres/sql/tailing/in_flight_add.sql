-- Lists events a careful session hands out, before it hands them out.
update {positions} set in_flight = in_flight || $2::uuid[] where slot = $1
