select current_setting('wal_level')
