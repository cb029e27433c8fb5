-- Empties slot {slot}, leaving no dead row versions behind.
truncate {partition}
