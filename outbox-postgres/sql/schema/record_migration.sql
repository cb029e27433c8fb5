insert into {migrations} (version, name) values ($1, $2)
