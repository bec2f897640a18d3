"""``python -m usenet_indexer.edge``: one edge worker as a supervisor starts it (edge/main.py)."""

from usenet_indexer.edge.main import main

raise SystemExit(main())
