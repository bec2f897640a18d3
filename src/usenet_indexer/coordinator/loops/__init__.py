"""The coordinator's background loops, each run by one coordinator at a time under its ownership lease.

- runner.py: the runner (threads, ownership leases, their renewal and fences);
- background.py: which loops run, how often, on which news servers (``background_loops``);
- news.py: the one connection pool the loops that read news share, and the chunks in flight;
- planner.py: groups' watermarks, backfill dates and the planning of ranges (leases/planning.py);
- prefetcher.py, fetching.py: chunks of overview fetched ahead into the spool;
- corpus_fill.py: ranges read to their end, fetched into the corpus;
- cleanup.py: abandoned ranges finished, the spool swept;
- probe.py: PAR2 bodies of obfuscated releases read to name them (catalog/probe.py).

The catalog's grouping loop is catalog/grouping.py's ``Grouper``, wired in background.py.
"""
