"""``python -m usenet_indexer``: the same as the ``usenet-indexer`` command."""

from usenet_indexer.cli import main

main()
