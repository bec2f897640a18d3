-- The database's clock in Unix seconds, the one every lease is measured by (db/clock.py): the
-- server's clock_timestamp(), the time of the call and not of the transaction's start (a grant that
-- waited behind a finish must not record a time before that finish), plus a test's moved clock (the
-- session setting usenet_indexer.clock_offset, unset in production). A one-expression SQL function,
-- which PostgreSQL inlines where it is called.
CREATE OR REPLACE FUNCTION lease_now() RETURNS float8
LANGUAGE sql VOLATILE AS $fn$
  SELECT EXTRACT(EPOCH FROM clock_timestamp())::float8
         + COALESCE(NULLIF(current_setting('usenet_indexer.clock_offset', true), '')::float8, 0)
$fn$
