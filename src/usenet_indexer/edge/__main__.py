"""``python -m usenet_indexer.edge``: one edge worker as a supervisor starts it (edge/main.py)."""

from usenet_indexer.runtime import quiet_start

# No collections until the worker's tune_gc, as `usenet-indexer` starts (runtime.py): the collector
# ran ~55 times over the imports' objects, three of them full: ~40 ms of each worker's start.
quiet_start()

from usenet_indexer.edge.main import main  # noqa: E402  (after quiet_start, as in usenet_indexer/__main__.py)

raise SystemExit(main())
