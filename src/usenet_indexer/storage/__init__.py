"""Storage: the spool, the corpus and snapshots, as files written atomically."""
