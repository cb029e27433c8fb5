select exists (select 1 from pg_namespace where nspname = $1)
